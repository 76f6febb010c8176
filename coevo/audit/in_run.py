"""The judge audit inside a run (`audit:` in a config): one audit per judge and round.

A loop calls `audit_in_run` with a judge it already holds and real items its current models
wrote; what comes back is the round's flat metrics (`audit_<judge>_<measure>`, with `_lo`,
`_hi`, `_n` and `audit_<judge>_flags`, the count of flags) and the record that
summary.json -> audit keeps. Each flag is said in the log as a warning, in plain words, the
moment the round's audit ends. An audit that cannot run (a replay file with no answer for a
probe, a server that refused) is a warning and a record with its `error`, never the end of
a training run: the audit is a diagnosis of the judge, not part of the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from coevo.audit.judge_audit import audit_judge
from coevo.audit.probes import Probe, default_probes, read_probes
from coevo.audit.records import JudgeAudit, metric_name
from coevo.audit.config import AuditConfig
from coevo.llm.base import ModelError
from coevo.core.types import Rollout, Sample

log = logging.getLogger(__name__)

#: Where a run keeps its audit records (run store meta): {"<condition>/round<r>": [record, ...]}.
META_KEY = "audit"


def audit_in_run(where: str, judge_name: str, kind: str, judge: Any, samples: Sequence[Sample],
                 items: Sequence[Rollout], config: AuditConfig, seed: int, *,
                 probes: Sequence[Probe] | None = None, adjust: Callable[[JudgeAudit], None] | None = None,
                 logged_probes: Collection[str] = ()) -> tuple[dict[str, float | None], dict]:
    """Audit one of a run's judges (`kind` as `coevo audit judge --kind`) on `items`;
    `judge_name` names it in metrics and warnings ("reward", "pairwise"), `where` the round.
    `probes` replace the kind's built-in master keys (the config's probes file is added to
    either); `adjust` revises the audit before it is said and stored (a judge without some
    measure, flags in its own words); `logged_probes` keep their own fooled rate in the metrics."""
    probes = list(probes if probes is not None else default_probes(kind))
    probes += read_probes(config.probes) if config.probes else []
    try:
        audit = audit_judge(kind, judge, samples, items, n=config.prompts, seed=seed, probes=probes,
                            judge_label=judge_name)
    except (ModelError, ValueError) as exc:
        log.warning("%s: the %s judge could not be audited: %s", where, judge_name, exc)
        return {}, {"judge_role": judge_name, "kind": kind, "error": str(exc)}
    if adjust is not None:
        adjust(audit)
    for line in headline_warnings(audit):
        log.warning("%s, %s judge: %s", where, judge_name, line)
    # The headline figures per round (a run page plots every metric); each probe's fooled
    # rate and the mean score changes stay in the record.
    per_probe = {f"fooled_rate_{metric_name(p.name)}" for p in audit.master_keys if p.name not in logged_probes}
    metrics: dict[str, float | None] = {f"audit_{judge_name}_{k}": v for k, v in audit.metrics().items()
                                        if k not in per_probe and "_mean" not in k}
    return metrics, {"judge_role": judge_name, **audit.as_json()}


def headline_warnings(audit: JudgeAudit) -> list[str]:
    """The flags in a few lines, for a console that a run shares with its progress: the
    per-probe master-key flags folded into the overall one (the record keeps each), and no
    "too few items" notes (the record keeps those too)."""
    flags = audit.flags
    keys = [f for f in flags if f.probe.startswith("master_key:")]
    overall = [f for f in flags if f.probe == "master_keys"]
    lines = [f.why for f in flags if not f.probe.startswith("master_key") or (f.probe == "master_keys")]
    if keys and overall:
        names = ", ".join(f.probe.removeprefix("master_key:") for f in keys)
        lines[lines.index(overall[0].why)] += f" (flagged probes: {names})"
    elif keys:
        lines.extend(f.why for f in keys)
    return lines


def save_records(store: Any, key: str, records: list[dict]) -> None:
    """Keep a round's audit records in the run store (read back by `run_records`)."""
    store.update_meta(META_KEY, lambda found: {**found, key: records}, {})


def run_records(store: Any) -> list[dict]:
    """Every audit record of a run, in the order kept: {"round": "<condition>/round<r>", ...}."""
    return [{"round": key, **record} for key, records in (store.get_meta(META_KEY, {}) or {}).items()
            for record in records]
