"""What a controls run will cost (`coevo plan`): its model calls per stage and role, counted as
controls/loop.py makes them. Nothing is trained.

- `y0`: one response per example, and its gold-rubric judgment (the pairwise evaluator judges
  y0 only beside each y1);
- `critiques`: one critique per example;
- `revise: CONDITION`: one revision per example and its judgment (gold rubric: one call;
  pairwise: one call per shown order).
"""

from __future__ import annotations

from typing import Any

from coevo.plan.estimate import RUBRIC_TOKENS, CallEstimate, TrainingEstimate, call_estimate, completion_tokens, \
    refinement_tokens
from coevo.plan.planning import RunPlan, data_prompt_tokens

def estimate(config: Any, plan: RunPlan) -> tuple[list[CallEstimate], list[TrainingEstimate], list[str]]:
    """The calls of a controls run of `config` whose plan is `plan` (its data size)."""
    notes = ["judges are counted once per item: an unreadable answer asked again adds a call"]
    n = plan.data.get("rows") or 0
    x = data_prompt_tokens(config.data, notes)
    roles = config.roles
    y0, c, y1 = refinement_tokens(roles)
    judged, judge = completion_tokens(roles.judge.sampling), roles.judge.model
    gold = config.evaluator == "gold_rubric"
    calls = [call_estimate("y0", "actor", roles.actor.model, n, filled=x, completion=y0),
             call_estimate("critiques", "critic", roles.critic.model, n, template=roles.critic.template,
                           filled=x + y0, completion=c)]
    if gold:
        calls.append(call_estimate("y0", "judge:gold_rubric", judge, n, template="judge_gold_rubric",
                                   filled=x + RUBRIC_TOKENS + y0, completion=judged))
    for condition in config.conditions:
        stage, feedback = f"revise: {condition}", 0 if condition == "none" else c
        calls.append(call_estimate(stage, "actor", roles.actor.model, n, template=roles.actor.template,
                                   filled=x + y0 + feedback, completion=y1))
        if gold:
            calls.append(call_estimate(stage, "judge:gold_rubric", judge, n, template="judge_gold_rubric",
                                       filled=x + RUBRIC_TOKENS + y1, completion=judged))
        else:
            calls.append(call_estimate(stage, "judge:pairwise", judge, 2 * n, template="judge_pairwise",
                                       filled=x + y0 + y1, completion=judged))
    return [call for call in calls if call.calls > 0], [], notes


__all__ = ["estimate"]
