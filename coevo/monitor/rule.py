"""The divergence rule: when a rising training reward is no longer the thing it was meant to
measure.

A policy trained on a reward can learn the reward's loophole instead of its intent (the
TAIScore critic's concision reward counted words while its cap counted tokens: GRPO learned
fewer, longer words, not shorter critiques). The training reward alone cannot show this: it
rises either way. An *anchor* can: a measure of what the reward was meant to reward, taken on
held-out items the policy never trains on. The rule compares the two trends, each with its
interval, in units of the measure's own spread (a standardized gain), so a 0-1 reward and a
1-10 judge anchor are comparable:

- the reward **rose significantly** since the start: the lower end of its interval is above 0;
- an anchor **lags it beyond its interval**: the upper end of the anchor's standardized gain is
  below `ANCHOR_SHARE` of the reward's standardized gain (the anchor fell, or stayed flat, or
  rose by clearly less than half as much);
- both for `PERSISTENCE` checks in a row (one noisy check is not a flag).

The onset is the step from which the reward's rise was significant without a break up to the
flag: where the policy started to collect the reward, the earliest weights worth keeping
are those before it. docs/monitor.md states the rule, its constants and its measured false
alarm rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from coevo.eval.stats import paired_bootstrap_ci

#: Two-sided 95 % normal quantile: the reward's interval (hundreds of completions a window).
Z95 = 1.959964
#: Training steps averaged at each end of the reward's trend: one GRPO step's group means swing
#: with its prompts; two steps at each end halve that without hiding an onset for long.
REWARD_WINDOW = 2
#: The anchor has to be shown to have gained less than this share of the reward's standardized
#: gain. 0.5, not 1: an honest anchor measured on a few held-out items gains less than the
#: reward on the items trained on (it generalizes, partially); half is the line between "the
#: reward's gain carried over, noisily" and "it did not carry over".
ANCHOR_SHARE = 0.5
#: Consecutive checks the condition must hold. With 2, the per-check false-alarm rate (under
#: 2.5 %: the reward's one-sided interval) is squared for independent noise; measured on
#: replayed noise by tests/monitor/test_rule.py (FALSE_ALARM_RATE).
PERSISTENCE = 2
#: The false-alarm rate this rule promises on noise alone over a run of up to 10 checks (a
#: reward and an anchor that do not move): the tests measure it on 400 replayed runs.
FALSE_ALARM_RATE = 0.05
#: Standard deviations below this are treated as no spread at all (a constant measure).
TINY_SD = 1e-9
#: Bootstrap resamples for an anchor's paired interval at every check (cheap: tens of items).
ANCHOR_RESAMPLES = 2000


@dataclass(frozen=True)
class Trend:
    """A measure's change since its baseline: raw `gain` with its 95 % `ci`, over `n` values
    (completions for the reward, paired items for an anchor), and the same in units of the
    measure's pooled standard deviation (`std_gain`, `std_ci`)."""

    gain: float
    ci: tuple[float, float]
    n: int
    sd: float

    @property
    def std_gain(self) -> float:
        return _standardized(self.gain, self.sd)

    @property
    def std_ci(self) -> tuple[float, float]:
        return _standardized(self.ci[0], self.sd), _standardized(self.ci[1], self.sd)

    def as_dict(self) -> dict[str, float | int | list[float]]:
        return {"gain": round(self.gain, 6), "ci": [round(self.ci[0], 6), round(self.ci[1], 6)], "n": self.n,
                "std_gain": round(self.std_gain, 4)}


def _standardized(value: float, sd: float) -> float:
    if sd > TINY_SD:
        return value / sd
    # A measure without spread: any change is total, none is none.
    return 0.0 if abs(value) <= TINY_SD else math.copysign(1e9, value)


@dataclass(frozen=True)
class StepReward:
    """One training step's rewards: their mean, standard deviation and count (TRL logs the
    first two; a wrapped reward function sees every value)."""

    mean: float
    sd: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "StepReward":
        mean, var = _mean_var(values)
        return cls(mean=mean, sd=math.sqrt(var), n=len(values))


def reward_trend(steps: Mapping[int, StepReward], upto: int | None = None,
                 window: int = REWARD_WINDOW) -> Trend | None:
    """The reward's change from its first `window` logged steps to its last `window` steps up
    to step `upto` (all where None), with a normal 95 % interval (Welch: each window's own
    variance, within and between its steps). None until there are two disjoint windows."""
    logged = sorted(s for s in steps if upto is None or s <= upto)
    if len(logged) < 2 * window:
        return None
    first, last = (pooled([steps[s] for s in part]) for part in (logged[:window], logged[-window:]))
    if first.n < 1 or last.n < 1:
        return None
    half = Z95 * math.sqrt(first.sd ** 2 / first.n + last.sd ** 2 / last.n)
    gain = last.mean - first.mean
    return Trend(gain=gain, ci=(gain - half, gain + half), n=first.n + last.n,
                 sd=math.sqrt((first.sd ** 2 + last.sd ** 2) / 2))


def pooled(parts: Sequence[StepReward]) -> StepReward:
    """The summary of the values behind several summaries (within and between their spreads)."""
    n = sum(p.n for p in parts)
    if n < 1:
        return StepReward(mean=0.0, sd=0.0, n=0)
    mean = sum(p.mean * p.n for p in parts) / n
    squares = sum((p.n - 1) * p.sd ** 2 + p.n * (p.mean - mean) ** 2 for p in parts)
    return StepReward(mean=mean, sd=math.sqrt(squares / (n - 1)) if n > 1 else 0.0, n=n)


def anchor_trend(baseline: Mapping[str, float], now: Mapping[str, float]) -> Trend | None:
    """An anchor's paired change over the items measured both times, with its paired bootstrap
    95 % interval (an item's difficulty cancels). None under two shared items."""
    keys = sorted(set(baseline) & set(now))
    if len(keys) < 2:
        return None
    before, after = [baseline[k] for k in keys], [now[k] for k in keys]
    gain, lo, hi = paired_bootstrap_ci(after, before, n_resamples=ANCHOR_RESAMPLES)
    (_, v0), (_, v1) = _mean_var(before), _mean_var(after)
    return Trend(gain=gain, ci=(lo, hi), n=len(keys), sd=math.sqrt((v0 + v1) / 2))


def lags(reward: Trend | None, anchor: Trend | None, share: float = ANCHOR_SHARE) -> str | None:
    """Why this check diverges (words for the log), or None: the reward rose significantly and
    the anchor's standardized gain is, beyond its interval, under `share` of the reward's."""
    if reward is None or anchor is None or reward.ci[0] <= 0:
        return None
    limit = share * reward.std_gain
    if anchor.std_ci[1] >= limit:
        return None
    direction = "fell" if anchor.ci[1] < 0 else "stayed flat" if anchor.ci[0] <= 0 else "rose less"
    return (f"the reward rose {reward.gain:+.3f} [{reward.ci[0]:+.3f}, {reward.ci[1]:+.3f}] "
            f"({reward.std_gain:+.2f} sd) while the anchor {direction}: {anchor.gain:+.3f} "
            f"[{anchor.ci[0]:+.3f}, {anchor.ci[1]:+.3f}] ({anchor.std_gain:+.2f} sd, its upper end under "
            f"{share:g} x the reward's)")


def onset(steps: Mapping[int, StepReward], flag_step: int, window: int = REWARD_WINDOW) -> int:
    """Where the reward's rise began: in the first window of the unbroken run of significant
    trends that ends at `flag_step`, the first step whose own mean is significantly above the
    baseline window (that window's first step where none is alone)."""
    logged = [s for s in sorted(steps) if s <= flag_step]
    start = flag_step
    for step in reversed(logged):
        trend = reward_trend(steps, upto=step, window=window)
        if trend is None or trend.ci[0] <= 0:
            break
        start = step
    rising = [s for s in logged if s <= start][-window:]
    if not rising:
        return start
    base = pooled([steps[s] for s in logged[:window]])
    for step in rising:
        one = steps[step]
        if one.n and base.n and one.mean - base.mean > Z95 * math.sqrt(base.sd ** 2 / base.n + one.sd ** 2 / one.n):
            return step
    return rising[0]


def _mean_var(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
    return mean, var
