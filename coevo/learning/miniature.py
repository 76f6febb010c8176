"""The record of a paper's central comparison in miniature (`benchmarks/miniature.py`, issue 43).

Each paper's claim is a comparison between arms: TAIScore's critic rewards, RLAC's co-trained
critic against a static one and enumeration, DecoEvo's decoupled acceptance against SkillOpt
and score-coupled co-evolution. An arm is scored per key, `item#seed`, on a gold Python checks
(never the 135M judge: it fails its own audit), before and after it trains:

- an arm's `gain` is mean(after − before) over its keys, with a paired bootstrap 95 % interval;
- a comparison `A_minus_B` is mean(gain_A − gain_B) over the keys both arms scored, paired the
  same way, so an item's difficulty and a seed's luck cancel out of it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from coevo.eval.paired import paired_difference
from coevo.learning.curve import mean
from coevo.types import Record


class ArmResult(Record):
    """One arm: its gold before and after, the paired gain and its interval, and the per-key
    scores behind them (so a comparison can be recomputed from the JSON alone)."""

    before: float | None
    after: float | None
    gain: float | None
    gain_ci: list[float | None]       # [lo, hi], paired bootstrap 95 % over n keys
    n: int
    scores_before: dict[str, float] = Field(default_factory=dict)
    scores_after: dict[str, float] = Field(default_factory=dict)
    #: The paper's other numbers for this arm ({value, ci, n} records or counts): RLAC's
    #: errors found per verification call, say.
    metrics: dict = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

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
    """mean(gain_A − gain_B) over the keys both arms scored, its interval and n."""

    value: float | None
    ci: list[float | None]
    n: int


class Miniature(Record):
    """What `benchmarks/miniature.py --json` writes: every arm, every comparison, the seeds,
    the wall time and the settings that produced them."""

    paper: str
    target: str                      # the gold, in words
    arms: dict[str, ArmResult]
    comparisons: dict[str, Comparison]
    seeds: list[int]
    seconds: float
    settings: dict = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def arm_result(before: Mapping[str, float], after: Mapping[str, float], notes: list[str] | None = None) -> ArmResult:
    """The arm from its per-key gold before and after training (keys scored both times)."""
    keys = sorted(set(before) & set(after))
    ci = paired_difference([after[k] for k in keys], [before[k] for k in keys])
    return ArmResult(before=mean({k: before[k] for k in keys}), after=mean({k: after[k] for k in keys}),
                     gain=ci.mean_diff, gain_ci=[ci.low, ci.high], n=ci.n_pairs,
                     scores_before=dict(before), scores_after=dict(after), notes=list(notes or []))


def compare(a: ArmResult, b: ArmResult) -> Comparison:
    """gain_A − gain_B paired over the keys both arms scored."""
    gains_a, gains_b = a.gains, b.gains
    keys = sorted(set(gains_a) & set(gains_b))
    ci = paired_difference([gains_a[k] for k in keys], [gains_b[k] for k in keys])
    return Comparison(value=ci.mean_diff, ci=[ci.low, ci.high], n=ci.n_pairs)


def comparisons(arms: Mapping[str, ArmResult], pairs: list[tuple[str, str]]) -> dict[str, Comparison]:
    """{"A_minus_B": compare(A, B)} for each (A, B) in `pairs` whose arms both ran."""
    return {f"{a}_minus_{b}": compare(arms[a], arms[b]) for a, b in pairs if a in arms and b in arms}


def shown(value: float | None, ci: list[float | None], n: int) -> str:
    """"+0.075 [+0.000, +0.175] (n=40)", or "—" where nothing was scored."""
    if value is None:
        return f"— (n={n})"
    lo, hi = ci
    interval = f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else " (no interval)"
    return f"{value:+.3f}{interval} (n={n})"
