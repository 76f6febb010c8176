"""Small statistics used by every report: mean ± sd over seeds, paired bootstrap CIs,
win rates, and the derangement behind the shuffled-critique control.

Kept dependency-light (numpy only) and exact about edge cases, because these numbers go
straight into tables: an sd over one seed is reported as 0, not NaN, and an empty input
is an error rather than a silent NaN.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from statistics import NormalDist

import numpy as np

# Resampling draws n_resamples x n indices; chunking caps that matrix at ~16 MB so a
# 10,000-resample CI over a large eval set does not need gigabytes.
_MAX_CELLS_PER_CHUNK = 2_000_000


def mean_of_known(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None (an unreadable score), None when none is."""
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


def mean_sd(values: Iterable[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof=1) of `values`; sd is 0 for one value.

    Raises ValueError for an empty input or a non-finite value.
    """
    array = np.asarray(list(values), dtype=float)
    if array.size == 0:
        raise ValueError("mean_sd needs at least one value, got none.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"mean_sd got a non-finite value: {array.tolist()}.")
    sd = float(array.std(ddof=1)) if array.size > 1 else 0.0
    return float(array.mean()), sd


def format_mean_sd(values: Iterable[float], digits: int = 2, *, show_n: bool = False) -> str:
    """``"0.53 ± 0.04"`` for `values` (``"0.53 ± 0.04 (n=3)"`` with `show_n`)."""
    values = list(values)
    mean, sd = mean_sd(values)
    text = f"{mean:.{digits}f} ± {sd:.{digits}f}"
    return f"{text} (n={len(values)})" if show_n else text


def paired_bootstrap_ci(
    a: Sequence[float],
    b: Sequence[float],
    n_resamples: int = 10000,
    alpha: float = 0.05,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean of the paired differences ``a - b`` and its percentile bootstrap CI.

    `a[i]` and `b[i]` must be scores of the same item (same prompt) under two systems;
    resampling items rather than scores keeps the pairing, which is what removes
    per-prompt difficulty from the comparison. Returns ``(mean_diff, lo, hi)`` with a
    ``1 - alpha`` interval; the same `seed` gives the same interval.
    """
    a_arr = np.asarray(a, dtype=float)
    b_arr = np.asarray(b, dtype=float)
    if a_arr.shape != b_arr.shape or a_arr.ndim != 1:
        raise ValueError(
            f"paired_bootstrap_ci needs two 1-D sequences of equal length, got "
            f"{a_arr.shape} and {b_arr.shape}; pair the scores item by item."
        )
    if a_arr.size == 0:
        raise ValueError("paired_bootstrap_ci needs at least one pair, got none.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}.")
    diff = a_arr - b_arr
    if not np.all(np.isfinite(diff)):
        raise ValueError(
            "paired_bootstrap_ci got a non-finite score; drop invalid judgments first."
        )

    rng = np.random.default_rng(seed)
    n = diff.size
    chunk = max(1, _MAX_CELLS_PER_CHUNK // n)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        stop = min(start + chunk, n_resamples)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = diff[idx].mean(axis=1)
    lo, hi = np.percentile(means, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(diff.mean()), float(lo), float(hi)


def t_quantile(p: float, df: int) -> float:
    """The `p` quantile of Student's t with `df` degrees of freedom (0.5 < p < 1).

    Found by bisection on the CDF, the density integrated by Simpson's rule (numpy only:
    scipy is not a dependency); accurate to ~1e-6, e.g. t_quantile(0.975, 4) = 2.7764.
    """
    if df < 1:
        raise ValueError(f"t_quantile needs df >= 1, got {df}.")
    if not 0.5 < p < 1:
        raise ValueError(f"t_quantile needs 0.5 < p < 1, got {p}.")
    log_norm = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)

    def cdf(x: float) -> float:  # P(T <= x) for x >= 0: 1/2 + the density's integral over [0, x]
        grid = np.linspace(0.0, x, 4001)
        density = np.exp(log_norm - (df + 1) / 2 * np.log1p(grid**2 / df))
        weights = np.ones_like(grid)
        weights[1:-1:2], weights[2:-1:2] = 4, 2
        return 0.5 + float((weights * density).sum()) * (x / 4000) / 3

    low, high = 0.0, 1.0
    while cdf(high) < p:  # heavy tails (df=1: the 0.975 quantile is 12.7)
        high *= 2
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if cdf(mid) < p else (low, mid)
    return (low + high) / 2


def t_interval(values: Sequence[float], alpha: float = 0.05) -> tuple[float, float, float]:
    """Mean of `values` and its two-sided ``1 - alpha`` Student-t interval (df = n - 1):
    the interval over a handful of runs (seeds), where a bootstrap over 5 values has too
    few distinct resamples to be trusted. Needs at least two values."""
    array = np.asarray(list(values), dtype=float)
    if array.size < 2:
        raise ValueError(f"t_interval needs at least two values, got {array.size}; one run has no spread.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"t_interval got a non-finite value: {array.tolist()}.")
    mean = float(array.mean())
    half = t_quantile(1 - alpha / 2, array.size - 1) * float(array.std(ddof=1)) / math.sqrt(array.size)
    return mean, mean - half, mean + half


def mean_metrics(name: str, values: Sequence[float],
                 scale: tuple[float, float] | None = None) -> dict[str, float | None]:
    """A mean over items as metrics: `name`, `name_n` and, from two items up, its Student-t 95 %
    interval `name_lo` / `name_hi` (the viewer shows fewer than 5 as "too few to tell"), held
    to the metric's `scale` where given (a t-interval of a few 0-100 scores can run past 100;
    no value outside the scale is possible, so none is reported)."""
    values = [float(v) for v in values]
    if not values:
        return {name: None, f"{name}_n": 0.0}
    if len(values) < 2:
        return {name: values[0], f"{name}_n": 1.0}
    mean, low, high = t_interval(values)
    if scale is not None:
        low, high = max(low, scale[0]), min(high, scale[1])
    return {name: mean, f"{name}_lo": low, f"{name}_hi": high, f"{name}_n": float(len(values))}


def wilson_interval(successes: float, n: int, alpha: float = 0.05) -> tuple[float, float, float]:
    """Share ``successes / n`` and its Wilson score ``1 - alpha`` interval.

    Wilson rather than the normal (Wald) interval because pass rates near 0 or 1 over a few
    dozen prompts are common here, where Wald collapses to a zero-width or out-of-[0, 1] range.
    `successes` may be fractional (a win rate's ties count ½): each item is then taken as a
    Bernoulli trial of its mean, which over-states its variance, so the interval errs wide.
    """
    if n < 1:
        raise ValueError(f"wilson_interval needs n >= 1, got {n}.")
    if not 0 <= successes <= n:
        raise ValueError(f"wilson_interval needs 0 <= successes <= n, got {successes} of {n}.")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
    z = NormalDist().inv_cdf(1 - alpha / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    # At 0 or n the bound is exactly 0 or 1; the formula leaves rounding dust there.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return p, lo, hi


_OUTCOMES = {
    "win": 1.0, "a": 1.0, "loss": 0.0, "lose": 0.0, "b": 0.0, "tie": 0.5, "draw": 0.5,
}


def win_rate(preferences: Iterable[float | str | bool | None]) -> float:
    """Share of comparisons won, ties counting half.

    Each preference is a number in [0, 1] (1 = win, 0 = loss, 0.5 = tie, as the
    outcome-gain judge emits), a bool, or one of ``"win" / "a"``, ``"loss" / "b"``,
    ``"tie" / "draw"``. ``None`` marks an invalid judgment and is skipped. Raises
    ValueError when nothing valid is left or a value cannot be read.
    """
    scores: list[float] = []
    for pref in preferences:
        if pref is None:
            continue
        if isinstance(pref, str):
            key = pref.strip().lower()
            if key not in _OUTCOMES:
                raise ValueError(
                    f"win_rate cannot read preference {pref!r}; use 1/0/0.5 or one of "
                    f"{sorted(_OUTCOMES)}."
                )
            scores.append(_OUTCOMES[key])
            continue
        value = float(pref)
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"win_rate preferences must lie in [0, 1], got {pref!r}.")
        scores.append(value)
    if not scores:
        raise ValueError("win_rate needs at least one valid preference, got none.")
    return math.fsum(scores) / len(scores)


def derangement(n: int, rng: np.random.Generator | random.Random | int | None = None) -> list[int]:
    """A uniformly random permutation of ``range(n)`` with no fixed point.

    Used for the shuffled-critique control: example ``i`` receives the critique of
    example ``result[i]``, never its own. `rng` is a numpy Generator, a
    ``random.Random``, or a seed. ``n = 0`` gives ``[]``; ``n = 1`` has no derangement and
    raises ValueError.
    """
    if n < 0:
        raise ValueError(f"derangement needs n >= 0, got {n}.")
    if n == 1:
        raise ValueError(
            "derangement(1) is impossible: with one example there is no other example's "
            "critique to give it. The shuffled-critique control needs at least 2 examples."
        )
    if n == 0:
        return []
    if not isinstance(rng, (np.random.Generator, random.Random)):
        rng = np.random.default_rng(rng)
    # Rejection sampling: a random permutation is a derangement with probability ~1/e,
    # so ~2.7 draws on average, and accepted draws are uniform over derangements
    # (Sattolo's algorithm would be faster but only ever yields a single n-cycle).
    while True:
        if isinstance(rng, random.Random):
            perm = list(range(n))
            rng.shuffle(perm)
        else:
            perm = [int(i) for i in rng.permutation(n)]
        if all(perm[i] != i for i in range(n)):
            return perm
