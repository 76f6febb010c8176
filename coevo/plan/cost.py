"""What a run cost, stage by stage and role by role: `summary.json → cost`.

Counted, not estimated, from what the run store already keeps:

- every model call that went through the call cache (generation, judging, evaluation): its
  stage and role (the call tags), its prompt and completion tokens, its seconds, and dollars
  where the role's options give a `price` (llm/pricing.py); the completions answered from
  the cache instead (a resumed or repeated run) are counted apart, as `cache_hits`;
- every finished training stage: its steps, seconds, peak memory and the tokens TRL counted
  (`num_tokens`), which include the GRPO critiques TRL samples itself, outside the cache.

The run's wall time is the provenance's `duration_s`; `generation_seconds +
training_seconds` falls short of it by what neither counts (loading models, the data, the
audit's own arithmetic).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pydantic import BaseModel, Field

from coevo.rundir.store import RunStore


class CallCost(BaseModel):
    """The model calls of one role in one stage."""

    stage: str | None
    role: str | None
    #: Completions the model generated (a call for n samples counts n).
    calls: int = 0
    #: Completions answered from the run's cache instead of the model.
    cache_hits: int = 0
    #: Prompt tokens counted once per completion (an API that bills one prompt for n samples
    #: charges less), as the backend reported them (0 where it reports none: replay, python).
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    #: None: the role's options give no `price`.
    dollars: float | None = None


class TrainingCost(BaseModel):
    """One finished training stage."""

    stage: str
    kind: str | None
    steps: int
    seconds: float
    peak_rss_mb: float
    #: Tokens TRL counted over the stage (`num_tokens`: prompts and completions), None where
    #: its log has no count.
    tokens: int | None = None


class RunCost(BaseModel):
    calls: list[CallCost] = Field(default_factory=list)
    training: list[TrainingCost] = Field(default_factory=list)
    total: dict[str, Any] = Field(default_factory=dict)


def call_costs(store: RunStore) -> list[CallCost]:
    """The cached calls, summed per (stage, role), with their cache hits."""
    rows: dict[tuple[str | None, str | None], CallCost] = {}

    def row(stage: str | None, role: str | None) -> CallCost:
        return rows.setdefault((stage, role), CallCost(stage=stage, role=role))

    for call in store.cached_calls(limit=None):
        tags = (call["request"] or {}).get("call") or {}
        cost = row(tags.get("stage"), tags.get("role"))
        prompt, completion = call["prompt_tokens"] or 0, call["completion_tokens"] or 0
        cost.calls += 1
        cost.prompt_tokens += prompt
        cost.completion_tokens += completion
        cost.seconds += float(tags.get("seconds") or 0.0)
        price = tags.get("price")
        if price:
            cost.dollars = (cost.dollars or 0.0) + (prompt * price[0] + completion * price[1]) / 1e6
    for (stage, role), hits in store.cache_hits_by_call().items():
        row(stage, role).cache_hits += hits
    return sorted(rows.values(), key=lambda c: (c.stage or "", c.role or ""))


def training_costs(store: RunStore) -> list[TrainingCost]:
    """Each finished training stage, in the order it finished."""
    out = []
    for name in store.finished_steps():
        result = store.step_result(name)
        if not (isinstance(result, dict) and "steps" in result and "seconds" in result):
            continue  # a step that is not a training stage (a finished evaluation, say)
        counted = [entry.get("num_tokens") for entry in result.get("history") or [] if entry.get("num_tokens")]
        out.append(TrainingCost(stage=name, kind=result.get("kind"), steps=int(result["steps"]),
                                seconds=float(result["seconds"]), peak_rss_mb=float(result.get("peak_rss_mb") or 0.0),
                                tokens=int(max(counted)) if counted else None))
    return out


def run_cost(store: RunStore) -> RunCost:
    """The run's cost as summary.json keeps it (`total` sums the rows)."""
    calls, training = call_costs(store), training_costs(store)
    sums: dict[str, Any] = defaultdict(float)
    for cost in calls:
        for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens"):
            sums[key] += getattr(cost, key)
        sums["generation_seconds"] += cost.seconds
    priced = [cost.dollars for cost in calls if cost.dollars is not None]
    total = {key: int(sums[key]) for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")}
    total |= {"generation_seconds": round(sums["generation_seconds"], 1),
              "training_seconds": round(sum(t.seconds for t in training), 1),
              "training_steps": sum(t.steps for t in training),
              "dollars": round(sum(priced), 6) if priced else None}
    return RunCost(calls=calls, training=training, total=total)
