"""`algorithm: scaling`: the config of TAIScore's controlled zero-shot analysis (Fig. 1, Table 5).

Two kinds of comparison, each a list of blocks like Table 5's rows:

    critic_scaling:                      # instruction, y0 and the self-refiner fixed
      - {setting: Qwen3-8B, actor: vllm:Qwen/Qwen3-8B,
         critics: [vllm:Qwen/Qwen3-8B, vllm:Qwen/Qwen3-32B]}       # smaller first
    refiner_scaling:                     # y0 and one critique fixed
      - {y0_from: vllm:Qwen/Qwen3-8B, critique_from: vllm:Qwen/Qwen3-32B,
         refiners: [vllm:Qwen/Qwen3-8B, vllm:Qwen/Qwen3-32B]}

A critic block may name several `actors` (a grid: every actor x every critic is a cell) and
more than two critics, with `pairs` saying which (smaller, larger) deltas to report (default:
each critic against the next). Models are named in the blocks; `roles.actor` and
`roles.critic` keep only what every actor and critic share (template, decoding, options).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from coevo.core.strict import ConfigError
from coevo.settings.config import DataConfig, ExperimentConfig
from coevo.llm.python_functions import is_python_spec
from coevo.settings.role_specs import REFINEMENT_MOVED, ActorRole, CriticRole, JudgeRole, ModelRole, RefinementRoleSpecs
from coevo.core.strict import StrictModel
from coevo.core.types import JudgeSampling

#: Where a block's y0 comes from when read from the data: `column:NAME`.
COLUMN = "column:"


def _no_model_here(role: str):
    def check(value: str | None) -> str | None:
        if value is not None:
            raise ValueError(f"roles.{role}.model is not read here: each comparison names its models "
                             "(critic_scaling[].actor/critics, refiner_scaling[].y0_from/critique_from/refiners); "
                             f"drop roles.{role}.model")
        return value
    return check


class SharedActorRole(ActorRole):
    """What every actor and refiner of the analysis shares: Table 7's reviser prompt, the
    decoding of y0 (`response`) and of revisions (`revision`), backend options."""

    model: str | None = None  # type: ignore[assignment]
    _check = field_validator("model")(_no_model_here("actor"))


class SharedCriticRole(CriticRole):
    """What every critic shares: Table 6's critic prompt, its decoding, backend options."""

    model: str | None = None  # type: ignore[assignment]
    _check = field_validator("model")(_no_model_here("critic"))


class GoldRole(ModelRole):
    """S(.), the response-quality score behind the gain: the gold-rubric judge on the
    sample's criteria, or a `python:FILE.py:FUNCTION` gold scorer `gold(x, response, rubric)`.
    `model: null` (default): the judge's model under the gold-rubric prompt."""

    model: str | None = None  # type: ignore[assignment]
    sampling: JudgeSampling = JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=2048)


class ScalingRoles(RefinementRoleSpecs):
    """The shared role settings; `judge` scores critique quality (Table 8) and adherence
    (Table 9), `gold` scores responses for the gain."""

    actor: SharedActorRole = SharedActorRole()  # type: ignore[assignment]
    critic: SharedCriticRole = SharedCriticRole()  # type: ignore[assignment]
    judge: JudgeRole = JudgeRole()
    gold: GoldRole = GoldRole()


def _refuse_python(specs: list[str], where: str) -> None:
    for spec in specs:
        if is_python_spec(spec):
            raise ValueError(f"{where} {spec!r} is a Python scorer, not a model; a scorer stands only at "
                             "roles.gold.model")


class CriticScaling(StrictModel):
    """Table 5's first block: the same self-refining actor(s), a smaller and a larger critic."""

    #: The row's label (Table 5's "Setting"); default: the actor's model name.
    setting: str | None = None
    actor: str | None = None
    #: Several actors: a grid, every actor x every critic; each actor is a row of its own.
    actors: list[str] = Field(default_factory=list)
    #: Smaller to larger; at least two.
    critics: list[str] = Field(min_length=2)
    #: (smaller, larger) critic specs to compare; default: each critic against the next one.
    pairs: list[tuple[str, str]] | None = None
    #: Read y0 from this data column instead of the actor's own responses.
    y0_column: str | None = None

    @model_validator(mode="after")
    def _check(self) -> CriticScaling:
        if (self.actor is None) == (not self.actors):
            raise ValueError("critic_scaling: give `actor` (one self-refiner) or `actors` (a grid), not both or "
                             "neither")
        _refuse_python(self.actor_specs() + self.critics, "critic_scaling")
        _check_pairs(self.pairs, self.critics, "critics")
        return self

    def actor_specs(self) -> list[str]:
        return [self.actor] if self.actor is not None else list(self.actors)

    def compared(self) -> list[tuple[str, str]]:
        """The (smaller, larger) critic pairs this block reports."""
        return [tuple(p) for p in self.pairs] if self.pairs else list(zip(self.critics, self.critics[1:]))


class RefinerScaling(StrictModel):
    """Table 5's second block: the same y0 and critique, a smaller and a larger refiner."""

    setting: str | None = None
    #: The actor that writes y0 (or `y0_column`: read y0 from the data).
    y0_from: str | None = None
    y0_column: str | None = None
    #: The critic whose one critique of each y0 every refiner revises under.
    critique_from: str
    refiners: list[str] = Field(min_length=2)
    pairs: list[tuple[str, str]] | None = None

    @model_validator(mode="after")
    def _check(self) -> RefinerScaling:
        if (self.y0_from is None) == (self.y0_column is None):
            raise ValueError("refiner_scaling: give `y0_from` (an actor writes y0) or `y0_column` (y0 read from "
                             "the data), not both or neither")
        _refuse_python([s for s in (self.y0_from, self.critique_from) if s] + self.refiners, "refiner_scaling")
        _check_pairs(self.pairs, self.refiners, "refiners")
        return self

    def compared(self) -> list[tuple[str, str]]:
        """The (smaller, larger) refiner pairs this block reports."""
        return [tuple(p) for p in self.pairs] if self.pairs else list(zip(self.refiners, self.refiners[1:]))


def _check_pairs(pairs: list[tuple[str, str]] | None, listed: list[str], key: str) -> None:
    for pair in pairs or []:
        unknown = [spec for spec in pair if spec not in listed]
        if unknown:
            raise ValueError(f"pairs: {unknown[0]!r} is not among the block's {key} {listed}")


class ScalingConfig(ExperimentConfig):
    """`algorithm: scaling`: critic- and refiner-scaling comparisons on fixed y0 (TAIScore App. A)."""

    #: The old role blocks' keys: the models moved into the comparisons, the rest into `roles`.
    MOVED_KEYS = {**REFINEMENT_MOVED, "models.actor": "critic_scaling[].actor and refiner_scaling[].refiners",
                  "models.critic": "critic_scaling[].critics and refiner_scaling[].critique_from"}

    algorithm: Literal["scaling"] = "scaling"
    data: DataConfig = DataConfig()
    roles: ScalingRoles = ScalingRoles()
    critic_scaling: list[CriticScaling] = Field(default_factory=list)
    refiner_scaling: list[RefinerScaling] = Field(default_factory=list)
    #: Prompts per model call; None (default): a whole stage per call, which vLLM and servers
    #: batch best. A number bounds what a crash mid-stage loses.
    batch_size: int | None = Field(None, ge=1)

    @model_validator(mode="after")
    def _check(self) -> ScalingConfig:
        if self.data.filter_queries:
            raise ValueError("data.filter_queries: the controlled analysis scores the benchmark's rows as they are "
                             "(App. A); drop it")
        return self

    def model_specs(self) -> list[str]:
        """Every model a comparison names, once each, in order (the run's preflight checks
        each); a config without a comparison is refused here, before a run folder exists."""
        if not self.critic_scaling and not self.refiner_scaling:
            raise ConfigError("give at least one comparison: critic_scaling: [{actor, critics: [SMALL, LARGE]}] or "
                              "refiner_scaling: [{y0_from, critique_from, refiners: [SMALL, LARGE]}]")
        specs: list[str] = []
        for block in self.critic_scaling:
            specs += block.actor_specs() + block.critics
        for block in self.refiner_scaling:
            specs += [s for s in (block.y0_from, block.critique_from) if s] + block.refiners
        return list(dict.fromkeys(specs))
