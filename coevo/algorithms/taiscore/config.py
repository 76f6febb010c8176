"""TAIScore's configuration: the loop's settings (Table 12 defaults), the paper's conditions as
presets of the one loop, and how a config resolves into the plans the loop runs."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from coevo.core.strict import ConfigError, StrictModel
from coevo.settings.config import DataConfig, ExperimentConfig
from coevo.audit.config import AuditConfig
from coevo.monitor.config import MonitorConfig, Watches
from coevo.settings.role_specs import REFINEMENT_MOVED, JudgeRole, RefinementRoleSpecs
from coevo.roles.judges import REWARD_JUDGES
from coevo.train.dpo import DPOSettings
from coevo.train.grpo import GRPOSettings

#: The judges whose score can be the critic's GRPO reward (declared in roles/judges.py).
RewardName = Literal[REWARD_JUDGES]  # type: ignore[valid-type]
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
    #: it to build the DPO pairs of `roles.actor.model`.
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
    #: The evaluator's judge for held-out samples that carry reference key points
    #: (`deepresearch_gym:FILE`: KPR, KPC, report quality; coevo/eval/deepresearch_gym.py), its
    #: own model and decoding (§5.1: GPT-4.1-mini, e.g.
    #: `{model: "openai:gpt-4.1-mini@https://api.openai.com/v1"}`); None: the run's judge.
    judge: JudgeRole | None = None
    #: How that judge is asked. `official` (DeepResearch-Gym's scripts): one call per key point
    #: (supported / omitted / contradicted) and one per quality criterion (0-10, quality = mean
    #: x 10); `single_call`: every key point of a report in one call and the six criteria in
    #: another (1-10, mapped (m-1)/9 x 100), 2 calls a report instead of k + 6 but not the
    #: benchmark's numbers (a listed departure). roles/deepresearch_official.py.
    deepresearch_protocol: Literal["official", "single_call"] = "official"


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
    #: Fill `pool_total` with a seeded sample of the queries rated 3 when those rated 4-5 fall
    #: short. App. C does so for DeepWriting (4,937 rated 4-5, topped up to 9,000); for
    #: OpenScholar it samples 9,000 of the 17,022 rated 4-5 and names no top-up (false there).
    top_up: bool = True
    quality_column: str = "quality"


class TaiScoreMonitor(MonitorConfig):
    """TAIScore's monitor watches the critic's GRPO stage step by step: anchors that score its
    critiques (`python:`, `judge:`) and a stop at a flag; it has no gold of its own."""

    WATCHES = Watches(algorithm="taiscore", gold=False, models=True, stop=True)


class TaiScoreAudit(AuditConfig):
    """TAIScore audits its frozen judges only: no evaluator's update for the gate to refuse."""

    ALGORITHM = "taiscore"
    NO_GATE = "its critic writes critiques the judge scores; it scores nothing itself"


class TaiScoreConfig(ExperimentConfig):
    """`algorithm: taiscore` — co-evolving critic (GRPO) and actor (DPO), Table 12 defaults."""

    MOVED_KEYS = REFINEMENT_MOVED

    algorithm: Literal["taiscore"] = "taiscore"
    data: TaiScoreData = TaiScoreData()
    #: actor (y0, revisions; trained by DPO), critic (critiques; trained by GRPO), judge (frozen).
    roles: RefinementRoleSpecs = RefinementRoleSpecs()
    rounds: int = Field(3, ge=1)                  # T: number of disjoint query shards
    schedule: Schedule = "coevolution"
    critic_training: Literal["grpo", "none"] = "grpo"
    reward: RewardName = "taiscore"
    #: The GRPO reward of a critique the judge could not score (unreadable twice, or an
    #: empty critique or revision); it stays in its group, as in the authors' code.
    invalid_reward: float = 0.0
    tailored_to: str | None = None
    #: What the trained actor generates with between its trainings (y0, the revisions in the
    #: critic's GRPO reward, evaluation): the trained transformers model itself, a vLLM
    #: engine on its latest finished weights (the base, then each DPO stage's `final/`: full
    #: weights, or a LoRA adapter on the base), or llama.cpp on a GGUF of those weights
    #: (Llama-architecture models; ~6x transformers' speed on a CPU); one copy per checkpoint
    #: (algorithms/engines.py).
    actor_engine: Literal["transformers", "vllm", "llamacpp"] = "transformers"
    #: The same for the trained critic (its critiques for the actor's pairs and evaluation):
    #: `llamacpp` also writes its GRPO samples there (`grpo.rollout_engine`, train/rollout.py);
    #: with `vllm` its GRPO samples go through TRL's vLLM when `grpo.use_vllm` says so.
    critic_engine: Literal["transformers", "vllm", "llamacpp"] = "transformers"
    #: Queries per shard the critic trains on (None: the whole shard; paper: 2K of 3K).
    critic_queries: int | None = Field(None, ge=1)
    pairs_per_round: int = Field(2000, ge=1)      # M eligible pairs sampled per shard
    grpo: GRPOSettings = GRPOSettings()
    dpo: DPOSettings = DPOSettings()
    evaluation: EvaluationConfig = EvaluationConfig()
    #: The judges probed for gaming before round 1 and after every round (taiscore/audit.py).
    audit: TaiScoreAudit = TaiScoreAudit()
    #: The reward-hacking monitor on the critic's GRPO stages (docs/monitor.md).
    monitor: TaiScoreMonitor = TaiScoreMonitor()
    #: Several conditions on the same data: preset names or ConditionSpec mappings.
    conditions: list[str | ConditionSpec] = Field(default_factory=list)
    seeds: int = Field(1, ge=1)
    seed: int = 0
    #: Prompts per model call; None (default): a whole stage per call, which vLLM and servers
    #: batch best. A number bounds what a crash mid-stage loses and shows progress per chunk.
    batch_size: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> TaiScoreConfig:
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
           "schedule": config.schedule, "critic": config.roles.critic.model, "tailored_to": config.tailored_to}
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


def python_judge_kinds(config: TaiScoreConfig) -> list[str]:
    """The kinds of Python function a `python:` `roles.judge.model` must define for this run: the
    critic's GRPO reward where a condition trains the critic, the pairwise judge (DPO pairs,
    win rates) and the gold judge (held-out scores)."""
    grpo = any(plan.critic_training == "grpo" for plan in resolve_conditions(config))
    return (["reward"] if grpo else []) + ["pairwise", "gold"]


def check_python_judge(config: TaiScoreConfig) -> None:
    """Refuse, before the run starts, a `python:` judge the run cannot use: a missing or
    failing function of a needed kind, or query filtering (a Table 11 grade needs a model)."""
    from coevo.llm.python_functions import check_python_spec

    if config.data.filter_queries or (config.evaluation.data is not None and config.evaluation.data.filter_queries):
        raise ConfigError(f"roles.judge.model {config.roles.judge.model!r} is a Python function, but data.filter_queries "
                          "asks the judge model to grade queries (Table 11); turn it off (a quality column in "
                          "the data still rates them)")
    check_python_spec(config.roles.judge.model, python_judge_kinds(config), "roles.judge.model")
