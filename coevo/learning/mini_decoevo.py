"""DecoEvo in miniature: decoupled acceptance against SkillOpt, score-coupled co-evolution
(SC-CoEvo) and the zero-shot skill, under a checkable grader.

DecoEvo's central comparison (its main table): the same frozen backbone and solver-edit
budget, the skills co-evolved with decoupled acceptance rules, against SkillOpt (the solver
skill alone, judged by fixed rubrics) and SC-CoEvo (both skills accepted on one coupled
score). One `coevo run` of the DecoEvo config with all four methods and K seeds; gold: each
test answer's share of its prompt's constraints met (`constraint_grader`, Python-checked: the
embedded 135M judge fails its own audit). Per (test question, seed): before = the zero-shot
answer (DecoEvo's, SkillOpt's and SC-CoEvo's initial solver skill is the same text, same
seeded sampling), after = the method's final skill's answer; so `zero_shot`'s gain is 0 by
construction and the comparisons are the methods' test-score differences.

The gates are widened from the tiny config's one question (a 135M judgment deciding an
edit) to 8. Measured on seed 0 (BENCHMARKS.md, "Miniatures"): with a fixed rubric generator
the judge's gate gains of SkillOpt's candidates spread -0.031 .. +0.007 (sd 0.011), below the
margin delta: the judge's resolution, not the gate's size, is what refuses them.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from coevo.learning.miniature import Miniature, arm_result, comparisons

log = logging.getLogger(__name__)

PAPER = "decoevo"
DEFAULT_CONFIG = "examples/decoevo_tiny.yaml"
GRADER = "python:coevo.learning.graders:constraint_grader"
METHODS = ("zero_shot", "skillopt", "sc_coevo", "decoevo")
COMPARISONS = [("decoevo", "skillopt"), ("decoevo", "sc_coevo"), ("decoevo", "zero_shot")]
#: The test split at 20 questions (0.2 of 72 is 14), the gates at 8 questions each (the
#: diagnostic split gives up the share they gain: the fractions sum to 1), and the same
#: 3-edit budget for every method (6 took ~30 min a seed here; 3 keeps three seeds within
#: the issue's hour, BENCHMARKS.md "Miniatures").
DEFAULT_OVERRIDES: tuple[str, ...] = (
    "partitions.fractions.train=0.2", "partitions.fractions.test=0.3", "partitions.fractions.solver_gate=0.15",
    "partitions.fractions.generator_gate=0.15", "partitions.fractions.diagnostic=0.05",
    "partitions.sizes.test=20", "partitions.sizes.solver_gate=8",
    "partitions.sizes.generator_gate=8", "inner_steps=3",
)


def measure(*, seeds: list[int], work_dir: Path, heldout_file: str | None = None, config_path: str = DEFAULT_CONFIG,
            overrides: list[str] | None = None) -> Miniature:
    """The four methods under every seed in one run (resumed where `work_dir/run` holds it),
    then each method's paired gain over zero-shot and the comparisons. `heldout_file`
    (prompts with `meta.constraints`, as bundled:writing's) replaces the data source, whose
    seeded partitions then hold its prompts out as the test split."""
    from coevo.algorithms.decoevo.summary import MethodResult
    from coevo.config import apply_overrides, read_yaml
    from coevo.learning.decoevo import test_scores
    from coevo.runner import run_experiment
    from coevo.store import STORE_FILE, RunStore

    settings = [*DEFAULT_OVERRIDES, f"methods=[{', '.join(METHODS)}]", f"seeds={list(seeds)}",
                f"roles.grader.model={GRADER}", *(overrides or [])]
    if heldout_file:
        settings.append(f"data.source={Path(heldout_file).resolve()}")
    raw = apply_overrides(read_yaml(config_path), settings)
    run_dir = Path(work_dir) / "run"
    started = time.perf_counter()
    summary = run_experiment(None, run_dir, data=raw, resume=(run_dir / STORE_FILE).is_file())
    store = RunStore(run_dir, read_only=True)
    try:
        results = {(m, s): MethodResult.model_validate(store.step_result(f"{m}/seed{s}"))
                   for m in METHODS for s in seeds}
    finally:
        store.close()
    before = {k: v for s in seeds for k, v in test_scores(results[("zero_shot", s)]).items()}
    arms = {m: arm_result(before, {k: v for s in seeds for k, v in test_scores(results[(m, s)]).items()},
                          _notes(summary, m, seeds)) for m in METHODS}
    return Miniature(paper=PAPER, target=f"test score under {GRADER} (share of a prompt's constraints met), "
                                         "per (test question, seed)",
                     arms=arms, comparisons=comparisons(arms, COMPARISONS), seeds=list(seeds),
                     seconds=round(time.perf_counter() - started, 1),
                     settings={"config": config_path, "overrides": settings,
                               "partitions": summary.get("partitions", {}), "run_dir": str(run_dir)},
                     notes=[f"{m}: {n}" for m in METHODS for n in arms[m].notes])


def _notes(summary: dict[str, Any], method: str, seeds: list[int]) -> list[str]:
    """Each skill's accepted / proposed edits of `method` over the seeds (a flat arm with no
    edit accepted says something else than one whose accepted edits did not help)."""
    notes = []
    for name, versions in summary.get("skill_versions", {}).items():
        mine = [v for v in versions if v["method"] == method and v["seed"] in seeds and v["version"] > 0]
        if mine:
            accepted = sum(v["decision"] == "accepted" for v in mine)
            notes.append(f"{name}: {accepted} of {len(mine)} candidate edits accepted")
    return notes
