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
from typing import Any

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

#: The judge audit's metrics (`audit_<judge>_<measure>`, issue 23): drawn in the run page's
#: "Judge audit" panel (view/audit.py) only, never among the groups above.
AUDIT_GROUP = "Judge audit"
AUDIT_PREFIX = "audit_"

#: Counts that describe how much was measured, not how well: shown in their own table,
#: never plotted (issue 14: `eval_prompts` = 2 plotted beside the results).
BOOKKEEPING = re.compile(r"^(eval_prompts|eval_judgments|eval_invalid|reward_count|pairs_candidates|pairs_invalid"
                         r"|eval_before_dpo_(judgments|invalid)|.*critic_prompts_shortened"
                         r"|.*_steps|proposals|world_size|.*_count|.*_n|.*_records)$")

#: Per-step training curves worth a panel, in order: (history key, label).
TRAINING_KEYS = (("loss", "loss"), ("reward", "reward mean"), ("reward_std", "reward sd"),
                 ("kl", "KL"), ("grad_norm", "grad norm"), ("frac_reward_zero_std", "zero-std fraction"),
                 ("rewards/margins", "DPO reward margin"), ("rewards/accuracies", "DPO reward accuracy"),
                 ("learning_rate", "learning rate"))

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


def small_multiples(title: str, panels: list[tuple[Any, ...]], xlabel: str, integer_x: bool = True,
                    columns: int = 3) -> dict[str, Any]:
    """One figure, a panel per (panel title, {series: [(x, y)]}[, panel's x label]), each
    panel with its own y scale; a series keeps its colour in every panel and appears once in
    the legend. A point may be (x, y, lo, hi, hover): an interval drawn as an error bar (lo,
    hi None: none) and a line of hover text (its n, say). x may be a category (a method's
    name): that panel's axis is then categorical, never integer ticks."""
    n = len(panels)
    cols = min(columns, n)
    rows = math.ceil(n / cols)
    names = list(dict.fromkeys(s for panel in panels for s in panel[1]))
    colour = {s: PALETTE[i % len(PALETTE)] for i, s in enumerate(names)}
    gap_x, gap_y = 0.07, 0.55 / max(rows, 1) / 2 if rows > 1 else 0.0
    width = (1 - gap_x * (cols - 1)) / cols
    height = (1 - gap_y * (rows - 1)) / rows
    data, annotations, layout = [], [], {}
    shown: set[str] = set()
    xs_all: list[float] = []
    for i, (panel, series, *own_label) in enumerate(panels):
        row, col = divmod(i, cols)
        axis = "" if i == 0 else str(i + 1)
        x0 = col * (width + gap_x)
        y1 = 1 - row * (height + gap_y)
        xs_panel = [p[0] for points in series.values() for p in points]
        xs_all.extend(xs_panel)
        x_axis: dict[str, Any] = {"domain": [x0, x0 + width], "anchor": f"y{axis}", "zeroline": False}
        if integer_x and all(isinstance(x, (int, float)) for x in xs_panel):
            x_axis.update(integer_axis([int(x) for x in xs_panel]))
        if own_label or row == rows - 1 or i + cols >= n:
            x_axis["title"] = {"text": own_label[0] if own_label else xlabel, "font": {"size": 11}}
        layout[f"xaxis{axis}"] = x_axis
        # Interval ends count as values: a constant rate with error bars keeps plotly's range.
        ys_panel = [v for pts in series.values() for p in pts for v in p[1:4] if isinstance(v, (int, float))]
        layout[f"yaxis{axis}"] = {"domain": [y1 - height, y1], "anchor": f"x{axis}", "zeroline": False,
                                  "automargin": True, **_constant_range(ys_panel)}
        annotations.append({"text": f"<b>{panel}</b>", "x": x0 + width / 2, "y": y1, "xref": "paper",
                            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
                            "font": {"size": 12}})
        for name, points in series.items():
            if all(isinstance(p[0], (int, float)) for p in points):
                points = sorted(points, key=lambda p: p[0])  # categories keep the caller's order
            trace = {"type": "scatter", "mode": "lines+markers", "name": name, "legendgroup": name,
                     "showlegend": name not in shown, "x": [p[0] for p in points],
                     "y": [p[1] for p in points], "xaxis": f"x{axis}", "yaxis": f"y{axis}",
                     "line": {"color": colour[name]}, "marker": {"size": 6}}
            trace.update(_error_bars(points))
            data.append(trace)
            shown.add(name)
    # The legend sits a fixed distance below the plotting area (paper units are relative to
    # it), under the bottom row's axis titles whatever the number of rows.
    plot_height = 230 * rows
    layout.update({"height": plot_height + 140, "margin": {"l": 50, "r": 20, "t": 40, "b": 100},
                   "annotations": annotations, "hovermode": "closest",
                   "legend": {"orientation": "h", "x": 0, "y": -62 / plot_height, "yanchor": "top",
                              "font": {"size": 11}},
                   "template": None, "plot_bgcolor": "#fff", "paper_bgcolor": "#fff"})
    for key, value in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            value.update({"showgrid": True, "gridcolor": "#eceff3", "linecolor": "#9aa4ae", "showline": True})
    return {"id": plot_id(title), "title": title, "figure": {"data": data, "layout": layout}}


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
        out["hovertemplate"] = "%{fullData.name}<br>%{x}: %{y:.4g}<br>%{text}<extra></extra>"
    return out


def _constant_range(values: list[float]) -> dict[str, Any]:
    """A y range around a panel's one value: plotly's own (value ± 1) flattens a constant
    0.002 onto the 0 tick, which reads as "nothing changed"."""
    if not values or min(values) != max(values) or values[0] == 0:
        return {}
    v = abs(values[0])
    return {"range": [values[0] - v / 2, values[0] + v / 2]}


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
        panels = [(name, plotted[name]) for name in sorted(plotted, key=_metric_order) if group_of(name) == group]
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
        ordered = [(label, panels[label]) for _, label in TRAINING_KEYS if label in panels
                   and (label != "learning rate" or len({y for pts in panels[label].values() for _, y in pts}) > 1)]
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
    """An experiment's own plot (meta "plots": {series: [(x, y)], "_xlabel": ...})."""
    xlabel = series.get("_xlabel", "round") if series else "round"
    lines = {k: [tuple(p) for p in v if p[1] is not None] for k, v in (series or {}).items()
             if not k.startswith("_") and v}
    lines = {k: v for k, v in lines.items() if v}
    if not lines:
        return None
    integer = all(float(x).is_integer() for v in lines.values() for x, _ in v)
    figure = small_multiples(title, [(title if len(title) <= 70 else title[:67] + "...", lines)], xlabel,
                             integer_x=integer, columns=1)
    figure["figure"]["layout"]["height"] = 360
    return figure


def distribution_figures(distributions: dict[str, dict[str, dict[str, list[float]]]]) -> list[dict[str, Any]]:
    """Box plots per round of values an experiment kept ({title: {series: {round: [values]}}})."""
    figures = []
    for title, series in sorted(distributions.items()):
        data, rounds = [], set()
        for i, (name, by_round) in enumerate(sorted(series.items())):
            xs, ys = [], []
            for r, values in sorted(by_round.items(), key=lambda kv: int(kv[0])):
                rounds.add(int(r))
                xs.extend([str(int(r))] * len(values))  # categories: one box per round, never a 1.5
                ys.extend(values)
            if ys:
                data.append({"type": "box", "name": name, "x": xs, "y": ys, "boxpoints": "all", "jitter": 0.3,
                             "marker": {"color": PALETTE[i % len(PALETTE)], "size": 4}})
        if data:
            layout = {"height": 340, "boxmode": "group", "margin": {"l": 50, "r": 20, "t": 20, "b": 50},
                      "xaxis": {"title": {"text": "round"}, "type": "category",
                                "categoryorder": "array", "categoryarray": [str(r) for r in sorted(rounds)]},
                      "yaxis": {"zeroline": False}, "plot_bgcolor": "#fff", "legend": {"orientation": "h"}}
            figures.append({"id": plot_id(title), "title": title, "figure": {"data": data, "layout": layout}})
    return figures


def figure_json(figure: dict[str, Any]) -> str:
    """The figure as the JSON a `data-figure` attribute carries."""
    return json.dumps(figure, separators=(",", ":"), allow_nan=False, default=str)
