"""The record of a paper's central comparison in miniature (`benchmarks/miniature.py`).

Each paper's claim is a comparison between arms: TAIScore's critic rewards, RLAC's co-trained
critic against a static one and enumeration, DecoEvo's decoupled acceptance against SkillOpt
and score-coupled co-evolution. An arm is scored per key, `item#seed`, on a gold Python checks
(never the 135M judge: it fails its own audit), before and after it trains:

- an arm's `gain` is mean(after − before) over its keys, with a paired bootstrap 95 % interval;
- a comparison `A_minus_B` is mean(gain_A − gain_B) over the keys both arms scored, paired the
  same way, so an item's difficulty and a seed's luck cancel out of it;
- beside each, `mde`: the smallest true effect this n and this spread would detect with 80 %
  power (`minimum_detectable_effect`), so a null says how large an effect it rules out.

A paper may measure its arms a second way (TAIScore: the critics' critiques themselves as
well as the actor's revisions under them): each such measure is a `Measure`, its own arms
and comparisons, in `Miniature.measures`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from statistics import NormalDist

from pydantic import Field, model_validator

from coevo.eval.paired import paired_difference
from learning.curve import mean
from coevo.core.types import Record

#: The two normal quantiles behind the minimum detectable effect: a two-sided test at
#: α 0.05 (z_0.975 ≈ 1.96) and 80 % power (z_0.80 ≈ 0.84).
Z_ALPHA = NormalDist().inv_cdf(0.975)
Z_POWER = NormalDist().inv_cdf(0.80)


def spread(differences: Sequence[float]) -> float | None:
    """The sample sd (n − 1) of paired differences; None under 2 (nothing to measure)."""
    return statistics.stdev(differences) if len(differences) >= 2 else None


def minimum_detectable_effect(differences: Sequence[float]) -> float | None:
    """MDE = (z_0.975 + z_0.80) · sd / √n ≈ 2.80 · sd / √n over n paired differences.

    Why this formula: every interval here rests on the mean of n paired differences, whose
    standard error is sd / √n. A two-sided test at α 0.05 calls an effect when the mean lies
    z_0.975 standard errors from 0; a true effect δ gets there 80 % of the time when
    δ = (z_0.975 + z_0.80) · SE, so δ is the smallest effect the run would usually see.
    Normal quantiles rather than Student t: the intervals beside it are percentile
    bootstraps, normal approximations too, and at the miniatures' n (≥ 30 keys) t's
    quantiles are a few per cent larger. sd is `spread`, measured on these differences,
    observed effect included: this run's spread stands in for a rerun's.

    None under 2 differences, and where every difference is the same (sd 0): that spread
    is unmeasured rather than zero, and an MDE of 0 would read as perfect power."""
    sd = spread(differences)
    return (Z_ALPHA + Z_POWER) * sd / math.sqrt(len(differences)) if sd else None


class ArmResult(Record):
    """One arm: its gold before and after, the paired gain and its interval, and the per-key
    scores behind them (so a comparison can be recomputed from the JSON alone)."""

    before: float | None
    after: float | None
    gain: float | None
    gain_ci: list[float | None]       # [lo, hi], paired bootstrap 95 % over n keys
    n: int
    #: sd of the n per-key gains and the gain this n would detect with 80 % power
    #: (`minimum_detectable_effect`); a JSON written without them is sized from its scores.
    sd: float | None = None
    mde: float | None = None
    scores_before: dict[str, float] = Field(default_factory=dict)
    scores_after: dict[str, float] = Field(default_factory=dict)
    #: The paper's other numbers for this arm ({value, ci, n} records or counts): RLAC's
    #: errors found per verification call, say.
    metrics: dict = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sized(self) -> ArmResult:
        if self.sd is None and self.mde is None:
            gains = list(self.gains.values())
            self.sd, self.mde = spread(gains), minimum_detectable_effect(gains)
        return self

    @property
    def gains(self) -> dict[str, float]:
        """{key: after − before} over the keys scored both times."""
        return {k: self.scores_after[k] - self.scores_before[k]
                for k in sorted(set(self.scores_before) & set(self.scores_after))}

    @property
    def learned(self) -> bool:
        """The issue's goal for a trained arm: its whole interval above 0."""
        return self.gain_ci[0] is not None and self.gain_ci[0] > 0


class Comparison(Record):
    """mean(gain_A − gain_B) over the keys both arms scored, its interval and n; `sd` of
    those n differences and `mde`, the difference this n would detect with 80 % power."""

    value: float | None
    ci: list[float | None]
    n: int
    sd: float | None = None
    mde: float | None = None


class Measure(Record):
    """The arms measured another way than the miniature's target, and their comparisons."""

    target: str                      # what this measure scores, in words
    arms: dict[str, ArmResult]
    comparisons: dict[str, Comparison]
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sized(self) -> Measure:
        _size_comparisons(self.arms, self.comparisons)
        return self


class Miniature(Record):
    """What `benchmarks/miniature.py --json` writes: every arm, every comparison, the seeds,
    the time (RLAC's: what its runs spent running, over every resumption; else this
    invocation's wall time) and the settings that produced them."""

    paper: str
    target: str                      # the gold, in words
    arms: dict[str, ArmResult]
    comparisons: dict[str, Comparison]
    seeds: list[int]
    seconds: float
    settings: dict = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    #: The same arms scored on a second target ({name: Measure}); none for most papers.
    measures: dict[str, Measure] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sized(self) -> Miniature:
        _size_comparisons(self.arms, self.comparisons)
        return self


def _size_comparisons(arms: Mapping[str, ArmResult], found: Mapping[str, Comparison]) -> None:
    # A JSON written before comparisons carried their MDE: "A_minus_B" is sized from the two
    # arms' per-key gains, which the JSON keeps (only sd and mde are filled, nothing else).
    for name, comparison in found.items():
        a, _, b = name.partition("_minus_")
        if comparison.sd is None and comparison.mde is None and a in arms and b in arms:
            differences = _differences(arms[a], arms[b])
            comparison.sd, comparison.mde = spread(differences), minimum_detectable_effect(differences)


def _differences(a: ArmResult, b: ArmResult) -> list[float]:
    gains_a, gains_b = a.gains, b.gains
    return [gains_a[k] - gains_b[k] for k in sorted(set(gains_a) & set(gains_b))]


def arm_result(before: Mapping[str, float], after: Mapping[str, float], notes: list[str] | None = None) -> ArmResult:
    """The arm from its per-key gold before and after training (keys scored both times)."""
    keys = sorted(set(before) & set(after))
    ci = paired_difference([after[k] for k in keys], [before[k] for k in keys])
    # sd and mde are left to ArmResult's validator, which sizes every arm from its scores.
    return ArmResult(before=mean({k: before[k] for k in keys}), after=mean({k: after[k] for k in keys}),
                     gain=ci.mean_diff, gain_ci=[ci.low, ci.high], n=ci.n_pairs,
                     scores_before=dict(before), scores_after=dict(after), notes=list(notes or []))


def compare(a: ArmResult, b: ArmResult) -> Comparison:
    """gain_A − gain_B paired over the keys both arms scored."""
    gains_a, gains_b = a.gains, b.gains
    keys = sorted(set(gains_a) & set(gains_b))
    ci = paired_difference([gains_a[k] for k in keys], [gains_b[k] for k in keys])
    differences = [gains_a[k] - gains_b[k] for k in keys]
    return Comparison(value=ci.mean_diff, ci=[ci.low, ci.high], n=ci.n_pairs, sd=spread(differences),
                      mde=minimum_detectable_effect(differences))


def comparisons(arms: Mapping[str, ArmResult], pairs: list[tuple[str, str]]) -> dict[str, Comparison]:
    """{"A_minus_B": compare(A, B)} for each (A, B) in `pairs` whose arms both ran."""
    return {f"{a}_minus_{b}": compare(arms[a], arms[b]) for a, b in pairs if a in arms and b in arms}


def is_null(ci: list[float | None]) -> bool:
    """Whether the interval contains 0 (no interval: not a null, nothing was estimated)."""
    lo, hi = ci
    return lo is not None and hi is not None and lo <= 0 <= hi


def shown(value: float | None, ci: list[float | None], n: int, mde: float | None = None) -> str:
    """"+0.075 [+0.000, +0.175] (n=40)", or "—" where nothing was scored; a null given its
    `mde` says what it could have detected: "+0.012 [-0.050, +0.070] (n=40; could detect ±0.090)"."""
    if value is None:
        return f"— (n={n})"
    lo, hi = ci
    interval = f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else " (no interval)"
    power = f"; could detect ±{mde:.3f}" if mde is not None and is_null(ci) else ""
    return f"{value:+.3f}{interval} (n={n}{power})"


def shown_of(result: ArmResult | Comparison) -> str:
    """An arm's gain or a comparison as `shown` writes it, a null with its MDE; a null whose
    differences are all alike says that its MDE is unknown rather than print none."""
    value, ci = (result.gain, result.gain_ci) if isinstance(result, ArmResult) else (result.value, result.ci)
    text = shown(value, ci, result.n, result.mde)
    if value is not None and result.mde is None and result.sd == 0 and is_null(ci):
        text = text[:-1] + "; no spread: MDE unknown)"
    return text


def mde_cell(result: ArmResult | Comparison) -> str:
    """The README tables' MDE column: "±0.090", "— (no spread)" where every difference
    was the same, "—" under two keys."""
    if result.mde is not None:
        return f"±{result.mde:.3f}"
    return "— (no spread)" if result.sd == 0 else "—"
