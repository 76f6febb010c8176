"""The monitor over a loop's rounds: RLAC's iterations, DecoEvo's inner steps.

A loop without a trainer of its own to hook (RLAC's DPO stages see pairs, not rewards; DecoEvo
trains no weights) is watched round by round: the round's training reward (RLAC: each
output's reward from the critic's verdicts; DecoEvo: each diagnostic question's proxy score
under the generated rubrics) against the `gold` anchor (the loop's own held-out gold: RLAC's
pass@1 or FactScore per item, DecoEvo's gold grade per diagnostic question) and, in DecoEvo,
the `audit` anchor (per master key of the round's judge audit, 1 - its fooled rate: the
evolving grading should not get easier to fool as its proxy rises), with one round at each end
of a trend. Each round's observations are kept in the run store as they are made, so
a resumed run replays them and its monitor ends as an uninterrupted run's would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from coevo.monitor import degeneracy
from coevo.monitor.records import keep_report
from coevo.monitor.tracker import Monitor
from coevo.rundir.store import RunStore

#: The run store's kind for one round's observations ({stage}#{round} -> what was observed).
OBSERVED = "monitor_round"
#: The same for a round's audit anchor, observed after the round's other observations.
AUDITED = "monitor_audit"
#: The loop's own held-out gold, as an anchor's name in `monitor.anchors`.
GOLD = "gold"
#: The round's judge audit: per master key, the share of held-out items it did not fool the
#: grading on (the audit's items are fixed, so the master keys pair across rounds).
AUDIT = "audit"


class RoundMonitor:
    """One watched series of rounds (`stage`: a method and seed, a condition); `anchors` are
    the `monitor.anchors` it was given (`gold`, `audit`)."""

    def __init__(self, store: RunStore, stage: str, anchors: Sequence[str]):
        self.store, self.stage, self.anchors = store, stage, list(anchors)
        self.monitor = Monitor(stage=stage, window=1)
        self.done: set[int] = set()
        self.audited: set[int] = set()
        # A resumed run replays its finished rounds in the order they happened: a round's
        # observations, then its audit.
        kept = [(int(key.rpartition("#")[2]), order, seen) for order, kind in enumerate((OBSERVED, AUDITED))
                for key, seen in store.get_records(kind) if key.rpartition("#")[0] == stage]
        for r, order, seen in sorted(kept, key=lambda k: k[:2]):
            (self._observe_audit if order else self._observe)(r, seen)

    def observe(self, r: int, *, rewards: Sequence[float] = (), outputs: Sequence[str] = (),
                cut: Sequence[bool] | None = None, gold: Mapping[str, float | None] | None = None) -> None:
        """Round `r`'s training rewards, outputs and gold per held-out item (round 0: the gold
        baseline, before any training); then the rule, and the stage's report kept."""
        if r in self.done:  # a resumed run's finished round: already replayed
            return
        # The outputs' statistics, not their texts: the store has the texts already (rollouts).
        seen = {"rewards": [float(v) for v in rewards], "degeneracy": degeneracy.statistics(outputs, cut),
                "gold": {k: float(v) for k, v in (gold or {}).items() if v is not None} if GOLD in self.anchors else {}}
        self._keep(OBSERVED, r, seen)

    def _keep(self, kind: str, r: int, seen: dict[str, Any]) -> None:
        """Round `r`'s observations of `kind` stored (a resumed run replays them), taken in,
        and the stage's report kept."""
        self.store.put_record(kind, f"{self.stage}#{r}", seen)
        (self._observe_audit if kind == AUDITED else self._observe)(r, seen)
        keep_report(self.store, self)

    def _observe(self, r: int, seen: Mapping[str, Any]) -> None:
        self.done.add(r)
        if seen.get("rewards"):
            self.monitor.observe_reward(r, seen["rewards"])
        for name, value in (seen.get("degeneracy") or {}).items():
            self.monitor.observe_statistic(r, name, value)
        if seen.get("gold"):
            self.monitor.observe_anchor(r, GOLD, seen["gold"])
        self.monitor.check(r)

    def observe_audit(self, r: int, record: Mapping[str, Any]) -> None:
        """Round `r`'s judge audit record (coevo/audit/in_run.py): each master key's share of
        items it did not fool the grading on, checked against the round's proxy rewards."""
        if AUDIT not in self.anchors or r in self.audited:
            return
        fooled = {p["name"]: p["fooled"]["value"] for p in record.get("master_keys", [])}
        self._keep(AUDITED, r, {"audit": {name: 1.0 - float(v) for name, v in fooled.items() if v is not None}})

    def _observe_audit(self, r: int, seen: Mapping[str, Any]) -> None:
        self.audited.add(r)
        if seen.get("audit"):
            self.monitor.observe_anchor(r, AUDIT, seen["audit"])
            self.monitor.check_anchor(r, AUDIT)

    @property
    def flags(self) -> list[Any]:
        return self.monitor.flags

    def report(self) -> dict[str, Any]:
        return {**self.monitor.report(), "every": 1, "stop": False, "stopped_at": None,
                "restored_weights_of_step": None, "unit": "round"}
