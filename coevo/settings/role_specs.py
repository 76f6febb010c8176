"""One role spec: a role's model, backend options, prompt template and decoding, together.

Every algorithm's config has a `roles:` block, one entry per role:

    roles:
      default: {options: {n_threads: 1}}     # backend options every model role starts from
      actor:
        model: smollm2                        # a model spec (`coevo models`)
        options: {engine: vllm}               # this role's backend options, over `default`'s
        template: reviser                     # its prompt template (bundled name or a file)
        sampling:                             # its decoding, per use where it has several
          response: {temperature: 0.8, max_tokens: 256}
          revision: {temperature: 0.2, max_tokens: 2048}
      judge:
        model: openai:Qwen3-8B@http://10.0.0.5:8000/v1
        options: {concurrency: 64, timeout: 120}
        sampling: {temperature: 0.2, max_tokens: 2048}   # one use: the sampling itself

A role with one use takes its `sampling` directly; one with several (the actor writes answers
and revisions) names each use. The names are the same where the role is the same: every
algorithm's `critic` and `judge`; the trained policy is TAIScore's `actor` and RLAC's
`generator` (their papers' words). The old blocks (`models`, `models.options`, `sampling`,
`templates`) are refused with the new place of each key they held (`refuse_old_role_blocks`).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from coevo.core.strict import StrictModel
from coevo.core.types import JudgeSampling, Sampling


class RoleSpec(StrictModel):
    """One role of an algorithm. Subclasses add the fields the role has (model, options,
    template, sampling), each with the paper's default."""

    @model_validator(mode="before")
    @classmethod
    def _sampling_over_the_roles_defaults(cls, data: Any) -> Any:
        # `--set roles.critic.sampling.max_tokens=128` must change the critic's token limit
        # and nothing else: a partial sampling block fills its gaps from this role's defaults
        # (T 0.8 for the critic), not from the Sampling class's (T 0.7).
        field = cls.model_fields.get("sampling")
        if not (isinstance(data, dict) and field is not None and isinstance(data.get("sampling"), dict)):
            return data
        default, given = field.default, data["sampling"]
        if isinstance(default, Sampling):
            return {**data, "sampling": {**default.model_dump(exclude_defaults=True), **given}}
        uses = {use: {**getattr(default, use).model_dump(exclude_defaults=True), **value}
                if isinstance(value, dict) and use in type(default).model_fields else value
                for use, value in given.items()}
        return {**data, "sampling": uses}


class ModelRole(RoleSpec):
    """A role with a model of its own: a model spec and that model's backend options
    (threads, engine, concurrency, timeouts, ...; options the backend does not take fail when
    the run starts, naming the option and the ones it takes)."""

    model: str = "smollm2"
    options: dict[str, Any] = Field(default_factory=dict)
    #: The chat template's thinking switch (Qwen3's `enable_thinking`): true / false, or None
    #: (default) for the template's own default (Qwen3: thinking on). Templates without the
    #: switch ignore it. Passed to every model this role loads, trained (TRL's GRPO and DPO
    #: apply the template with it) or served; hf:, vllm: and openai: models only.
    thinking: bool | None = None


class RoleDefaults(StrictModel):
    """`roles.default`: the backend options every model role starts from (a role's own win),
    so `--set roles.default.options.engine=llamacpp` switches a whole run."""

    options: dict[str, Any] = Field(default_factory=dict)


class RoleSet(StrictModel):
    """An algorithm's `roles:` block: `default` plus one `RoleSpec` field per role."""

    default: RoleDefaults = RoleDefaults()

    @classmethod
    def role_names(cls) -> list[str]:
        """The roles that load a model of their own (`model` set or settable)."""
        return [name for name, field in cls.model_fields.items()
                if name != "default" and "model" in getattr(field.annotation, "model_fields", {})]

    def spec(self, role: str) -> str | None:
        """The model spec of `role` (None: unset, where a role may go without one)."""
        return getattr(self, role).model

    def options_for(self, role: str) -> dict[str, Any]:
        """The backend options of `role`: `roles.default.options` overlaid with the role's own."""
        spec = getattr(self, role)
        thinking = {"thinking": spec.thinking} if getattr(spec, "thinking", None) is not None else {}
        return {**self.default.options, **spec.options, **thinking}

    def load(self, role: str, *, spec: str | None = None, store: Any = None) -> Any:
        """The frozen model of `role` (or `spec` in that role's place) with the role's options.
        A role's trainable weights load through the trainer seam instead,
        `Backend.model(roles, role, trainable=True)` (coevo/algorithms/backend.py)."""
        # Frozen models only: settings/ sits below train/, so the
        # trainable path, which tells the other ranks to load too, stays with the Backend,
        # where tests fake it (docs/architecture.md).
        from coevo.llm.specs import load_model

        return load_model(spec or self.spec(role), store=store, trainable=False, **self.options_for(role))


def refuse_old_role_blocks(data: Any, moved: dict[str, str]) -> Any:
    """A `model_validator(mode="before")` body: a config that still uses the old per-kind
    blocks (`models`, `sampling`, `templates`) is refused with, in one line, the new place of
    every key it holds there. `moved` maps an old dotted path (`models.actor`,
    `sampling.rollout`, `models.options.<role>` for any role) to its new one."""
    if not isinstance(data, dict):
        return data
    found = []
    for block in ("models", "sampling", "templates"):
        value = data.get(block)
        if block not in data:
            continue
        if not isinstance(value, dict) or not value:
            found.append(f"{block} -> roles.<role>")
            continue
        for key, sub in value.items():
            if block == "models" and key == "options" and isinstance(sub, dict):
                found += [f"models.options.{role} -> roles.{role}.options" for role in sub]
                continue
            found.append(f"{block}.{key} -> {moved.get(f'{block}.{key}', 'roles.<role>')}")
    if found:
        raise ValueError("the config's roles are now one block, `roles.<name>: {model, options, template, "
                         "sampling}` (docs/config.md): move " + "; ".join(found))
    return data


# ---------------------------------------------------------------- critique-guided refinement
class ActorSampling(StrictModel):
    """The actor's two uses (TAIScore Table 12: rollouts at T 0.8, the refiner at T 0.2; the
    2048-token revision limit is the authors' reward code's)."""

    response: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=256)  # y0
    revision: Sampling = Sampling(temperature=0.2, top_p=0.95, max_tokens=2048)  # y1, given a critique


class ActorRole(ModelRole):
    """Writes y0 and revises it given a critique (or without one, for the critique-blind conditions)."""

    template: str = "reviser"
    template_no_critique: str = "reviser_no_critique"
    sampling: ActorSampling = ActorSampling()


class CriticRole(ModelRole):
    """Writes a critique of y0 (Table 12's rollout decoding)."""

    template: str = "critic"
    sampling: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=256)


class JudgeRole(ModelRole):
    """Backs every judge of the run (rewards, pairs, held-out scores); frozen."""

    sampling: JudgeSampling = JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=2048)


class RefinementRoleSpecs(RoleSet):
    """The roles of critique-guided refinement (TAIScore, `refine`, the controls). Every role
    defaults to the embedded model so a config runs offline; real work points them at larger
    models."""

    actor: ActorRole = ActorRole()
    critic: CriticRole = CriticRole()
    judge: JudgeRole = JudgeRole()


#: Where each key of the old blocks went, for the refinement configs.
REFINEMENT_MOVED = {
    "models.actor": "roles.actor.model", "models.critic": "roles.critic.model", "models.judge": "roles.judge.model",
    "sampling.rollout": "roles.actor.sampling.response and roles.critic.sampling",
    "sampling.revision": "roles.actor.sampling.revision", "sampling.judge": "roles.judge.sampling",
    "templates.critic": "roles.critic.template", "templates.reviser": "roles.actor.template",
    "templates.reviser_no_critique": "roles.actor.template_no_critique",
}
