"""What the controlled analysis will cost (`coevo plan`): its model calls per stage and role,
counted from the cells as the loop makes them (scaling/loop.py). Nothing is trained.

- `y0[SOURCE]`: one response per example (none where y0 is read from the data) and its gold
  score S(y0);
- `critique[y0 | CRITIC]`: one critique per example and its critique-quality judgment (Table 8);
- `revise[y0 | CRITIC | REFINER]`: one revision per example, its adherence judgment (Table 9)
  and its gold score S(y1).
A stage shared by several cells (one y0 for a whole block, one critique for every refiner
under it) is counted once, as the loop runs it once.
"""

from __future__ import annotations

from typing import Any

from coevo.algorithms.scaling.cells import grid_cells
from coevo.algorithms.scaling.config import COLUMN
from coevo.plan.estimate import RUBRIC_TOKENS, CallEstimate, TrainingEstimate, call_estimate, completion_tokens, \
    refinement_tokens
from coevo.plan.planning import RunPlan, data_prompt_tokens

def estimate(config: Any, plan: RunPlan) -> tuple[list[CallEstimate], list[TrainingEstimate], list[str]]:
    """The calls of a scaling run of `config` whose plan is `plan` (its data sizes)."""
    notes = ["judges are counted once per item: an unreadable answer asked again adds a call"]
    n = plan.data.get("rows") or 0
    x = data_prompt_tokens(config.data, notes)
    roles = config.roles
    y0, c, y1 = refinement_tokens(roles)
    judged, scored = completion_tokens(roles.judge.sampling), completion_tokens(roles.gold.sampling)
    judge, gold = roles.judge.model, roles.gold.model or roles.judge.model
    calls: list[CallEstimate] = []
    seen: set[str] = set()
    for cell in grid_cells(config):
        if cell.y0_stage not in seen:
            seen.add(cell.y0_stage)
            if not cell.y0.startswith(COLUMN):
                calls.append(call_estimate(cell.y0_stage, "actor", cell.y0, n, filled=x, completion=y0))
            calls.append(call_estimate(cell.y0_stage, "judge:gold_rubric", gold, n, template="judge_gold_rubric",
                                       filled=x + RUBRIC_TOKENS + y0, completion=scored))
        if cell.critique_stage not in seen:
            seen.add(cell.critique_stage)
            calls.append(call_estimate(cell.critique_stage, "critic", cell.critic, n,
                                       template=roles.critic.template, filled=x + y0, completion=c))
            calls.append(call_estimate(cell.critique_stage, "judge:critique_quality", judge, n,
                                       template="judge_critique_quality", filled=x + y0 + c, completion=judged))
        if cell.revise_stage not in seen:
            seen.add(cell.revise_stage)
            calls.append(call_estimate(cell.revise_stage, "actor", cell.refiner, n, template=roles.actor.template,
                                       filled=x + y0 + c, completion=y1))
            calls.append(call_estimate(cell.revise_stage, "judge:adherence", judge, n, template="judge_adherence",
                                       filled=x + y0 + c + y1, completion=judged))
            calls.append(call_estimate(cell.revise_stage, "judge:gold_rubric", gold, n, template="judge_gold_rubric",
                                       filled=x + RUBRIC_TOKENS + y1, completion=scored))
    return [call for call in calls if call.calls > 0], [], notes


__all__ = ["estimate"]
