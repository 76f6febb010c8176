"""Pairwise evaluation that a position bias cannot move: every pair judged in both orders.

A pairwise judge asked "which is better, response 1 or response 2?" may prefer a position
rather than a response (the embedded SmolLM2 judge picks the response shown first every
time). Judged in ONE order per item, such a judge turns a win rate into a coin flip over
the shown orders. Judged in BOTH orders and averaged, a pure position preference gives
exactly ½ per item, and the share of items whose two verdicts name the same response (the
position consistency) says how much of the judge's verdicts is content at all.

Training pairs are not judged here: TAIScore's actor DPO pairs keep the paper's single
random order (D.3). This module serves evaluation numbers only (`win_rate_vs_round0`, the
controls' `win_rate_vs_y0`).

Conventions: a judgment's `score` is the preference for the SECOND original response
(1.0: second wins, 0.0: first wins, 0.5: a tie; with expected scoring, P(second) +
P(tie)/2), whatever order it was shown in, as `PairwiseJudge.judge` returns it; its extra
fields `shown_order` (labels in the order shown) and `winner` (a label or "tie") say which
position won.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from coevo.eval.stats import wilson_interval
from coevo.core.types import Judgment, Rollout, Sample

Position = Literal["first", "second", "tie"]


class PairJudge(Protocol):
    """What `judge_both_orders` needs: `PairwiseJudge` and the `python:` pairwise scorer."""

    def judge(self, prompts: Sequence[str], first: Sequence[str], second: Sequence[str], *,
              labels: tuple[str, str] = ..., swapped: Sequence[bool] | None = ...) -> list[Judgment]: ...


class BothOrders(BaseModel):
    """One pair judged in both orders."""

    #: The mean of the two preferences for the second original response; None unless both
    #: verdicts are readable. Two verdicts that disagree average to ½.
    preference: float | None
    #: Both verdicts name the same original response (a tie in both counts as consistent);
    #: None unless both are readable.
    consistent: bool | None
    #: Which SHOWN position won each verdict, (as given, swapped): "first", "second", "tie",
    #: or None for an unreadable verdict.
    won_by: tuple[Position | None, Position | None]


class BothOrdersSummary(BaseModel):
    """A both-orders pairwise evaluation over items (`summarise_both_orders`)."""

    #: Items whose two verdicts are both readable (the rest are `n_invalid`).
    n: int
    n_invalid: int = 0
    #: Mean averaged preference for the second original response (ties and disagreements
    #: ½), with its Wilson 95 % interval over the n items (fractional successes: errs wide).
    win_rate: float | None = None
    win_rate_lo: float | None = None
    win_rate_hi: float | None = None
    #: Share of items whose two verdicts name the same original response, Wilson 95 %.
    position_consistency: float | None = None
    position_consistency_lo: float | None = None
    position_consistency_hi: float | None = None
    #: Share of the 2n verdicts won by the response shown first (ties ½): 0.5 is no
    #: position preference, 1.0 a judge that always picks the first shown.
    first_position_rate: float | None = None

    def metrics(self, name: str, suffix: str) -> dict[str, float | None]:
        """The run-store metrics: `name` (the win rate), `name_lo`, `name_hi`, `name_n`,
        `position_consistency_<suffix>` and `first_position_rate_<suffix>`."""
        return {name: self.win_rate, f"{name}_lo": self.win_rate_lo, f"{name}_hi": self.win_rate_hi,
                f"{name}_n": float(self.n), f"position_consistency_{suffix}": self.position_consistency,
                f"first_position_rate_{suffix}": self.first_position_rate}


def judge_both_orders(judge: PairJudge, prompts: Sequence[str], first: Sequence[str], second: Sequence[str],
                      *, labels: tuple[str, str] = ("first", "second")) -> list[tuple[Judgment, Judgment]]:
    """Judge every pair twice, `first[i]` shown first and then shown second, in ONE batched
    call; returns per item (as given, swapped), both judgments in the original order's terms
    (`score` = preference for `second[i]`)."""
    if not len(prompts) == len(first) == len(second):
        raise ValueError("prompts, first and second must have the same length")
    n = len(prompts)
    if n == 0:
        return []
    judged = judge.judge(list(prompts) * 2, list(first) * 2, list(second) * 2, labels=labels,
                         swapped=[False] * n + [True] * n)
    return list(zip(judged[:n], judged[n:]))


def both_orders_judgment(as_given: Judgment, swapped: Judgment) -> Judgment:
    """One Judgment for a pair judged in both orders: `score` the averaged preference for
    the second original response (`sampled` / `expected` the averages of the two's, where
    both have one), valid when both verdicts are; extra fields `consistent`, `won_by` and
    `orders` (the two judgments, as given then swapped)."""
    item = combine(as_given, swapped)
    valid = item.preference is not None

    def mean(a: float | None, b: float | None) -> float | None:
        return (a + b) / 2 if valid and a is not None and b is not None else None

    both = (("as given", as_given), ("swapped", swapped))
    errors = [f"{which}: {j.error or 'unreadable'}" for which, j in both if not j.valid]
    # Each order in brief (shown order, winner, score, answer): the page shows them as text.
    orders = [{"shown_order": (j.model_extra or {}).get("shown_order"), "winner": (j.model_extra or {}).get("winner"),
               "score": j.score, "valid": j.valid, "raw": j.raw} for _, j in both]
    reasons = {which: f"shown {', '.join(o['shown_order'] or ['?'])}: {o['winner'] or 'unreadable'} won"
               for (which, _), o in zip(both, orders)}
    return Judgment(judge=as_given.judge, score=item.preference,
                    scores={"preference": item.preference} if valid else {}, reasons=reasons, valid=valid,
                    error="; ".join(errors) or None if not valid else None, raw=f"{as_given.raw} | {swapped.raw}",
                    sampled=mean(as_given.sampled, swapped.sampled), expected=mean(as_given.expected, swapped.expected),
                    source=as_given.source, consistent=item.consistent, won_by=list(item.won_by), orders=orders)


def both_orders_of(judgment: Judgment) -> BothOrders:
    """The `BothOrders` record a `both_orders_judgment` carries (for `summarise_both_orders`)."""
    extra = judgment.model_extra or {}
    won = tuple(extra.get("won_by") or (None, None))
    return BothOrders(preference=judgment.score if judgment.valid else None,
                      consistent=extra.get("consistent") if judgment.valid else None, won_by=won)  # type: ignore[arg-type]


class BothOrdersScorer:
    """A `Scorer` over rollouts for evaluation: is each rollout's y1 preferred over its y0,
    judged in both shown orders (one batched call) and averaged (`both_orders_judgment`).
    Not for training pairs: TAIScore's DPO pairs keep the judge's one random order."""

    name = "pairwise"

    def __init__(self, judge: PairJudge):
        self.judge = judge

    def score(self, rollouts: Sequence[Rollout], samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """One both-orders Judgment per rollout."""
        missing = [r.sample_id for r in rollouts if r.y1 is None]
        if missing:
            raise ValueError(f"rollouts of samples {missing[:5]} have no y1 to compare")
        pairs = judge_both_orders(self.judge, [r.x for r in rollouts], [r.y0 for r in rollouts],
                                  [r.y1 or "" for r in rollouts], labels=("y0", "y1"))
        return [both_orders_judgment(a, b) for a, b in pairs]


def shown_winner(judgment: Judgment, swapped: bool) -> Position | None:
    """Which shown position won `judgment` (None: unreadable): from its `winner` and
    `shown_order` where it has them, else from its score (`swapped`: the second original
    response was shown first)."""
    if not judgment.valid:
        return None
    extra = judgment.model_extra or {}
    winner, shown = extra.get("winner"), extra.get("shown_order")
    if winner == "tie":
        return "tie"
    if shown and len(shown) == 2 and shown[0] != shown[1] and winner in shown:
        return "first" if winner == shown[0] else "second"
    if judgment.score is None:
        return None
    if math.isclose(judgment.score, 0.5):
        return "tie"
    original: Position = "second" if judgment.score > 0.5 else "first"
    return _flip(original) if swapped else original


def combine(as_given: Judgment, swapped: Judgment) -> BothOrders:
    """One item's two verdicts as one: the averaged preference, consistency, positions."""
    won = (shown_winner(as_given, False), shown_winner(swapped, True))
    both = (as_given.valid and swapped.valid and as_given.score is not None and swapped.score is not None
            and None not in won)
    if not both:
        return BothOrders(preference=None, consistent=None, won_by=won)
    # As given, shown position = original position; swapped, the positions are exchanged.
    consistent = won[0] == _flip(won[1])  # type: ignore[arg-type]
    return BothOrders(preference=(as_given.score + swapped.score) / 2,  # type: ignore[operator]
                      consistent=consistent, won_by=won)


def summarise_both_orders(pairs: Sequence[tuple[Judgment, Judgment]] | Sequence[BothOrders]) -> BothOrdersSummary:
    """Win rate (with its CI), position consistency and first-position rate over items
    judged in both orders (`judge_both_orders`'s pairs, or their `combine`d records); items
    without two readable verdicts are counted in `n_invalid` and left out of every figure."""
    items = [p if isinstance(p, BothOrders) else combine(*p) for p in pairs]
    kept = [i for i in items if i.preference is not None]
    found: dict[str, Any] = {"n": len(kept), "n_invalid": len(items) - len(kept)}
    if not kept:
        return BothOrdersSummary(**found)
    n = len(kept)
    wins = math.fsum(i.preference for i in kept)  # type: ignore[misc]
    rate, lo, hi = wilson_interval(min(max(wins, 0.0), float(n)), n)
    agree = sum(bool(i.consistent) for i in kept)
    consistency, c_lo, c_hi = wilson_interval(agree, n)
    first = sum(1.0 if w == "first" else 0.5 if w == "tie" else 0.0 for i in kept for w in i.won_by)
    return BothOrdersSummary(**found, win_rate=rate, win_rate_lo=lo, win_rate_hi=hi,
                             position_consistency=consistency, position_consistency_lo=c_lo,
                             position_consistency_hi=c_hi, first_position_rate=first / (2 * n))


def _flip(position: Position) -> Position:
    return "tie" if position == "tie" else ("second" if position == "first" else "first")
