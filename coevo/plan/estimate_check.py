"""A run's estimate beside what it did cost: `coevo runs --estimates` and the benchmark.

A run keeps the estimate made when it started (run store meta `estimate`) and counts its
cost as it goes (`summary.json → cost`). Here the two meet: per (stage, role) calls and
tokens, per training stage steps and seconds, and the totals with their ratio (actual /
estimate: 1.0 is a perfect forecast, 2.0 a run that cost twice what was said).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from coevo.plan.estimate import RunEstimate


class Side(BaseModel):
    """One quantity, estimated and counted."""

    estimate: float | None
    actual: float | None

    @property
    def ratio(self) -> float | None:
        if not self.estimate or self.actual is None:
            return None
        return self.actual / self.estimate


#: The totals compared, in the order shown: (key in the estimate, key in the cost).
TOTALS = (("calls", "calls"), ("prompt_tokens", "prompt_tokens"), ("completion_tokens", "completion_tokens"),
          ("training_steps", "training_steps"), ("seconds", None))


def compare_totals(estimate: RunEstimate, cost: dict[str, Any], duration_s: float | None) -> dict[str, Side]:
    """Each total, estimated and counted; seconds against the run's wall time."""
    counted = cost.get("total") or {}
    # Calls are the completions a model wrote (the estimate's too): a completion the run's
    # cache answered cost nothing, and a resumed run's earlier calls are in its store already.
    out = {}
    for key, cost_key in TOTALS:
        actual = duration_s if key == "seconds" else counted.get(cost_key)
        out[key] = Side(estimate=estimate.total.get(key), actual=actual)
    return out


def compare_rows(estimate: RunEstimate, cost: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (stage, role): calls and tokens estimated and counted; a row only one side has
    shows None on the other (a stage the estimate missed, or one the run did not reach)."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for call in estimate.calls:
        rows[(call.stage, call.role)] = {"stage": call.stage, "role": call.role, "calls_est": call.calls,
                                         "calls": None, "prompt_tokens_est": call.prompt_tokens, "prompt_tokens": None,
                                         "completion_tokens_est": call.completion_tokens, "completion_tokens": None}
    for found in cost.get("calls") or []:
        key = (found.get("stage") or "", found.get("role") or "")
        row = rows.setdefault(key, {"stage": key[0], "role": key[1], "calls_est": None, "prompt_tokens_est": None,
                                    "completion_tokens_est": None})
        row.update(calls=found["calls"], cache_hits=found.get("cache_hits", 0), prompt_tokens=found["prompt_tokens"],
                   completion_tokens=found["completion_tokens"])
    return list(rows.values())


def run_comparison(run_dir: Any) -> dict[str, Side] | None:
    """The totals of a run folder's estimate and cost (None: the run kept no estimate, or
    has no cost yet)."""
    import json
    from pathlib import Path

    from coevo.rundir.store import RunStore

    store = RunStore(Path(run_dir), read_only=True)
    try:
        kept = store.get_meta("estimate")
        facts = store.get_meta("provenance") or {}
    finally:
        store.close()
    summary_path = Path(run_dir) / "summary.json"
    if kept is None or not summary_path.is_file():
        return None
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    if not summary.get("cost"):
        return None
    return compare_totals(RunEstimate.model_validate(kept), summary["cost"], facts.get("duration_s"))


def ratio_text(side: Side) -> str:
    """`est 310 · actual 189 (0.61x)`, for a table cell."""
    def number(value: float | None) -> str:
        return "?" if value is None else f"{value:,.0f}"

    ratio = side.ratio
    return f"{number(side.estimate)} → {number(side.actual)}" + (f" ({ratio:.2f}×)" if ratio is not None else "")


__all__ = ["Side", "compare_rows", "compare_totals", "ratio_text", "run_comparison"]
