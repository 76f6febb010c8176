"""The trainer seam: how an algorithm loads its models and trains them.

TAIScore and RLAC reach weights only through a `Backend`, so one fake (replay models,
trainers that record what they were asked) tests either loop's logic without TRL, and a user
can run a loop on their own trainers. `default_backend()` is the real thing: transformers
models, TRL through coevo.train.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from coevo.settings.role_specs import RoleSet
from coevo.train.common import TrainResult


def _restore(policy: Any, checkpoint: str, settings: Any) -> None:
    from coevo.train.stages import restore_checkpoint

    restore_checkpoint(policy, checkpoint, getattr(settings, "lora", None))


@dataclass
class Backend:
    """How a loop loads models and trains them; tests swap in fakes.

    load_trainable(spec, **options) -> a model with `.model`, `.tokenizer` (a LocalModel);
    load_frozen(spec, **options) -> a ChatModel (options: the role's, `roles.<role>.options`);
    restore(model, checkpoint, settings) puts a finished stage's weights back in place
    (`settings`: the stage's GRPO/DPO settings, whose `lora` says how they were saved);
    train_grpo / train_dpo: the coevo.train glue's signatures.
    An entry left None is the real one (a fake replaces only what its test needs).
    """

    load_trainable: Callable[..., Any] = field(default=None)  # type: ignore[assignment]
    restore: Callable[[Any, str, Any], None] = field(default=None)  # type: ignore[assignment]
    train_grpo: Callable[..., TrainResult] = field(default=None)  # type: ignore[assignment]
    train_dpo: Callable[..., TrainResult] = field(default=None)  # type: ignore[assignment]
    load_frozen: Callable[..., Any] = field(default=None)  # type: ignore[assignment]
    #: load_copy(spec, checkpoint, **options) -> (a frozen generation copy of a trained
    #: role's weights, whether it is shared); see TAIScore's `actor_engine`.
    load_copy: Callable[..., tuple[Any, bool]] = field(default=None)  # type: ignore[assignment]
    #: load_gguf_copy(local, path) -> a llama.cpp model on a trained model's weights as they
    #: are now, written to `path` (`actor_engine` / `critic_engine: llamacpp`).
    load_gguf_copy: Callable[..., Any] = field(default=None)  # type: ignore[assignment]

    def __post_init__(self) -> None:
        # Imported here: the real loaders pull in torch and TRL, which a fake never needs.
        if self.load_trainable is None:
            from coevo.train.trainable import load_trainable

            self.load_trainable = load_trainable
        if self.restore is None:
            self.restore = _restore
        if self.train_grpo is None:
            from coevo.train.grpo import train_grpo

            self.train_grpo = train_grpo
        if self.train_dpo is None:
            from coevo.train.dpo import train_dpo

            self.train_dpo = train_dpo
        if self.load_frozen is None:
            from coevo.llm.specs import load_model

            self.load_frozen = load_model
        if self.load_copy is None:
            from coevo.llm.specs import vllm_copy

            self.load_copy = vllm_copy
        if self.load_gguf_copy is None:
            from coevo.llm.gguf_export import llamacpp_copy

            self.load_gguf_copy = llamacpp_copy

    def model(self, roles: RoleSet, role: str, *, trainable: bool = False, store: Any = None) -> Any:
        """The model of `role` with that role's backend options (`roles.<role>.options`):
        trainable weights, or a frozen ChatModel (cached in `store` where one is given)."""
        spec, options = roles.spec(role), roles.options_for(role)
        if trainable:
            return self.load_trainable(spec, **options)
        return self.load_frozen(spec, store=store, **options) if store is not None else self.load_frozen(spec, **options)


def default_backend() -> Backend:
    """The real thing: transformers models, TRL through coevo.train."""
    return Backend()
