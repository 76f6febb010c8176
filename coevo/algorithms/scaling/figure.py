"""Figure 1 of the TAIScore paper: bars of the mean larger-minus-smaller deltas, gray for
critic scaling and blue for refiner scaling, with 95 % CI error bars, written as a
self-contained plotly page into the run folder (plotly.js inlined, so it opens offline).
A bar resting on fewer than `MIN_N_FOR_INTERVAL` pairs is drawn without an interval: a
bootstrap over so few examples would read as more certain than it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Figure 1's colours.
COLOURS = {"critic": "#9ca3af", "refiner": "#2563eb"}
NAMES = {"critic": "larger critic (same y0, same refiner)", "refiner": "larger refiner (same y0, same critique)"}
MIN_N_FOR_INTERVAL = 5


def figure_dict(bars: list[dict[str, Any]]) -> dict[str, Any]:
    """The plotly figure (a plain dict) of Figure 1's bars (deltas.figure_rows)."""
    data = []
    for kind in ("critic", "refiner"):
        rows = [r for r in bars if r["scaling"] == kind and r["mean_diff"] is not None]
        if not rows:
            continue
        shown = [r["n"] >= MIN_N_FOR_INTERVAL and r["low"] is not None for r in rows]
        data.append({
            "type": "bar", "name": NAMES[kind], "x": [r["metric"] for r in rows], "y": [r["mean_diff"] for r in rows],
            "marker": {"color": COLOURS[kind]},
            "error_y": {"type": "data", "symmetric": False, "visible": any(shown),
                        "array": [r["high"] - r["mean_diff"] if ok else 0 for r, ok in zip(rows, shown)],
                        "arrayminus": [r["mean_diff"] - r["low"] if ok else 0 for r, ok in zip(rows, shown)]},
            "customdata": [[r["n"], r["comparisons"], _interval(r, ok)] for r, ok in zip(rows, shown)],
            "hovertemplate": "%{x}: %{y:+.3f}<br>95% CI %{customdata[2]}<br>n = %{customdata[0]} pairs over "
                             "%{customdata[1]} comparison(s)<extra>%{fullData.name}</extra>",
        })
    layout = {"title": {"text": "Controlled zero-shot analysis: larger minus smaller (paired, 95 % CI)"},
              "barmode": "group", "yaxis": {"title": {"text": "mean delta (10-point scale)"}, "zeroline": True},
              "plot_bgcolor": "#fff", "legend": {"orientation": "h"}, "height": 420}
    return {"data": data, "layout": layout}


def _interval(row: dict[str, Any], shown: bool) -> str:
    if not shown:
        return f"not drawn (n = {row['n']} < {MIN_N_FOR_INTERVAL})"
    return f"[{row['low']:+.3f}, {row['high']:+.3f}]"


def write_figure(bars: list[dict[str, Any]], path: Path) -> Path:
    """Write Figure 1 as a standalone HTML page at `path` and return it."""
    import plotly.graph_objects as go

    go.Figure(figure_dict(bars)).write_html(path, include_plotlyjs=True, full_html=True)
    return path
