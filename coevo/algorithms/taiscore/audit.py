"""The judge audit of a TAIScore run (`audit:` in the config, coevo/audit/).

Before round 1 (round 0's evaluation) and after every round, the run's frozen judges are
probed on the first `audit.prompts` held-out prompts, with real items the CURRENT models
wrote: π_r's answer y0, κ_r's critique c and π_r's revision y1 (the refinement evaluation's,
where it ran). Two judges, as the loop uses them:

- `reward`: the judge whose score is the critic's GRPO reward (taiscore or
  critique_quality; outcome_gain's verdict has no slot a probe could fill, so it is not
  audited): can a critique and a revision with no content score as high as κ_r's?
- `pairwise`: the judge that picks the actor's DPO pairs and makes `win_rate_vs_round0`:
  does it read the answers, or the order they are shown in?
- `gold`: the gold-rubric judge behind `gold_score`, the run's headline number, on π_r's
  answers y0 to the first `audit.prompts` held-out prompts that carry a rubric (where the
  judge is a model: a `python:` scorer is the user's own code, not a judge to probe): can a
  content-free answer score as high, and do its per-criterion scores follow the answer, or
  the rubric's criterion order or the prompt (coevo/audit/patterns.py)?

Round 0 says whether the judge can be gamed at all; later rounds say whether the trained
models' texts still beat content-free ones in the judge's eyes (a fooled rate that climbs
means the judge now scores what κ_r writes no higher than ":").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from coevo.audit.in_run import audit_in_run, save_records
from coevo.audit.probes import AUDIT_KINDS
from coevo.roles.judging import rollout_judge
from coevo.llm.python_functions import PythonFunction
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.roles.judging import judge_for
from coevo.core.types import Rollout, Sample

if TYPE_CHECKING:
    from coevo.algorithms.taiscore.context import Context

#: Audit metrics shown in the rounds tables (with their CI and n), beside the win rate.
AUDIT_TABLE_METRICS = ("audit_reward_fooled_rate", "audit_pairwise_position_consistency")


def audit_round(ctx: Context, tag: str, r: int, reward: str, seed: int, samples: Sequence[Sample],
                rollouts: Sequence[Rollout], actor: Actor, critic: Critic) -> dict[str, float | None]:
    """Audit the run's judges on round r's held-out items; the round's `audit_*` metrics."""
    config = ctx.config.audit
    if not config.enabled or not samples or (r > 0 and not config.after_rounds):
        return {}
    chosen = list(zip(samples, rollouts))[:config.prompts]
    audit_samples = [s for s, _ in chosen]
    items = _with_critique_and_revision([ro.model_copy(update={"judgments": {}}) for _, ro in chosen], actor, critic)
    judge_model, sampling, where = ctx.cached(ctx.judge_model), ctx.config.roles.judge.sampling, f"{tag} round {r}"
    metrics: dict[str, float | None] = {}
    records: list[dict[str, Any]] = []
    judges = []
    if reward in AUDIT_KINDS:
        judges.append(("reward", reward, rollout_judge(reward, judge_model, sampling), audit_samples, items))
    if ctx.config.evaluation.win_rate:
        judges.append(("pairwise", "pairwise", judge_for("pairwise", judge_model, sampling), audit_samples, items))
    judges += _gold_judge(ctx, judge_model, samples, rollouts, config.prompts)
    for name, kind, judge, audited, audited_items in judges:
        found, record = audit_in_run(where, name, kind, judge, audited, audited_items, config, seed)
        metrics |= found
        records.append(record)
    save_records(ctx.store, f"{tag}/round{r}", records)
    return metrics


def _gold_judge(ctx: Context, judge_model: Any, samples: Sequence[Sample], rollouts: Sequence[Rollout],
                prompts: int) -> list[tuple[str, str, Any, list[Sample], list[Rollout]]]:
    """The gold-rubric judge with its audit items, where `gold_score` is measured by a model:
    π_r's answers y0 to the first `prompts` held-out prompts with a rubric, alone in the slot
    (the gold judge scores y1 where a rollout has one, so the critique and revision go)."""
    if not ctx.config.evaluation.gold_rubric or isinstance(ctx.judge_model, PythonFunction):
        return []
    chosen = [(s, ro) for s, ro in zip(samples, rollouts) if s.rubric is not None and s.rubric.criteria][:prompts]
    if not chosen:
        return []
    items = [ro.model_copy(update={"c": None, "y1": None, "judgments": {}}) for _, ro in chosen]
    judge = judge_for("gold_rubric", judge_model, ctx.config.roles.judge.sampling)
    return [("gold", "gold_rubric", judge, [s for s, _ in chosen], items)]


def _with_critique_and_revision(items: list[Rollout], actor: Actor, critic: Critic) -> list[Rollout]:
    """The items with κ_r's critique and π_r's revision, written here where the refinement
    evaluation (which writes them) is off."""
    todo = [i for i, item in enumerate(items) if item.c is None or item.y1 is None]
    if todo:
        xs, y0 = [items[i].x for i in todo], [items[i].y0 for i in todo]
        critiques = [group[0] for group in critic.critique(xs, y0)]
        for i, c, y1 in zip(todo, critiques, actor.revise(xs, y0, critiques)):
            items[i] = items[i].model_copy(update={"c": c, "y1": y1})
    return items
