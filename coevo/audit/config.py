"""`audit:`, the judge-audit block of every algorithm's config; each algorithm's config
subclasses it to say whether its loop has an update the audit gate could refuse."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from coevo.core.strict import StrictModel


class AuditConfig(StrictModel):
    """`audit:` — the judge audit inside a run (coevo/audit/, `coevo audit judge` by hand).

    Before round 1 and after every round, the run's frozen judges are probed on the first
    `prompts` held-out prompts, with the items the run's current models write: content-free
    answers ("master keys"), padding, an instruction to the judge, a second sampling seed
    and (pairwise) both shown orders. Each figure lands in the round's metrics
    (`audit_<judge>_<measure>` with `_lo`, `_hi`, `_n`), every round's record in
    summary.json -> audit, and each flag as a warning in the log and on the run page.
    """

    #: On by default: a judge that can be gamed should be said before its rewards are trusted.
    enabled: bool = True
    #: Held-out prompts the audit reads (each costs about a dozen judge calls per judge).
    prompts: int = Field(4, ge=1)
    #: Audit again after every round (taiscore), not only before the first: the judges are
    #: frozen, so the later audits ask whether the trained models' texts still beat
    #: content-free ones; off, the judges are audited once, on the starting models' items.
    after_rounds: bool = True
    #: More master keys: JSONL, one {"name": ..., "text": ...} per line (docs/audit.md).
    probes: str | None = None
    #: A trained evaluator's update whose audit is flagged for master keys is not accepted
    #: for the next round (recorded with the decision, counted, warned); off by default so
    #: the papers' loops stay as published. Independent of `enabled` (the per-round audits).
    #: Honoured by DecoEvo's rubric-generator updates; TAIScore and RLAC refuse it (their
    #: audits watch frozen judges only: docs/audit.md).
    gate: bool = False

    #: Why this algorithm has no trained evaluator whose update the gate could refuse (set by
    #: an algorithm's subclass, `TaiScoreAudit`, `RlacAudit`); None: the gate applies.
    NO_GATE: ClassVar[str | None] = None
    #: The algorithm's name in the messages.
    ALGORITHM: ClassVar[str] = "this algorithm"

    @model_validator(mode="after")
    def _gate_applies(self) -> "AuditConfig":
        # A loop whose audits watch no trained evaluator's own verdicts has no update for the
        # gate to refuse: `gate: true` there is an error, not a silent no-op.
        if self.gate and self.NO_GATE is not None:
            raise ValueError(f"audit.gate: {self.ALGORITHM} has no trained evaluator whose update the gate could "
                             f"refuse ({self.NO_GATE}); remove audit.gate, or use it with algorithm: decoevo")
        return self

    @model_validator(mode="after")
    def _readable_probes(self) -> "AuditConfig":
        # A bad probes file fails when the config loads, not rounds into a run.
        if self.probes is not None:
            from coevo.audit.master_keys import read_probes

            try:
                read_probes(self.probes)
            except Exception as exc:  # DataError: one line naming the file and the fix
                raise ValueError(str(exc)) from None
        return self
