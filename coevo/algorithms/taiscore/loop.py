"""TAIScore co-evolving critic–actor training (TAIScore paper §4, §5, Appendix D).

Starting from (π_0, κ_0), over disjoint query shards S_0 … S_{T-1} (§4.4, App. C/D.3):

    for t = 0 … T-1:
        y0(x) ~ π_t(x)                              for x in S_t   on-policy initial responses
        1. critic adaptation (§4.2), GRPO on grouped rollouts:
               c_1..c_N ~ κ_t(x, y0)                   N critiques per y0 (T 0.8 / top-p 0.95)
               y1_i = π_t(x, y0, c_i)                  the current actor revises (T 0.2)
               r_i  = J(x, y0, c_i, y1_i)              raw judge score; TRL normalises per group
           κ_{t+1} ← GRPO(κ_t)
           held out: κ_{t+1}'s critiques of π_t's responses, revised by π_t: Table 3a's
           refinement gain S(y1) − S(y0), measured before the actor's update
        2. actor update (§4.3, D.3), DPO on critique-guided revisions:
               c ~ κ_{t+1}(x, y0), y1 = π_t(x, y0, c)  one candidate per query of the pool S_t
               keep y1 ≻ y0 under a critique-blind pairwise judge (random order; ties, losses out)
               D_t = M pairs sampled uniformly without replacement
           π_{t+1} ← DPO(π_t; D_t), β = 0.1, reference = frozen copy of π_t
        3. save (π_{t+1}, κ_{t+1}), log the round's metrics, evaluate on held-out prompts

The paper's baselines are switches of this same loop (one `Plan` per condition): an
off-the-shelf critic skips step 1; `reward: outcome_gain | critique_quality` swaps the
judge behind r_i; `schedule: single_stage` runs one critic stage and one actor stage over
all shards (M pairs per shard, concatenated); `tailored_to` (§5.4) trains the critic against
another actor and uses it for this one. A `conditions:` list runs several on the same data.

Every stage is resumable: generated data lands in the run store before training reads it,
the glue resumes a killed GRPO/DPO stage from its last trainer checkpoint, and a finished
stage is recorded with `store.finish_step` and only reloaded on `--resume`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from coevo.algorithms.backend import Backend, default_backend
from coevo.algorithms.engines import GenerationCopy
from coevo.algorithms.taiscore.config import (
    Plan,
    Schedule,
    TaiScoreConfig,
    check_python_judge,
    resolve_conditions,
)
from coevo.algorithms.taiscore.context import Context
from coevo.algorithms.taiscore.data import split_data
from coevo.algorithms.taiscore.evaluation import (
    RoundEvaluator,
    comparison_table,
    gold_gains,
    rounds_table,
    shortened_prompts,
)
from coevo.algorithms.taiscore.monitoring import critic_monitor
from coevo.algorithms.taiscore.pairs import PairCounts, select_pairs
from coevo.algorithms.taiscore.records import ConditionResult, RoundRecord, TaiScoreSummary
from coevo.algorithms.taiscore.rewards import make_reward_fn
from coevo.audit.in_run import run_records
from coevo.roles.judging import judge_for, judge_model as load_judge_model, rollout_judge
from coevo.llm.call_tags import tagged
from coevo.llm.python_functions import PythonFunction, is_python_spec
from coevo.monitor.records import keep_report as keep_monitor_report
from coevo.llm.specs import base_model_path
from coevo.core.progress import map_batches
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.roles.query_filter import load_data
from coevo.roles.refinement import refine
from coevo.rundir.store import RunStore
from coevo.tasks.loaders import load_samples
from coevo.tasks.pools import sample_critic_queries
from coevo.train.common import TrainResult
from coevo.train.stages import run_stage
from coevo.core.types import PreferencePair, Rollout, Sample

log = logging.getLogger(__name__)


# ─── the pure pieces: reward callable, pair filter, shards ─────────────────────────────


def stages_for(schedule: Schedule, n_shards: int) -> list[list[int]]:
    """Which shards each training stage uses: one per round, or all in one stage."""
    return [[t] for t in range(n_shards)] if schedule == "coevolution" else [list(range(n_shards))]


def run_condition(ctx: Context, plan: Plan, seed_index: int) -> ConditionResult:
    """One condition (one seed) from (π_0, κ_0) to the end of its schedule; see the module doc."""
    run = ConditionRun(ctx, plan, seed_index)
    run.evaluator.evaluate(0, run.actor(), run.critic(), {})
    rounds = []
    for r, shard_ids in enumerate(stages_for(plan.schedule, len(ctx.shards)), start=1):
        # Metrics of round r describe (π_r, κ_r), the models after r updates.
        y0 = run.initial_responses(r, shard_ids)
        metrics = run.adapt_critic(r, shard_ids, y0)            # 1. κ_r ← GRPO(κ_{r-1})
        metrics |= run.evaluator.refinement_before_dpo(r, run.actor(), run.critic())  # Table 3a: κ_r on π_{r-1}
        metrics |= run.update_actor(r, shard_ids, y0)           # 2. π_r ← DPO(π_{r-1}; D_r)
        metrics |= run.evaluator.evaluate(r, run.actor(), run.critic(), metrics)  # 3. held out
        rounds.append(RoundRecord(round=r, checkpoints=run.stored_checkpoints(), metrics=metrics))
    run.close()
    return ConditionResult(condition=plan.name, seed=run.seed, tag=run.tag, plan=asdict(plan),
                           baseline=run.evaluator.baseline, rounds=rounds)


class ConditionRun:
    """The models, settings and steps of one condition under one seed.

    Each step reads its stage's inputs from the run store when they are there, and trains
    through `run_stage`, which restores a stage finished by an earlier process instead.
    """

    def __init__(self, ctx: Context, plan: Plan, seed_index: int):
        config = ctx.config
        self.ctx, self.plan, self.store = ctx, plan, ctx.store
        self.seed = config.seed + seed_index
        self.tag = plan.name if config.seeds == 1 else f"{plan.name}/seed{self.seed}"
        roles = config.roles
        self.response_sampling = roles.actor.sampling.response.model_copy(update={"seed": self.seed})
        self.revision_sampling = roles.actor.sampling.revision.model_copy(update={"seed": self.seed})
        self.critique_sampling = roles.critic.sampling.model_copy(update={"seed": self.seed})
        # The critic's GRPO samples its critiques as the critic role does elsewhere (Table 12's
        # rollout T 0.8 / top-p 0.95, roles.critic.sampling) unless the grpo block says otherwise.
        rollout_defaults = {"temperature": roles.critic.sampling.temperature,
                            "top_p": roles.critic.sampling.top_p,
                            "repetition_penalty": roles.critic.sampling.repetition_penalty,
                            "max_completion_length": roles.critic.sampling.max_tokens}
        if config.critic_engine == "llamacpp" and not config.grpo.use_vllm:
            rollout_defaults["rollout_engine"] = "llamacpp"  # its GRPO samples too, unless said otherwise
        self.grpo_settings = config.grpo.model_copy(update={"seed": self.seed, **{
            k: v for k, v in rollout_defaults.items() if k not in config.grpo.model_fields_set}})
        self.dpo_settings = config.dpo.model_copy(update={"seed": self.seed})
        self.actor_local = ctx.backend.load_trainable(roles.actor.model, **roles.options_for("actor"))
        self.critic_local = (ctx.backend.load_trainable(plan.critic, **roles.options_for("critic"))
                             if plan.critic_training == "grpo" else None)
        self.pairwise = judge_for("pairwise", ctx.cached(ctx.judge_model), roles.judge.sampling,
                                  order_seed=self.seed)
        self.evaluator = RoundEvaluator(ctx, self.tag, self.seed, plan.reward)
        self.checkpoints: dict[str, str | None] = {"actor": None, "critic": None}
        engines = ctx.store.run_dir / "engines" / self.tag.replace("/", "-")
        self.copies = {"actor": GenerationCopy(ctx.backend, "actor", roles.actor.model, roles.options_for("actor"),
                                               self.actor_local, config.actor_engine, engines)}
        if self.critic_local is not None:
            self.copies["critic"] = GenerationCopy(ctx.backend, "critic", plan.critic, roles.options_for("critic"),
                                                   self.critic_local, config.critic_engine, engines)

    def stored_checkpoints(self) -> dict[str, str | None]:
        """The latest checkpoints as summary.json keeps them: relative to the run folder."""
        from coevo.train.stages import stored_path

        return {role: stored_path(path, self.store.run_dir) for role, path in self.checkpoints.items()}

    def actor(self, model: Any = None) -> Actor:
        """The actor role on `model` (default: the actor being trained, as it is now)."""
        spec = self.ctx.config.roles.actor
        return Actor(self.ctx.cached(model if model is not None else self.actor_generator()), self.response_sampling,
                     revise_sampling=self.revision_sampling, revise_template=spec.template,
                     revise_no_critique_template=spec.template_no_critique)

    def actor_generator(self) -> Any:
        """The model the actor generates with (`actor_engine`, algorithms/engines.py): the
        trained model itself, or an engine copy of its latest finished weights (π_{r-1} until
        the round's DPO stage ends, then π_r)."""
        return self.copies["actor"].model(self.checkpoints["actor"])

    def idle(self, role: str, stage: str) -> contextlib.AbstractContextManager[None]:
        """While the other role trains in `stage`, `role`'s trained weights are freed where it
        generates from an engine copy (algorithms/engines.py): one copy of them where one serves."""
        copy = self.copies.get(role)
        return copy.parked(self.checkpoints[role], stage) if copy is not None else contextlib.nullcontext()

    def training(self, role: str, stage: str) -> contextlib.AbstractContextManager[None]:
        """While `role` trains in `stage`, its engine copy of the weights it starts from is
        closed (algorithms/engines.py): the stage's peak holds no stale copy."""
        copy = self.copies.get(role)
        return copy.training(stage) if copy is not None else contextlib.nullcontext()

    def close(self) -> None:
        """Stop the trained roles' engine copies."""
        for copy in self.copies.values():
            copy.close()

    def critic(self, model: Any = None) -> Critic:
        """The critic role on `model` (default: what the critic generates with now)."""
        if model is None:
            model = (self.copies["critic"].model(self.checkpoints["critic"]) if self.critic_local is not None
                     else self.ctx.frozen(self.plan.critic, "critic"))
        # Table 12's prompt limit bounds the critic's prompt wherever it reads a y0 (GRPO, the
        # actor's pairs, evaluation): one rule, y0 shortened in its middle (roles/prompt_budget.py).
        return Critic(self.ctx.cached(model), self.critique_sampling, self.ctx.config.roles.critic.template,
                      max_prompt_tokens=self.grpo_settings.max_prompt_length)

    def pools(self, shard_ids: Sequence[int]) -> list[list[Sample]]:
        return [self.ctx.shards[t] for t in shard_ids]

    def initial_responses(self, r: int, shard_ids: Sequence[int]) -> dict[str, str]:
        """y0 ~ π_{r-1}(x) for every query of the round's shards."""
        samples = [s for pool in self.pools(shard_ids) for s in pool]
        return _stored_responses(self.store, f"{self.tag}/round{r}/y0", samples, self.actor(),
                                 self.ctx.config.batch_size)

    def adapt_critic(self, r: int, shard_ids: Sequence[int], y0: dict[str, str]) -> dict[str, float | None]:
        """Step 1: κ_r ← GRPO(κ_{r-1}) against π_{r-1} (or the tailored actor); its metrics."""
        prefix = f"{self.tag}/round{r}"
        metrics: dict[str, float | None] = {}
        if self.critic_local is not None:
            # The reward's revisions come from the actor's engine copy; the critic's samples from
            # GRPO's own rollout.
            with self.idle("actor", f"{prefix}/critic"), self.training("critic", f"{prefix}/critic"):
                metrics |= self.train_stage(f"{prefix}/critic", r, "grpo", self.critic_local, self.grpo_settings,
                                            lambda: self._train_critic(prefix, shard_ids, y0))
        return metrics | _reward_metrics(self.store, f"{prefix}/grpo", self.plan.reward)

    def train_stage(self, name: str, r: int, kind: str, model: Any, settings: Any,
                    train: Callable[[], TrainResult]) -> dict[str, float | None]:
        """Train (or, on resume, restore) one stage of `kind` (grpo | dpo) in round `r`; its
        metrics, and plain-words warnings when it could not have learned."""
        stage = run_stage(self.store, name, train,
                          lambda checkpoint: self.ctx.backend.restore(model, checkpoint, settings), round=r, kind=kind)
        self.checkpoints[STAGE_ROLE[kind]] = stage.result.checkpoint
        metrics = _train_metrics(kind, stage.result)
        # Also on resume: a kill between the stage's finish and its warnings must not lose them
        # (`_warn` keeps each warning once).
        _warn(self.store, learning_warnings(name, kind, metrics))
        return metrics

    def _train_critic(self, prefix: str, shard_ids: Sequence[int], y0: dict[str, str]) -> TrainResult:
        """GRPO on the Table 6 critic prompt (chat format); the reward runs the actor and the judge."""
        config, store, actor = self.ctx.config, self.store, self.actor()
        pools = self.pools(shard_ids)
        if self.plan.tailored_to:
            actor = self.actor(self.ctx.frozen(self.plan.tailored_to, "actor"))
            y0 = _stored_responses(store, f"{prefix}/tailored_y0", [s for pool in pools for s in pool],
                                   actor, config.batch_size)
        # A seeded sample of each pool (paper: 2K of 3K), not its first rows in file order.
        queries = [s for t, pool in zip(shard_ids, pools)
                   for s in sample_critic_queries(pool, config.critic_queries, self.seed, t)]
        judge = rollout_judge(self.plan.reward, self.ctx.cached(self.ctx.judge_model), config.roles.judge.sampling)
        reward_fn = make_reward_fn(
            actor, judge, self.plan.reward, invalid_reward=config.invalid_reward,
            on_scored=lambda rollouts: [store.save_rollout(f"{prefix}/grpo", r_) for r_ in rollouts])
        critic = self.critic(self.critic_local)  # its prompts only: its samples are GRPO's own
        prompts = [[{"role": "user", "content": critic.critique_prompt(s.prompt, y0[s.id])}] for s in queries]
        extra = {"x": [s.prompt for s in queries], "y0": [y0[s.id] for s in queries],
                 "sample_id": [s.id for s in queries]}
        shortened = shortened_prompts(critic, f"{prefix}/critic", extra["x"], extra["y0"])
        monitor = self.critic_monitor(prefix, actor)
        with tagged(stage=f"{prefix}/grpo"):  # the reward's actor and judge calls
            result = self.ctx.backend.train_grpo(
                self.critic_local, prompts, monitor.wrap_reward(reward_fn) if monitor else reward_fn,
                self.grpo_settings, store.run_dir / "checkpoints" / prefix / "critic", resume=True,
                extra_columns=extra, **({"callbacks": [monitor]} if monitor else {}))
        if monitor:
            keep_monitor_report(store, monitor)
        # Kept with the stage's result, so a resumed run reports it too.
        return result.model_copy(update={"metrics": {**result.metrics, "critic_prompts_shortened": shortened}})

    def critic_monitor(self, prefix: str, actor: Actor) -> Any:
        """The reward-hacking monitor of this round's critic stage (`monitor:`), its anchors on
        the current actor's responses to the first held-out prompts; None where it is off."""
        config = self.ctx.config
        if not config.monitor.enabled:
            return None
        held_out = self.ctx.held_out[:config.monitor.prompts] if config.monitor.anchors else []
        y0 = _stored_responses(self.store, f"{prefix}/monitor_y0", held_out, actor, config.batch_size)
        return critic_monitor(self, f"{prefix}/critic", held_out, y0, lambda judge: make_reward_fn(
            actor, judge, self.plan.reward, invalid_reward=config.invalid_reward), f"{prefix}/monitor")

    def update_actor(self, r: int, shard_ids: Sequence[int], y0: dict[str, str]) -> dict[str, float | None]:
        """Step 2: pairs from κ_r's critiques of π_{r-1}'s responses, then π_r ← DPO(π_{r-1})."""
        prefix = f"{self.tag}/round{r}"
        chosen, counts = self.preferred_revisions(prefix, shard_ids, y0)
        metrics: dict[str, float | None] = {f"pairs_{k}": float(v) for k, v in vars(counts).items()}
        if not chosen:
            # Nothing to learn from: π_r = π_{r-1}, as RLAC leaves a role without pairs. The
            # round's pair counts go to its metrics, where the run's `no-pairs` warning reads
            # why (view/pair_warnings.py); stopping here would lose the rounds already run.
            log.warning("%s/actor: the pairwise judge preferred no revision over its initial response "
                        "(%d candidates): the actor is not trained this round", prefix, counts.candidates)
            return metrics
        with self.idle("critic", f"{prefix}/actor"), self.training("actor", f"{prefix}/actor"):
            return metrics | self.train_stage(f"{prefix}/actor", r, "dpo", self.actor_local, self.dpo_settings,
                                              lambda: self._train_actor(r, chosen))

    def preferred_revisions(self, prefix: str, shard_ids: Sequence[int], y0: dict[str, str]
                            ) -> tuple[list[Rollout], PairCounts]:
        """One critique-guided revision per query; the M revisions per pool the
        critique-blind pairwise judge preferred over their y0 (with the pools' counts)."""
        actor, critic = self.actor(), self.critic()
        chosen, counts = [], PairCounts()
        for t, pool in zip(shard_ids, self.pools(shard_ids)):
            # refine() treats an empty y0 as "not given" and would ask for one again; an empty
            # initial response is no real candidate either, so it stays out of the pool.
            pool = [s for s in pool if y0[s.id].strip()]
            rollouts = refine(pool, actor, critic, {"pairwise": self.pairwise}, store=self.store,
                              stage=f"{prefix}/pool{t}", y0=y0, batch_size=self.ctx.config.batch_size)
            picked, pool_counts = select_pairs(rollouts, self.ctx.config.pairs_per_round, self.seed * 1000 + t)
            chosen += picked
            counts.critic_prompts_shortened += int(shortened_prompts(
                critic, f"{prefix}/pool{t}", [s.prompt for s in pool], [y0[s.id] for s in pool]))
            counts.add(pool_counts)
        return chosen, counts

    def _train_actor(self, r: int, chosen: list[Rollout]) -> TrainResult:
        prefix = f"{self.tag}/round{r}"
        actor = self.actor(self.actor_local)  # its prompt template only: nothing is generated here
        pairs = [PreferencePair(prompt=actor.respond_prompt(x.x), chosen=x.y1 or "", rejected=x.y0,
                                sample_id=x.sample_id, source=prefix) for x in chosen]
        for pair in pairs:
            self.store.put_record(f"pairs/{prefix}", pair.sample_id or "", pair)
        # reference=None: the glue freezes a copy of π_{r-1} at entry (not the disk base).
        return self.ctx.backend.train_dpo(self.actor_local, pairs, self.dpo_settings,
                                          self.store.run_dir / "checkpoints" / self.tag / f"round{r}" / "actor",
                                          reference=None, resume=True)


def _stored_responses(store: RunStore, kind: str, samples: list[Sample], actor: Actor,
                      batch_size: int | None) -> dict[str, str]:
    """π's initial responses, kept in the store: a resumed stage trains on the same y0."""
    have = dict(store.get_records(kind))
    todo = [s for s in samples if s.id not in have]

    def respond(batch: list[Sample]) -> list[str]:
        texts = actor.respond(batch)
        for sample, text in zip(batch, texts):
            store.put_record(kind, sample.id, text)
        return texts

    if todo:
        with tagged(stage=kind):  # the y0 a later stage's rollouts show were made here
            have.update(zip((s.id for s in todo), map_batches(respond, todo, batch_size, kind)))
    return {s.id: have[s.id] for s in samples}


def _train_metrics(kind: str, result: TrainResult) -> dict[str, float | None]:
    out = {f"{kind}_steps": float(result.steps), f"{kind}_seconds_per_step": result.seconds_per_step,
           f"{kind}_peak_rss_mb": result.peak_rss_mb}
    # What a long stage's steps cost (the first pays for warm-up), and GPU memory where there is one.
    for key in ("first_step_seconds", "steady_step_seconds", "steady_tokens_per_s", "peak_gpu_mb"):
        if key in result.metrics:
            out[f"{kind}_{key}"] = result.metrics[key]
    for key in ("train_loss", "loss"):
        if key in result.metrics:
            out[f"{kind}_loss"] = result.metrics[key]
            break
    # GRPO's cost split: reward (actor revisions + judge) vs sampling critiques vs the update,
    # and whether it could learn at all: groups with equal rewards, critiques cut off.
    for key in ("reward_time_share", "generation_time_share", "zero_std_fraction", "clipped_ratio",
                "reward_group_sd", "grad_norm", "critic_prompts_shortened"):
        if key in result.metrics:
            out[f"{kind}_{key}"] = result.metrics[key]
    if "weight_delta" in result.metrics:
        out[f"{STAGE_ROLE[kind]}_weight_delta"] = result.metrics["weight_delta"]
    return out


#: Which role a training stage updates.
STAGE_ROLE = {"grpo": "critic", "dpo": "actor"}


def learning_warnings(stage: str, kind: str, metrics: dict[str, float | None]) -> list[str]:
    """Plain-words findings when a training stage could not have learned."""
    role = STAGE_ROLE[kind]
    found = []
    if metrics.get(f"{role}_weight_delta") == 0.0:
        found.append(f"{stage}: the {role}'s weights did not change in its {kind.upper()} stage (max |Δw| = 0): "
                     "this stage learned nothing")
    zero = metrics.get("grpo_zero_std_fraction") if kind == "grpo" else None
    if zero is not None and zero >= 1.0:
        found.append(f"{stage}: every GRPO group's rewards were equal (zero-std fraction 1.0), so no critique was "
                     "preferred over another; use expected scoring, more critiques per prompt or a stronger judge")
    clipped = metrics.get("grpo_clipped_ratio") if kind == "grpo" else None
    if clipped is not None and clipped > 0.5:
        found.append(f"{stage}: {clipped:.0%} of critiques were cut at the length limit "
                     "(grpo.max_completion_length / roles.critic.sampling.max_tokens)")
    return found


def _warn(store: RunStore, warnings: list[str]) -> None:
    """Say it on the console and keep it for the report, each warning once (a resumed stage
    warns again what it warned before it was killed, and nothing twice)."""
    kept = store.get_meta("warnings") or []
    new = [warning for warning in warnings if warning not in kept]
    if not new:
        return
    for warning in new:
        log.warning(warning)
    store.update_meta("warnings", lambda old: [*old, *(w for w in new if w not in old)], [])


def _reward_metrics(store: RunStore, stage: str, reward: str) -> dict[str, float | None]:
    """Mean and spread of the training rewards the critic saw, and how many were unreadable."""
    judgments = [r.judgments[reward] for r in store.rollouts(stage) if reward in r.judgments]
    if not judgments:
        return {}
    rewards = [j.reward if j.reward is not None else j.score for j in judgments]
    rewards = [r for r in rewards if r is not None]
    valid = sum(j.valid for j in judgments)
    out: dict[str, float | None] = {
        "reward_count": float(len(judgments)),
        "reward_invalid_rate": 1 - valid / len(judgments),
        "reward_mean": sum(rewards) / len(rewards) if rewards else None,
    }
    if len(rewards) > 1:
        mean = out["reward_mean"]
        out["reward_sd"] = (sum((s - mean) ** 2 for s in rewards) / (len(rewards) - 1)) ** 0.5  # type: ignore[operator]
    return out


def run_taiscore(config: TaiScoreConfig, store: RunStore, backend: Backend | None = None) -> TaiScoreSummary:
    """`coevo run` entry for `algorithm: taiscore`: every condition × seed, one table."""
    backend = backend or default_backend()
    plans = resolve_conditions(config)
    if is_python_spec(config.roles.judge.model):
        check_python_judge(config)
    judge_model = load_judge_model(config.roles.judge.model, backend.load_frozen, **config.roles.options_for("judge"))
    from coevo.llm.cache import CachedModel

    samples = load_samples(config.data.source, columns=config.data.columns or None, limit=config.data.limit)
    eval_data = config.evaluation.data
    split = split_data(config, samples, None if isinstance(judge_model, PythonFunction)
                       else CachedModel(judge_model, store),  # a resumed run re-grades nothing
                       load_data(eval_data, judge_model, config.roles.judge.sampling) if eval_data is not None else None)
    shards, held_out = split.shards, split.held_out
    log.info("data: %d queries -> pools of %s (quality scores %s), %d held out", len(samples),
             split.report.sizes, split.report.histogram, len(held_out))
    for note in split.report.notes:
        log.info("data: %s", note)
    store.set_meta("shards", {str(t): [s.id for s in shard] for t, shard in enumerate(shards)})
    store.set_meta("held_out", [s.id for s in held_out])
    ctx = Context(config=config, store=store, backend=backend, judge_model=judge_model,
                  shards=shards, held_out=held_out)
    runs = [run_condition(ctx, plan, s) for plan in plans for s in range(config.seeds)]
    first = runs[0]
    several = len(runs) > 1
    gains = gold_gains(store, runs, config.evaluation.output_sets)
    summary = TaiScoreSummary(
        base_model=base_model_path(config.roles.actor.model),
        base_models={"actor": base_model_path(config.roles.actor.model),
                     **({"critic": base_model_path(first.plan["critic"])}
                        if first.plan["critic_training"] == "grpo" else {})},
        condition=first.condition, baseline=first.baseline, rounds=first.rounds,
        shards=[len(s) for s in shards], held_out=len(held_out), data=split.report.model_dump(),
        **({"conditions": [run.model_dump(include={"condition", "seed", "baseline", "rounds"}) for run in runs]}
           if several else {}),
        table=comparison_table(runs, config.seeds, gains) if several else rounds_table(first, gains),
        gold_gain_ci=gains, audit=run_records(store))
    title = "TAIScore: " + ("conditions" if several else "rounds")
    store.update_meta("tables", lambda tables: {**tables, title: summary.table}, {})
    return summary
