"""Learning curves: does a loop change what its model DOES the way its reward asks?

A moved weight is not a learned behaviour (under Adam the first step moves every weight by
about the learning rate, whatever the reward meant). Each loop here trains the embedded
model with a reward whose answer is checkable in Python, and measures the loop's TARGET on
held-out items before training, at intermediate steps and after: the rewarded property's
rate (TAIScore's critic), `constraint_pass_rate` (TAIScore's actor), held-out pass@1 (RLAC
on code), the test score under a checkable grader (DecoEvo). One module per loop; the
record and the paired interval are in `curve.py`; `benchmarks/learning_curves.py` is the
command line, and the slow tests in `tests/learning/` are the same loops, smaller.
"""
