"""The "Reward-hacking monitor" panel of the run page (docs/monitor.md).

Per watched training stage (the run store's `monitor` records): the training reward by step
(its mean over the step's completions, n in the hover), each anchor by check (its mean over the
held-out prompts), the degeneracy statistics of the step's outputs (repetition, the share cut at
the token limit, empty outputs, length) and, where the monitor flagged, the onset and the flag
marked on the reward's line; under it, per stage what the monitor could say: a flag in words,
no flag, or too few steps to tell (the rule needs a window of steps at each end of the reward's
trend). Anchors are named in words (view/anchors.py), not by the spec that loads them.
A run whose stages were not watched gets no panel.
"""

from __future__ import annotations

from typing import Any

from coevo.eval.metric_defs import MetricDef
from coevo.rundir.store import RunStore
from coevo.view import plots
from coevo.view.anchors import anchor_words

TITLE = "Reward-hacking monitor: the reward and its anchors by step"

#: The degeneracy statistics the monitor records per step (coevo/monitor/degeneracy.py), in
#: panel order, as the page words them.
DEGENERACY: dict[str, MetricDef] = {d.name: d for d in (
    MetricDef(name="repeat_share", title="repetition", definition="Mean share of an output's word 3-grams that "
              "repeat an earlier 3-gram of the same output (a loop, or a phrase the reward over-scores).",
              unit="share of 3-grams", low=0.0, high=1.0, kind="rate"),
    MetricDef(name="cut_share", title="cut off at the token limit", definition="Share of the step's outputs that "
              "stopped at their token limit.", unit="share of outputs", low=0.0, high=1.0, kind="rate"),
    MetricDef(name="empty_share", title="empty outputs", definition="Share of the step's outputs that were empty "
              "after stripping whitespace.", unit="share of outputs", low=0.0, high=1.0, kind="rate"),
    MetricDef(name="mean_chars", title="output length", definition="Mean length of the step's outputs in "
              "characters.", unit="characters", low=0.0, kind="training"),
)}


def min_steps(report: dict[str, Any]) -> int:
    """The logged steps (or rounds) the divergence rule needs before it can flag: a window at
    each end of the reward's trend (coevo/monitor/rule.py; one round a window over rounds)."""
    from coevo.monitor.rule import REWARD_WINDOW

    return 2 * (1 if report.get("unit") == "round" else REWARD_WINDOW)


def stage_status(report: dict[str, Any]) -> dict[str, Any]:
    """What the monitor could say of one watched stage: {stage, unit, steps, needed, verdict,
    text}; verdict "flagged", "too-few" (fewer logged steps than the rule needs) or "no-flag"."""
    unit = "round" if report.get("unit") == "round" else "step"
    steps, needed = len(report.get("reward_curve") or []), min_steps(report)
    flags = report.get("flags") or []
    stage = report.get("stage") or "training"
    if flags:
        verdict = "flagged"
        text = f"flagged at {unit} {flags[0].get('step')} ({len(flags)} flag{'s' * (len(flags) != 1)})"
    elif steps < needed:
        verdict = "too-few"
        text = (f"too few {unit}s to tell: the rule compares the reward's first {needed // 2} {unit}"
                f"{'s' * (needed // 2 != 1)} with its last {needed // 2}, so it needs {needed} logged {unit}s; "
                f"this stage logged {steps}, so the absence of a flag here says nothing.")
    else:
        verdict, text = "no-flag", f"no flag over {steps} logged {unit}s"
    return {"stage": stage, "unit": unit, "steps": steps, "needed": needed, "verdict": verdict, "text": text}


#: Marks on the reward's line (one trace each, whatever the stage), not lines of their own.
MARKS = ("onset", "flag")
#: The outputs' statistics by step: a figure of their own, folded under the reward's.
OUTPUTS_TITLE = "Reward-hacking monitor: the policy's outputs by step"


def _reward_panel(report: dict[str, Any], unit: str) -> list[tuple[str, plots.Panel]]:
    reward = {"training reward": [(int(s), float(v), None, None, f"n = {n} completions")
                                  for s, v, n in report.get("reward_curve", [])]}
    at = {int(s): float(v) for s, v, _ in report.get("reward_curve", [])}
    for flag in report.get("flags", []):
        for mark, step in zip(MARKS, (flag["onset_step"], flag["step"])):
            if step in at:
                words = anchor_words(flag["anchor"])["title"]
                reward.setdefault(mark, []).append((step, at[step], None, None, f"{mark}: {words}"))
    if not reward["training reward"]:
        return []
    return [("reward", plots.Panel("training reward", reward, xlabel=unit))]


def _anchor_panels(report: dict[str, Any], unit: str) -> list[tuple[str, plots.Panel]]:
    panels = []
    for anchor, curve in report.get("anchor_curves", {}).items():
        words = anchor_words(anchor)
        points = [(int(s), float(v), None, None, f"mean over n = {n} held-out prompts") for s, v, n in curve]
        if points:
            metric = MetricDef(name=anchor, title=words["title"], unit="anchor value", kind="mean",
                               definition=f"{words['about']} A point is its mean over the held-out prompts "
                                          "measured at that step.")
            panels.append((f"anchor {anchor}", plots.Panel(f"anchor: {words['short']}", {"anchor": points},
                                                           xlabel=unit, metric=metric)))
    return panels


def _degeneracy_panels(report: dict[str, Any], unit: str) -> list[tuple[str, plots.Panel]]:
    by_step = {int(s): values for s, values in (report.get("degeneracy") or {}).items() if isinstance(values, dict)}
    panels = []
    for name, definition in DEGENERACY.items():
        points = [(s, float(values[name])) for s, values in sorted(by_step.items())
                  if isinstance(values.get(name), (int, float))]
        if points:
            panels.append((name, plots.Panel(definition.title, {"outputs": points}, xlabel=unit, metric=definition)))
    return panels


def _merged(per_stage: list[tuple[str, list[tuple[str, plots.Panel]]]]) -> list[plots.Panel]:
    """One panel per quantity, whatever the number of stages: with several, a line per stage
    (named by its stage) in each, as the other figures draw their stages."""
    several = len(per_stage) > 1
    merged: dict[str, plots.Panel] = {}
    for stage, panels in per_stage:
        for key, panel in panels:
            series = {(stage if several and name not in MARKS else name): list(points)
                      for name, points in panel.series.items()}
            if key not in merged:
                merged[key] = panel._replace(series=series)
                continue
            for name, points in series.items():
                merged[key].series.setdefault(name, []).extend(points)
    return list(merged.values())


def _figure(title: str, panels: list[plots.Panel], columns: int) -> dict[str, Any] | None:
    if not panels:
        return None
    figure = plots.small_multiples(title, panels, "step", columns=columns)
    for trace in figure["figure"]["data"]:
        if trace["name"] in MARKS:
            trace.update({"mode": "markers", "marker": {"size": 11, "symbol": "x" if trace["name"] == "flag"
                                                        else "diamond"}})
    figure["json"] = plots.figure_json(figure["figure"])
    return figure


def monitor_section(store: RunStore) -> dict[str, Any] | None:
    """{figure, outputs_figure, rows, stages, statuses, anchors} for the run page; None when no
    stage was watched."""
    from coevo.monitor.records import KIND

    reports = [report for _, report in store.get_records(KIND) if isinstance(report, dict)]
    if not reports:
        return None
    curves, outputs = [], []
    for report in reports:
        unit = "round" if report.get("unit") == "round" else "step"
        stage = report.get("stage") or "training"
        curves.append((stage, _reward_panel(report, unit) + _anchor_panels(report, unit)))
        outputs.append((stage, _degeneracy_panels(report, unit)))
    rows = [{"stage": f.get("stage"), "step": f.get("step"), "onset": f.get("onset_step"),
             "anchor": anchor_words(f.get("anchor") or "")["title"], "why": f.get("why")}
            for report in reports for f in report.get("flags", [])]
    anchors = {spec: anchor_words(spec) for report in reports for spec in report.get("anchor_curves", {})}
    return {"figure": _figure(TITLE, _merged(curves), 2), "outputs_figure": _figure(OUTPUTS_TITLE, _merged(outputs), 4),
            "rows": rows, "stages": len(reports), "statuses": [stage_status(r) for r in reports],
            "anchors": list(anchors.values())}
