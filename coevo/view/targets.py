""""What the loop is trained for": each algorithm's target metrics on the run page, first.

The grouped metric figures show everything a run logged; this figure shows only what each
loop is meant to move (a moved weight is not a learned behaviour), per round, with
the interval the run logged beside a rate (`<metric>_lo`/`_hi`: Wilson 95 %) as error bars
and its n in the hover text. GRPO stages add their per-step reward mean from TRL's history,
the curve within each round. A target the run could not measure (no constraints in the data,
no held-out set) is said in words: an empty panel reads as "the loop did nothing".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from coevo.view import plots

TITLE = "What the loop is trained for"


@dataclass(frozen=True)
class Target:
    """One target metric as the store logs it per round."""

    name: str                 # the metric's name in the store
    label: str                # its panel's title
    missing: str              # why a run may lack it, in words
    count: str | None = None  # the metric holding its n
    spread: str | None = None  # a logged sd, shown in the hover (a spread, not an interval)


_NO_CONSTRAINTS = "no held-out prompt states a checkable constraint (`meta.constraints` in the data)"
#: Per algorithm, its targets in panel order (RLAC's held-out metric depends on its task).
TARGETS: dict[str, tuple[Target, ...]] = {
    "taiscore": (
        Target("gold_score", "gold score of π_r (held out)", "no held-out prompt was scored by the gold judge",
               "eval_prompts", "gold_score_set_sd"),
        Target("constraint_pass_rate", "constraint pass rate of y0", _NO_CONSTRAINTS, "constraint_count"),
        Target("refine_constraint_pass_rate", "constraint pass rate of refined y1",
               _NO_CONSTRAINTS + ", or refinement was not evaluated", "refine_constraint_count"),
        Target("reward_mean", "critic's reward mean (GRPO)", "no critic round logged a reward",
               "reward_count", "reward_sd"),
        Target("win_rate_vs_round0", "win rate vs round 0 (both orders)", "no round after round 0 was compared",
               "win_rate_vs_round0_n"),
    ),
    "rlac/code": (
        Target("pass_at_1", "held-out pass@1", "no held-out pass@1: the run has no held-out problems",
               "heldout_count"),
        Target("detection_rate", "critic's detection rate", "no critic proposal was validated", "proposals"),
    ),
    "rlac/facts": (
        Target("factscore_precision", "held-out FactScore precision",
               "no held-out FactScore: the run has no held-out people (or no scorable fact)", "heldout_count"),
        Target("detection_rate", "critic's detection rate", "no critic proposal was validated", "proposals"),
    ),
}


def target_section(algorithm: str, task: str | None, metrics: list[dict[str, Any]], logs: list[dict[str, Any]],
                   kinds: dict[str, str], summary: dict[str, Any]) -> dict[str, Any] | None:
    """The section's figure (or None) and its `missing` sentences; None for an algorithm
    without a stated target (controls, refine: evaluations, not training loops)."""
    if algorithm == "decoevo":
        panels, missing = _decoevo_panels(metrics, summary)
    elif algorithm == "taiscore" or algorithm == "rlac":
        key = algorithm if algorithm == "taiscore" else f"rlac/{task or 'code'}"
        panels, missing = _round_panels(TARGETS[key], metrics)
        if algorithm == "taiscore":
            curve = grpo_reward_curve(logs, kinds)
            if curve:
                panels.append(plots.Panel("critic's reward mean per GRPO step (each round)", curve, "GRPO step",
                                          plots.TRAINING["reward"]))
            else:
                missing.append({"target": "critic's reward per GRPO step",
                                "why": "no GRPO stage logged a per-step reward (no TRL history kept)"})
    else:
        return None
    figure = None
    if panels:
        figure = plots.small_multiples(TITLE, panels, "round", columns=3)
        figure["json"] = plots.figure_json(figure["figure"])
    return {"figure": figure, "missing": missing}


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _round_panels(targets: tuple[Target, ...], metrics: list[dict[str, Any]]
                  ) -> tuple[list[tuple[Any, ...]], list[dict[str, str]]]:
    """A panel per target with a value in some round (a line per stage), else a sentence."""
    logged = {(m["stage"], m["name"], m["round"]): m["value"] for m in metrics if m["round"] is not None}
    panels, missing = [], []
    for t in targets:
        series: dict[str, list[tuple[Any, ...]]] = {}
        for (stage, name, r), value in logged.items():
            if name != t.name or not _finite(value):
                continue
            n = next((logged[(stage, k, r)] for k in (f"{name}_n", t.count)
                      if k and _finite(logged.get((stage, k, r)))), None)
            ends = logged.get((stage, f"{name}_lo", r)), logged.get((stage, f"{name}_hi", r))
            # From fewer than MIN_ITEMS items no bar, as the tables say "too few to tell".
            lo, hi = plots.drawn_interval(*ends, n)
            hover = [f"n = {n:g}"] if n is not None else []
            if t.spread and _finite(logged.get((stage, t.spread, r))):
                hover.append(f"sd {logged[(stage, t.spread, r)]:.3g}")
            if lo is not None and hi is not None:
                hover.append(f"95% CI [{lo:.3g}, {hi:.3g}]")
            elif all(_finite(end) for end in ends):
                hover.append("too few to tell (no interval)")
            series.setdefault(stage, []).append((int(r), float(value), lo, hi, ", ".join(hover)))
        if series:
            panels.append(plots.Panel(t.label, series, metric=t.name))
        else:
            missing.append({"target": t.label, "why": t.missing})
    return panels, missing


def grpo_reward_curve(logs: list[dict[str, Any]], kinds: dict[str, str]) -> dict[str, list[tuple[Any, ...]]]:
    """Per GRPO stage (one a round), TRL's per-step reward mean (hover: its sd)."""
    curves: dict[str, list[tuple[Any, ...]]] = {}
    for log in logs:
        if (kinds.get(log["stage"]) or plots._guess_kind(log["history"])) != "grpo":
            continue
        for i, entry in enumerate(plots.logged_steps(log["history"])):
            if _finite(entry.get("reward")):
                sd = entry.get("reward_std")
                curves.setdefault(log["stage"], []).append(
                    (entry.get("step", i + 1), float(entry["reward"]), None, None,
                     f"reward sd {sd:.3g}" if _finite(sd) else ""))
    return curves


def _decoevo_panels(metrics: list[dict[str, Any]], summary: dict[str, Any]
                    ) -> tuple[list[tuple[Any, ...]], list[dict[str, str]]]:
    """DecoEvo's targets: the diagnostic gold score beside the proxy it optimises, by inner
    step (mean over seeds, a line per method), then the final test score and constraint pass
    rate per method from summary.json."""
    by_step: dict[tuple[str, str, int], list[float]] = {}
    for m in metrics:
        if m["name"] in ("diag_gold", "diag_proxy") and m["round"] is not None and _finite(m["value"]):
            method = m["stage"].split("/seed")[0]
            by_step.setdefault((m["name"], method, int(m["round"])), []).append(float(m["value"]))
    panels: list[tuple[Any, ...]] = []
    missing: list[dict[str, str]] = []
    for name, label in (("diag_gold", "diagnostic gold-rubric score"),
                        ("diag_proxy", "diagnostic proxy score (generated rubrics)")):  # registry names
        series: dict[str, list[tuple[Any, ...]]] = {}
        for (metric, method, step), values in by_step.items():
            if metric == name:
                series.setdefault(method, []).append((step, sum(values) / len(values), None, None,
                                                      f"mean of n = {len(values)} seed(s)"))
        if series:
            panels.append(plots.Panel(label, series, "inner step", name))
        else:
            missing.append({"target": label, "why": "no diagnostic evaluation was logged (no diagnostic set)"})
    methods = summary.get("methods") if isinstance(summary.get("methods"), dict) else None
    if not methods:
        missing.append({"target": "test score per method",
                        "why": "measured at the end of the run: summary.json is not written yet"})
        return panels, missing
    test, rate = {}, {}
    for method, entry in methods.items():
        if _finite(entry.get("test_mean")):
            seeds = [s for s in entry.get("per_seed") or [] if _finite(s)]
            sd = f", sd {entry['test_sd']:.3g}" if _finite(entry.get("test_sd")) else ""
            test[method] = [(method, entry["test_mean"], None, None, f"mean over n = {len(seeds)} seed(s){sd}")]
        ci = entry.get("constraint_pass_rate_ci") or [None, None]
        if _finite(entry.get("constraint_pass_rate")):
            rate[method] = [(method, entry["constraint_pass_rate"], ci[0], ci[1],
                             f"n = {entry.get('constraint_count', 0)}, 95% CI [{ci[0]:.3g}, {ci[1]:.3g}]"
                             if None not in ci else f"n = {entry.get('constraint_count', 0)}")]
    for label, series, why, metric in (
            ("test score (gold rubric, 0-1)", test, "no test answer was graded", "test_mean"),
            ("test constraint pass rate", rate, _NO_CONSTRAINTS.replace("held-out", "test"), "constraint_pass_rate")):
        if series:
            panels.append(plots.Panel(label, series, "method", metric))
        else:
            missing.append({"target": label, "why": why})
    return panels, missing
