"""The compare page: `/compare?run=ID&run=ID...`, runs side by side (as a W&B project page).

Its tables come from `coevo.view.comparison.compare_runs`, the function `coevo runs
--compare` prints, so page and terminal never disagree; this module adds only what a browser
needs: the overlaid curves (one figure per metric, a line per run; one per shared training
stage, a panel per quantity TRL logged per step), the "only the differing keys" link and the
error pages (an unknown run id, fewer than two runs).

Every panel is its metric's: its y axis says what it counts (the unit and scale from
coevo/eval/metric_defs.py, plot_axes.axis_title) and spans what plot_axes.y_range gives a scale
(a rate all of 0–1, a 1–10 score all of 1–10), so two runs' lines are read against the scale.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from coevo.eval.metric_defs import MIN_ITEMS, describe
from coevo.view import plots
from coevo.view.comparison import Comparison, Curve, compare_runs
from coevo.view.context import RunIndex, render
from coevo.view.plot_axes import TRAINING

router = APIRouter()


@router.get("/compare", response_class=HTMLResponse)
def compare_page(request: Request, run: list[str] = Query(default=[]), only: str = "") -> HTMLResponse:
    """`run`: the runs' ids, in column order (repeats dropped); `only=differing`: the config
    table keeps only the keys whose values differ."""
    index: RunIndex = request.app.state.runs
    ids = list(dict.fromkeys(r for r in run if r))
    unknown = [run_id for run_id in ids if index.get(run_id) is None]
    if unknown:
        names = ", ".join(repr(run_id) for run_id in unknown)
        return render(request, "compare.html", status_code=404, needs_plotly=False,
                      error=f"No run {names} here (a run id as the runs list shows it). Pick the runs to "
                            "compare from the runs list.")
    if len(ids) < 2:
        return render(request, "compare.html", needs_plotly=False,
                      error="Pick at least two runs to compare: tick them in the runs list, then "
                            "“Compare selected”." + (f" Only {ids[0]!r} was picked." if ids else ""))
    from coevo.rundir.store import StoreError

    refs = [index.get(run_id) for run_id in ids]
    try:
        comparison = compare_runs([(ref.id, ref.path) for ref in refs])
    except (StoreError, FileNotFoundError) as exc:  # a run folder deleted or broken since the list was shown
        return render(request, "compare.html", status_code=500, needs_plotly=False,
                      error=f"A run could not be read: {exc}")
    figures = curve_figures(comparison, _round_label([ref.algorithm for ref in refs]))
    training = training_figures(comparison)
    only_differing = only == "differing"
    # The settings that differ first; the identical ones (a hundred, mostly) folded after them.
    return render(request, "compare.html", comparison=comparison, figures=figures, training=training,
                  axis_labels={row.name: describe(row.name).axis_label for row in comparison.metrics},
                  min_items=MIN_ITEMS,
                  config_rows=comparison.differing,
                  same_rows=[] if only_differing else [row for row in comparison.config if not row.differs],
                  only_differing=only_differing, toggle_url=_url(ids, not only_differing),
                  needs_plotly=bool(figures or training))


def _url(ids: list[str], only_differing: bool) -> str:
    query = [("run", run_id) for run_id in ids] + ([("only", "differing")] if only_differing else [])
    return "/compare?" + urllib.parse.urlencode(query)


def _round_label(algorithms: list[str]) -> str:
    from coevo.view.run_page import ROUND_LABEL

    labels = {ROUND_LABEL.get(algorithm, "round") for algorithm in algorithms}
    return labels.pop() if len(labels) == 1 else "round"


def curve_figures(comparison: Comparison, xlabel: str = "round") -> list[dict[str, Any]]:
    """One figure per curve: a panel per stage, a line per run (each run keeps its colour)."""
    labels = [run.label for run in comparison.runs]
    figures = []
    for curve in comparison.curves:
        panels = _panels(curve)
        figure = plots.small_multiples(curve.title, panels, xlabel)
        _colour_by_run(figure, labels)
        figure["id"] = "plot-compare-" + _slug(curve.name)
        figure["name"], figure["definition"] = curve.name, curve.definition
        figure["coincide"] = coinciding(curve)
        figure["json"] = plots.figure_json(figure["figure"])
        figures.append(figure)
    return figures


def training_figures(comparison: Comparison) -> list[dict[str, Any]]:
    """One figure per training stage two or more runs share: a panel per quantity TRL logged
    per step (its unit on the y axis), a line per run in the run's colour."""
    labels = [run.label for run in comparison.runs]
    by_stage: dict[str, list[plots.Panel]] = {}
    for curve in comparison.training:
        definition = TRAINING[curve.key]
        by_stage.setdefault(curve.stage, []).append(plots.Panel(definition.title, dict(curve.runs), metric=definition))
    figures = []
    for stage, panels in by_stage.items():
        figure = plots.small_multiples(f"Training: {stage}", panels, "step")
        _colour_by_run(figure, labels)
        figure["id"] = "plot-compare-training-" + _slug(stage)
        figure["stage"] = stage
        figure["json"] = plots.figure_json(figure["figure"])
        figures.append(figure)
    return figures


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _colour_by_run(figure: dict[str, Any], labels: list[str]) -> None:
    """A run keeps its colour from figure to figure (plots.small_multiples colours by series)."""
    for trace in figure["figure"]["data"]:
        trace["line"]["color"] = plots.PALETTE[labels.index(trace["name"]) % len(plots.PALETTE)]


def _panels(curve: Curve) -> list[plots.Panel]:
    # No bar from fewer than 5 items: the metrics table says "too few to tell" there. Each
    # panel is the curve's metric: its y axis gets the metric's unit and scale.
    def shown(points):
        return [(r, value, *plots.drawn_interval(low, high, n), f"n={n}" if n is not None else "")
                for r, value, low, high, n in points]

    return [plots.Panel(stage, {label: shown(points) for label, points in by_run.items()}, metric=curve.name)
            for stage, by_run in curve.stages.items()]


def coinciding(curve: Curve) -> list[str]:
    """Sentences naming the runs whose lines in a panel are the same points: plotly draws them
    under each other, so the page would show one line where there are two or more."""
    notes = []
    for stage, by_run in curve.stages.items():
        same: dict[tuple[Any, ...], list[str]] = {}
        for label, points in by_run.items():
            same.setdefault(tuple((r, value) for r, value, *_ in points), []).append(label)
        for labels in same.values():
            if len(labels) > 1:
                notes.append(f"{stage}: the lines of {', '.join(labels[:-1])} and {labels[-1]} coincide "
                             "(the same value at every round): drawn on top of each other, they show as one.")
    return notes
