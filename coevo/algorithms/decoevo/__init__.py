"""DecoEvo: score-decoupled co-evolution of a solver skill and a rubric-generator skill on one
frozen backbone, with the SkillOpt and score-coupled (SC-CoEvo) baselines.

One module per part of the paper's method, read in this order:

    config.py     the settings (the paper's defaults), methods and partitions
    data.py       disjoint partitions by a seeded hash; gold-rubric grades
    loop.py       one method under one seed: inner (solver) and outer (generator) steps;
                  a method is a MethodPolicy (which skills evolve, each one's acceptance rule)
    rules.py      the acceptance rules as pure functions (solver gate, Pareto, score-coupled),
                  the margin from the gate's noise, and the form a skill must keep
    backbone.py   the frozen backbone in its roles, and the call meter
    checkable.py  code standing for a scoring role (criterion judge, structural auditor,
                  blind preference), where the config names a `python:` scorer
    gate_noise.py the solver gate's noise, measured, and the margin delta above it
    skills.py     the skill documents' versions, diffs and exports
    audit.py      the grading under the current rubric generator probed for gaming
    summary.py    what a run writes: per-method results, paired CIs, summary.json
    transfer.py   a finished skill on other questions (`coevo eval skill`)
    average.py    the "Avg." over benchmarks, per run then over runs (`coevo eval average`)
    paper.py      the paper's settings, the departures from them, and `coevo plan`
"""

from coevo.algorithms.decoevo.config import DecoEvoConfig
from coevo.algorithms.decoevo.loop import run_decoevo
from coevo.algorithms.decoevo.summary import DecoEvoSummary
from coevo.algorithms.decoevo.transfer import evaluate_skill

__all__ = ["DecoEvoConfig", "DecoEvoSummary", "evaluate_skill", "run_decoevo"]
