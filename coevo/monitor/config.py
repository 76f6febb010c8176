"""`monitor:`, the reward-hacking monitor's block of every algorithm's config; each
algorithm's config subclasses it and states what its monitor can watch (`Watches`)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from coevo.core.strict import StrictModel


class Watches(BaseModel):
    """What one algorithm's monitor can watch."""

    model_config = ConfigDict(frozen=True)

    algorithm: str
    #: `gold`: the loop's own held-out gold, checked round by round.
    gold: bool
    #: `python:` and `judge:` anchors: a scorer of the trained model's outputs.
    models: bool
    #: `stop: true`: a stage that can end at a flag (one watched step by step).
    stop: bool
    #: `audit`: the judge audit's fooled rate, an anchor only where the grading it audits evolves
    #: with the policy (frozen judges: the rate measures the judge, not the policy).
    audit: bool = False


class MonitorConfig(StrictModel):
    """`monitor:` — the reward-hacking monitor inside a run (docs/monitor.md, coevo/monitor/).

    While a trained role's stage runs (taiscore: each critic GRPO stage, checked every `every`
    optimizer steps; rlac and decoevo: round by round), the monitor follows its training reward,
    the degeneracy of what it writes (cut at the token limit, empty, repeated, too short) and
    each anchor on held-out items; a reward that rises significantly while an anchor falls or
    stays flat, or a degeneracy statistic that crosses its threshold, is flagged: a warning then,
    `summary.json -> monitor`, the run page. With `stop: true` (taiscore) the stage ends at the
    flag and its weights go back to the last check before the onset.
    """

    #: On by default: the degeneracy statistics cost nothing (they read what training
    #: writes anyway); anchors cost model calls and are the user's choice.
    enabled: bool = True
    #: What the reward was meant to measure, each taken on held-out prompts: `python:FILE.py:F`
    #: or `python:MODULE:F` (the reward's signature, f(x, y0, critique, y1) -> float) or
    #: `judge:MODEL` (a second judge of the loop's reward kind) in taiscore; `gold` (the
    #: loop's own held-out gold) in rlac and decoevo; `audit` (the share of the judge audit's
    #: master keys the evolving grading is not fooled by, per probe) in decoevo.
    anchors: list[str] = Field(default_factory=list)
    #: Optimizer steps between anchor checks (a check samples one output per held-out prompt);
    #: rlac and decoevo are watched every round.
    every: int = Field(2, ge=1, le=10_000)
    #: Held-out prompts each anchor is taken on (taiscore; the others use their held-out sets).
    prompts: int = Field(4, ge=2, le=10_000)
    #: End the stage at a flag and put back the weights of the last check before the onset
    #: (taiscore's critic stages).
    stop: bool = False

    @model_validator(mode="after")
    def _known_anchors(self) -> "MonitorConfig":
        for spec in self.anchors:
            if not (spec.startswith("python:") or spec.startswith("judge:") or spec in ("gold", "audit")):
                raise ValueError(f"anchors: {spec!r} is not an anchor; use python:FILE.py:FUNCTION, judge:MODEL, "
                                 "gold or audit (docs/monitor.md)")
        if len(set(self.anchors)) != len(self.anchors):
            raise ValueError("anchors: an anchor is listed twice")
        return self

    #: What the algorithm's monitor can watch: each algorithm's config subclasses this block
    #: and states it (`TaiScoreMonitor.WATCHES`); the base watches everything.
    WATCHES: ClassVar[Watches] = Watches(algorithm="this algorithm", gold=True, models=True, stop=True, audit=True)

    @model_validator(mode="after")
    def _watchable(self) -> "MonitorConfig":
        # What an algorithm cannot watch is an error, not a silent no-op.
        watches = self.WATCHES
        algorithm, gold, models, stop, audit = (watches.algorithm, watches.gold, watches.models, watches.stop,
                                                watches.audit)
        kinds = ", ".join(["gold"] * gold + ["python:FILE.py:FUNCTION", "judge:MODEL"] * models + ["audit"] * audit)
        for spec in self.anchors:
            if spec == "audit" and not audit:
                raise ValueError(f"monitor.anchors: {algorithm} cannot take the anchor 'audit': its judges do not "
                                 f"change while it trains, so the audit's fooled rate measures the judge, not the "
                                 f"policy; its anchors: {kinds} (docs/monitor.md)")
            if (spec == "gold" and not gold) or (spec.startswith(("python:", "judge:")) and not models):
                raise ValueError(f"monitor.anchors: {algorithm} cannot take the anchor {spec!r}; its anchors: {kinds} "
                                 "(docs/monitor.md)")
        if self.stop and not stop:
            raise ValueError(f"monitor.stop: {algorithm} is watched round by round, where a flag is said and kept "
                             "but never stops the run; remove monitor.stop (docs/monitor.md)")
        return self
