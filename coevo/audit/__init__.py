"""Judge audits: does a judge read the content, or can a policy please it without it?

- `probes.py` — the probe texts (master keys, filler, injected instructions), the user's
  probes file, and the rollouts that put a probe in a judge's slot;
- `measures.py` — the statistics (Wilson and bootstrap intervals, Spearman's rho);
- `judge_audit.py` — `audit_judge(kind, judge, samples, items, ...) -> JudgeAudit`:
  callable on an already-built judge, so a run can audit its own frozen judge or a trained
  evaluator; `records.py` — `JudgeAudit` and its parts; `flags.py` — the thresholds, flags
  and plain-words warnings; `patterns.py` — scores that follow the rubric's criterion order
  or the prompt rather than the answer;
- `items.py` — real rollouts written by a model (`write_items`); `user_judges.py` — a plain
  function, a `python:` spec or a `coevo.rewards` reward as the judge audited;
  `command.py` — `coevo audit judge`.
"""

from coevo.audit.items import slot_items, write_items
from coevo.audit.judge_audit import audit_judge
from coevo.audit.records import Change, Flag, JudgeAudit, ProbeResult
from coevo.audit.measures import Estimate
from coevo.audit.probes import AUDIT_KINDS, MASTER_KEYS, Probe, default_probes, read_probes

__all__ = ["AUDIT_KINDS", "MASTER_KEYS", "Change", "Estimate", "Flag", "JudgeAudit", "Probe", "ProbeResult",
           "audit_judge", "default_probes", "read_probes", "slot_items", "write_items"]
