"""A paired difference as the result tables report it: mean a − b over items scored under
both systems, with its paired bootstrap 95 % CI (DecoEvo − SkillOpt, TAIScore's gold gain)."""

from __future__ import annotations

from collections.abc import Sequence

from coevo.eval.stats import paired_bootstrap_ci
from coevo.types import Record

#: Enough resamples for a table's two decimals, cheap at the end of a run.
RESAMPLES = 5000


class PairedCI(Record):
    """Mean of the paired differences, its 95 % CI, and how many pairs it rests on."""

    mean_diff: float | None
    low: float | None
    high: float | None
    n_pairs: int


def paired_difference(a: Sequence[float], b: Sequence[float]) -> PairedCI:
    """`a[i] - b[i]` averaged over the pairs, with a bootstrap CI. No pair: nothing to say.
    One pair: its difference and no CI (a bootstrap of one item has no spread, and a
    zero-width interval would read as certainty)."""
    if not a:
        return PairedCI(mean_diff=None, low=None, high=None, n_pairs=0)
    diff, low, high = paired_bootstrap_ci(a, b, n_resamples=RESAMPLES)
    if len(a) < 2:
        low = high = None
    return PairedCI(mean_diff=diff, low=low, high=high, n_pairs=len(a))
