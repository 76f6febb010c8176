"""`coevo report RUN`: one self-contained HTML page for a run folder.

Config, metric tables, plots over rounds (matplotlib, PNG inlined as base64), example
rollouts side by side, judge validity counts, and warnings for the reward-hacking signs
the papers name (length inflation, many unreadable judgments, proxy up / held-out flat).
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from coevo.store import RunStore

REPORT_FILE = "report.html"

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.warn{background:#fff4e5;border-left:4px solid #f90;padding:.5em 1em}
.cols{display:grid;grid-template-columns:repeat(4,1fr);gap:8px}.cols div{background:#fafafa;border:1px solid #ddd;padding:6px;white-space:pre-wrap;font-size:12px;max-height:300px;overflow:auto}
pre{background:#f6f6f6;padding:1em;overflow:auto}img{max-width:100%}
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f"<th class=l>{_esc(c)}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c, "")
            cells.append(f"<td>{v:.3f}</td>" if isinstance(v, float) else f"<td class=l>{_esc(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _plot_png(series: dict[str, list[tuple[float, float]]], title: str, xlabel: str = "round") -> str:
    import matplotlib

    matplotlib.use("Agg")  # no display on servers; must precede pyplot
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2))
    for name, points in sorted(series.items()):
        xs, ys = zip(*sorted(points))
        ax.plot(xs, ys, marker="o", label=name)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">'


def metric_plots(metrics: list[dict[str, Any]]) -> list[str]:
    """One plot per metric that was logged for two or more rounds."""
    by_name: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for m in metrics:
        if m["round"] is not None and m["value"] is not None:
            by_name[m["name"]][m["stage"]].append((m["round"], m["value"]))
    return [
        _plot_png(series, name)
        for name, series in sorted(by_name.items())
        if any(len(points) > 1 for points in series.values())
    ]


def distribution_plots(distributions: dict[str, dict[str, dict[str, list[float]]]]) -> list[str]:
    """Box plots of values per round ({title: {series: {round: [values]}}}), one per series:
    e.g. the TAIScore critic's training rewards, whose spread matters as much as its mean."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    images = []
    for title, series in sorted(distributions.items()):
        for name, by_round in sorted(series.items()):
            rounds = sorted((int(r), v) for r, v in by_round.items() if v)
            if not rounds:
                continue
            fig, ax = plt.subplots(figsize=(6, 3.2))
            ax.boxplot([v for _, v in rounds], positions=[r for r, _ in rounds], widths=0.5)
            ax.set_title(f"{title}: {name}")
            ax.set_xlabel("round")
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=110)
            plt.close(fig)
            images.append(f'<img src="data:image/png;base64,{base64.b64encode(buf.getvalue()).decode()}">')
    return images


def warnings_for(store: RunStore) -> list[str]:
    """The reward-hacking and noise signs worth a reader's attention."""
    out = []
    for judge, counts in store.judgment_counts().items():
        total = counts["valid"] + counts["invalid"]
        if total and counts["invalid"] / total > 0.3:
            out.append(f"judge {judge!r}: {counts['invalid']}/{total} judgments unreadable "
                       "(a small judge model is noisy; point the judge role at a larger model)")
    rollouts = [r for r in store.rollouts() if r.y1]
    if rollouts:
        ratio = sum(len(r.y1 or "") for r in rollouts) / max(1, sum(len(r.y0) for r in rollouts))
        if ratio > 1.5:
            out.append(f"length inflation: revisions are {ratio:.2f}x as long as initial responses")
    out.extend(store.get_meta("warnings", []))
    return out


def _skill_history(store: RunStore) -> list[str]:
    """DecoEvo's skill versions: table of decisions, then each candidate's diff."""
    from coevo.algorithms.skills import versions

    records = [v.model_dump() for v in versions(store)]
    if not records:
        return []
    columns = ["method", "seed", "name", "version", "parent", "step", "decision", "why"]
    parts = ["<h2>Skill history</h2>" + _table(records, columns)]
    for r in records:
        if r.get("diff"):
            parts.append(f"<h3>{_esc(r['method'])} seed{_esc(r['seed'])} {_esc(r['name'])} "
                         f"v{_esc(r['parent'])} → v{_esc(r['version'])} ({_esc(r['decision'])})</h3>"
                         f"<pre>{_esc(r['diff'])}</pre>")
    return parts


def build_report(run_dir: str | Path, examples: int = 3) -> Path:
    """Write `report.html` into the run folder and return its path."""
    store = RunStore(run_dir)
    config = store.get_meta("config", {})
    metrics = store.metrics()
    parts = [f"<!doctype html><meta charset=utf-8><title>coevo run {_esc(Path(run_dir).name)}</title>",
             f"<style>{_CSS}</style><h1>coevo run: {_esc(Path(run_dir).resolve())}</h1>"]
    for warning in warnings_for(store):
        parts.append(f"<p class=warn>{_esc(warning)}</p>")
    for title, table in store.get_meta("tables", {}).items():
        parts.append(f"<h2>{_esc(title)}</h2>" + _table(table["rows"], table["columns"]))
    for title, series in store.get_meta("plots", {}).items():  # experiment-chosen plots
        # A "_xlabel" entry names the x axis (e.g. RLAC's metric vs verification calls).
        xlabel = series.get("_xlabel", "round") if series else "round"
        series = {k: v for k, v in (series or {}).items() if not k.startswith("_") and v}
        if series:
            parts.append(f"<h2>{_esc(title)}</h2>"
                         + _plot_png({k: [tuple(p) for p in v] for k, v in series.items()}, title[:80], xlabel))
    for title, image in store.get_meta("figures", {}).items():  # an experiment's own PNG figures
        if str(image).startswith("data:image/png;base64,"):
            parts.append(f'<h2>{_esc(title)}</h2><img src="{_esc(image)}">')
    parts.extend(_skill_history(store))
    if metrics:
        parts.append("<h2>Metrics</h2>" + _table(metrics, ["stage", "round", "name", "value"]))
        parts.extend(metric_plots(metrics))
    parts.extend(distribution_plots(store.get_meta("distributions", {})))
    counts = store.judgment_counts()
    if counts:
        rows = [{"judge": j, **c} for j, c in sorted(counts.items())]
        parts.append("<h2>Judgments</h2>" + _table(rows, ["judge", "valid", "invalid"]))
    parts.append("<h2>Example rollouts</h2>")
    shown: dict[str, int] = defaultdict(int)
    for rollout in store.rollouts():
        key = rollout.condition
        if shown[key] >= examples:
            continue
        shown[key] += 1
        scores = ", ".join(f"{k}={j.score}" for k, j in rollout.judgments.items())
        cells = [("instruction x", rollout.x), ("initial y0", rollout.y0),
                 ("critique c", rollout.c or "—"), ("revision y1", rollout.y1 or "—")]
        parts.append(f"<h3>{_esc(rollout.sample_id)} · {_esc(key)} · {_esc(scores)}</h3><div class=cols>"
                     + "".join(f"<div><b>{_esc(t)}</b>\n{_esc(v)}</div>" for t, v in cells) + "</div>")
    parts.append("<h2>Config</h2><pre>" + _esc(json.dumps(config, indent=2)) + "</pre>")
    path = Path(run_dir) / REPORT_FILE
    path.write_text("\n".join(parts), encoding="utf-8")
    store.close()
    return path
