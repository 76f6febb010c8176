"""What a run folder holds at a glance: algorithm, status, when, how long, a few results.

Shared by `coevo runs` and the viewer's runs list, so both say the same thing. Read-only:
a run that is still going is looked at without being touched.
"""

from __future__ import annotations

import json
import math
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

#: Metrics worth a column in a list of runs, best first; the first few a run has are shown.
HEADLINE_METRICS = ("gold_score", "win_rate_vs_round0", "refine_delta", "pass_at_1", "factscore_precision",
                    "precision", "detection_rate", "test_mean", "gold_mean", "test_gold", "S(y1)", "delta",
                    "constraint_pass_rate", "reward_mean", "invalid_judgment_rate")
#: How many headline numbers a run gets.
HEADLINE_COUNT = 3


class RunMark(BaseModel):
    """A warning as the runs list marks a run: a few words beside its status, the sentence on hover."""

    kind: str
    label: str
    text: str


#: The few words each kind of mark shows (view/warnings.py's and trust_warnings.py's kinds).
MARK_LABELS = {"judge-audit": "judge failed its audit", "cut-off": "outputs cut off",
               "invalid-judgments": "unreadable judgments"}


def run_marks(store: Any, metrics: list[dict[str, Any]]) -> list[RunMark]:
    """The warnings a list of runs can afford (each reads a count or the few flagged rows): a
    judge that failed the run's audit, most outputs cut off at their token limit, a judge
    mostly unreadable. The run page gives every warning (view/warnings.py)."""
    from coevo.view.trust_warnings import cut_off_at_a_glance, invalid_judgments, judge_audit

    found = judge_audit(store, metrics) + cut_off_at_a_glance(store) + invalid_judgments(store)
    return [RunMark(kind=f.kind, label=MARK_LABELS.get(f.kind, f.kind), text=f.text) for f in found]


class RunInfo(BaseModel):
    """One run folder as a list of runs shows it."""

    run: str = Field(description="the run folder's path relative to the folder listed")
    path: str
    algorithm: str = "?"
    status: str = Field("unknown", description="running, finished, failed, resumable, interrupted or unknown")
    error: str | None = None
    started: str | None = Field(None, description="local time, YYYY-MM-DD HH:MM")
    duration_s: float | None = None
    headline: dict[str, float | str | None] = Field(default_factory=dict)
    headline_text: dict[str, str] = Field(
        default_factory=dict, description="each headline number with its interval and n, or 'too few to tell'")
    rollouts: int = 0
    marks: list[RunMark] = Field(default_factory=list, description="what to distrust before reading the numbers")


def find_runs(root: str | Path, depth: int = 2) -> list[Path]:
    """Run folders (holding run.sqlite) at `root` itself or up to `depth` levels below, sorted."""
    from coevo.rundir.store import STORE_FILE

    root = Path(root)
    found = []
    patterns = [STORE_FILE] + ["/".join(["*"] * d + [STORE_FILE]) for d in range(1, depth + 1)]
    for pattern in patterns:
        found.extend(p.parent for p in root.glob(pattern) if p.is_file())
    return sorted(set(found))


def read_algorithm(run_dir: str | Path) -> str:
    """The run's algorithm ("?" when its store cannot be read or names none)."""
    from coevo.rundir.store import RunStore, StoreError

    try:
        store = RunStore(run_dir, read_only=True)
    except (StoreError, FileNotFoundError, OSError):
        return "?"
    try:
        return str(store.get_meta("algorithm") or "?")
    finally:
        store.close()


def format_duration(seconds: float | None) -> str:
    """`1h 02m`, `3m 05s`, `12s`; "—" for None."""
    if seconds is None:
        return "—"
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds}s"


def _epoch(value: Any) -> float | None:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            return None
    return None


def run_info(run_dir: str | Path, root: str | Path | None = None) -> RunInfo:
    """The run folder's summary line. An unreadable store gives status `unreadable: ...`
    instead of an error: one bad folder must not hide the others in a list."""
    from coevo.rundir.lock import run_status
    from coevo.rundir.store import RunStore, StoreError

    run_dir = Path(run_dir)
    name = str(run_dir.relative_to(root)) if root is not None and run_dir != Path(root) else run_dir.name
    try:
        store = RunStore(run_dir, read_only=True)
    except (StoreError, FileNotFoundError) as exc:
        return RunInfo(run=name, path=str(run_dir), status=f"unreadable: {exc}")
    try:
        status = run_status(run_dir, store.get_meta("status"))
        provenance = store.get_meta("provenance") or {}
        started = _epoch(provenance.get("started")) or _epoch(store.get_meta("started"))
        finished = _epoch(provenance.get("finished")) or _epoch(store.get_meta("finished"))
        duration = provenance.get("duration_s")
        if duration is None and started is not None:
            if finished is not None:
                duration = finished - started
            elif status == "running":
                duration = time.time() - started
        metrics = store.metrics()
        n_rollouts = sum(n for _, n in store.rollout_stages())
        headline = headline_metrics(read_summary(run_dir), metrics)
        return RunInfo(
            run=name, path=str(run_dir), algorithm=str(store.get_meta("algorithm") or "?"),
            status="unknown" if status == "?" else status,
            error=store.get_meta("error") if status in ("failed", "interrupted") else None,
            started=time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else None,
            duration_s=duration, headline=headline, headline_text=headline_texts(headline, metrics),
            rollouts=n_rollouts, marks=run_marks(store, metrics))
    finally:
        store.close()


def headline_texts(headline: dict[str, float | str | None], metrics: list[dict[str, Any]]) -> dict[str, str]:
    """Each headline number as `estimate_text` writes it: with the interval and n logged beside
    it where its logged value is the one shown (summary.json's table may hold another row's)."""
    from coevo.eval.metric_defs import estimate_text, latest_estimates

    estimates = latest_estimates(metrics, list(headline))
    out = {}
    for name, value in headline.items():
        estimate = estimates.get(name)
        if estimate is not None and estimate.value is not None and (
                # summary.json's tables may hold the number already formatted (with an interval).
                not isinstance(value, (int, float))
                or math.isclose(estimate.value, value, rel_tol=1e-6, abs_tol=1e-9)):
            out[name] = estimate.text()
        elif not isinstance(value, (int, float)):
            out[name] = "—" if value is None else str(value)
        else:
            out[name] = estimate_text(value) + " (n not logged)"
    return out


def runs_under(root: str | Path) -> list[RunInfo]:
    """`run_info` of every run folder under `root`."""
    return [run_info(path, root) for path in find_runs(root)]


def read_summary(run_dir: Path) -> dict[str, Any]:
    """A run's summary.json ({} when it has none yet, or an unreadable one)."""
    path = run_dir / "summary.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        return {}


def headline_metrics(summary: dict[str, Any], metrics: list[dict[str, Any]]) -> dict[str, float | str | None]:
    """A few final numbers: from summary.json's table when the run finished (its last row,
    or the last round's column of a metric-per-row table), else from the last round logged."""
    table = summary.get("table") if isinstance(summary.get("table"), dict) else None
    found: dict[str, float | str | None] = {}
    if table and table.get("rows"):
        columns, rows = table.get("columns", []), table["rows"]
        if columns and columns[0] == "metric":  # one row per metric, one column per round
            last = columns[-1]
            values = {row.get("metric"): row.get(last) for row in rows}
        else:  # one row per condition / method: the last is the trained one
            values = dict(rows[-1])
        for name in HEADLINE_METRICS:
            if values.get(name) is not None:
                found[name] = values[name]
    if not found and metrics:
        last_round: dict[str, tuple[int, float | None]] = {}
        for m in metrics:
            r = m["round"] if m["round"] is not None else -1
            if m["name"] not in last_round or r >= last_round[m["name"]][0]:
                last_round[m["name"]] = (r, m["value"])
        for name in HEADLINE_METRICS:
            if name in last_round and last_round[name][1] is not None:
                found[name] = last_round[name][1]
    return dict(list(found.items())[:HEADLINE_COUNT])
