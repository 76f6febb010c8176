"""What a TAIScore run will cost: its model calls per stage and role, and its training
stages, counted from the config and the plan's data sizes (coevo/plan/estimate.py turns them into
tokens, seconds and dollars). The counts follow the loop (taiscore/loop.py), its evaluation
(taiscore/evaluation.py) and its judge audit (taiscore/audit.py, audit/judge_audit.py):

- round r's `y0`: one response per pooled query; `grpo`: per critique GRPO samples, one
  revision (taiscore, outcome_gain rewards) and one judge call; `pool<t>`: per query one
  critique, one revision, one pairwise verdict; `eval_before_dpo` and `eval`: the held-out
  responses, critiques, revisions and gold-rubric scores, the win rate in both orders, and
  for held-out rows with DeepResearch-Gym key points two evaluator calls per report and
  output set (key points, report quality);
- the audit, per evaluation: for a scored judge every item, each master key, padding and
  an injection, and a retest (m·(keys + 4) calls); for the pairwise judge the real pair,
  each key, padding and injection in both orders plus a retest of the real pairs (23·m); for
  the gold-rubric judge (a model's), each master key, padding, injection and a retest (11·m).
"""

from __future__ import annotations

import math
from typing import Any

from coevo.audit.probes import AUDIT_KINDS, default_probes
from coevo.plan.estimate import (
    CallEstimate,
    TrainingEstimate,
    call_estimate,
    completion_tokens,
    template_tokens,
)
from coevo.llm.python_functions import is_python_spec
from coevo.plan.planning import RunPlan, data_prompt_tokens
from coevo.roles.deepresearch_official import CRITERIA

#: A pairwise verdict is one word ("1", "2", "tie") under its answer schema.
VERDICT_TOKENS = 2
#: A DeepResearch-Gym row's reference key points, as the key-point prompt lists them (a few sentences).
KEY_POINTS_TOKENS = 120
#: One key point (a sentence) and one quality criterion's description, as the official protocol asks.
KEY_POINT_TOKENS, CRITERION_TOKENS = 30, 60
#: Rewards whose judge reads a revision the actor writes per critique first.
REVISES_IN_REWARD = ("taiscore", "outcome_gain")


class _Sizes:
    """The token sizes every count below multiplies: one data prompt, one of each output."""

    def __init__(self, config: Any, prompt_tokens: int):
        roles = config.roles
        self.x, self.rubric = prompt_tokens, 60  # a gold rubric: a few criteria with weights
        self.y0 = completion_tokens(roles.actor.sampling.response)
        self.c = completion_tokens(roles.critic.sampling)
        self.y1 = completion_tokens(roles.actor.sampling.revision)
        self.judged = completion_tokens(roles.judge.sampling)


class _Counter:
    """The calls of one condition and seed, stage by stage (names as the run's cost rows)."""

    def __init__(self, config: Any, plan: Any, tag: str, sizes: _Sizes, plan_data: dict[str, Any] | None = None):
        self.config, self.plan, self.tag, self.s = config, plan, tag, sizes
        self.rows: list[CallEstimate] = []
        roles = config.roles
        self.actor_spec, self.judge_spec = roles.actor.model, roles.judge.model
        self.critic_template, self.reviser = roles.critic.template, roles.actor.template
        #: Held-out rows with DeepResearch-Gym key points, and the evaluator that judges their reports.
        evaluator = config.evaluation.judge
        found = (plan_data or {}).get("evaluator") or {}
        self.keyed, self.key_points = found.get("rows_with_key_points") or 0, found.get("key_points") or 0
        self.protocol = config.evaluation.deepresearch_protocol
        self.evaluator_spec = evaluator.model if evaluator is not None else roles.judge.model
        self.evaluator_answer = completion_tokens((evaluator or roles.judge).sampling)

    def add(self, stage: str, role: str, calls: int, *, template: str | None, filled: int,
            completion: int, spec: str | None = None) -> None:
        if calls > 0:
            self.rows.append(call_estimate(f"{self.tag}/{stage}", role, spec or self._spec(role), calls,
                                           template=template, filled=filled, completion=completion))

    def _spec(self, role: str) -> str:
        return {"actor": self.actor_spec, "critic": self.plan.critic}.get(role, self.judge_spec)

    def responses(self, stage: str, n: int) -> None:
        self.add(stage, "actor", n, template=None, filled=self.s.x, completion=self.s.y0)

    def critiques_and_revisions(self, stage: str, n: int) -> None:
        s = self.s
        self.add(stage, "critic", n, template=self.critic_template, filled=s.x + s.y0, completion=s.c)
        self.add(stage, "actor", n, template=self.reviser, filled=s.x + s.y0 + s.c, completion=s.y1)

    def gold(self, stage: str, n: int, answer: int) -> None:
        self.add(stage, "judge:gold_rubric", n, template="judge_gold_rubric", filled=self.s.x + self.s.rubric + answer,
                 completion=self.s.judged)

    def reports(self, stage: str, n: int) -> None:
        """DeepResearch-Gym's judge calls on n reports: one per key point and one per quality
        criterion (`official`), or one for the key points and one for the quality (`single_call`)."""
        filled = self.s.x + self.s.y0
        if self.protocol == "official":
            self.add(stage, "judge:key_points", self.key_points, template="deepresearch_key_point",
                     filled=self.s.y0 + KEY_POINT_TOKENS, completion=self.evaluator_answer, spec=self.evaluator_spec)
            self.add(stage, "judge:report_quality", len(CRITERIA) * n, template="deepresearch_quality_criterion",
                     filled=filled + CRITERION_TOKENS, completion=self.evaluator_answer, spec=self.evaluator_spec)
            return
        self.add(stage, "judge:key_points", n, template="deepresearch_key_points", filled=filled + KEY_POINTS_TOKENS,
                 completion=self.evaluator_answer, spec=self.evaluator_spec)
        self.add(stage, "judge:report_quality", n, template="deepresearch_quality", filled=filled,
                 completion=self.evaluator_answer, spec=self.evaluator_spec)

    def pairwise(self, stage: str, n: int) -> None:
        self.add(stage, "judge:pairwise", n, template="judge_pairwise", filled=self.s.x + 2 * self.s.y0,
                 completion=VERDICT_TOKENS)

    def reward_judge(self, stage: str, kind: str, n: int) -> None:
        s = self.s
        filled = s.x + s.y0 + s.c + (s.y1 if kind in REVISES_IN_REWARD else 0)
        self.add(stage, f"judge:{kind}", n, template=f"judge_{kind}", filled=filled, completion=s.judged)


def count_evaluation(k: _Counter, r: int, held: int) -> None:
    """Round r's held-out evaluation (`eval`, `eval_set<j>`) and its judge audit."""
    ev, stage = k.config.evaluation, f"round{r}/eval"
    if not held:
        return
    k.responses(stage, held)
    if ev.gold_rubric:
        k.gold(stage, held, k.s.y0)
        for j in range(2, ev.output_sets + 1):
            k.responses(f"round{r}/eval_set{j}", held)
            k.gold(f"round{r}/eval_set{j}", held, k.s.y0)
    if k.keyed:  # DeepResearch-Gym's reports: each output set's, judged by the protocol's calls
        k.reports(stage, k.keyed)
        for j in range(2, ev.output_sets + 1):
            if not ev.gold_rubric:  # else the set's responses are counted above
                k.responses(f"round{r}/eval_set{j}", k.keyed)
            k.reports(f"round{r}/eval_set{j}", k.keyed)
    if ev.win_rate and r > 0:
        k.pairwise(stage, 2 * held)  # both shown orders
    if ev.refinement:
        k.critiques_and_revisions(stage, held)
        if ev.gold_rubric:
            k.gold(stage, held, k.s.y1)
    if r == 0 or k.config.audit.after_rounds:
        count_audit(k, stage, held)


def count_audit(k: _Counter, stage: str, held: int) -> None:
    audit = k.config.audit
    m = min(audit.prompts, held) if audit.enabled else 0
    if not m:
        return
    if not k.config.evaluation.refinement:  # the audit writes the critique and revision it probes
        k.critiques_and_revisions(stage, m)
    if k.plan.reward in AUDIT_KINDS:
        keys = len(default_probes(k.plan.reward))
        k.reward_judge(stage, k.plan.reward, m * (keys + 4))
    if k.config.evaluation.win_rate:
        keys = len(default_probes("pairwise"))
        k.pairwise(stage, 2 * m * (1 + keys + 2) + m)
    if k.config.evaluation.gold_rubric and not is_python_spec(k.judge_spec):
        # The real answers' first pass is the evaluation's own gold call, asked again: cached.
        k.gold(stage, m * (len(default_probes("gold_rubric")) + 3), k.s.y0)


def count_monitor(k: _Counter, r: int, steps: int, held: int) -> None:
    """The reward-hacking monitor's anchors on round r's critic stage (`monitor:`,
    taiscore/monitoring.py): the current actor's responses to its held-out prompts once, then
    at every check (before training, every `every` steps and at the last) a critique of each
    and its revision (where the reward reads one), shared by the anchors, and for each anchor a
    judge call (a second judge; a `python:` anchor calls no model)."""
    monitor = k.config.monitor
    m = min(monitor.prompts, held) if monitor.enabled and monitor.anchors else 0
    if not m:
        return
    s, stage = k.s, f"round{r}/monitor"
    checks = 1 + steps // monitor.every + (1 if steps % monitor.every else 0)
    k.responses(f"round{r}/monitor_y0", m)
    # One critique set per check, shared by the anchors; their revisions are the same calls.
    k.add(stage, "critic", checks * m, template=k.critic_template, filled=s.x + s.y0, completion=s.c)
    if k.plan.reward in REVISES_IN_REWARD:
        k.add(stage, "actor", checks * m, template=k.reviser, filled=s.x + s.y0 + s.c, completion=s.y1)
    for anchor in monitor.anchors:
        if anchor.startswith("judge:"):
            filled = s.x + s.y0 + s.c + (s.y1 if k.plan.reward in REVISES_IN_REWARD else 0)
            k.add(stage, f"judge:{k.plan.reward}", checks * m, template=f"judge_{k.plan.reward}", filled=filled,
                  completion=s.judged, spec=anchor.removeprefix("judge:"))


def count_round(k: _Counter, r: int, pools: dict[int, int], critic_queries: int, held: int
                ) -> list[TrainingEstimate]:
    """Round r over `pools` (shard id -> size): its calls (into `k`) and its training stages."""
    config, plan, s = k.config, k.plan, k.s
    queries = sum(pools.values())
    k.responses(f"round{r}/y0", queries)
    training = []
    if plan.tailored_to:
        k.add(f"round{r}/tailored_y0", "actor", queries, template=None, filled=s.x, completion=s.y0,
              spec=plan.tailored_to)
    if plan.critic_training == "grpo":
        grpo = config.grpo
        steps = grpo.max_steps or math.ceil(critic_queries / grpo.batch_size) * grpo.epochs
        samples = steps * grpo.completions_per_step
        if plan.reward in REVISES_IN_REWARD:
            k.add(f"round{r}/grpo", "actor", samples, template=k.reviser, filled=s.x + s.y0 + s.c, completion=s.y1,
                  spec=plan.tailored_to or None)
        k.reward_judge(f"round{r}/grpo", plan.reward, samples)
        prompt = template_tokens(k.critic_template) + s.x + s.y0  # the critic's prompt: x and y0
        training.append(TrainingEstimate(stage=f"{k.tag}/round{r}/critic", kind="grpo", role="critic",
                                         spec=plan.critic, steps=steps, tokens=samples * (prompt + s.c),
                                         sampled_tokens=samples * s.c,
                                         sampling_batch=config.grpo.completions_per_step))
        count_monitor(k, r, steps, held)
    if config.evaluation.refinement and r >= 1:
        k.critiques_and_revisions(f"round{r}/eval_before_dpo", held)
        if config.evaluation.gold_rubric:
            k.gold(f"round{r}/eval_before_dpo", held, s.y1)
    for t, size in pools.items():
        k.critiques_and_revisions(f"round{r}/pool{t}", size)
        k.pairwise(f"round{r}/pool{t}", size)
    pairs = sum(min(config.pairs_per_round, size) for size in pools.values())
    dpo = config.dpo
    steps = dpo.max_steps or math.ceil(pairs / (dpo.batch_size * dpo.grad_accum)) * dpo.epochs
    trained = min(pairs, steps * dpo.batch_size * dpo.grad_accum)
    training.append(TrainingEstimate(stage=f"{k.tag}/round{r}/actor", kind="dpo", role="actor",
                                     spec=config.roles.actor.model, steps=steps,
                                     tokens=trained * (2 * s.x + s.y0 + s.y1)))
    return training


def estimate(config: Any, plan: RunPlan) -> tuple[list[CallEstimate], list[TrainingEstimate], list[str]]:
    """The calls and training stages of a TAIScore run of `config` (see the module doc)."""
    from coevo.algorithms.taiscore.config import resolve_conditions
    from coevo.algorithms.taiscore.loop import stages_for

    notes = ["every pooled revision is taken as preferred when pairs are counted: the DPO stage's size is "
             "the most the pools allow (the judge's verdicts decide it at run time)",
             "judges are counted once per item: an unreadable answer asked again adds a call"]
    data = plan.data
    sizes = [len(pool) for pool in data["pools"]] if data.get("pools") else None
    critic_sizes = [len(q) for q in data["critic_queries"]] if data.get("critic_queries") else sizes
    held = len(data["held_out"]) if data.get("held_out") is not None else 0
    if sizes is None:
        notes.append("the pools are known only after the run rates its queries (or its data is not here): "
                     "rounds are counted with pools of data.pool_size")
        sizes = [config.data.pool_size or 0] * config.rounds
        critic_sizes = [min(config.critic_queries, size) for size in sizes]
    prompt_tokens = data_prompt_tokens(config.data, notes)
    calls: list[CallEstimate] = []
    training: list[TrainingEstimate] = []
    if data.get("filter_calls"):
        calls.append(call_estimate("taiscore", "judge:query_filter", config.roles.judge.model, data["filter_calls"],
                                   template="query_filter", filled=prompt_tokens,
                                   completion=completion_tokens(config.roles.judge.sampling)))
    for condition in resolve_conditions(config):
        for seed in range(config.seeds):
            tag = condition.name if config.seeds == 1 else f"{condition.name}/seed{config.seed + seed}"
            k = _Counter(config, condition, tag, _Sizes(config, prompt_tokens), data)
            count_evaluation(k, 0, held)
            for r, pool_ids in enumerate(stages_for(condition.schedule, config.rounds), start=1):
                training += count_round(k, r, {t: sizes[t] for t in pool_ids},
                                        sum(critic_sizes[t] for t in pool_ids), held)
                count_evaluation(k, r, held)
            calls += k.rows
    return calls, training, notes


__all__ = ["estimate"]
