"""Evaluation after every TAIScore round, and the tables the run ends with.

On held-out prompts (never in a training shard), for round r:
  refine_S_y1, refine_delta
                      Table 3a's direct refinement gain, measured BEFORE the round's DPO: the
                      new critic κ_r critiques the old actor π_{r-1}'s responses y0 and
                      π_{r-1} revises, y1 = π_{r-1}(x, y0, κ_r(x, y0)); S(y1) and
                      Δ = S(y1) − S(y0) over items whose both scores are readable. y0 and
                      S(y0) are round r-1's evaluation's (`refinement_before_dpo`). Round 0:
                      κ_0 on π_0, before any training;
and, after the round's DPO, for the models after round r (π_r, κ_r) (`evaluate`):
  gold_score          S(π_r): the gold-rubric judge's mean score of π_r's responses y0
                      (with `evaluation.output_sets` N > 1, Table 1's protocol: the mean over
                      N independently generated sets, `gold_score_set_sd` their sd);
  constraint_pass_rate
                      the checkable gold beside the judge's: the share of π_r's responses y0
                      meeting every constraint their prompt states (`meta.constraints`,
                      coevo.eval.constraints), with `_lo`/`_hi` (Wilson 95 %) and
                      `constraint_count` (n); `constraint_check_rate` per single check. The
                      refinements' y1 get `refine_constraint_*` (before DPO, and round 0) and
                      `refine_after_dpo_constraint_*`. Per rollout: judgments "constraints_y0"
                      and "constraints" (y1);
  win_rate_vs_round0  pairwise judge, π_r's response vs π_0's for the same prompt, every
                      pair judged in BOTH shown orders and the two preferences averaged (ties
                      and verdicts that disagree count ½; coevo.eval.both_orders), so a
                      judge's position preference cannot move it; with `_lo`/`_hi` (Wilson
                      95 %) and `_n` (items with both verdicts readable), and beside it
                      `position_consistency_vs_round0` (share of items whose two verdicts name
                      the same response) and `first_position_rate_vs_round0` (share of
                      verdicts won by the response shown first, ties ½: 1.0 = the judge reads
                      only the order). Per rollout: judgments "pairwise_vs_round0" (π_0's
                      response shown first) and "pairwise_vs_round0_swapped". π_0 itself is
                      not compared (round 0);
  kpr, kpc, report_quality
                      DeepResearch-Gym's report-level metrics, for held-out samples that carry
                      reference key points (`deepresearch_gym:FILE`; coevo/eval/deepresearch_gym.py):
                      the percent of key points π_r's report supports (KPR) and contradicts
                      (KPC), and the judge's mean over report-level criteria on 0-100, each with
                      its n and 95 % interval (over `output_sets` N > 1: the mean of the sets,
                      `<metric>_set_sd`). Judged by `evaluation.judge` (None: the run's judge).
                      Per rollout: judgments "key_points" and "report_quality";
  refine_S_y1_after_dpo, refine_delta_after_dpo
                      the same refinement with the updated actor: y1 = π_r(x, y0, κ_r(x, y0))
                      on π_r's own y0 (not the paper's Table 3 quantity; rounds ≥ 1 only);
plus, from the round's training (the loop passes them in): the critic's training reward
mean, spread and distribution, pair-filter counts, and the invalid-judgment rate over every
judgment of the round. `*critic_prompts_shortened` counts, per stage (grpo, pairs,
eval_before_dpo, eval), the critic prompts whose y0 was shortened in its middle to fit
`grpo.max_prompt_length` (coevo.roles.prompt_budget). Everything goes to the run store with
round=r (report.html plots it).

The run's tables end with each condition's gold gain S(π_last) − S(π_0): the mean paired
difference over (seed, held-out prompt) items both rounds scored, with its paired bootstrap
95 % CI (resampling prompts keeps each prompt's difficulty out of the comparison).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
import copy
from typing import TYPE_CHECKING, Any

from coevo.algorithms.taiscore.audit import AUDIT_TABLE_METRICS, audit_round
from coevo.eval.both_orders import judge_both_orders, summarise_both_orders
from coevo.eval.constraints import CONSTRAINTS, constraint_judgment, constraints_of, pass_rate_metrics, passed
from coevo.eval.deepresearch_gym import judge_reports, over_sets, set_metrics
from coevo.eval.paired import paired_difference
from coevo.llm.call_tags import tagged
from coevo.eval.stats import mean_metrics, mean_sd
from coevo.core.progress import map_batches
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.roles.deepresearch import key_points_of
from coevo.roles.deepresearch_official import report_judges
from coevo.llm.python_functions import PythonFunction
from coevo.roles.judging import judge_for
from coevo.core.types import Rollout

if TYPE_CHECKING:
    from coevo.algorithms.taiscore.context import Context
    from coevo.algorithms.taiscore.records import ConditionResult
    from coevo.rundir.store import RunStore

log = logging.getLogger(__name__)

#: Metrics shown in the summary tables, in this order (others stay in the store and report).
TABLE_METRICS = ("gold_score", "kpr", "kpc", "report_quality", "constraint_pass_rate", "gold_score_set_sd", "win_rate_vs_round0",
                 "position_consistency_vs_round0", "refine_S_y1", "refine_delta", "refine_delta_after_dpo",
                 "reward_mean", "pairs_selected", "invalid_judgment_rate", *AUDIT_TABLE_METRICS)
#: The tables' column (comparison) or row (rounds) of the paired gold gain and its CI.
GAIN = "gold_gain vs round 0 (95% CI)"


class RoundEvaluator:
    """Evaluates one condition's models after each round; a finished round is not redone."""

    def __init__(self, ctx: Context, tag: str, seed: int, reward: str = "taiscore"):
        """`reward`: the critic's GRPO reward judge, which the round's judge audit probes."""
        self.ctx, self.tag, self.seed, self.reward = ctx, tag, seed, reward
        judge_model = ctx.cached(ctx.judge_model)
        sampling = ctx.config.roles.judge.sampling
        self.gold = judge_for("gold_rubric", judge_model, sampling)  # a model's, or a python: scorer's
        self.pairwise = judge_for("pairwise", judge_model, sampling)
        self.baseline: dict[str, float | None] = {}
        self.samples = ctx.held_out
        self.base_responses: dict[str, str] = {}
        self._report_judges: tuple[Any, Any] | None = None

    def evaluate(self, r: int, actor: Actor, critic: Critic, training: dict[str, Any]) -> dict[str, float | None]:
        """Metrics of (π_r, κ_r); `training` holds the round's training counts (empty for r=0)."""
        store, step = self.ctx.store, f"{self.tag}/round{r}/eval"
        done = store.step_result(step)
        if done is None:
            with tagged(stage=step):  # the calls behind this stage's rollouts (the viewer)
                metrics = self._measure(r, actor, critic)
            metrics.update(_invalid_rate(training, metrics))
            store.log_metrics(self.tag, {k: v for k, v in {**training, **metrics}.items()
                                         if isinstance(v, (int, float)) or v is None}, round=r)
            self._record_distribution(r)
            store.finish_step(step, metrics)
        else:
            metrics = done
        if r == 0:
            self.baseline = metrics
        return metrics

    def refinement_before_dpo(self, r: int, actor: Actor, critic: Critic) -> dict[str, float | None]:
        """Table 3a's refinement gain of round r (r ≥ 1), called between the critic's GRPO and
        the actor's DPO: κ_r (`critic`) critiques π_{r-1}'s held-out responses and π_{r-1}
        (`actor`, not yet updated) revises them. y0 and S(y0) are round r-1's evaluation's
        (the same responses, scored once). A finished measurement is not redone."""
        store, step = self.ctx.store, f"{self.tag}/round{r}/eval_before_dpo"
        done = store.step_result(step)
        if done is not None:
            return done
        metrics: dict[str, float | None] = {}
        if self.ctx.config.evaluation.refinement and self.samples:
            before = {ro.sample_id: ro for ro in store.rollouts(f"{self.tag}/round{r - 1}/eval")}
            samples = [s for s in self.samples if s.id in before]
            rollouts = [Rollout(sample_id=s.id, x=s.prompt, y0=before[s.id].y0, condition=self.tag,
                                judgments={k: v for k, v in before[s.id].judgments.items() if k == "gold_rubric_y0"})
                        for s in samples]
            with tagged(stage=step):
                found = self._refine(f"round {r} before DPO", samples, rollouts, actor, critic)
            metrics |= check_constraints(samples, rollouts, "y1", "constraints", "refine_constraint")
            if "S_y1" in found:
                metrics |= _refine_metrics(found, "")
            metrics |= {"eval_before_dpo_critic_prompts_shortened": found["critic_prompts_shortened"],
                        "eval_before_dpo_judgments": found["judgments"], "eval_before_dpo_invalid": found["invalid"]}
            for rollout in rollouts:
                store.save_rollout(step, rollout, round=r)
        store.finish_step(step, metrics)
        return metrics

    def _measure(self, r: int, actor: Actor, critic: Critic) -> dict[str, float | None]:
        config, store = self.ctx.config.evaluation, self.ctx.store
        samples = self.samples
        if not samples:
            return {}
        size = self.ctx.config.batch_size
        y0 = map_batches(actor.respond, samples, size, f"eval round {r}: responses")
        if r == 0:
            self.base_responses = {s.id: y for s, y in zip(samples, y0)}
        elif not self.base_responses:  # resumed after round 0: π_0's answers are in the store
            self.base_responses = {r_.sample_id: r_.y0 for r_ in store.rollouts(f"{self.tag}/round0/eval")}
        rollouts = [Rollout(sample_id=s.id, x=s.prompt, y0=y, condition=self.tag) for s, y in zip(samples, y0)]
        metrics: dict[str, float | None] = {"eval_prompts": float(len(samples))}
        metrics |= check_constraints(samples, rollouts, "y0", "constraints_y0", "constraint")
        rubric = [i for i, s in enumerate(samples) if s.rubric is not None and s.rubric.criteria]

        if config.gold_rubric and rubric:
            for i, judgment in zip(rubric, self._gold(f"eval round {r}", [samples[i] for i in rubric],
                                                      [y0[i] for i in rubric])):
                rollouts[i].judgments["gold_rubric_y0"] = judgment
            metrics |= mean_metrics("gold_score", _scores([rollouts[i].judgments["gold_rubric_y0"] for i in rubric]))
            if config.output_sets > 1:  # the mean over sets replaces set 1's: so does its n, and no interval
                metrics = {k: v for k, v in metrics.items() if k not in ("gold_score_lo", "gold_score_hi")}
                metrics |= self._output_sets(r, actor, [samples[i] for i in rubric], metrics["gold_score"])
        metrics |= self._deep_research(r, actor, samples, y0, rollouts)
        if config.win_rate and r > 0:
            base = [self.base_responses.get(s.id, "") for s in samples]
            # Both shown orders, averaged: an evaluation number a position bias cannot move
            # (the actor's DPO pairs keep the paper's one random order).
            pairs = map_batches(
                lambda rows: judge_both_orders(self.pairwise, [s.prompt for s, _, _ in rows], [b for _, b, _ in rows],
                                               [y for _, _, y in rows], labels=("round0", "current")),
                list(zip(samples, base, y0)), size, f"eval round {r}: pairwise vs round 0 (both orders)")
            for rollout, (as_given, swapped) in zip(rollouts, pairs):
                rollout.judgments["pairwise_vs_round0"] = as_given
                rollout.judgments["pairwise_vs_round0_swapped"] = swapped
            metrics |= summarise_both_orders(pairs).metrics("win_rate_vs_round0", "vs_round0")
        if config.refinement:
            found = self._refine(f"eval round {r}", samples, rollouts, actor, critic)
            # Round 0 has had no DPO: κ_0 on π_0 is the before-DPO quantity itself.
            suffix = "" if r == 0 else "_after_dpo"
            metrics |= check_constraints(samples, rollouts, "y1", "constraints",
                                         "refine_constraint" if r == 0 else "refine_after_dpo_constraint")
            if "S_y1" in found:
                metrics |= _refine_metrics(found, suffix)
            metrics["eval_critic_prompts_shortened"] = found["critic_prompts_shortened"]
        # The judges probed on this round's items (taiscore/audit.py): can they be gamed?
        metrics |= audit_round(self.ctx, self.tag, r, self.reward, self.seed, samples, rollouts, actor, critic)
        for rollout in rollouts:
            store.save_rollout(f"{self.tag}/round{r}/eval", rollout, round=r)
        # Constraint checks are code, not judge calls: they cannot be unreadable.
        judgments = [j for rollout in rollouts for j in rollout.judgments.values() if j.judge != CONSTRAINTS]
        metrics["eval_judgments"] = float(len(judgments))
        metrics["eval_invalid"] = float(sum(not j.valid for j in judgments))
        return metrics

    def _output_sets(self, r: int, actor: Actor, samples: list[Any], first: float | None) -> dict[str, float | None]:
        """Table 1's protocol: the checkpoint writes `output_sets` independent sets of responses
        (the same decoding, another seed each), each scored on its own; `gold_score` is the
        mean over the sets and `gold_score_set_sd` their sd (the paper's ±). Set 1 is the one
        the other metrics (win rate, refinement) use; the others land in stages `eval_setN`."""
        scores = [first]
        for j in range(2, self.ctx.config.evaluation.output_sets + 1):
            label = f"eval round {r}: output set {j}"
            with tagged(stage=f"{self.tag}/round{r}/eval_set{j}"):
                responses = map_batches(_set_actor(actor, j).respond, samples, self.ctx.config.batch_size, label)
                judgments = self._gold(label, samples, responses)
            for sample, response, judgment in zip(samples, responses, judgments):
                self.ctx.store.save_rollout(f"{self.tag}/round{r}/eval_set{j}", Rollout(
                    sample_id=sample.id, x=sample.prompt, y0=response, condition=self.tag,
                    judgments={"gold_rubric_y0": judgment}), round=r)
            scores.append(_mean(judgments))
        present = [score for score in scores if score is not None]
        if not present:
            return {"gold_score": None, "gold_score_sets": 0.0}
        mean, sd = mean_sd(present)
        return {"gold_score": mean, "gold_score_set_sd": sd, "gold_score_sets": float(len(present))}

    def _deep_research(self, r: int, actor: Actor, samples: list[Any], y0: list[str],
                       rollouts: list[Rollout]) -> dict[str, float | None]:
        """DeepResearch-Gym's KPR, KPC and report quality of the reports to the held-out samples
        that carry key points (none: {}), over `output_sets` sets as the gold score is; set 1's
        judgments go on its rollouts, the other sets' rollouts to stages `eval_setN`."""
        keyed = [i for i, s in enumerate(samples) if key_points_of(s)]
        judges = self._evaluator() if keyed else None
        if judges is None:
            return {}
        samples, size = [samples[i] for i in keyed], self.ctx.config.batch_size

        def judge(reports: list[str], label: str) -> list[dict[str, Any]]:
            return map_batches(lambda rows: judge_reports(*judges, [s for s, _ in rows], [y for _, y in rows]),
                               list(zip(samples, reports)), size, f"{label}: DeepResearch-Gym")

        judged = judge([y0[i] for i in keyed], f"eval round {r}")
        for i, each in zip(keyed, judged):
            rollouts[i].judgments.update(each)
        sets = [set_metrics(judged)]
        for j in range(2, self.ctx.config.evaluation.output_sets + 1):
            stage, label = f"{self.tag}/round{r}/eval_set{j}", f"eval round {r}: output set {j}"
            with tagged(stage=stage):
                reports = map_batches(_set_actor(actor, j).respond, samples, size, label)
                judged = judge(reports, label)
            for sample, report, each in zip(samples, reports, judged):
                self.ctx.store.save_rollout(stage, Rollout(sample_id=sample.id, x=sample.prompt, y0=report,
                                                           condition=self.tag, judgments=each), round=r)
            sets.append(set_metrics(judged))
        return over_sets(sets)

    def _evaluator(self) -> tuple[Any, Any] | None:
        """The DeepResearch-Gym judges on `evaluation.judge` (None: the run's judge), or None
        with a warning where that judge is a Python function (the benchmark needs a model)."""
        if self._report_judges is None:
            spec, ctx = self.ctx.config.evaluation.judge, self.ctx
            model, sampling = ctx.judge_model, ctx.config.roles.judge.sampling
            if spec is not None:
                thinking = {"thinking": spec.thinking} if spec.thinking is not None else {}
                model = ctx.frozen(spec.model, "evaluator",  # shared by every condition, as the frozen roles are
                                   {**ctx.config.roles.default.options, **spec.options, **thinking})
                sampling = spec.sampling
            if isinstance(model, PythonFunction):
                log.warning("held-out samples carry key points, but the evaluator's judge %s is a Python "
                            "function: KPR, KPC and report quality need a model (set evaluation.judge)", model.spec)
                return None
            model = ctx.cached(model)
            self._report_judges = report_judges(model, sampling, self.ctx.config.evaluation.deepresearch_protocol)
        return self._report_judges

    def _gold(self, label: str, samples: list[Any], responses: list[str]) -> list[Any]:
        """The gold-rubric judgments of `responses` to `samples`, in batches."""
        return map_batches(lambda rows: self.gold.judge([s for s, _ in rows], [y for _, y in rows]),
                           list(zip(samples, responses)), self.ctx.config.batch_size, f"{label}: gold rubric")

    def _refine(self, label: str, samples: list[Any], rollouts: list[Rollout], actor: Actor,
                critic: Critic) -> dict[str, float | None]:
        """Critique-guided refinement of each rollout's y0 (its c and y1 set in place, y1's gold
        judgment added as "gold_rubric"): `S_y1`, `delta` = S(y1) − S(y0) over items whose
        y0 carries a readable "gold_rubric_y0" and y1 a readable score (both absent without
        gold rubrics), the new judgments' count and invalid ones, and the count of critic
        prompts shortened to fit the budget."""
        size, xs, y0 = self.ctx.config.batch_size, [s.prompt for s in samples], [r.y0 for r in rollouts]
        critiques = [g[0] for g in map_batches(
            lambda rows: critic.critique([x for x, _ in rows], [y for _, y in rows]),
            list(zip(xs, y0)), size, f"{label}: critiques")]
        y1 = map_batches(lambda rows: actor.revise([x for x, _, _ in rows], [y for _, y, _ in rows],
                                                   [c for _, _, c in rows]),
                         list(zip(xs, y0, critiques)), size, f"{label}: revisions")
        for rollout, c, y in zip(rollouts, critiques, y1):
            rollout.c, rollout.y1 = c, y
        found: dict[str, float | None] = {
            "critic_prompts_shortened": shortened_prompts(critic, label, xs, y0), "judgments": 0.0, "invalid": 0.0}
        scored = [i for i, r in enumerate(rollouts) if "gold_rubric_y0" in r.judgments]
        if self.ctx.config.evaluation.gold_rubric and scored:
            for i, judgment in zip(scored, self._gold(label, [samples[i] for i in scored], [y1[i] for i in scored])):
                rollouts[i].judgments["gold_rubric"] = judgment
            pairs = [(rollouts[i].judgments["gold_rubric_y0"], rollouts[i].judgments["gold_rubric"]) for i in scored]
            both = [(a.score, b.score) for a, b in pairs if a.valid and b.valid]
            found["S_y1"] = _mean([b for _, b in pairs])
            found["delta"] = (sum(b - a for a, b in both) / len(both)) if both else None
            found["S_y1_values"] = _scores([b for _, b in pairs])  # type: ignore[assignment]
            found["delta_values"] = [b - a for a, b in both]  # type: ignore[assignment]
            found["judgments"] = float(len(pairs))
            found["invalid"] = float(sum(not b.valid for _, b in pairs))
        return found

    def _record_distribution(self, r: int) -> None:
        """Training-reward values per round, for the report's distribution plot."""
        store = self.ctx.store
        reward = next((k for k in ("taiscore", "outcome_gain", "critique_quality")
                       if any(k in ro.judgments for ro in store.rollouts(f"{self.tag}/round{r}/grpo"))), None)
        if reward is None:
            return
        scores = [ro.judgments[reward].score for ro in store.rollouts(f"{self.tag}/round{r}/grpo")
                  if ro.judgments[reward].valid and ro.judgments[reward].score is not None]
        def add(dists: dict) -> dict:
            series = dists.setdefault("critic training reward (GRPO)", {})
            series.setdefault(self.tag, {})[str(r)] = scores
            return dists

        store.update_meta("distributions", add, {})


def _set_actor(actor: Actor, j: int) -> Actor:
    """The actor of output set `j` (Table 1's protocol): the same decoding, another seed."""
    again = copy.copy(actor)
    again.sampling = actor.sampling.model_copy(update={"seed": (actor.sampling.seed or 0) + 7919 * (j - 1)})
    return again


def shortened_prompts(critic: Critic, stage: str, prompts: Sequence[str], responses: Sequence[str]) -> float:
    """How many of a stage's critic prompts had their y0 shortened in its middle to fit the
    critic's token budget (`Critic.count_shortened`), said in the run's log."""
    count = critic.count_shortened(prompts, responses)
    if critic.max_prompt_tokens is not None:
        log.info("%s: %d of %d critic prompts over %d tokens, their y0 shortened in its middle", stage, count,
                 len(prompts), critic.max_prompt_tokens)
    return float(count)


def check_constraints(samples: Sequence[Any], rollouts: Sequence[Rollout], field: str, name: str,
                      prefix: str) -> dict[str, float | None]:
    """Check each rollout's `field` ("y0" or "y1") against its sample's constraints, store the
    outcome as the rollout's judgment `name`, and return `<prefix>_pass_rate` with its Wilson
    95 % CI and n (`coevo.eval.constraints.pass_rate_metrics`); the rate is None when no
    sample has any."""
    outcomes = []
    for sample, rollout in zip(samples, rollouts):
        found = constraints_of(sample)
        if found and getattr(rollout, field) is not None:
            rollout.judgments[name] = constraint_judgment(getattr(rollout, field), found)
            outcomes.append(passed(rollout.judgments[name]))
    return pass_rate_metrics(outcomes, prefix)


def _mean(judgments: list[Any]) -> float | None:
    scores = _scores(judgments)
    return sum(scores) / len(scores) if scores else None


def _scores(judgments: list[Any]) -> list[float]:
    return [j.score for j in judgments if j.valid and j.score is not None]


def _refine_metrics(found: dict[str, Any], suffix: str) -> dict[str, float | None]:
    """`refine_S_y1{suffix}` and `refine_delta{suffix}` with their n and interval."""
    return (mean_metrics(f"refine_S_y1{suffix}", found["S_y1_values"])
            | mean_metrics(f"refine_delta{suffix}", found["delta_values"]))


def _invalid_rate(training: dict[str, Any], evaluation: dict[str, Any]) -> dict[str, float | None]:
    """Unreadable judgments over every judgment of the round: rewards, pair filter, both evaluations."""
    total = invalid = 0.0
    if training.get("reward_count"):
        total += training["reward_count"]
        invalid += training["reward_count"] * (training.get("reward_invalid_rate") or 0.0)
    if training.get("pairs_candidates"):
        total += training["pairs_candidates"]
        invalid += training.get("pairs_invalid") or 0.0
    total += evaluation.get("eval_judgments") or 0.0
    invalid += evaluation.get("eval_invalid") or 0.0
    total += training.get("eval_before_dpo_judgments") or 0.0
    invalid += training.get("eval_before_dpo_invalid") or 0.0
    return {"invalid_judgment_rate": invalid / total if total else None}


def _cell(metrics: dict[str, Any], metric: str) -> float | str | None:
    """A rounds-table cell: the value alone, or as the metric registry writes an estimate
    (``"0.417 [0.193, 0.680] (n=12)"``, ``"0.500 (n=2: too few to tell)"``) where its n or
    interval was logged beside it (coevo/eval/metric_defs.py: the same text the viewer shows)."""
    from coevo.eval.metric_defs import estimate_of

    estimate = estimate_of(metrics, metric)
    if estimate.value is None or (estimate.n is None and estimate.low is None):
        return estimate.value
    return estimate.text()


def _fmt(values: list[float | None], seeds: int) -> float | str | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    if seeds == 1 and len(present) == 1:
        return present[0]
    mean, sd = mean_sd(present)
    return f"{mean:.3f} ± {sd:.3f}" + (f" (n={len(present)})" if len(present) != seeds else "")


def comparison_table(runs: list[ConditionResult], seeds: int, gains: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One row per condition: its final-round metrics, mean ± sd over seeds when seeds > 1,
    and its paired gold gain over round 0 (`gold_gains`)."""
    by_condition: dict[str, list[ConditionResult]] = {}
    for run in runs:
        by_condition.setdefault(run.condition, []).append(run)
    rows = [{"condition": "base actor (round 0)", "rounds": 0,
             **{m: _fmt([run.baseline.get(m) for run in runs[:seeds]], seeds)
                for m in ("gold_score", "refine_S_y1", "refine_delta")}}]
    for name, group in by_condition.items():
        finals = [run.rounds[-1].metrics if run.rounds else {} for run in group]
        rows.append({"condition": name, "rounds": len(group[0].rounds),
                     **{m: _fmt([f.get(m) for f in finals], seeds) for m in TABLE_METRICS},
                     GAIN: format_gain(gains.get(name))})
    return {"columns": ["condition", "rounds", *TABLE_METRICS, GAIN], "rows": rows}


def rounds_table(run: ConditionResult, gains: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """One condition's before/after table: a row per metric, a column per round (0 = before),
    and a last row with the paired gold gain of the last round over round 0."""
    columns = ["metric", "round 0"] + [f"round {rec.round}" for rec in run.rounds]
    rows = []
    for metric in TABLE_METRICS:
        row = {"metric": metric, "round 0": _cell(run.baseline, metric)}
        for rec in run.rounds:
            row[f"round {rec.round}"] = _cell(rec.metrics, metric)
        if any(v is not None for k, v in row.items() if k != "metric"):
            rows.append(row)
    gain = format_gain(gains.get(run.condition))
    if run.rounds and gain is not None:
        rows.append({"metric": GAIN, columns[-1]: gain})
    return {"columns": columns, "rows": rows}


def gold_gains(store: RunStore, runs: list[ConditionResult], output_sets: int = 1) -> dict[str, dict[str, Any]]:
    """Per condition, S(π_last) − S(π_0) over the held-out prompts, paired by (seed, prompt):
    {mean_diff, low, high, n_pairs}, a paired bootstrap 95 % CI over the items both rounds
    scored (each seed against its own round 0); `paired_difference` says what one or no pair gives."""
    pairs: dict[str, tuple[list[float], list[float]]] = {}
    for run in runs:
        if not run.rounds:
            continue
        before = _gold_by_prompt(store, f"{run.tag}/round0/eval", output_sets)
        after = _gold_by_prompt(store, f"{run.tag}/round{run.rounds[-1].round}/eval", output_sets)
        last, first = pairs.setdefault(run.condition, ([], []))
        for sample_id in sorted(before.keys() & after.keys()):
            last.append(after[sample_id])
            first.append(before[sample_id])
    return {condition: paired_difference(last, first).model_dump() for condition, (last, first) in pairs.items()}


def format_gain(gain: dict[str, Any] | None) -> str | None:
    """``"+0.250 [-0.500, +1.000] (n=8)"`` for a table cell, as the viewer writes a difference
    (``"+0.250 (n=4: too few to tell)"`` under 5 pairs); None when nothing was paired."""
    from coevo.eval.metric_defs import estimate_text

    if not gain or gain["mean_diff"] is None:
        return None
    return estimate_text(gain["mean_diff"], gain["low"], gain["high"], gain["n_pairs"], signed=True)


def _gold_by_prompt(store: RunStore, stage: str, output_sets: int = 1) -> dict[str, float]:
    """The gold-rubric score of each held-out prompt's y0 in one evaluation, where readable:
    with several output sets, the prompt's mean over the sets that scored it."""
    scores: dict[str, list[float]] = {}
    for name in [stage] + [f"{stage}_set{j}" for j in range(2, output_sets + 1)]:
        for rollout in store.rollouts(name):
            judgment = rollout.judgments.get("gold_rubric_y0")
            if judgment is not None and judgment.valid and judgment.score is not None:
                scores.setdefault(rollout.sample_id, []).append(judgment.score)
    return {sample_id: sum(values) / len(values) for sample_id, values in scores.items()}
