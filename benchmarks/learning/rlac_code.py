"""RLAC on code: does held-out pass@1 rise when both sides train on the validator's verdicts?

RLAC's reward is not a function one could swap: the generator's DPO pairs are outputs the
critic's test failed to break (a+) against outputs it broke (a−), the critic's are tests
that broke an output (c+) against tests that did not (c−), and "broke" is decided by the
code validator (the test run on the reference and on the output in the sandbox). The
target that reward asks for is code that passes tests it was never shown: held-out pass@1,
greedy, every reference test in the sandbox, measured by the run itself after every round
(round 0 is the untrained generator).

One `coevo run` per seed (as the command line would run it, in `work_dir/seed<N>`), then
each round's per-problem outcomes are read from its summary.json: the curve is pass@1 per
round, and the gain is paired over (problem, seed). Both sides' DPO pairs per round and
whether each side's weights moved go in the notes: a flat curve with no critic pair says
something else than a flat curve after both sides trained.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from learning.curve import LearningCurve, curve_record

LOOP = "rlac-code"
TARGET = "held-out pass@1"
REWARD = "code validator (reference tests in the sandbox)"
ROLES = ("generator", "critic")


def measure(*, reward: str | None = None, steps: int | None = None, seeds: list[int] | None = None,
            work_dir: Path, config_path: str = "examples/rlac_code_easy.yaml",
            overrides: list[str] | None = None) -> LearningCurve:
    """Run RLAC on code once per seed and return its held-out pass@1 curve over rounds.

    `steps` is the number of RLAC iterations (None: the config's). A seed sets the
    sampling and DPO seeds (`seed`, `dpo.seed`), not the train / held-out split
    (`data.seed`): every seed is measured on the same held-out problems. A run folder that
    already holds this config's run is resumed (a finished one is only read back).
    """
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import STORE_FILE

    from coevo.llm.python_functions import is_python_spec

    if reward is not None and is_python_spec(reward):
        raise ValueError(f"rlac-code's reward is the code validator (the critic's test run on the reference and "
                         f"on the output in the sandbox); no Python reward applies, so {reward!r} cannot stand "
                         "for it: leave the reward out")
    seeds = [0] if seeds is None else list(seeds)
    work_dir = Path(work_dir)
    summaries: dict[int, dict[str, Any]] = {}
    started = time.perf_counter()
    for seed in seeds:
        out = work_dir / f"seed{seed}"
        settings = [*(overrides or []), f"seed={seed}", f"dpo.seed={seed}"]
        if steps is not None:
            settings.append(f"iterations={steps}")
        run_experiment(config_path, out, overrides=settings, resume=(out / STORE_FILE).is_file())
        summaries[seed] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return curve_from_summaries(summaries, seconds=time.perf_counter() - started,
                                settings={"config": config_path, "overrides": list(overrides or []),
                                          "iterations": steps, "work_dir": str(work_dir)})


def curve_from_summaries(summaries: Mapping[int, Mapping[str, Any]], *, seconds: float,
                         settings: dict[str, Any] | None = None) -> LearningCurve:
    """The learning curve from each seed's RLAC summary.json: round 0 (`baseline`) is the
    point before training, `rounds[r-1]` the point after round r; keys `problem#seed`."""
    if not summaries:
        raise ValueError("no RLAC run to read: give at least one seed")
    by_round: dict[int, dict[str, float]] = {}
    rounds_info: list[dict[str, Any]] = []
    notes: list[str] = []
    for seed, summary in sorted(summaries.items()):
        evals = [(0, summary["baseline"])] + [(int(rec["round"]), rec["eval"]) for rec in summary["rounds"]]
        for r, evaluation in evals:
            items = evaluation.get("per_item")
            if items is None:
                raise ValueError(f"seed {seed}, round {r}: summary.json has no per-problem outcomes (`per_item`); "
                                 "it was written before they were recorded: run it again")
            by_round.setdefault(r, {}).update({f"{sid}#{seed}": float(v) for sid, v in items.items()})
        base = summary["baseline"]
        notes.append(f"seed {seed} round 0 (untrained generator): held-out pass@1 "
                     f"{_shown(base.get('pass_at_1'), base.get('pass_at_1_lo'), base.get('pass_at_1_hi'))} "
                     f"(n={base.get('heldout_n')})")
        for rec in summary["rounds"]:
            info = _round_info(seed, rec)
            rounds_info.append(info)
            notes.append(_round_note(info))
    points = sorted(by_round.items())
    trained = {role: sum(info["moved"][role] is True for info in rounds_info) for role in ROLES}
    notes.insert(0, f"rounds whose weights moved: generator {trained['generator']}, critic {trained['critic']} "
                    f"of {len(rounds_info)} (both sides train only on rounds that built pairs for them)")
    return curve_record(loop=LOOP, target=TARGET, reward=REWARD, points=points, seconds=seconds,
                        seeds=sorted(summaries), settings={**(settings or {}), "rounds": rounds_info},
                        notes=notes)


def _round_info(seed: int, rec: Mapping[str, Any]) -> dict[str, Any]:
    """One round of one seed: its pass@1 with interval and n, and per side its DPO pairs,
    whether it trained, its steps and largest weight change, and whether that moved it
    (None: it did not train, or an older run did not measure the change)."""
    evaluation, training = rec["eval"], rec.get("training") or {}
    trained = {role: bool((rec.get("trained") or {}).get(role, role in training)) for role in ROLES}
    delta = {role: (training.get(role) or {}).get("weight_delta") for role in ROLES}
    return {"seed": seed, "round": int(rec["round"]),
            "pass_at_1": evaluation.get("pass_at_1"),
            "pass_at_1_ci": [evaluation.get("pass_at_1_lo"), evaluation.get("pass_at_1_hi")],
            "n": evaluation.get("heldout_n"),
            "pairs": {role: int((rec.get("pairs") or {}).get(role, 0)) for role in ROLES},
            "trained": trained,
            "steps": {role: int((training.get(role) or {}).get("steps", 0)) for role in ROLES},
            "weight_delta": delta,
            "moved": {role: delta[role] > 0 if trained[role] and delta[role] is not None else None
                      for role in ROLES}}


def _round_note(info: Mapping[str, Any]) -> str:
    """"seed 0 round 1: generator 32 DPO pairs, 2 steps, weights moved (max |Δw| 3.1e-06);
    critic 0 DPO pairs, not trained; held-out pass@1 0.550 [0.398, 0.693] (n=40)"."""
    sides = []
    for role in ROLES:
        pairs, steps, moved = info["pairs"][role], info["steps"][role], info["moved"][role]
        if not info["trained"][role]:
            state = "not trained"
        elif moved is None:
            state = f"{steps} steps, weight change not measured"
        elif moved:
            state = f"{steps} steps, weights moved (max |Δw| {info['weight_delta'][role]:.2g})"
        else:
            state = f"{steps} steps, weights unchanged"
        sides.append(f"{role} {pairs} DPO pairs, {state}")
    return (f"seed {info['seed']} round {info['round']}: " + "; ".join(sides)
            + f"; held-out pass@1 {_shown(info['pass_at_1'], *info['pass_at_1_ci'])} (n={info['n']})")


def _shown(value: float | None, lo: float | None, hi: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "")
