"""The records of a judge audit: `JudgeAudit` and its parts (see judge_audit.py)."""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from coevo.audit.measures import Estimate


class Flag(BaseModel):
    """A measure the judge failed: `value` past `threshold` by `rule`, `why` in plain words."""

    probe: str
    value: float
    threshold: float
    rule: str
    low: float | None = None
    high: float | None = None
    why: str


class ProbeResult(BaseModel):
    """One master key: its text (`{prompt}` = a copy of each item's prompt) and fooled rate."""

    name: str
    text: str
    fooled: Estimate


class Change(BaseModel):
    """How altering the slot moved the judge. Scored kinds: `mean` is the mean score change
    (altered − original, in the judge's units); pairwise: the altered answer's preference
    averaged over both orders (0.5 = no change). `raised`: share scored strictly higher."""

    mean: Estimate
    raised: Estimate


class JudgeAudit(BaseModel):
    """What `audit_judge` found (see the module docstring); JSON as `coevo audit judge --json`."""

    kind: str
    judge: str
    n_items: int
    seed: int
    retest_spearman: Estimate
    #: Scored kinds: pairs of different items given the same score (first pass).
    retest_tie_rate: Estimate | None = None
    #: Pairwise: same verdict under both seeds (same order).
    retest_agreement: Estimate | None = None
    position_consistency: Estimate | None = None
    #: Pairwise: share of the real pairs' verdicts won by the answer shown first (ties ½).
    first_position_rate: Estimate | None = None
    fooled_rate: Estimate
    #: Scored kinds (patterns.py): prompts whose judgments mostly rise or fall strictly in the
    #: rubric's criterion order, and prompts whose different answers all got the same scores.
    criterion_order_rate: Estimate | None = None
    same_pattern_rate: Estimate | None = None
    master_keys: list[ProbeResult]
    padding: Change
    injection: Change
    self_preference: Change | None = None
    other: str | None = None
    flags: list[Flag] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def warnings(self) -> list[str]:
        """Plain-words sentences: each flag's, then the notes (too few items, self-preference)."""
        return [flag.why for flag in self.flags] + list(self.notes)

    def as_json(self) -> dict:
        """The audit as one JSON object (what `--json` prints): the record and its `warnings`."""
        return {**self.model_dump(mode="json"), "warnings": self.warnings()}

    def metrics(self) -> dict[str, float]:
        """Flat numbers for a run store: each estimate as NAME, NAME_lo, NAME_hi, NAME_n (the
        run store's CI suffixes, as the rounds tables and the run page read them);
        `fooled_rate_<probe>` per master key; `flags` (how many)."""
        found: dict[str, float] = {}

        def add(name: str, estimate: Estimate | None) -> None:
            if estimate is None or estimate.value is None:
                return
            found[name] = estimate.value
            if estimate.low is not None and estimate.high is not None:
                found[f"{name}_lo"], found[f"{name}_hi"] = estimate.low, estimate.high
            found[f"{name}_n"] = float(estimate.n)

        for name in ("fooled_rate", "retest_spearman", "retest_tie_rate", "retest_agreement",
                     "position_consistency", "first_position_rate", "criterion_order_rate", "same_pattern_rate"):
            add(name, getattr(self, name))
        for name in ("padding", "injection", "self_preference"):
            change = getattr(self, name)
            if change is not None:
                add(f"{name}_mean", change.mean)
                add(f"{name}_raised", change.raised)
        for probe in self.master_keys:
            if probe.fooled.value is not None:
                found[f"fooled_rate_{metric_name(probe.name)}"] = probe.fooled.value
        found["flags"] = float(len(self.flags))
        return found


def metric_name(name: str) -> str:
    """A probe name as a metric-name part (`fooled_rate_<this>`)."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_") or "probe"
