"""Plotly figures (as JSON the page's script draws) for the run page.

Metrics are grouped by what they tell (results, judges and rewards, training, preference
pairs, cost), one figure per group with a small panel per metric (each its own y scale) and
one line per stage; rounds are integers, so the x axis ticks only integers. Per-step
training curves come from TRL's logged history, one figure per kind of training (GRPO, DPO).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NamedTuple

from coevo.eval.metric_defs import MIN_ITEMS, MetricDef, describe
from coevo.view.plot_axes import (TRAINING, axis_title, definition_of, hover_definition, unit_suffix,
                                  y_range)

#: Metric groups in page order: (title, name pattern). First match wins; the rest is "Other".
GROUPS: tuple[tuple[str, str], ...] = (
    ("Scores", r"^(gold_score|win_rate.*|refine_.*|factscore_precision|facts_(correct|incorrect)"
                                 r"|pass_at_1|test_.*|gold_mean|diag_.*|train_proxy|probe_.*"
                                 r"|constraint_.*)$"),
    ("Judges, rewards and critics", r"^(reward_(mean|sd|invalid_rate)|invalid_judgment_rate|detection_rate"
                                    r"|position_consistency_.*|first_position_rate_.*|outcome_.*|.*_mean)$"),
    ("Training", r"^(.*_loss|.*_grad_norm|.*weight_delta|.*zero_std_fraction|.*reward_group_sd|.*clipped_ratio"
                 r"|kl_from_base)$"),
    ("Preference pairs", r"^(pairs_.*|generator_pairs|critic_pairs)$"),
    ("Cost", r"^(.*_seconds_per_step|.*_peak_rss_mb|.*_time_share|calls_.*|output_tokens|heldout_output_chars)$"),
)

#: The judge audit's metrics (`audit_<judge>_<measure>`): drawn in the run page's
#: "Judge audit" panel (view/audit.py) only, never among the groups above.
AUDIT_GROUP = "Judge audit"
AUDIT_PREFIX = "audit_"

#: Counts that describe how much was measured, not how well: shown in their own table,
#: never plotted (an `eval_prompts` of 2 drawn beside the results reads as a result).
BOOKKEEPING = re.compile(r"^(eval_prompts|eval_judgments|eval_invalid|reward_count|pairs_candidates|pairs_invalid"
                         r"|eval_before_dpo_(judgments|invalid)|.*critic_prompts_shortened"
                         r"|.*_steps|proposals|world_size|.*_count|.*_n|.*_records)$")

#: Per-step training curves worth a panel, in order: (history key, panel title); their
#: units and definitions are plot_axes.TRAINING's.
TRAINING_KEYS = tuple((key, definition.title) for key, definition in TRAINING.items())

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
           "#4b5563", "#65a30d")


def is_bookkeeping(name: str) -> bool:
    return bool(BOOKKEEPING.match(name))


def group_of(name: str) -> str:
    if name.startswith(AUDIT_PREFIX):
        return AUDIT_GROUP
    for title, pattern in GROUPS:
        if re.match(pattern, name):
            return title
    return "Other"


def plot_id(title: str) -> str:
    """`plot-...`: the element id of a figure (tests and the browser find plots by it)."""
    return "plot-" + (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "figure")


def integer_axis(values: list[int]) -> dict[str, Any]:
    """An x axis with ticks on integers only (rounds, steps): every value when few, else an
    integer step between ticks."""
    values = sorted(set(values))
    if not values:
        return {"tickmode": "linear", "dtick": 1}
    if len(values) <= 12:
        return {"tickmode": "array", "tickvals": values, "ticktext": [str(v) for v in values]}
    span = values[-1] - values[0]
    return {"tickmode": "linear", "tick0": values[0], "dtick": max(1, math.ceil(span / 10))}


class Panel(NamedTuple):
    """One panel of a small-multiples figure: its title in words, its lines ({series: [(x, y)
    [, lo, hi, hover]]}), its own x label where it differs from the figure's, and what its y
    values are (a registry name or a definition: the y axis's unit, range and hover text)."""

    title: str
    series: dict[str, list[tuple[Any, ...]]]
    xlabel: str | None = None
    metric: str | MetricDef | None = None


#: A panel's plotting height and the room between two rows (x ticks and title, the next
#: row's panel titles), in pixels: a figure is rows x this tall at any width.
PANEL_PX, ROW_GAP_PX = 230, 64
#: Under this many pixels per panel a grid drops a column (view.js picks the layout).
MIN_PANEL_PX = 300
#: Paper-width gap between columns: room for the next panel's tick labels and y title.
COLUMN_GAP = 0.08


def grid_layout(n: int, cols: int, xlabels: list[tuple[bool, str]]) -> dict[str, Any]:
    """The geometry of n panels in `cols` columns: the figure's height, each panel's axis
    domains, title position and x title (only under the last panel of a column, or where a
    panel's x label is its own: `xlabels` are (own, label)), and the legend's place under the
    bottom row."""
    rows = math.ceil(n / cols)
    plot_px = PANEL_PX * rows
    gap_y = ROW_GAP_PX / plot_px if rows > 1 else 0.0
    width = (1 - COLUMN_GAP * (cols - 1)) / cols
    height = (1 - gap_y * (rows - 1)) / rows
    panels = []
    for i in range(n):
        row, col = divmod(i, cols)
        x0, y1 = col * (width + COLUMN_GAP), 1 - row * (height + gap_y)
        below = i + cols < n
        panels.append({"x": [x0, x0 + width], "y": [y1 - height, y1], "title_at": [x0 + width / 2, y1],
                       "xtitle": xlabels[i][1] if xlabels[i][0] or not below else ""})
    # The legend sits a fixed distance below the plotting area (paper units are relative to
    # it), under the bottom row's axis titles whatever the number of rows.
    return {"columns": cols, "height": plot_px + 140, "legend_y": -62 / plot_px, "panels": panels}


def _relayout(geometry: dict[str, Any]) -> dict[str, Any]:
    """A grid's geometry as the flat updates `Plotly.relayout` takes (view.js applies them)."""
    out: dict[str, Any] = {"height": geometry["height"], "legend.y": geometry["legend_y"]}
    for i, panel in enumerate(geometry["panels"]):
        axis = "" if i == 0 else str(i + 1)
        out |= {f"xaxis{axis}.domain": panel["x"], f"yaxis{axis}.domain": panel["y"],
                f"xaxis{axis}.title.text": panel["xtitle"], f"annotations[{i}].x": panel["title_at"][0],
                f"annotations[{i}].y": panel["title_at"][1]}
    return out


def small_multiples(title: str, panels: list[Panel | tuple[Any, ...]], xlabel: str, integer_x: bool = True,
                    columns: int = 3) -> dict[str, Any]:
    """One figure, a panel per `Panel` (or a tuple of its fields), each panel with its own y
    scale; a series keeps its colour in every panel and appears once in the legend. A point
    may be (x, y, lo, hi, hover): an interval drawn as an error bar (lo, hi None: none) and a
    line of hover text (its n, say). x may be a category (a method's name): that panel's axis
    is then categorical, never integer ticks.

    The figure is laid out for `columns` columns; its "grid" holds the layout for each fewer
    column count, which view.js uses where the page is too narrow for the panels (a figure's
    height follows its rows, so the page gives its box that height)."""
    panels = [p if isinstance(p, Panel) else Panel(*p) for p in panels]
    n = len(panels)
    names = list(dict.fromkeys(s for panel in panels for s in panel.series))
    colour = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(names)}
    xlabels = [(p.xlabel is not None, p.xlabel or xlabel) for p in panels]
    layouts = [grid_layout(n, cols, xlabels) for cols in range(min(columns, n), 0, -1)]
    widest = layouts[0]
    data, annotations, layout = [], [], {}
    shown: set[str] = set()
    for i, (panel, geometry) in enumerate(zip(panels, widest["panels"])):
        axis = "" if i == 0 else str(i + 1)
        metric = definition_of(panel.metric)
        panel = clip_to_scale(panel, metric)
        layout[f"xaxis{axis}"], layout[f"yaxis{axis}"] = _panel_axes(panel, geometry, axis, metric, integer_x)
        annotations.append(_panel_title(panel, geometry, metric))
        data += _panel_traces(panel, axis, metric, xlabels[i][1], colour, shown)
    layout.update({"height": widest["height"], "margin": {"l": 50, "r": 20, "t": 40, "b": 100},
                   "annotations": annotations, "hovermode": "closest",
                   "legend": {"orientation": "h", "x": 0, "y": widest["legend_y"], "yanchor": "top",
                              "font": {"size": 11}},
                   "template": None, "plot_bgcolor": "#fff", "paper_bgcolor": "#fff"})
    _style_axes(layout)
    figure: dict[str, Any] = {"data": data, "layout": layout}
    if len(layouts) > 1:
        figure["grid"] = {"min_panel_px": MIN_PANEL_PX,
                          "layouts": [[g["columns"], _relayout(g)] for g in layouts]}
    return {"id": plot_id(title), "title": title, "figure": figure}


def drawn_interval(low: Any, high: Any, n: Any) -> tuple[float | None, float | None]:
    """A point's (low, high) as a figure draws it: none without both ends, and none from fewer
    than MIN_ITEMS items, where the tables say "too few to tell" (a 95 % bar from 2 items
    spans most of the scale and says nothing)."""
    finite = [isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in (low, high)]
    if not all(finite) or (isinstance(n, (int, float)) and n < MIN_ITEMS):
        return None, None
    return float(low), float(high)


def clip_to_scale(panel: Panel, metric: MetricDef | None) -> Panel:
    """The panel with its interval ends kept inside the metric's scale (a normal-approximation
    interval of a 1–10 score can run to −10): a bar never claims values the metric cannot take.
    The values themselves are left alone, so one outside the scale (a bug) still shows."""
    low, high = (metric.low, metric.high) if metric is not None else (None, None)
    if low is None and high is None:
        return panel

    def clip(v: Any) -> Any:
        if not isinstance(v, (int, float)):
            return v
        return min(max(v, low if low is not None else v), high if high is not None else v)

    series = {name: [(*p[:2], clip(p[2]), clip(p[3]), *p[4:]) if len(p) > 3 else p for p in points]
              for name, points in panel.series.items()}
    return panel._replace(series=series)


def _panel_axes(panel: Panel, geometry: dict[str, Any], axis: str, metric: MetricDef | None,
                integer_x: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """A panel's x and y axes: placed where the grid puts it, integer x ticks where every x
    is a number (and `integer_x`), a y range that holds its values and error bars."""
    xs_panel = [p[0] for points in panel.series.values() for p in points]
    x_axis: dict[str, Any] = {"domain": geometry["x"], "anchor": f"y{axis}", "zeroline": False,
                              "title": {"text": geometry["xtitle"], "font": {"size": 11}}}
    if integer_x and all(isinstance(x, (int, float)) for x in xs_panel):
        x_axis.update(integer_axis([int(x) for x in xs_panel]))
    # Interval ends count as values: the axis must hold the error bars too.
    ys_panel = [v for pts in panel.series.values() for p in pts for v in p[1:4] if isinstance(v, (int, float))]
    y_axis = {"domain": geometry["y"], "anchor": f"x{axis}", "zeroline": False,
              "automargin": True, **y_range(ys_panel, metric)}
    if metric is not None:
        y_axis["title"] = axis_title(metric)
    return x_axis, y_axis


def _panel_title(panel: Panel, geometry: dict[str, Any], metric: MetricDef | None) -> dict[str, Any]:
    """The annotation above a panel: its title, with its metric's definition on hover."""
    return {"text": f"<b>{panel.title}</b>", "x": geometry["title_at"][0],
            "y": geometry["title_at"][1], "xref": "paper", "yref": "paper", "xanchor": "center",
            "yanchor": "bottom", "showarrow": False, "font": {"size": 12},
            **({"hovertext": hover_definition(metric)} if metric is not None else {})}


def _panel_traces(panel: Panel, axis: str, metric: MetricDef | None, xlabel: str, colour: dict[str, str],
                  shown: set[str]) -> list[dict[str, Any]]:
    """A panel's lines, one per series in its figure-wide colour; a series is in the legend
    once (the names it adds go into `shown`)."""
    traces = []
    for name, points in panel.series.items():
        if all(isinstance(p[0], (int, float)) for p in points):
            points = sorted(points, key=lambda p: p[0])  # categories keep the caller's order
        trace = {"type": "scatter", "mode": "lines+markers", "name": name, "legendgroup": name,
                 "showlegend": name not in shown, "x": [p[0] for p in points],
                 "y": [p[1] for p in points], "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                 "line": {"color": colour[name]}, "marker": {"size": 6}}
        trace.update(_error_bars(points))
        trace["hovertemplate"] = _hover(panel, metric, xlabel, "text" in trace)
        traces.append(trace)
        shown.add(name)
    return traces


def _style_axes(layout: dict[str, Any]) -> None:
    """Every axis of a layout drawn alike: a light grid, a visible line."""
    for key, value in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            value.update({"showgrid": True, "gridcolor": "#eceff3", "linecolor": "#9aa4ae", "showline": True})
            if key.startswith("yaxis"):
                value["exponentformat"] = "e"  # 1e-05, as a learning rate is written, not plotly's 10μ


def _hover(panel: Panel, metric: MetricDef | None, xlabel: str, has_text: bool) -> str:
    """A point's hover: its line, x and y with the y's unit, its own text (n, interval), then
    what the panel's metric is."""
    lines = ["%{fullData.name}", f"{xlabel} %{{x}}: %{{y:.4g}}{unit_suffix(metric)}"]
    if has_text:
        lines.append("%{text}")
    if metric is not None:
        lines += ["", f"<b>{panel.title}</b>", hover_definition(metric)]
    return "<br>".join(lines) + "<extra></extra>"


def _error_bars(points: list[tuple[Any, ...]]) -> dict[str, Any]:
    """A trace's asymmetric error bars (from points' lo, hi) and hover text, where given."""
    out: dict[str, Any] = {}
    if any(len(p) > 3 and p[2] is not None and p[3] is not None for p in points):
        # A point without an interval gets a zero-length bar, not a made-up one.
        out["error_y"] = {"type": "data", "symmetric": False, "thickness": 1.5, "width": 4,
                          "array": [p[3] - p[1] if len(p) > 3 and p[3] is not None else 0 for p in points],
                          "arrayminus": [p[1] - p[2] if len(p) > 3 and p[2] is not None else 0 for p in points]}
    if any(len(p) > 4 and p[4] for p in points):
        out["text"] = [p[4] if len(p) > 4 and p[4] else "" for p in points]
    return out


def metric_figures(metrics: list[dict[str, Any]], xlabel: str = "round") -> list[dict[str, Any]]:
    """Figures of the per-round metrics logged for two or more rounds, grouped (GROUPS order),
    bookkeeping counts and the judge audit's metrics (its own panel, view/audit.py) left out.
    `xlabel`: what the store's round column counts (DecoEvo logs its inner steps there)."""
    series: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for m in metrics:
        if (m["round"] is None or m["value"] is None or is_bookkeeping(m["name"])
                or m["name"].startswith(AUDIT_PREFIX)):
            continue
        if not isinstance(m["value"], (int, float)) or not math.isfinite(m["value"]):
            continue
        series.setdefault(m["name"], {}).setdefault(m["stage"], []).append((int(m["round"]), float(m["value"])))
    # An interval's bounds (`x_lo`, `x_hi`) are not metrics of their own: the target figure
    # draws them as x's error bars (view/targets.py), so they get no panel here.
    bounds = {f"{name}{end}" for name in series for end in ("_lo", "_hi")}
    plotted = {name: by_stage for name, by_stage in series.items() if name not in bounds
               and any(len({r for r, _ in points}) > 1 for points in by_stage.values())}
    order = [title for title, _ in GROUPS] + ["Other"]
    figures = []
    for group in order:
        # A panel's title is the metric's in words; its raw name is in the title's hover.
        panels = [Panel(describe(name).title, plotted[name], metric=name)
                  for name in sorted(plotted, key=_metric_order) if group_of(name) == group]
        if panels:
            figures.append(small_multiples(f"{group} by {xlabel}", panels, xlabel))
    return figures


def _metric_order(name: str) -> tuple[int, str]:
    # Within a group, the headline metrics first (as the summary tables order them).
    first = ("gold_score", "win_rate_vs_round0", "refine_S_y1", "refine_delta", "refine_S_y1_after_dpo",
             "refine_delta_after_dpo", "pass_at_1",
             "factscore_precision", "detection_rate", "reward_mean", "reward_sd", "invalid_judgment_rate")
    return (first.index(name) if name in first else len(first), name)


def logged_steps(history: list[Any]) -> list[dict[str, Any]]:
    """TRL's per-step rows of a `log_history`, without the end-of-training summary row (the
    one with `train_runtime`, which comes last)."""
    return [entry for entry in history if isinstance(entry, dict) and "train_runtime" not in entry]


def training_figures(logs: list[dict[str, Any]], kinds: dict[str, str]) -> list[dict[str, Any]]:
    """Per-step training curves from TRL's history: one figure per kind of training (`kinds`
    maps a stage to grpo / dpo), a panel per logged quantity, a line per stage."""
    by_kind: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {}
    for log in logs:
        kind = kinds.get(log["stage"]) or _guess_kind(log["history"])
        panels = by_kind.setdefault(kind, {})
        for i, entry in enumerate(logged_steps(log["history"])):
            step = entry.get("step", i + 1)
            for key, label in TRAINING_KEYS:
                value = entry.get(key)
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    panels.setdefault(label, {}).setdefault(log["stage"], []).append((step, float(value)))
    figures = []
    names = {"grpo": "GRPO (critic)", "dpo": "DPO"}
    for kind, panels in by_kind.items():
        # A constant learning rate is a setting, not a curve: shown only when it was scheduled.
        ordered = [Panel(label, panels[label], metric=TRAINING[key]) for key, label in TRAINING_KEYS if label in panels
                   and (key != "learning_rate" or len({y for pts in panels[label].values() for _, y in pts}) > 1)]
        if ordered:
            figures.append(small_multiples(f"Training curves: {names.get(kind, kind)} per step", ordered, "step"))
    return figures


def _guess_kind(history: list[Any]) -> str:
    keys = {k for entry in history if isinstance(entry, dict) for k in entry}
    if "reward" in keys or "frac_reward_zero_std" in keys:
        return "grpo"
    if any(k.startswith("rewards/") for k in keys):
        return "dpo"
    return "training"


def series_figure(title: str, series: dict[str, Any]) -> dict[str, Any] | None:
    """An experiment's own plot (meta "plots": {series: [(x, y)], "_xlabel": ..., "_metric": ...}).
    Its y values are `_metric`, else the metric its title starts with where the registry knows
    it (RLAC's "factscore_precision vs verification calls"): then its words, unit and scale."""
    xlabel = series.get("_xlabel", "round") if series else "round"
    lines = {k: [tuple(p) for p in v if p[1] is not None] for k, v in (series or {}).items()
             if not k.startswith("_") and v}
    lines = {k: v for k, v in lines.items() if v}
    if not lines:
        return None
    metric = (series or {}).get("_metric") or _registered(title.split()[0])
    shown = title if not metric else title.replace(metric, describe(metric).title, 1)
    integer = all(float(x).is_integer() for v in lines.values() for x, *_ in v)
    figure = small_multiples(title, [Panel(shown if len(shown) <= 70 else shown[:67] + "...", lines, metric=metric)],
                             xlabel, integer_x=integer, columns=1)
    figure["title"] = shown  # the id stays the logged title's: links and tests find it by that
    figure["figure"]["layout"]["height"] = 360
    return figure


def _registered(name: str) -> str | None:
    """`name` when the metric registry defines it."""
    from coevo.eval.metric_defs import is_defined

    return name if is_defined(name) else None


def _pale(colour: str, alpha: float = 0.15) -> str:
    """`#rrggbb` as a see-through rgba()."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


#: The metric a kept distribution's values are samples of (its y axis's unit and scale), by title.
DISTRIBUTION_METRICS = {"critic training reward (GRPO)": "reward_mean"}


def distribution_figures(distributions: dict[str, dict[str, dict[str, list[float]]]]) -> list[dict[str, Any]]:
    """Box plots per round of values an experiment kept ({title: {series: {round: [values]}}}),
    each value drawn as a point on its box (jittered across the box's width, never beside it)."""
    figures = []
    for title, series in sorted(distributions.items()):
        data, rounds, values_all = [], set(), []
        for i, (name, by_round) in enumerate(sorted(series.items())):
            xs, ys = [], []
            for r, values in sorted(by_round.items(), key=lambda kv: int(kv[0])):
                rounds.add(int(r))
                xs.extend([str(int(r))] * len(values))  # categories: one box per round, never a 1.5
                ys.extend(values)
            if ys:
                values_all.extend(ys)
                colour = PALETTE[i % len(PALETTE)]
                # A pale box under full-colour points: each value stays visible on its box.
                data.append({"type": "box", "name": name, "x": xs, "y": ys, "boxpoints": "all", "pointpos": 0,
                             "jitter": 0.5, "fillcolor": _pale(colour), "line": {"color": colour, "width": 1.5},
                             "marker": {"color": colour, "size": 6, "line": {"color": "#fff", "width": 1}}})
        if data:
            metric = definition_of(DISTRIBUTION_METRICS.get(title))
            y_axis = {"zeroline": False, "automargin": True, **y_range(values_all, metric),
                      "title": axis_title(metric) or {"text": title, "font": {"size": 10, "color": "#5f6b76"}}}
            layout = {"height": 340, "boxmode": "group", "margin": {"l": 50, "r": 20, "t": 20, "b": 50},
                      "xaxis": {"title": {"text": "round"}, "type": "category",
                                "categoryorder": "array", "categoryarray": [str(r) for r in sorted(rounds)]},
                      "yaxis": y_axis, "plot_bgcolor": "#fff", "legend": {"orientation": "h"}}
            figures.append({"id": plot_id(title), "title": title, "figure": {"data": data, "layout": layout}})
    return figures


def figure_json(figure: dict[str, Any]) -> str:
    """The figure as the JSON a `data-figure` attribute carries."""
    return json.dumps(figure, separators=(",", ":"), allow_nan=False, default=str)
