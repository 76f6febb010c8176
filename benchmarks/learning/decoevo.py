"""DecoEvo's learning curve: does co-evolving the solver skill raise the test score its
grader gives?

DecoEvo changes no weight: what it learns is the solver skill document S (and the rubric
generator's G, which only shapes S's edits). So the target is the test score of the solver
skill under `roles.grader.model`, by default the checkable `constraint_grader` (the share of a
bundled writing prompt's constraints an answer meets), per (test question, seed):

- before: the initial S's test answers: the `zero_shot` method's, which under the same seed
  are the very answers DecoEvo's initial S gives (same prompt, same seeded sampling, the
  run store's cache), so an unchanged S has a gain of exactly 0, not sampling noise;
- after: DecoEvo's final S's test answers;
- between: the incumbent S after each inner step where a seed accepted a solver edit,
  scored afterwards on the same test questions (`evaluate_skill`; the run records only
  the final S's test answers, and a diagnostic mean that is not the test set).

The DecoEvo run is `coevo run` on the config (`run_experiment`), methods [zero_shot,
decoevo]; the summary->curve reading is `curve_points`, pure, so it is tested on fakes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from coevo.algorithms.decoevo.summary import MethodResult
from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER
from learning.curve import LearningCurve, curve_record

LOOP = "decoevo"
DEFAULT_REWARD = "python:coevo.eval.checkable_graders:constraint_grader"
#: The checkable config: the gates are judged by code (coevo/eval/checkable_graders.py), so an edit
#: can pass its margin on merit; under the 135M judge two skills' gate scores differ by less
#: than one skill's do. Its partitions (a 20-question test split) are the curve's, and the
#: gate's margin is set from its measured noise before the run (decoevo/gate_noise.py).
DEFAULT_CONFIG = "examples/decoevo_checkable.yaml"
DEFAULT_STEPS = 8
DEFAULT_OVERRIDES: tuple[str, ...] = ()

#: (seed, solver skill text) -> {test question id: score or None}: how `measure` scores an
#: intermediate skill; the tests give a fake.
Evaluator = Callable[[int, str], Mapping[str, float | None]]


def key(question_id: str, seed: int) -> str:
    """The paired key of one test question under one seed."""
    return f"{question_id}#{seed}"


def test_scores(result: MethodResult) -> dict[str, float]:
    """{key: score} of one (method, seed) run's test answers; unreadable grades left out."""
    return {key(q, result.seed): s for q, s in zip(result.test_ids, result.test_scores) if s is not None}


def incumbents(skill_versions: list[dict[str, Any]], seed: int, steps: int, method: str = LOOP,
               ) -> dict[int, int]:
    """{inner step: the solver version in force after it} of one seed, from summary.json's
    `skill_versions["solver"]` entries (method, seed, version, decision, step, ...)."""
    accepted = {v["step"]: v["version"] for v in skill_versions
                if v["method"] == method and v["seed"] == seed and v["version"] > 0 and v["decision"] == "accepted"}
    out, version = {}, 0
    for step in range(steps + 1):
        version = accepted.get(step, version)
        out[step] = version
    return out


def curve_points(summary: Mapping[str, Any], results: Mapping[str, MethodResult], seeds: list[int],
                 steps: int, texts: Mapping[tuple[int, int], str], evaluate: Evaluator,
                 ) -> list[tuple[int, dict[str, float]]]:
    """[(step, {key: score})]: step 0 the zero-shot answers, `steps` DecoEvo's final ones, and
    between them every step where some seed's incumbent solver changed.

    `texts[(seed, version)]` is a DecoEvo solver version's text, `evaluate(seed, text)` its
    test scores (called only for versions that are neither the initial nor the final one).
    """
    by_seed = {seed: incumbents(summary["skill_versions"].get(SOLVER, []), seed, steps) for seed in seeds}
    changed = sorted({s for timeline in by_seed.values() for s in range(1, steps) if timeline[s] != timeline[s - 1]})
    scored: dict[tuple[int, int], dict[str, float]] = {}

    def at(seed: int, version: int) -> dict[str, float]:
        if version == 0:
            return test_scores(results[f"zero_shot/seed{seed}"])
        if version == by_seed[seed][steps]:
            return test_scores(results[f"{LOOP}/seed{seed}"])
        if (seed, version) not in scored:
            found = evaluate(seed, texts[(seed, version)])
            scored[(seed, version)] = {key(q, seed): s for q, s in found.items() if s is not None}
        return scored[(seed, version)]

    points = []
    for step in [0, *changed, steps]:
        merged: dict[str, float] = {}
        for seed in seeds:
            # Step 0 is the initial skill even where a seed accepted an edit at step 0 (none does).
            merged.update(at(seed, 0 if step == 0 else by_seed[seed][step]))
        points.append((step, merged))
    return points


def edit_notes(summary: Mapping[str, Any], results: Mapping[str, MethodResult], seeds: list[int]) -> list[str]:
    """What a reader needs to tell whether anything changed: each skill's accepted / rejected
    candidates (with the gate's reason), the final solver skills, the diagnostic trajectory."""
    notes = []
    for name in (SOLVER, GENERATOR):
        mine = [v for v in summary["skill_versions"].get(name, []) if v["method"] == LOOP and v["version"] > 0]
        accepted = sum(v["decision"] == "accepted" for v in mine)
        notes.append(f"{name}: {accepted}/{len(mine)} candidate edits accepted over seeds {seeds}")
        notes += [f"  {name} v{v['version']} (seed {v['seed']}, step {v['step']}) {v['decision']}: {v['why']}"
                  for v in mine]
    stalls = summary["methods"].get(LOOP, {}).get("invalid_outputs", {})
    if stalls:
        notes.append(f"unreadable role outputs (DecoEvo): {dict(stalls)}")
    for seed in seeds:
        final = results[f"{LOOP}/seed{seed}"].solver
        notes.append(f"seed {seed} final solver skill v{final.version}: {final.text!r}")
    trajectory = summary.get("trajectory", {}).get(LOOP, [])
    if trajectory:
        shown = ", ".join(f"{p['step']}: {_fmt(p.get('gold'))}" for p in trajectory)
        notes.append(f"diagnostic-set grader score by inner step (mean over seeds; not the test set): {shown}")
    return notes


def rejected_notes(summary: Mapping[str, Any], texts: Mapping[tuple[int, int], str], evaluate: Evaluator,
                   seeds: list[int]) -> list[str]:
    """The test score each rejected solver candidate would have had: whether the gate
    refused better skills or the rewriter wrote none (scored afterwards, same seed)."""
    notes = []
    for v in summary["skill_versions"].get(SOLVER, []):
        if v["method"] == LOOP and v["seed"] in seeds and v["decision"] == "rejected":
            found = [s for s in evaluate(v["seed"], texts[(v["seed"], v["version"])]).values() if s is not None]
            score = sum(found) / len(found) if found else None
            notes.append(f"rejected solver v{v['version']} (seed {v['seed']}, step {v['step']}) would have "
                         f"scored {_fmt(score)} on the test set: {_clip(texts[(v['seed'], v['version'])])}")
    return notes


def _clip(text: str, chars: int = 160) -> str:
    return repr(text if len(text) <= chars else text[:chars] + "...")


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def measure(*, reward: str | None = None, steps: int | None = None, seeds: list[int] | None = None,
            work_dir: Path, config_path: str = DEFAULT_CONFIG, overrides: list[str] | None = None,
            ) -> LearningCurve:
    """Run DecoEvo (and zero-shot, the before) on `config_path` in `work_dir/run` and return
    its learning curve on the test split under the grader `reward`.

    `steps`: DecoEvo's inner steps (the solver-edit budget). `overrides` (`key.path=value`)
    apply after the defaults here, so a caller can resize any partition."""
    from coevo.algorithms.decoevo import DecoEvoConfig
    from coevo.algorithms.decoevo.skills import versions
    from coevo.settings.config import apply_overrides, read_yaml
    from coevo.algorithms.decoevo.gate_noise import measure_in
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import RunStore

    reward = reward or DEFAULT_REWARD
    steps = DEFAULT_STEPS if steps is None else steps
    seeds = [0] if seeds is None else list(seeds)
    settings = [*DEFAULT_OVERRIDES, "methods=[zero_shot, decoevo]", f"seeds={list(seeds)}",
                f"roles.grader.model={reward}", f"inner_steps={steps}", *(overrides or [])]
    raw = apply_overrides(read_yaml(config_path), settings)
    began = time.time()
    # The solver gate's margin from its measured noise, as the miniature sets it.
    noise = measure_in(Path(work_dir) / "calibration", DecoEvoConfig.model_validate(raw))
    settings.append(f"delta={noise['delta']!r}")
    raw = apply_overrides(raw, [settings[-1]])
    run_dir = Path(work_dir) / "run"
    summary = run_experiment(None, run_dir, data=raw, fresh=True)
    run_seconds = time.time() - began  # the noise measurement included
    store = RunStore(run_dir)
    try:
        results = {f"{m}/seed{s}": MethodResult.model_validate(store.step_result(f"{m}/seed{s}"))
                   for m in ("zero_shot", LOOP) for s in seeds}
        texts = {(v.seed, v.version): v.text for v in versions(store) if v.method == LOOP and v.name == SOLVER}
        evaluate = _evaluator(raw, store)
        points = curve_points(summary, results, list(seeds), steps, texts, evaluate)
        rejected = rejected_notes(summary, texts, evaluate, list(seeds))
    finally:
        store.close()
    notes = ["before = zero_shot's test answers (the initial solver skill, same seed and cache); after = "
             "DecoEvo's final skill's; intermediate points re-answer the test set with the skill in force",
             *edit_notes(summary, results, list(seeds)), *rejected]
    partitions = summary.get("partitions", {})
    return curve_record(loop=LOOP, target=f"test score under the grader {reward} (0-1), per (test question, seed)",
                        reward=reward, points=points, seconds=time.time() - began, seeds=list(seeds),
                        settings={"config": config_path, "overrides": settings, "inner_steps": steps,
                                  "gate_noise": noise, "delta": noise["delta"],
                                  "partitions": partitions, "run_dir": str(run_dir),
                                  "run_seconds": round(run_seconds, 1)},
                        notes=notes)


def _evaluator(raw: dict[str, Any], store: Any) -> Evaluator:
    """Scores a solver skill on the run's test split as the run's own `test` would (same
    seeded solver and grader, the run store's cache); the model loads on first use only."""
    from coevo.algorithms.decoevo import DecoEvoConfig, evaluate_skill
    from coevo.algorithms.decoevo.data import make_partitions
    from coevo.roles.query_filter import load_data

    config = DecoEvoConfig.model_validate(raw)
    loaded: dict[str, Any] = {}

    def evaluate(seed: int, text: str) -> dict[str, float | None]:
        if not loaded:
            loaded["test"] = make_partitions(load_data(config.data), config.partitions)["test"]
            loaded["model"] = config.roles.load("backbone", store=store)
            loaded["grader"] = config.roles.load("grader", store=store) if config.roles.grader.model else None
        found = evaluate_skill(text, loaded["test"], loaded["model"], loaded["grader"], config.roles, seed)
        return found["scores"]

    return evaluate
