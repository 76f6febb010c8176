"""The run's warning about critiques that copy their input (kind `copies-input`).

A critique that copies the answer y0 (or the prompt x) it was asked to critique is
degenerate, and a judge that pays it as well as a real critique teaches GRPO to stop
critiquing. The reward-hacking monitor flags copying that *starts* during a stage, or that
the reward pays best at any step (coevo/monitor/degeneracy.py); a critic that copies from its
first step is no crossing, and a short run may end before the monitor checks, so this warning
reads the stored GRPO rollouts themselves (coevo/monitor/copies.py: the definition, and the
same numbers as summary.json -> monitor -> copies) and says:

- how many of the run's GRPO critiques copy their input (k of n, %), by stage where several;
- the critic's reward on copies beside its reward on real critiques (neither copies nor
  empty), each a mean with its n, and its 95 % interval only from MIN_ITEMS critiques up;
- the best-paid copy, by its rollout id, with a link to it on the Samples page.

It warns when at least COPY_SHARE_LIMIT of the critiques copy, or when copies were paid on
average at least as much as real critiques (however few: the judge pays for not critiquing).
"""

from __future__ import annotations

from typing import Any

from coevo.eval.metric_defs import estimate_text
from coevo.monitor.copies import critique_copies
from coevo.monitor.degeneracy import COPY_SHARE_LIMIT
from coevo.view.findings import Finding

KIND = "copies-input"


def copied_critiques(store: Any, found: dict[str, Any] | None = None) -> list[Finding]:
    """The `copies-input` warning of the run in `store` (`found`: its `critique_copies`,
    where the caller has it), or none (module doc)."""
    found = critique_copies(store) if found is None else found
    if not found or not found["copies"]:
        return []
    k, n = found["copies"], found["critiques"]
    on_copies, on_real = found["reward_on_copies"], found["reward_on_critiques"]
    paid = on_copies["mean"] is not None and (on_real["mean"] is None or on_copies["mean"] >= on_real["mean"])
    if k / n < COPY_SHARE_LIMIT and not paid:
        return []
    stages = found["by_stage"]
    by_stage = (" (by stage: " + ", ".join(f"{s} {v['copies']}/{v['critiques']}" for s, v in stages.items()) + ")"
                if len(stages) > 1 else f" in {next(iter(stages))}")
    text = (f"{k} of {n} GRPO critiques ({k / n:.0%}){by_stage} copy their input instead of critiquing it "
            f"({found['definition']}). The critic's reward on copies: {_reward(on_copies)}; on real critiques: "
            f"{_reward(on_real)}.")
    if paid:
        text += (" The judge paid copying at least as well as critiquing, so GRPO teaches the critic to copy: "
                 "its reward rises while its critiques say nothing.")
    worst = found.get("worst")
    link = None
    if worst is not None:
        link = f"samples/{worst['rollout_id']}"
        text += (f" The best-paid copy: rollout {worst['rollout_id']} ({worst['stage']}, reward {worst['reward']:g}, "
                 f"a copy of {worst['copies']}), on the Samples page at {link}.")
    text += (" Use a stronger judge, or a reward that scores the critique itself (reward: critique_quality), "
             "and check that it scores a copied critique low.")
    return [Finding(kind=KIND, text=text, link=link)]


def _reward(estimate: dict[str, Any]) -> str:
    """A mean reward as the run page writes estimates: its interval from MIN_ITEMS up, its n."""
    if not estimate["n"]:
        return "none (no such critique was rewarded)"
    return estimate_text(estimate["mean"], estimate["lo"], estimate["hi"], estimate["n"])
