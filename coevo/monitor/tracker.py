"""`Monitor`: the training reward, each anchor and the degeneracy statistics of one training
stage, followed over its steps, and the flags the divergence rule raises.

It imports no model library: the TRL callback (`callback.py`), the loops and the benchmark feed
it what they observe, and it answers with flags. A flag is raised once per anchor (or
statistic) per stage: the first time is the news; the curves show the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from coevo.monitor import degeneracy
from coevo.monitor.rule import PERSISTENCE, REWARD_WINDOW, StepReward, Trend, anchor_trend, lags, onset, pooled, \
    reward_trend

log = logging.getLogger(__name__)


@dataclass
class Flag:
    """One divergence: at `step` of `stage`, `anchor` (an anchor's name, or `degeneracy:<statistic>`)
    stopped following the reward; `onset_step`: where the reward's rise began."""

    step: int
    stage: str
    anchor: str
    why: str
    onset_step: int
    reward_trend: dict[str, Any] | None = None
    anchor_trend: dict[str, Any] | None = None


@dataclass
class Monitor:
    """The observations of one training stage and its flags (see coevo/monitor/rule.py)."""

    stage: str = ""
    persistence: int = PERSISTENCE
    #: Steps averaged at each end of the reward's trend and of a degeneracy crossing: 2 over a
    #: trainer's optimizer steps, 1 over a loop's rounds (each round is many steps' worth).
    window: int = REWARD_WINDOW
    rewards: dict[int, StepReward] = field(default_factory=dict)
    outputs: dict[int, dict[str, float]] = field(default_factory=dict)
    anchors: dict[str, dict[int, dict[str, float]]] = field(default_factory=dict)
    flags: list[Flag] = field(default_factory=list)
    _streak: dict[str, list[int]] = field(default_factory=dict)

    def observe_reward(self, step: int, values: Sequence[float] | StepReward) -> None:
        """The training rewards of `step` (several calls for one step add up)."""
        new = values if isinstance(values, StepReward) else StepReward.of([float(v) for v in values])
        if new.n < 1:
            return
        old = self.rewards.get(step)
        self.rewards[step] = new if old is None else pooled([old, new])

    def observe_outputs(self, step: int, texts: Sequence[str], cut: Sequence[bool] | None = None, *,
                        inputs: Sequence[Sequence[str | None]] | None = None,
                        rewards: Sequence[float | None] | None = None) -> None:
        """The completions of `step` (their degeneracy statistics; `inputs` and `rewards`, each
        completion's inputs and reward, for the copy statistics); several calls for one step
        add up, as the reward's do."""
        stats = degeneracy.statistics(texts, cut, inputs, rewards)
        if stats:
            self.outputs[step] = degeneracy.pooled(self.outputs.get(step, {}), stats)

    def observe_statistic(self, step: int, name: str, value: float) -> None:
        """One degeneracy statistic of `step` measured elsewhere (TRL's `completions/clipped_ratio`)."""
        self.outputs.setdefault(step, {})[name] = float(value)

    def observe_anchor(self, step: int, name: str, values: Mapping[str, float]) -> None:
        """Anchor `name` measured at `step`: {held-out item key: value}; its first measurement
        is its baseline."""
        self.anchors.setdefault(name, {})[step] = {str(k): float(v) for k, v in values.items()}

    def reward_trend(self, upto: int | None = None) -> Trend | None:
        return reward_trend(self.rewards, upto, self.window)

    def anchor_trend(self, name: str, step: int | None = None) -> Trend | None:
        series = self.anchors.get(name, {})
        if len(series) < 2:
            return None
        steps = sorted(series)
        return anchor_trend(series[steps[0]], series[step if step is not None else steps[-1]])

    def check(self, step: int) -> list[Flag]:
        """The rule at `step` against every anchor measured there, the degeneracy crossings and
        levels; the flags raised now (each also logged as a warning)."""
        raised = [flag for name in self.anchors if (flag := self.check_anchor(step, name)) is not None]
        so_far = {s: v for s, v in self.outputs.items() if s <= step}
        reward = self.reward_trend(upto=step)
        for name, (before, after) in degeneracy.crossings(so_far, self.window).items():
            if not self._flagged(f"degeneracy:{name}"):
                why = f"{degeneracy.THRESHOLDS[name].why}: {before:.3g} over the first steps, {after:.3g} now " \
                      f"(threshold {degeneracy.THRESHOLDS[name].limit:g})"
                raised.append(self._flag(step, f"degeneracy:{name}", why, reward, None))
        for name, (value, items) in degeneracy.levels(so_far, self.window).items():
            if not self._flagged(f"degeneracy:{name}"):
                threshold = degeneracy.THRESHOLDS[name]
                why = (f"{threshold.why}: {value:.0%} of {items:g} groups over the last steps (threshold "
                       f"{threshold.limit:g}; a level, flagged whenever reached: the reward teaches it from the "
                       "first step)")
                raised.append(self._flag(step, f"degeneracy:{name}", why, reward, None))
        return raised

    def check_anchor(self, step: int, name: str) -> Flag | None:
        """The rule at `step` against anchor `name` alone, if it was measured there (an anchor
        that arrives after its step's other observations, as a round's audit does)."""
        if step not in self.anchors.get(name, {}) or self._flagged(name):
            return None
        reward, anchor = self.reward_trend(upto=step), self.anchor_trend(name, step)
        why = lags(reward, anchor)
        streak = self._streak.setdefault(name, [])
        if why is None:
            streak.clear()
            return None
        streak.append(step)
        return self._flag(step, name, why, reward, anchor) if len(streak) >= self.persistence else None

    @property
    def onset_step(self) -> int | None:
        return min((f.onset_step for f in self.flags), default=None)

    def report(self) -> dict[str, Any]:
        """summary.json's `monitor` entry for this stage: flags, onset and the curves."""
        return {"stage": self.stage, "flags": [asdict(f) for f in self.flags], "onset_step": self.onset_step,
                "reward_curve": [[s, round(r.mean, 6), r.n] for s, r in sorted(self.rewards.items())],
                "anchor_curves": {name: [[s, round(sum(v.values()) / len(v), 6), len(v)]
                                         for s, v in sorted(series.items()) if v]
                                  for name, series in self.anchors.items()},
                "degeneracy": {str(s): v for s, v in sorted(self.outputs.items())},
                # Where the stage ended up: the reward over its last half of steps against its
                # first half, and each anchor's last check against its first (paired by item).
                "reward_change": self.reward_change(),
                "anchor_changes": {name: change for name in self.anchors
                                   if (change := self.anchor_change(name)) is not None}}

    def reward_change(self) -> dict[str, Any] | None:
        """The reward's mean over the first half of the logged steps and over the last half,
        each with its n, and the change with its 95 % interval (None under two steps)."""
        logged = sorted(self.rewards)
        half = len(logged) // 2
        trend = reward_trend(self.rewards, None, half) if half else None
        if trend is None:
            return None
        first, last = (pooled([self.rewards[s] for s in part]) for part in (logged[:half], logged[-half:]))
        return {"first_steps": [logged[0], logged[half - 1]], "last_steps": [logged[-half], logged[-1]],
                "first": round(first.mean, 6), "first_n": first.n, "last": round(last.mean, 6), "last_n": last.n,
                **trend.as_dict()}

    def anchor_change(self, name: str) -> dict[str, Any] | None:
        """Anchor `name` at its first check and its last, each a mean over its items, and the
        change paired by item with its 95 % interval (None before a second check)."""
        series = self.anchors.get(name, {})
        steps = sorted(step for step, values in series.items() if values)
        trend = self.anchor_trend(name) if len(steps) > 1 else None
        if trend is None:
            return None
        first, last = series[steps[0]], series[steps[-1]]
        return {"first_step": steps[0], "last_step": steps[-1], "first": round(sum(first.values()) / len(first), 6),
                "last": round(sum(last.values()) / len(last), 6), **trend.as_dict()}

    def _flagged(self, anchor: str) -> bool:
        return any(f.anchor == anchor for f in self.flags)

    def _flag(self, step: int, anchor: str, why: str, reward: Trend | None, trend: Trend | None) -> Flag:
        first = self._streak.get(anchor, [step])[0]
        start = onset(self.rewards, first, self.window) if self.rewards else first
        flag = Flag(step=step, stage=self.stage, anchor=anchor, why=why, onset_step=min(start, first),
                    reward_trend=reward.as_dict() if reward else None, anchor_trend=trend.as_dict() if trend else None)
        self.flags.append(flag)
        log.warning("reward hacking? %s step %d, %s: %s (onset: step %d)", self.stage or "training", step, anchor,
                    why, flag.onset_step)
        return flag
