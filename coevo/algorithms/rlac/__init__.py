"""RLAC: adversarial critic training (Wu et al., RLAC, §3 Algorithm 1; App. A, B).

One module per part of the paper's method, read in this order:

    config.py        the settings (the paper's defaults), its two tasks, the baselines' switches
    data.py          instructions per task, split into training and held-out sets
    loop.py          Algorithm 1: sample, propose, validate, build pairs, DPO both sides
    domains.py       the tasks: facts (a wrong fact) and code (a failing test case)
    pairs.py         the generator's and the critic's DPO pairs, and the baselines' ranked pairs
    reward_model.py  the reward-model baseline's scorer
    kl.py            KL to the base generator (Figure 3)
    audit.py         the validator probed for being gamed
    detection.py     the critic's detection rate on fixed failing held-out outputs, per iteration
    records.py       what a run writes: rounds, counts, summary.json
    stages.py        the names a round's work is filed under (`rlac:round1`, `rlac/round1/critic`)
    paper.py         the paper's settings, the departures from them, and `coevo plan`
"""

from coevo.algorithms.rlac.config import RlacConfig
from coevo.algorithms.rlac.loop import run_rlac
from coevo.algorithms.rlac.pairs import reward
from coevo.algorithms.rlac.records import RlacSummary

__all__ = ["RlacConfig", "RlacSummary", "reward", "run_rlac"]
