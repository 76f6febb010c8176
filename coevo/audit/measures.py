"""The statistics of a judge audit, each an `Estimate`: a value, its 95 % interval and its n.

Shares (fooled, consistent, raised) get Wilson intervals; means and Spearman's rho get
percentile bootstrap intervals over items (resampling items keeps each item's two scores
together). Nothing here calls a judge: the inputs are scores and verdicts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

import numpy as np
from pydantic import BaseModel

from coevo.eval.stats import paired_bootstrap_ci, wilson_interval

#: Bootstrap resamples: a CI over a handful of items moves in its second decimal beyond this.
BOOTSTRAP_RESAMPLES = 2000


class Estimate(BaseModel):
    """One audited figure: `value` with its 95 % interval [`low`, `high`] over `n` items.

    `count` is the number of successes behind a share (None for a mean or a correlation);
    `invalid` how many items were left out because a judgment could not be read; `value`
    is None when nothing was left to measure, with `note` saying why."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0
    count: int | None = None
    invalid: int = 0
    note: str | None = None


def share(successes: int, n: int, invalid: int = 0) -> Estimate:
    """`successes / n` with its Wilson 95 % interval (exact at 0 and n, unlike Wald)."""
    if n == 0:
        return Estimate(invalid=invalid, note="no readable judgments")
    value, low, high = wilson_interval(successes, n)
    return Estimate(value=value, low=low, high=high, n=n, count=successes, invalid=invalid)


def mean_interval(values: Sequence[float], invalid: int = 0, seed: int = 0) -> Estimate:
    """Mean of `values` with its percentile bootstrap 95 % interval over the items."""
    if not values:
        return Estimate(invalid=invalid, note="no readable judgments")
    mean, low, high = paired_bootstrap_ci(list(values), [0.0] * len(values), n_resamples=BOOTSTRAP_RESAMPLES,
                                          seed=seed)
    return Estimate(value=mean, low=low, high=high, n=len(values), invalid=invalid)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks (ties share the mean of their positions), along the last axis."""
    order = np.argsort(values, axis=-1, kind="stable")
    ranks = np.empty_like(values, dtype=float)
    sorted_values = np.take_along_axis(values, order, axis=-1)
    for row in range(values.shape[0]):
        v, o = sorted_values[row], order[row]
        i = 0
        while i < v.size:
            j = i
            while j + 1 < v.size and v[j + 1] == v[i]:
                j += 1
            ranks[row, o[i:j + 1]] = (i + j) / 2
            i = j + 1
    return ranks


def _pearson_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pearson's r per row; NaN where a row has no spread."""
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (a * b).sum(axis=1) / np.where(denominator > 0, denominator, 1), np.nan)


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rho with average ranks for ties; None when either side has no spread
    (every score equal: there is no ranking to compare) or fewer than two items."""
    if len(a) != len(b):
        raise ValueError(f"spearman needs two sequences of equal length, got {len(a)} and {len(b)}")
    if len(a) < 2:
        return None
    rho = _pearson_rows(_ranks(np.asarray([a], dtype=float)), _ranks(np.asarray([b], dtype=float)))[0]
    return None if math.isnan(rho) else float(rho)


#: Fewest items whose Spearman's rho gets a bootstrap interval (and so can be flagged).
SPEARMAN_MIN_ITEMS = 4


def spearman_interval(a: Sequence[float], b: Sequence[float], invalid: int = 0, seed: int = 0) -> Estimate:
    """Spearman's rho of two passes over the same items, with a percentile bootstrap 95 %
    interval over items (resamples without spread are left out of the interval)."""
    rho = spearman(a, b)
    if rho is None:
        why = "fewer than 2 readable items" if len(a) < 2 else "every score equal in a pass: no ranking to compare"
        return Estimate(n=len(a), invalid=invalid, note=why)
    if len(a) < SPEARMAN_MIN_ITEMS:
        # Two or three items rank only a few ways (two: rho is always +1 or -1), and every
        # bootstrap resample repeats that ranking: a zero-width interval that would flag noise.
        return Estimate(value=rho, n=len(a), invalid=invalid,
                        note=f"{len(a)} items are too few for an interval on Spearman's rho (at least "
                             f"{SPEARMAN_MIN_ITEMS}); audit more items")
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(a), size=(BOOTSTRAP_RESAMPLES, len(a)))
    x, y = np.asarray(a, dtype=float)[index], np.asarray(b, dtype=float)[index]
    rhos = _pearson_rows(_ranks(x), _ranks(y))
    rhos = rhos[~np.isnan(rhos)]
    low, high = (float(v) for v in np.percentile(rhos, [2.5, 97.5])) if rhos.size else (None, None)
    return Estimate(value=rho, low=low, high=high, n=len(a), invalid=invalid)


def tie_rate(scores: Sequence[float], invalid: int = 0) -> Estimate:
    """Share of pairs of different items the judge scored exactly alike, Wilson 95 %
    (approximate: the pairs share items, so the interval errs narrow)."""
    pairs = list(combinations(scores, 2))
    return share(sum(math.isclose(x, y) for x, y in pairs), len(pairs), invalid)


def raised_share(changes: Sequence[float], invalid: int = 0) -> Estimate:
    """Share of items whose altered version scored strictly higher than the original."""
    return share(sum(change > 1e-9 for change in changes), len(changes), invalid)
