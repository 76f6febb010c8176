"""mean ± sd, paired bootstrap CI, win rate, derangement."""

import random

import numpy as np
import pytest

from coevo.eval.stats import derangement, format_mean_sd, mean_sd, paired_bootstrap_ci, win_rate


def test_mean_sd_sample_sd():
    mean, sd = mean_sd([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5
    assert sd == pytest.approx((5 / 3) ** 0.5)  # ddof=1: sum of squares 5 over n-1=3
    assert mean_sd([7]) == (7.0, 0.0)
    assert mean_sd(x for x in (2, 4)) == (3.0, pytest.approx(2**0.5))
    with pytest.raises(ValueError, match="at least one"):
        mean_sd([])
    with pytest.raises(ValueError, match="non-finite"):
        mean_sd([1.0, float("nan")])


def test_format_mean_sd():
    assert format_mean_sd([1.0, 2.0, 3.0]) == "2.00 ± 1.00"
    assert format_mean_sd([0.5], digits=3, show_n=True) == "0.500 ± 0.000 (n=1)"


def test_bootstrap_contains_true_diff_and_is_deterministic():
    rng = np.random.default_rng(1)
    b = rng.normal(5.0, 2.0, size=200)  # large per-item spread, shared by both systems
    a = b + 0.5 + rng.normal(0.0, 0.3, size=200)
    diff, lo, hi = paired_bootstrap_ci(a, b, n_resamples=2000, seed=3)
    assert lo < 0.5 < hi and lo < diff < hi
    assert hi - lo < 0.2  # pairing removes the item spread
    assert paired_bootstrap_ci(a, b, n_resamples=2000, seed=3) == (diff, lo, hi)
    assert paired_bootstrap_ci(a, b, n_resamples=2000, seed=4) != (diff, lo, hi)
    wider = paired_bootstrap_ci(a, b, n_resamples=2000, alpha=0.01, seed=3)
    assert wider[1] <= lo and wider[2] >= hi


def test_bootstrap_constant_and_chunked():
    assert paired_bootstrap_ci([3, 4, 5], [1, 2, 3], n_resamples=50) == (2.0, 2.0, 2.0)
    # n large enough that resampling runs in several chunks.
    a = np.arange(5000, dtype=float) % 7
    diff, lo, hi = paired_bootstrap_ci(a, a - 1.0 + (a % 2) * 0.1, n_resamples=1000)
    assert lo <= diff <= hi


def test_bootstrap_errors():
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap_ci([1, 2], [1])
    with pytest.raises(ValueError, match="at least one pair"):
        paired_bootstrap_ci([], [])
    with pytest.raises(ValueError, match="alpha"):
        paired_bootstrap_ci([1], [1], alpha=1.5)


def test_win_rate():
    assert win_rate([1, 0, 0.5, 1]) == 0.625
    assert win_rate(["win", "tie", "loss", "B", None]) == 0.375
    assert win_rate([True, False, True, True]) == 0.75
    with pytest.raises(ValueError, match="at least one valid"):
        win_rate([None, None])
    with pytest.raises(ValueError, match="cannot read"):
        win_rate(["maybe"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        win_rate([2])


@pytest.mark.parametrize("n", [2, 3, 4, 5, 10, 50])
def test_derangement_no_fixed_point_over_many_seeds(n):
    for seed in range(200):
        perm = derangement(n, np.random.default_rng(seed))
        assert sorted(perm) == list(range(n))
        assert all(perm[i] != i for i in range(n))
        assert all(type(i) is int for i in perm)


def test_derangement_rng_kinds_and_determinism():
    assert derangement(8, 5) == derangement(8, 5)
    assert derangement(8, random.Random(2)) == derangement(8, random.Random(2))
    perm = derangement(8, random.Random(2))
    assert sorted(perm) == list(range(8)) and all(perm[i] != i for i in range(8))


def test_derangement_is_not_just_a_single_cycle():
    # n=4 has 9 derangements (6 four-cycles + 3 pairs of swaps); a uniform sampler finds all.
    seen = {tuple(derangement(4, np.random.default_rng(s))) for s in range(400)}
    assert len(seen) == 9


def test_derangement_edge_cases():
    assert derangement(0, 0) == []
    with pytest.raises(ValueError, match="at least 2 examples"):
        derangement(1, 0)
    with pytest.raises(ValueError, match="n >= 0"):
        derangement(-1, 0)
