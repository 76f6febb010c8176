"""The monitor's reports in the run store, and summary.json's `monitor` entry built from them.

Each watched stage keeps its report (flags, onset, reward and anchor curves, degeneracy
statistics) as a `monitor` record keyed by the stage's name; a flag is also added to the run's
warnings, so the report and the run page say it beside the others.
"""

from __future__ import annotations

from typing import Any

from coevo.monitor.copies import critique_copies
from coevo.rundir.store import RunStore

KIND = "monitor"


def keep_report(store: RunStore, monitor: Any) -> None:
    """`monitor`'s report (a HackingMonitor or anything with `.report()` and `.flags`) stored
    under its stage; each flag added to the run's warnings."""
    report = monitor.report()
    store.put_record(KIND, report.get("stage") or "training", report)
    said = [f"reward hacking? {f.stage} step {f.step}, {f.anchor}: {f.why} (onset: step {f.onset_step})"
            for f in monitor.flags]
    if monitor.flags and report.get("stopped_at") is not None:
        said.append(f"{report.get('stage')}: stopped at step {report['stopped_at']} by the monitor (stop: true); "
                    f"weights of step {report.get('restored_weights_of_step')} kept")
    if said:
        # A stage's report is kept again after each of its rounds: each flag is said once.
        store.update_meta("warnings", lambda old: [*old, *(line for line in said if line not in old)], [])


def run_summary(store: RunStore) -> dict[str, Any]:
    """summary.json -> monitor: every flag of every watched stage, the earliest onset (per
    stage, the step within it), the stages' reports, and `copies`: the GRPO critiques that
    copy their input, with the reward on them beside the reward on real critiques
    (coevo/monitor/copies.py; absent where the run trained no critic with GRPO)."""
    stages = {key: report for key, report in store.get_records(KIND)}
    flags = [flag for report in stages.values() for flag in report.get("flags", [])]
    first = min(flags, key=lambda f: f["onset_step"], default=None)
    found = {"flags": flags, "onset_step": first["onset_step"] if first else None,
             "onset_stage": first["stage"] if first else None, "stages": stages}
    copies = critique_copies(store)
    if copies is not None:
        found["copies"] = copies
    return found
