"""What changed over a run, as the story card reads it (view/story.py): each headline metric
from its first to its last round, and each judge-audit measure that failed its check.

A change is read from the two rounds' estimates: "too few to tell" where either rests on
fewer than MIN_ITEMS items (no interval, no difference shown), else the difference with a 95 %
interval and whether that interval lies above 0, below it, or across it.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel

from coevo.eval.metric_defs import MIN_ITEMS, Estimate, describe, estimate_of, estimate_text, values_by_stage_round

Tone = Literal["up", "down", "flat", "too-few", "unknown", "once", "audit"]


class Change(BaseModel):
    """One metric from its first to its last round, read in words."""

    name: str
    title: str
    definition: str = ""
    stage: str
    first_round: int | None = None
    last_round: int | None = None
    first: str
    last: str
    #: The items behind the last round's value (None: not logged).
    n: int | None = None
    #: The difference last − first with its interval, or "" where there is none to show.
    difference: str = ""
    reading: str
    tone: Tone


def headline_changes(metrics: list[dict[str, Any]], names: list[str]) -> list[Change]:
    """Per headline metric and stage that logged it with a round, its first and last round."""
    grouped = values_by_stage_round(metrics)
    out = []
    for name in names:
        stages = list(dict.fromkeys(stage for (stage, r), values in grouped.items()
                                    if r is not None and values.get(name) is not None))
        for stage in stages:
            rounds = sorted(r for (s, r), values in grouped.items()
                            if s == stage and r is not None and values.get(name) is not None)
            first = estimate_of(grouped[(stage, rounds[0])], name)
            last = estimate_of(grouped[(stage, rounds[-1])], name)
            definition = describe(name)
            difference, reading, tone = read_change(first, last, len(rounds) > 1)
            out.append(Change(name=name, title=definition.title, definition=definition.definition, stage=stage,
                              first_round=rounds[0], last_round=rounds[-1], first=first.text(), last=last.text(),
                              n=last.n, difference=difference, reading=reading, tone=tone))
    return out


def read_change(first: Estimate, last: Estimate, two_rounds: bool = True) -> tuple[str, str, Tone]:
    """(the difference with its interval, the change in words, its tone). The interval treats
    the two rounds as independent samples (half-widths added in quadrature): for the same
    held-out prompts in both rounds that is wider than a paired interval, never narrower."""
    if not two_rounds:
        return "", "measured in one round only: no change to read", "once"
    if first.value is None or last.value is None:
        return "", "not measured in both rounds", "unknown"
    if first.too_few or last.too_few:
        return "", (f"too few to tell: n={first.n} then n={last.n} items, and a change needs {MIN_ITEMS} or more "
                    "on each side; evaluate on more held-out items"), "too-few"
    diff = last.value - first.value
    ends = [first.low, first.high, last.low, last.high]
    if any(v is None or not math.isfinite(v) for v in ends):
        return "", "no interval was logged with these numbers, so a change cannot be told from chance", "unknown"
    half = math.hypot((first.high - first.low) / 2, (last.high - last.low) / 2)
    known = [n for n in (first.n, last.n) if n is not None]
    text = estimate_text(diff, diff - half, diff + half, min(known) if known else None, signed=True)
    return (text, *interval_reading(diff - half, diff + half))


def interval_reading(low: float, high: float) -> tuple[str, Tone]:
    """A difference's interval read in words: above 0, below it, or across it."""
    if low > 0:
        return "rose: the difference's interval is above 0", "up"
    if high < 0:
        return "fell: the difference's interval is below 0", "down"
    return "no clear change: the difference's interval contains 0", "flat"


def failed_audit_changes(metrics: list[dict[str, Any]]) -> list[Change]:
    """Per judge whose latest audited round failed checks (view/audit.py), each measure of the
    audit panel whose whole interval lies past its threshold there, from the judge's first
    audited round to that one; where no such measure is logged, the number of checks it failed."""
    grouped = values_by_stage_round(metrics)
    return _one_per_metric([_audit_change(grouped, stage, name, r, reading)
                            for stage, name, r, reading in failed_audit_metrics(metrics)])


def failed_audit_metrics(metrics: list[dict[str, Any]]) -> list[tuple[str, str, int, str]]:
    """(stage, audit metric, round, why) of every judge whose latest audited round failed
    checks: the panel's measures past their threshold, else `audit_<judge>_flags`."""
    from coevo.view.audit import PANELS, PREFIX, latest_flags

    grouped = values_by_stage_round(metrics)
    out = []
    for stage, judge, r, flags in latest_flags(metrics):
        if flags <= 0:
            continue
        found = []
        for panel_judge, measure, _title, _unit, threshold_name in PANELS:
            name = f"{PREFIX}{judge}_{measure}"
            if panel_judge != judge or grouped.get((stage, r), {}).get(name) is None:
                continue
            past = _past_threshold(estimate_of(grouped[(stage, r)], name), threshold_name)
            if past:
                found.append((stage, name, r, past))
        out += found or [(stage, f"{PREFIX}{judge}_flags", r,
                          f"the {judge} judge failed {flags:g} audit check{'s' * (flags != 1)}")]
    return out


def _one_per_metric(changes: list[Change]) -> list[Change]:
    """One row per failed measure: the first stage's, naming how many other stages failed it
    too (DecoEvo audits its grader under every method and seed)."""
    by_name: dict[str, list[Change]] = {}
    for change in changes:
        by_name.setdefault(change.name, []).append(change)
    return [same[0] if len(same) == 1 else same[0].model_copy(update={
        "stage": f"{same[0].stage} and {len(same) - 1} more", "reading": f"{same[0].reading} (in {len(same)} stages)"})
        for same in by_name.values()]


def _past_threshold(estimate: Estimate, threshold_name: str) -> str | None:
    """Why `estimate` fails its audit threshold (its whole interval past it), or None."""
    from coevo.audit import flags

    threshold = getattr(flags, threshold_name, None)
    if not isinstance(threshold, (int, float)) or estimate.too_few or estimate.low is None or estimate.high is None:
        return None
    if threshold_name.endswith("_MAX") and estimate.low > threshold:
        return f"failed its audit check: the whole interval is above {threshold:g}"
    if threshold_name.endswith("_MIN") and estimate.high < threshold:
        return f"failed its audit check: the whole interval is below {threshold:g}"
    return None


def _audit_change(grouped: dict[tuple[str, int | None], dict[str, float | None]], stage: str, name: str, r: int,
                  reading: str) -> Change:
    rounds = sorted(rr for (s, rr), values in grouped.items() if s == stage and rr is not None
                    and values.get(name) is not None)
    first = estimate_of(grouped[(stage, rounds[0])], name) if rounds else Estimate(value=None)
    last = estimate_of(grouped[(stage, r)], name)
    definition = describe(name)

    def text(estimate: Estimate) -> str:  # a count of failed checks is a whole number, not an estimate
        return f"{estimate.value:g}" if definition.kind == "count" and estimate.value is not None else estimate.text()

    return Change(name=name, title=definition.title, definition=definition.definition, stage=stage,
                  first_round=rounds[0] if rounds else r, last_round=r, first=text(first), last=text(last),
                  n=last.n, reading=reading, tone="audit")
