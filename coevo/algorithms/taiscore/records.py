"""The records a TAIScore run writes: one per round, one per condition and seed, and summary.json."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class RoundRecord(BaseModel):
    """One round of a condition: the checkpoints of (π_r, κ_r) and the round's metrics."""

    round: int
    checkpoints: dict[str, str | None]
    metrics: dict[str, float | None]


class ConditionResult(BaseModel):
    """One condition under one seed, from round 0 (the base models) to its last round."""

    condition: str
    seed: int
    tag: str
    plan: dict[str, Any]
    baseline: dict[str, float | None]
    rounds: list[RoundRecord]


class TaiScoreSummary(BaseModel):
    """`summary.json` of a TAIScore run (keys as docs/taiscore.md documents them): the first
    condition's rounds, and with several conditions or seeds every one and their table."""

    base_model: str | None
    base_models: dict[str, str | None]
    condition: str
    baseline: dict[str, float | None]
    rounds: list[RoundRecord]
    shards: list[int]
    held_out: int
    conditions: list[dict[str, Any]] | None = None
    table: dict[str, Any]
    #: Per condition: S(π_last) − S(π_0), paired over (seed, held-out prompt), with a bootstrap
    #: 95 % CI: {mean_diff, low, high, n_pairs} (evaluation.gold_gains).
    gold_gain_ci: dict[str, dict[str, Any]] = {}
    #: How the pools were made (Appendix C): their sizes, the quality-score histogram, how
    #: many were rated 4-5 / 3, topped up and dropped (coevo.tasks.pools.PoolReport).
    data: dict[str, Any] = {}
    #: The judge audits, one record per judge and round ({"round": "<condition>/round<r>",
    #: "judge_role": "reward" | "pairwise", the `coevo audit judge --json` object}).
    audit: list[dict[str, Any]] = []
