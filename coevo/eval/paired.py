"""A paired difference as the result tables report it: mean a − b over items scored under
both systems, with its paired bootstrap 95 % CI (DecoEvo − SkillOpt, TAIScore's gold gain),
and the same difference over matched runs (one per seed), with a t-interval over runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from coevo.eval.stats import paired_bootstrap_ci, t_interval
from coevo.core.types import Record

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


#: How `RunCI` is computed, in words, for summary.json and the report.
RUN_CI_METHOD = "Student t-interval (df = n_runs - 1) over the per-run mean differences"


class RunCI(Record):
    """A difference over matched runs: each run (seed) gives one mean difference a − b over
    its items scored under both; the interval is over those n_runs values, so it carries
    the run-to-run spread that pooling (seed, item) pairs hides. Under two runs there is
    no interval (`low` / `high` None) and `note` says so."""

    level: Literal["run"]
    method: str
    mean_diff: float | None
    low: float | None
    high: float | None
    n_runs: int
    per_run: dict[str, float]     # run label (e.g. "seed3") -> that run's mean difference
    note: str


def run_difference(per_run: dict[str, float], *, confidence: float = 0.95) -> RunCI:
    """The mean of one difference per matched run and its t-interval over runs.

    One run: its difference and no interval, said in words (a zero-width or bootstrap
    interval of one value would read as certainty). No run: nothing to say.
    """
    values = list(per_run.values())
    n = len(values)
    if n < 2:
        note = ("no run had items scored under both methods" if n == 0 else
                "one run (n=1): no interval over runs; run more seeds (the paper: five matched runs)")
        return RunCI(level="run", method=RUN_CI_METHOD, mean_diff=values[0] if values else None, low=None,
                     high=None, n_runs=n, per_run=dict(per_run), note=note)
    mean, low, high = t_interval(values, alpha=1 - confidence)
    return RunCI(level="run", method=RUN_CI_METHOD, mean_diff=mean, low=low, high=high, n_runs=n,
                 per_run=dict(per_run), note=f"{confidence:.0%} CI over {n} matched runs")
