"""DecoEvo in miniature: decoupled acceptance against SkillOpt, score-coupled co-evolution
(SC-CoEvo) and the zero-shot skill, every score decided by code.

DecoEvo's central comparison (its main table): the same frozen backbone and solver-edit
budget, the skills co-evolved with decoupled acceptance rules, against SkillOpt (the solver
skill alone, judged by fixed rubrics) and SC-CoEvo (both skills accepted on one coupled
score). One `coevo run` of `examples/decoevo_checkable.yaml` with all four methods and K
seeds, in which the proxy (the criterion judge under generated rubrics), the audits and the
gold (each test answer's share of its prompt's stated requirements met) are Python checks
(coevo/eval/checkable_graders.py): a 135M judge's scores of two skills differ by less than its
scores of one, so no gate it judges can pass an edit on merit.

The miniature, in order:
1. the gate's noise: the initial solver skill answers the solver gate under several sampling
   seeds, judged as the gate judges (decoevo/gate_noise.py); delta = 2 sd of the gain between
   two identical skills (`rules.noise_delta`), recorded in `settings.gate_noise`;
2. the run, with that delta;
3. per (test question, seed): before = the zero-shot answer (every method's initial solver
   skill is the same text, same seeded sampling), after = the method's final skill's answer;
   so `zero_shot`'s gain is 0 by construction and the comparisons are the methods'
   test-score differences;
4. the paper's divergence, per method and inner step: the proxy the skills are accepted on
   against the gold, on the diagnostic questions (`arms.<method>.metrics.proxy_gold`; the run
   page plots it), and the rewrites refused as no longer skills (`skill_form_refused`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from learning.miniature import Miniature, arm_result, comparisons

log = logging.getLogger(__name__)

PAPER = "decoevo"
DEFAULT_CONFIG = "examples/decoevo_checkable.yaml"
#: The config holds the miniature's partitions, gate and budget itself; a caller's overrides
#: come after these.
DEFAULT_OVERRIDES: tuple[str, ...] = ()
METHODS = ("zero_shot", "skillopt", "sc_coevo", "decoevo")
COMPARISONS = [("decoevo", "skillopt"), ("decoevo", "sc_coevo"), ("decoevo", "zero_shot")]


def measure(*, seeds: list[int], work_dir: Path, heldout_file: str | None = None, config_path: str = DEFAULT_CONFIG,
            overrides: list[str] | None = None, noise_draws: int | None = None) -> Miniature:
    """The gate's noise, then the four methods under every seed in one run (resumed where
    `work_dir/run` holds it), each method's paired gain over zero-shot, the comparisons and
    the per-step proxy and gold. `heldout_file` (prompts with `meta.constraints`, as
    bundled:writing's) replaces the data source, whose seeded partitions then hold its
    prompts out as the test split. `overrides` apply before the noise is measured; delta is
    always the measured one."""
    from coevo.algorithms.decoevo import DecoEvoConfig
    from coevo.algorithms.decoevo.summary import MethodResult
    from coevo.settings.config import apply_overrides, read_yaml
    from learning.decoevo import test_scores
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import STORE_FILE, RunStore

    settings = [*DEFAULT_OVERRIDES, f"methods=[{', '.join(METHODS)}]", f"seeds={list(seeds)}", *(overrides or [])]
    if heldout_file:
        settings.append(f"data.source={Path(heldout_file).resolve()}")
    raw = apply_overrides(read_yaml(config_path), settings)
    started = time.perf_counter()
    # The margin comes from the gate's measured noise, so the noise is measured first.
    noise = gate_noise(DecoEvoConfig.model_validate(raw), Path(work_dir) / "calibration", noise_draws)
    log.info("solver gate noise: gain sd %.4f over %d draws on %d questions -> delta %.4f",
             noise["gain_sd"], noise["draws"], noise["n_questions"], noise["delta"])
    settings.append(f"delta={noise['delta']!r}")
    raw = apply_overrides(raw, [settings[-1]])
    run_dir = Path(work_dir) / "run"
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
    for m in METHODS:
        arms[m].metrics.update(method_metrics(summary, {s: results[(m, s)] for s in seeds}, m))
    return Miniature(paper=PAPER, target="test score under python:coevo.eval.checkable_graders:constraint_grader (share "
                                         "of a prompt's stated requirements met), per (test question, seed)",
                     arms=arms, comparisons=comparisons(arms, COMPARISONS), seeds=list(seeds),
                     seconds=round(time.perf_counter() - started, 1),
                     settings={"config": config_path, "overrides": settings, "gate_noise": noise,
                               "delta": noise["delta"], "partitions": summary.get("partitions", {}),
                               "run_dir": str(run_dir)},
                     notes=[f"solver gate: delta {noise['delta']:.4f} = max({noise['k']:g} x gain sd "
                            f"{noise['gain_sd']:.4f}, floor {noise['floor']:g}), measured over {noise['draws']} "
                            f"draws of the initial skill on {noise['n_questions']} gate questions before the run",
                            *(f"{m}: {n}" for m in METHODS for n in arms[m].notes)])


def gate_noise(config: Any, folder: Path, draws: int | None = None) -> dict[str, Any]:
    """The solver gate's noise and the delta above it (decoevo/gate_noise.py), measured in a
    store of its own at `folder` (a rerun of the miniature asks nothing again)."""
    from coevo.algorithms.decoevo.gate_noise import DRAWS, measure_in

    return measure_in(folder, config, DRAWS if draws is None else draws)


def method_metrics(summary: dict[str, Any], results: dict[int, Any], method: str) -> dict[str, Any]:
    """One method's paper numbers for the JSON: the proxy and the gold by inner step (mean over
    seeds, and per seed) and the rewrites refused as no longer skills."""
    entry = summary.get("methods", {}).get(method, {})
    return {"proxy_gold": proxy_gold(results),
            "skill_form_refused": dict(entry.get("skill_form_refused", {})),
            "accepted": {"solver": f"{entry.get('solver_accepted', 0)}/{entry.get('solver_candidates', 0)}",
                         "rubric_generator": f"{entry.get('generator_accepted', 0)}/"
                                             f"{entry.get('generator_candidates', 0)}"}}


def proxy_gold(results: dict[int, Any]) -> dict[str, Any]:
    """{"by_step": [{step, proxy, gold, gap, n_seeds}], "per_seed": {seed: [{step, proxy, gold}]}}
    from each seed's diagnostic trajectory: the proxy the skills are accepted on (the
    diagnostic answers under the current generated rubrics, the criterion judge's score) and
    the gold (the same answers' share of requirements met). A proxy that rises while the gold
    does not is the divergence the paper is about."""
    per_seed = {seed: [{"step": p.step, "proxy": p.proxy, "gold": p.gold} for p in result.trajectory]
                for seed, result in results.items()}
    steps = sorted({p["step"] for points in per_seed.values() for p in points})
    by_step = []
    for step in steps:
        found = [p for points in per_seed.values() for p in points if p["step"] == step]
        proxy = _mean([p["proxy"] for p in found])
        gold = _mean([p["gold"] for p in found])
        by_step.append({"step": step, "proxy": proxy, "gold": gold, "n_seeds": len(found),
                        "gap": None if proxy is None or gold is None else proxy - gold})
    first, last = (by_step[0], by_step[-1]) if by_step else ({}, {})
    change = {kind: None if first.get(kind) is None or last.get(kind) is None else last[kind] - first[kind]
              for kind in ("proxy", "gold")}
    return {"by_step": by_step, "per_seed": {str(seed): points for seed, points in per_seed.items()},
            "proxy_change": change["proxy"], "gold_change": change["gold"],  # last step minus step 0
            "where": "diagnostic partition (no acceptance decision reads it), after each inner step"}


def _mean(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def _notes(summary: dict[str, Any], method: str, seeds: list[int]) -> list[str]:
    """Each skill's accepted / proposed edits of `method` over the seeds (a flat arm with no
    edit accepted says something else than one whose accepted edits did not help), and the
    rewrites refused as no longer skills."""
    notes = []
    for name, versions in summary.get("skill_versions", {}).items():
        mine = [v for v in versions if v["method"] == method and v["seed"] in seeds and v["version"] > 0]
        if mine:
            accepted = sum(v["decision"] == "accepted" for v in mine)
            refused = sum(v.get("why", "").startswith("refused by the skill-form audit") for v in mine)
            notes.append(f"{name}: {accepted} of {len(mine)} candidate edits accepted"
                         + (f", {refused} refused as no longer a skill" if refused else ""))
    return notes
