"""The record every learning-curve loop returns, and its paired interval.

`gain_ci` is a paired bootstrap over (held-out item, seed): each key is scored before and
after training, so the item's difficulty cancels out of the difference.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from coevo.eval.paired import paired_difference
from coevo.core.types import Record


class LearningCurve(Record):
    """One loop's learning measurement (the JSON `benchmarks/learning_curves.py` writes)."""

    loop: str
    target: str                       # what `before` / `after` measure, in words
    reward: str                       # the reward / judge / grader spec the loop trained on
    before: float | None
    after: float | None
    gain: float | None
    gain_ci: list[float | None]       # [lo, hi], paired bootstrap 95 % over n (item, seed) keys
    n: int                            # paired (held-out item, seed) scores behind gain_ci
    curve: list[list[float]]          # [step, target value], step 0 = before training
    steps: int                        # optimizer steps (or rounds, for loops without steps)
    seconds: float
    seeds: list[int]
    settings: dict = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @property
    def learned(self) -> bool:
        """The goal: the whole interval above 0."""
        return self.gain_ci[0] is not None and self.gain_ci[0] > 0


def paired_gain(before: Mapping[str, float], after: Mapping[str, float]
                ) -> tuple[float | None, float | None, float | None, int]:
    """(mean after − before, lo, hi, n) over the keys scored both times (the tables' paired
    bootstrap, `paired_difference`); no interval under 2."""
    keys = sorted(set(before) & set(after))
    ci = paired_difference([after[k] for k in keys], [before[k] for k in keys])
    return ci.mean_diff, ci.low, ci.high, ci.n_pairs


def mean(values: Mapping[str, float]) -> float | None:
    return sum(values.values()) / len(values) if values else None


def curve_record(*, loop: str, target: str, reward: str, points: list[tuple[int, Mapping[str, float]]],
                 seconds: float, seeds: list[int], settings: dict | None = None,
                 notes: list[str] | None = None) -> LearningCurve:
    """The record from the per-key scores measured at each step (the first point is the
    untrained model, the last the trained one)."""
    if not points:
        raise ValueError("a learning curve needs at least the before and after measurements")
    (_, first), (last_step, last) = points[0], points[-1]
    gain, lo, hi, n = paired_gain(first, last)
    return LearningCurve(loop=loop, target=target, reward=reward, before=mean(first), after=mean(last), gain=gain,
                         gain_ci=[lo, hi], n=n, curve=[[step, mean(s)] for step, s in points],
                         steps=last_step, seconds=round(seconds, 1), seeds=seeds, settings=settings or {},
                         notes=notes or [])
