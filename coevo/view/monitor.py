"""The "Reward-hacking monitor" panel of the run page (docs/monitor.md).

Per watched training stage (the run store's `monitor` records): the training reward by step
(its mean over the step's completions, n in the hover), each anchor by check (its mean over the
held-out prompts), and, where the monitor flagged, the onset and the flag marked on the reward's
line; under it, the flags in words. A run whose stages were not watched gets no panel.
"""

from __future__ import annotations

from typing import Any

from coevo.store import RunStore
from coevo.view import plots

TITLE = "Reward-hacking monitor: the reward and its anchors by step"


def monitor_section(store: RunStore) -> dict[str, Any] | None:
    """{figure, rows} for the run page; None when no stage was watched."""
    from coevo.monitor.records import KIND

    reports = [report for _, report in store.get_records(KIND) if isinstance(report, dict)]
    if not reports:
        return None
    panels: list[plots.Panel] = []
    for report in reports:
        stage = report.get("stage") or "training"
        reward = {"training reward": [(int(s), float(v), None, None, f"n = {n} completions")
                                      for s, v, n in report.get("reward_curve", [])]}
        for flag in report.get("flags", []):
            at = {int(s): float(v) for s, v, _ in report.get("reward_curve", [])}
            for label, step in (("onset", flag["onset_step"]), ("flag", flag["step"])):
                if step in at:
                    reward.setdefault(label, []).append((step, at[step], None, None, f"{label}: {flag['anchor']}"))
        if reward["training reward"]:
            panels.append(plots.Panel(f"{stage}: training reward", reward, xlabel="step"))
        for anchor, curve in report.get("anchor_curves", {}).items():
            points = [(int(s), float(v), None, None, f"n = {n} held-out prompts") for s, v, n in curve]
            if points:
                panels.append(plots.Panel(f"{stage}: anchor {anchor}", {"anchor": points}, xlabel="step"))
    rows = [{"stage": f.get("stage"), "step": f.get("step"), "onset": f.get("onset_step"), "anchor": f.get("anchor"),
             "why": f.get("why")} for report in reports for f in report.get("flags", [])]
    figure = plots.small_multiples(TITLE, panels, "step", columns=3) if panels else None
    if figure is not None:
        for trace in figure["figure"]["data"]:
            if trace["name"] in ("onset", "flag"):  # marks on the reward's line, not lines of their own
                trace.update({"mode": "markers", "marker": {"size": 11, "symbol": "x" if trace["name"] == "flag"
                                                            else "diamond"}})
        figure["json"] = plots.figure_json(figure["figure"])
    return {"figure": figure, "rows": rows, "stages": len(reports)}
