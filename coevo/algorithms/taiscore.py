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

import hashlib
import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from coevo.audit.in_run import run_records
from coevo.algorithms.taiscore_eval import (
    RoundEvaluator,
    comparison_table,
    gold_gains,
    rounds_table,
    shortened_prompts,
)
from coevo.config import AuditConfig, ConfigError, DataConfig, Models, SamplingConfig, StrictModel
from coevo.judging import judge_as_reward, rollout_judge
from coevo.llm.call_tags import tagged
from coevo.roles.base import Scorer
from coevo.llm.specs import base_model_path
from coevo.progress import map_batches
from coevo.prompts import Templates
from coevo.roles.refinement import refine
from coevo.tasks.loaders import load_data, load_samples
from coevo.tasks.pools import PoolReport, quality_pools, sample_critic_queries
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.llm.python_functions import PythonFunction, is_python_spec, load_python_function
from coevo.roles.python_scorers import judge_for
from coevo.roles.parsing import strip_reasoning
from coevo.store import RunStore
from coevo.train.common import LoRASettings, TrainResult
from coevo.train.dpo import DPOSettings
from coevo.train.grpo import GRPOSettings
from coevo.train.stages import run_stage
from coevo.types import PreferencePair, Rollout, Sample

log = logging.getLogger(__name__)

RewardName = Literal["taiscore", "outcome_gain", "critique_quality"]
Schedule = Literal["coevolution", "single_stage"]

# ─── config ──────────────────────────────────────────────────────────────────────────


class ConditionSpec(StrictModel):
    """One experimental condition: a preset name plus any overrides of the top-level loop."""

    #: Becomes part of folder names (checkpoints/<name>/...), so it is checked like one.
    name: str
    #: One of PRESETS; default: `name` when it names a preset, else the top-level settings.
    preset: str | None = None
    critic_training: Literal["grpo", "none"] | None = None
    reward: RewardName | None = None
    schedule: Schedule | None = None
    #: Critic model spec for this condition (e.g. a bigger served model, off the shelf).
    critic: str | None = None
    #: §5.4 actor–critic matching: train the critic against this actor (any spec), then use
    #: it to build the DPO pairs of `models.actor`.
    tailored_to: str | None = None

    @field_validator("name")
    @classmethod
    def _a_safe_folder_name(cls, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name) or ".." in name:
            raise ValueError(f"condition names become folder names: use letters, digits, '_', '-' and '.' "
                             f"(starting with a letter or digit, at most 64 characters), not {name!r}")
        return name


#: The paper's conditions (Table 1, Table 4) as presets of the one loop.
PRESETS: dict[str, dict[str, Any]] = {
    "off_the_shelf": {"critic_training": "none", "schedule": "single_stage"},
    "outcome_gain": {"critic_training": "grpo", "reward": "outcome_gain", "schedule": "single_stage"},
    "critique_quality": {"critic_training": "grpo", "reward": "critique_quality", "schedule": "single_stage"},
    "taiscore": {"critic_training": "grpo", "reward": "taiscore", "schedule": "single_stage"},
    "coevolution": {"critic_training": "grpo", "reward": "taiscore", "schedule": "coevolution"},
    "matching": {"critic_training": "grpo", "reward": "taiscore", "schedule": "single_stage"},
}


class EvaluationConfig(StrictModel):
    """Held-out evaluation after every round (and of the starting models as round 0)."""

    #: Share of `data` held out by a seeded hash of the sample id (never trained on);
    #: ignored when `data` names a separate held-out set.
    holdout: float = Field(0.2, ge=0.0, lt=1.0)
    #: Exactly this many held-out prompts (those with the lowest seeded hash), instead of a share.
    prompts: int | None = Field(None, ge=1)
    data: DataConfig | None = None
    limit: int | None = Field(None, ge=1)
    gold_rubric: bool = True      # S(π) under the gold rubrics (samples without rubrics skip it)
    win_rate: bool = True         # pairwise win rate of π_t against π_0's responses (each pair in both orders)
    refinement: bool = True       # direct refinement utility of κ_t: S(y1), Δ = S(y1) − S(y0)
    #: Independent sets of held-out responses each checkpoint writes, each scored on its own
    #: (Table 1: three, reported as mean ± sd): `gold_score` is their mean and
    #: `gold_score_set_sd` their sd; the gold gain pairs each prompt's mean over the sets.
    output_sets: int = Field(1, ge=1)


class TaiScoreData(DataConfig):
    """TAIScore's data: the user's queries, rated and pooled as Appendix C does.

    Every query rated 4-5 is kept, topped up with a seeded sample of those rated 3 to
    `pool_total`, then split into `rounds` disjoint pools of `pool_size` (paper: 9,000 in
    three pools of 3,000). Ratings come from the `quality_column` of the data when it has one
    (the paper rates queries once; bring the scores), else from the judge with the Table 11
    prompt when `filter_queries` is on (off by default: grading costs one judge call per
    query; the full config turns it on), else there are none and every query is eligible.
    """

    pool_total: int | None = Field(9000, ge=1)
    pool_size: int | None = Field(3000, ge=1)
    quality_column: str = "quality"


class TaiScoreConfig(StrictModel):
    """`algorithm: taiscore` — co-evolving critic (GRPO) and actor (DPO), Table 12 defaults."""

    algorithm: Literal["taiscore"] = "taiscore"
    data: TaiScoreData = TaiScoreData()
    models: Models = Models()
    sampling: SamplingConfig = SamplingConfig()
    templates: Templates = Templates()
    rounds: int = Field(3, ge=1)                  # T: number of disjoint query shards
    schedule: Schedule = "coevolution"
    critic_training: Literal["grpo", "none"] = "grpo"
    reward: RewardName = "taiscore"
    #: The GRPO reward of a critique the judge could not score (unreadable twice, or an
    #: empty critique or revision); it stays in its group, as in the authors' code.
    invalid_reward: float = 0.0
    tailored_to: str | None = None
    #: What the trained actor generates with between its trainings (y0, the revisions in the
    #: critic's GRPO reward, evaluation): the trained transformers model itself, or a vLLM
    #: engine on its latest finished weights (the base, then each DPO stage's `final/`: full
    #: weights, or a LoRA adapter on the base), one engine per checkpoint.
    actor_engine: Literal["transformers", "vllm"] = "transformers"
    #: Queries per shard the critic trains on (None: the whole shard; paper: 2K of 3K).
    critic_queries: int | None = Field(None, ge=1)
    pairs_per_round: int = Field(2000, ge=1)      # M eligible pairs sampled per shard
    grpo: GRPOSettings = GRPOSettings()
    dpo: DPOSettings = DPOSettings()
    evaluation: EvaluationConfig = EvaluationConfig()
    #: The judges probed for gaming before round 1 and after every round (taiscore_audit.py).
    audit: AuditConfig = AuditConfig()
    #: Several conditions on the same data: preset names or ConditionSpec mappings.
    conditions: list[str | ConditionSpec] = Field(default_factory=list)
    seeds: int = Field(1, ge=1)
    seed: int = 0
    #: Prompts per model call; None (default): a whole stage per call, which vLLM and servers
    #: batch best. A number bounds what a crash mid-stage loses and shows progress per chunk.
    batch_size: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> TaiScoreConfig:
        self.audit.refuse_gate("taiscore", "its critic writes critiques the judge scores; it scores nothing itself")
        for item in self.conditions:
            name = item if isinstance(item, str) else (item.preset or item.name)
            if isinstance(item, str) and item not in PRESETS:
                raise ValueError(f"conditions: unknown preset {item!r}; use one of {sorted(PRESETS)} "
                                 "or a mapping {name: ..., critic_training: ..., reward: ...}")
            if isinstance(item, ConditionSpec) and item.preset and item.preset not in PRESETS:
                raise ValueError(f"conditions: {item.name!r} has unknown preset {name!r}; "
                                 f"use one of {sorted(PRESETS)}")
        return self


@dataclass(frozen=True)
class Plan:
    """A resolved condition: everything the loop needs to know about it."""

    name: str
    critic_training: Literal["grpo", "none"]
    reward: RewardName
    schedule: Schedule
    critic: str
    tailored_to: str | None = None


def resolve_conditions(config: TaiScoreConfig) -> list[Plan]:
    """The conditions to run, in order; without a `conditions:` list, the top-level one."""
    top = {"critic_training": config.critic_training, "reward": config.reward,
           "schedule": config.schedule, "critic": config.models.critic, "tailored_to": config.tailored_to}
    if not config.conditions:
        name = "coevolution" if config.schedule == "coevolution" and config.critic_training == "grpo" else (
            "off_the_shelf" if config.critic_training == "none" else config.reward)
        return [Plan(name=name, **top)]
    plans, seen = [], set()
    for item in config.conditions:
        spec = ConditionSpec(name=item) if isinstance(item, str) else item
        preset = spec.preset or (spec.name if spec.name in PRESETS else None)
        settings = {**top, **PRESETS.get(preset or "", {})}
        settings.update({k: v for k, v in spec.model_dump(exclude={"name", "preset"}).items() if v is not None})
        if preset == "matching" and not settings["tailored_to"]:
            raise ConfigError(f"condition {spec.name!r}: matching needs `tailored_to: SPEC` (the actor the "
                              "critic is trained against)")
        if settings["critic_training"] == "none" and settings["tailored_to"]:
            raise ConfigError(f"condition {spec.name!r}: tailored_to needs a trained critic")
        if spec.name in seen:
            raise ConfigError(f"condition name {spec.name!r} appears twice; give each a distinct name")
        seen.add(spec.name)
        plans.append(Plan(name=spec.name, **settings))
    return plans


# ─── the pure pieces: reward callable, pair filter, shards ─────────────────────────────


def stages_for(schedule: Schedule, n_shards: int) -> list[list[int]]:
    """Which shards each training stage uses: one per round, or all in one stage."""
    return [[t] for t in range(n_shards)] if schedule == "coevolution" else [list(range(n_shards))]


def completion_text(completion: Any) -> str:
    """A TRL completion as text (conversational completions are lists of messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return str(completion)


def make_reward_fn(
    actor: Actor,
    judge: Scorer,
    reward: RewardName,
    *,
    invalid_reward: float = 0.0,
    on_scored: Callable[[list[Rollout]], None] | None = None,
) -> Callable[..., list[float]]:
    """The GRPO reward: critique c -> actor revision y1 -> judge -> RAW score per completion.

    The dataset's extra columns `x`, `y0`, `sample_id` arrive as keyword lists aligned with
    `completions`. Scores are returned raw (TAIScore 1–10, outcome gain 1/0.5/0, critique
    quality mean of six): TRL normalises them within each group of N critiques, so they must
    not be normalised here. The rules are the TAIScore authors' (`compute_score_batched`):
    reasoning is stripped from the critique; an empty critique or an empty revision gets
    `invalid_reward` without a judge call; an answer the judge could not give readably
    (after its one re-ask) gets `invalid_reward` too, and it STAYS in its group's mean and
    std — a group of one 7 and three unreadable answers still teaches the critic something.
    Each judgment records the reward it gave in `reward`.
    """

    def reward_fn(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        critiques = [strip_reasoning(completion_text(c)) for c in completions]
        xs, y0s, ids = columns["x"], columns["y0"], columns["sample_id"]
        rollouts = [Rollout(sample_id=f"{sid}#{_digest(c)}", x=x, y0=y0, c=c, condition="grpo")
                    for sid, x, y0, c in zip(ids, xs, y0s, critiques)]
        # Critique quality judges (x, y0, c) alone: revising would cost time and change nothing.
        needs_revision = reward != "critique_quality"
        revise = [r for r in rollouts if r.c]
        if needs_revision and revise:
            for rollout, y1 in zip(revise, actor.revise([r.x for r in revise], [r.y0 for r in revise],
                                                        [r.c or "" for r in revise])):
                rollout.y1 = y1
        rewards = judge_as_reward(rollouts, judge, reward, invalid_reward=invalid_reward,
                                  needs_revision=needs_revision)
        if on_scored:
            on_scored(rollouts)
        return rewards

    reward_fn.__name__ = f"{reward}_reward"  # TRL logs rewards/<name>/mean
    return reward_fn


@dataclass
class PairCounts:
    candidates: int = 0
    y1_wins: int = 0
    ties: int = 0
    y0_wins: int = 0
    invalid: int = 0
    selected: int = 0
    #: Pool queries whose y0 the critic read shortened (its prompt over the budget).
    critic_prompts_shortened: int = 0

    def add(self, other: PairCounts) -> None:
        """Count another pool's pairs in with these."""
        for key, value in vars(other).items():
            setattr(self, key, getattr(self, key) + value)


def select_pairs(rollouts: Sequence[Rollout], m: int, seed: int,
                 judge: str = "pairwise") -> tuple[list[Rollout], PairCounts]:
    """D.3's filter: keep rollouts whose y1 the (order-randomised, critique-blind) pairwise
    judge preferred over y0; ties, y0 wins and unreadable verdicts are dropped; then `m`
    of the eligible ones are sampled uniformly without replacement (seeded)."""
    counts = PairCounts(candidates=len(rollouts))
    eligible = []
    for rollout in rollouts:
        verdict = rollout.judgments.get(judge)
        # `winner` is the judge's decision (with expected scoring: the most probable answer);
        # `score` may then be a probability, so it is not compared with 1.0.
        winner = getattr(verdict, "winner", None) if verdict is not None and verdict.valid else None
        if winner is None:
            counts.invalid += 1
        elif winner == "y1":
            counts.y1_wins += 1
            eligible.append(rollout)
        elif winner == "tie":
            counts.ties += 1
        else:
            counts.y0_wins += 1
    chosen = random.Random(seed).sample(eligible, min(m, len(eligible)))
    counts.selected = len(chosen)
    return chosen, counts


def _digest(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()[:10]


# ─── models and trainers (injectable, so the loop's logic is testable on replay models) ──


@dataclass
class Backend:
    """How the loop loads trainable models and trains them; tests swap in fakes.

    load_trainable(spec, **options) -> a model with `.model`, `.tokenizer` (a LocalModel);
    load_frozen(spec, **options) -> a ChatModel (options: the role's, `models.options`);
    restore(model, checkpoint, settings) puts a finished stage's weights back in place;
    train_grpo / train_dpo: the coevo.train glue's signatures.
    """

    load_trainable: Callable[[str], Any]
    restore: Callable[[Any, str, Any], None]
    train_grpo: Callable[..., TrainResult]
    train_dpo: Callable[..., TrainResult]
    load_frozen: Callable[[str], Any] = field(default=None)  # type: ignore[assignment]
    #: load_copy(spec, checkpoint, **options) -> (a frozen generation copy of a trained
    #: role's weights, whether it is shared); see `actor_engine`.
    load_copy: Callable[..., tuple[Any, bool]] = field(default=None)  # type: ignore[assignment]


def default_backend() -> Backend:
    """The real thing: transformers models, TRL through coevo.train."""
    from coevo.llm.specs import load_model, vllm_copy
    from coevo.train.dpo import train_dpo
    from coevo.train.grpo import train_grpo
    from coevo.train.trainable import load_trainable

    def restore(policy: Any, checkpoint: str, settings: Any) -> None:
        from coevo.train.stages import restore_checkpoint

        restore_checkpoint(policy, checkpoint, getattr(settings, "lora", None))

    return Backend(load_trainable=load_trainable,
                   restore=restore, train_grpo=train_grpo, train_dpo=train_dpo, load_frozen=load_model,
                   load_copy=vllm_copy)


# ─── the loop ───────────────────────────────────────────────────────────────────────


@dataclass
class Context:
    """What every condition shares: config, store, data, judge, backend."""

    config: TaiScoreConfig
    store: RunStore
    backend: Backend
    judge_model: Any
    shards: list[list[Sample]]
    held_out: list[Sample]
    _frozen: dict[tuple[str, str], Any] = field(default_factory=dict)

    def cached(self, model: Any) -> Any:
        """A fresh cache wrapper: it reads the model's id once, so re-wrap after training.
        A Python scorer caches its own calls, keyed by its source (see python_functions)."""
        from coevo.llm.cache import CachedModel

        if isinstance(model, PythonFunction):
            return model.bound(self.store)
        return CachedModel(model, self.store)

    def frozen(self, spec: str, role: str) -> Any:
        """The frozen model `spec` in `role`'s place, with that role's backend options."""
        if (spec, role) not in self._frozen:
            self._frozen[spec, role] = self.backend.load_frozen(spec, **self.config.models.options_for(role))
        return self._frozen[spec, role]


class RoundRecord(BaseModel):
    """One round of a condition: the checkpoints of (π_r, κ_r) and the round's metrics."""

    round: int
    checkpoints: dict[str, str | None]
    metrics: dict[str, float | None]


class ConditionResult(BaseModel):
    """One condition under one seed, from round 0 (the base models) to its last round."""

    condition: str
    seed: int
    tag: str
    plan: dict[str, Any]
    baseline: dict[str, float | None]
    rounds: list[RoundRecord]


class TaiScoreSummary(BaseModel):
    """`summary.json` of a TAIScore run (keys as the README documents them): the first
    condition's rounds, and with several conditions or seeds every one and their table."""

    base_model: str | None
    base_models: dict[str, str | None]
    condition: str
    baseline: dict[str, float | None]
    rounds: list[RoundRecord]
    shards: list[int]
    held_out: int
    conditions: list[dict[str, Any]] | None = None
    table: dict[str, Any]
    #: Per condition: S(π_last) − S(π_0), paired over (seed, held-out prompt), with a bootstrap
    #: 95 % CI: {mean_diff, low, high, n_pairs} (taiscore_eval.gold_gains).
    gold_gain_ci: dict[str, dict[str, Any]] = {}
    #: How the pools were made (Appendix C): their sizes, the quality-score histogram, how
    #: many were rated 4-5 / 3, topped up and dropped (coevo.tasks.pools.PoolReport).
    data: dict[str, Any] = {}
    #: The judge audits, one record per judge and round ({"round": "<condition>/round<r>",
    #: "judge_role": "reward" | "pairwise", the `coevo audit judge --json` object}).
    audit: list[dict[str, Any]] = []


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
        self.rollout_sampling = config.sampling.rollout.model_copy(update={"seed": self.seed})
        self.revision_sampling = config.sampling.revision.model_copy(update={"seed": self.seed})
        # The critic's GRPO samples its critiques as the critic role does elsewhere (Table 12's
        # rollout T 0.8 / top-p 0.95, sampling.rollout) unless the grpo block says otherwise.
        rollout_defaults = {"temperature": config.sampling.rollout.temperature,
                            "top_p": config.sampling.rollout.top_p,
                            "max_completion_length": config.sampling.rollout.max_tokens}
        self.grpo_settings = config.grpo.model_copy(update={"seed": self.seed, **{
            k: v for k, v in rollout_defaults.items() if k not in config.grpo.model_fields_set}})
        self.dpo_settings = config.dpo.model_copy(update={"seed": self.seed})
        models = config.models
        self.actor_local = ctx.backend.load_trainable(models.actor, **models.options_for("actor"))
        self.critic_local = (ctx.backend.load_trainable(plan.critic, **models.options_for("critic"))
                             if plan.critic_training == "grpo" else None)
        self.pairwise = judge_for("pairwise", ctx.cached(ctx.judge_model), config.sampling.judge,
                                  order_seed=self.seed)
        self.evaluator = RoundEvaluator(ctx, self.tag, self.seed, plan.reward)
        self.checkpoints: dict[str, str | None] = {"actor": None, "critic": None}
        self._actor_engine: tuple[str | None, Any, bool] | None = None  # (checkpoint, model, shared)

    def stored_checkpoints(self) -> dict[str, str | None]:
        """The latest checkpoints as summary.json keeps them: relative to the run folder."""
        from coevo.train.stages import stored_path

        return {role: stored_path(path, self.store.run_dir) for role, path in self.checkpoints.items()}

    def actor(self, model: Any = None) -> Actor:
        """The actor role on `model` (default: the actor being trained, as it is now)."""
        templates = self.ctx.config.templates
        return Actor(self.ctx.cached(model if model is not None else self.actor_generator()), self.rollout_sampling,
                     revise_sampling=self.revision_sampling, revise_template=templates.reviser,
                     revise_no_critique_template=templates.reviser_no_critique)

    def actor_generator(self) -> Any:
        """The model the actor generates with: the trained model itself, or (`actor_engine:
        vllm`) a vLLM engine on the actor's latest finished weights, loaded when they change
        (π_{r-1} until the round's DPO stage ends, then π_r), the previous one closed."""
        if self.ctx.config.actor_engine == "transformers":
            return self.actor_local
        checkpoint = self.checkpoints["actor"]
        if self._actor_engine is None or self._actor_engine[0] != checkpoint:
            self.close()
            models = self.ctx.config.models
            model, shared = self.ctx.backend.load_copy(models.actor, checkpoint, **models.options_for("actor"))
            self._actor_engine = (checkpoint, model, shared)
        return self._actor_engine[1]

    def close(self) -> None:
        """Stop the actor's vLLM engine, unless it is shared (the base weights)."""
        if self._actor_engine is not None and not self._actor_engine[2]:
            getattr(self._actor_engine[1], "close", lambda: None)()
        self._actor_engine = None

    def critic(self) -> Critic:
        model = self.critic_local if self.critic_local is not None else self.ctx.frozen(self.plan.critic, "critic")
        # Table 12's prompt limit bounds the critic's prompt wherever it reads a y0 (GRPO, the
        # actor's pairs, evaluation): one rule, y0 shortened in its middle (roles/prompt_budget.py).
        return Critic(self.ctx.cached(model), self.rollout_sampling, self.ctx.config.templates.critic,
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
        if not stage.resumed:
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
        judge = rollout_judge(self.plan.reward, self.ctx.cached(self.ctx.judge_model), config.sampling.judge)
        reward_fn = make_reward_fn(
            actor, judge, self.plan.reward, invalid_reward=config.invalid_reward,
            on_scored=lambda rollouts: [store.save_rollout(f"{prefix}/grpo", r_) for r_ in rollouts])
        critic = self.critic()
        prompts = [[{"role": "user", "content": critic.critique_prompt(s.prompt, y0[s.id])}] for s in queries]
        extra = {"x": [s.prompt for s in queries], "y0": [y0[s.id] for s in queries],
                 "sample_id": [s.id for s in queries]}
        shortened = shortened_prompts(critic, f"{prefix}/critic", extra["x"], extra["y0"])
        with tagged(stage=f"{prefix}/grpo"):  # the reward's actor and judge calls
            result = self.ctx.backend.train_grpo(self.critic_local, prompts, reward_fn, self.grpo_settings,
                                                 store.run_dir / "checkpoints" / prefix / "critic",
                                                 resume=True, extra_columns=extra)
        # Kept with the stage's result, so a resumed run reports it too.
        return result.model_copy(update={"metrics": {**result.metrics, "critic_prompts_shortened": shortened}})

    def update_actor(self, r: int, shard_ids: Sequence[int], y0: dict[str, str]) -> dict[str, float | None]:
        """Step 2: pairs from κ_r's critiques of π_{r-1}'s responses, then π_r ← DPO(π_{r-1})."""
        prefix = f"{self.tag}/round{r}"
        chosen, counts = self.preferred_revisions(prefix, shard_ids, y0)
        metrics: dict[str, float | None] = {f"pairs_{k}": float(v) for k, v in vars(counts).items()}
        return metrics | self.train_stage(f"{prefix}/actor", r, "dpo", self.actor_local, self.dpo_settings,
                                          lambda: self._train_actor(r, chosen, counts))

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

    def _train_actor(self, r: int, chosen: list[Rollout], counts: PairCounts) -> TrainResult:
        prefix = f"{self.tag}/round{r}"
        if not chosen:
            raise ConfigError(
                f"{prefix}: the pairwise judge preferred no revision over its initial response "
                f"({counts.candidates} candidates: {counts.ties} ties, {counts.y0_wins} y0 wins, "
                f"{counts.invalid} unreadable), so there is nothing to train the actor on; use more "
                "queries (data.limit), a stronger judge (models.judge) or a stronger critic")
        actor = self.actor()
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
                     "(grpo.max_completion_length / sampling.rollout.max_tokens)")
    return found


def _warn(store: RunStore, warnings: list[str]) -> None:
    """Say it on the console and keep it for the report."""
    if not warnings:
        return
    for warning in warnings:
        log.warning(warning)
    store.update_meta("warnings", lambda old: [*old, *warnings], [])


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


# ─── entry point ────────────────────────────────────────────────────────────────────


@dataclass
class DataSplit:
    """The run's data: the T disjoint training pools, the held-out prompts, how pools were made."""

    shards: list[list[Sample]]
    held_out: list[Sample]
    report: PoolReport


def held_out_split(config: TaiScoreConfig, samples: list[Sample], eval_samples: list[Sample] | None
                   ) -> tuple[list[Sample], list[Sample]]:
    """(training queries, held-out prompts): a separate evaluation set (`evaluation.data`,
    e.g. WritingBench, as the paper evaluates) or a seeded-hash share of `data`."""
    from coevo.tasks.partition import partition, unit_hash

    ev = config.evaluation
    if eval_samples is not None:
        held_ids = {s.id for s in eval_samples}
        train, held_out = [s for s in samples if s.id not in held_ids], list(eval_samples)
    elif ev.prompts:
        if ev.prompts >= len(samples):
            raise ConfigError(f"evaluation.prompts={ev.prompts} leaves none of the {len(samples)} prompts "
                              "for training; lower it or raise data.limit")
        ranked = sorted(samples, key=lambda s: unit_hash(s.id, config.seed))
        held_ids = {s.id for s in ranked[: ev.prompts]}
        train = [s for s in samples if s.id not in held_ids]
        held_out = [s for s in samples if s.id in held_ids]
    elif ev.holdout > 0:
        parts = partition(samples, {"train": 1 - ev.holdout, "eval": ev.holdout}, config.seed)
        train, held_out = parts["train"], parts["eval"]
    else:
        train, held_out = list(samples), []
    return train, (held_out[: ev.limit] if ev.limit else held_out)


def query_ratings(config: TaiScoreConfig, samples: list[Sample], judge_model: Any = None
                  ) -> dict[str, int | None] | None:
    """Each query's 1-5 quality score (None: unreadable), or None when there are none.

    From the data's `quality_column` when its rows carry one; else, with
    `data.filter_queries`, from the judge's Table 11 grade (one call per query; without a
    judge, as in `coevo plan`, None: the ratings are not known yet).
    """
    column = config.data.quality_column
    rated = [s for s in samples if s.meta.get(column) is not None]
    if rated:
        if len(rated) < len(samples):
            raise ConfigError(f"{len(samples) - len(rated)} of {len(samples)} training queries have no "
                              f"{column!r} score; give every row a 1-5 score, or none (data.filter_queries "
                              "then grades them with the judge)")
        return {s.id: _quality(s, column) for s in samples}
    if not config.data.filter_queries or judge_model is None:
        return None
    from coevo.tasks.query_filter import filter_queries

    _, judgments = filter_queries(samples, judge_model, config.sampling.judge, min_score=1)
    return {s.id: (int(j.score) if j.valid and j.score is not None else None) for s, j in zip(samples, judgments)}


def _quality(sample: Sample, column: str) -> int:
    value = sample.meta[column]
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = float("nan")
    if not (score.is_integer() and 1 <= score <= 5):
        raise ConfigError(f"query {sample.id!r}: {column!r} must be an integer score from 1 to 5, got {value!r}")
    return int(score)


def split_data(config: TaiScoreConfig, samples: list[Sample], judge_model: Any = None,
               eval_samples: list[Sample] | None = None) -> DataSplit:
    """Held-out prompts, then Appendix C's T disjoint pools of the rest (`quality_pools`)."""
    train, held_out = held_out_split(config, samples, eval_samples)
    ratings = query_ratings(config, train, judge_model)
    shards, report = quality_pools(train, ratings, config.rounds, pool_total=config.data.pool_total,
                                   pool_size=config.data.pool_size, seed=config.seed)
    empty = [t for t, shard in enumerate(shards) if not shard]
    if empty:
        raise ConfigError(
            f"{len(train)} training prompts ({sum(report.sizes)} eligible) left pool(s) {empty} of "
            f"{config.rounds} empty; use more data (data.limit) or fewer rounds")
    return DataSplit(shards=shards, held_out=held_out, report=report)


def python_judge_kinds(config: TaiScoreConfig) -> list[str]:
    """The kinds of Python function a `python:` `models.judge` must define for this run: the
    critic's GRPO reward where a condition trains the critic, the pairwise judge (DPO pairs,
    win rates) and the gold judge (held-out scores)."""
    grpo = any(plan.critic_training == "grpo" for plan in resolve_conditions(config))
    return (["reward"] if grpo else []) + ["pairwise", "gold"]


def check_python_judge(config: TaiScoreConfig) -> None:
    """Refuse, before the run starts, a `python:` judge the run cannot use: a missing or
    failing function of a needed kind, or query filtering (a Table 11 grade needs a model)."""
    from coevo.llm.python_functions import check_python_spec

    if config.data.filter_queries or (config.evaluation.data is not None and config.evaluation.data.filter_queries):
        raise ConfigError(f"models.judge {config.models.judge!r} is a Python function, but data.filter_queries "
                          "asks the judge model to grade queries (Table 11); turn it off (a quality column in "
                          "the data still rates them)")
    check_python_spec(config.models.judge, python_judge_kinds(config), "models.judge")


def run_taiscore(config: TaiScoreConfig, store: RunStore, backend: Backend | None = None) -> TaiScoreSummary:
    """`coevo run` entry for `algorithm: taiscore`: every condition × seed, one table."""
    from coevo.llm.specs import load_model

    backend = backend or default_backend()
    if backend.load_frozen is None:
        backend.load_frozen = load_model
    if backend.load_copy is None:
        from coevo.llm.specs import vllm_copy

        backend.load_copy = vllm_copy
    plans = resolve_conditions(config)
    if is_python_spec(config.models.judge):  # a Python scorer: no backend, its own call cache
        check_python_judge(config)
        judge_model = load_python_function(config.models.judge)
    else:
        judge_model = backend.load_frozen(config.models.judge, **config.models.options_for("judge"))
    from coevo.llm.cache import CachedModel

    samples = load_samples(config.data.source, columns=config.data.columns or None, limit=config.data.limit)
    eval_data = config.evaluation.data
    split = split_data(config, samples, None if isinstance(judge_model, PythonFunction)
                       else CachedModel(judge_model, store),  # a resumed run re-grades nothing
                       load_data(eval_data, judge_model, config.sampling) if eval_data is not None else None)
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
        base_model=base_model_path(config.models.actor),
        base_models={"actor": base_model_path(config.models.actor),
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


__all__ = [
    "PRESETS", "Backend", "ConditionResult", "ConditionSpec", "EvaluationConfig", "LoRASettings", "PairCounts", "Plan",
    "TaiScoreConfig", "TaiScoreSummary", "make_reward_fn", "resolve_conditions", "run_condition", "run_taiscore",
    "select_pairs", "split_data", "stages_for",
]
