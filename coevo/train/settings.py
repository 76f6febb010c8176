"""The settings a training stage is built from: the LoRA adapter (`LoRASettings`), what
every stage's block holds (`StageSettings`, which coevo.train.grpo's `GRPOSettings` and
coevo.train.dpo's `DPOSettings` extend), and TRL's config made of them for this machine
(`trl_config`, `machine_training_args`)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from coevo.core.strict import StrictModel
from coevo.train.errors import TrainError
from coevo.train.reporting import ReportTo


class LoRASettings(StrictModel):
    """A PEFT LoRA adapter; the checkpoint is then an adapter folder over the base model."""

    r: int = Field(16, ge=1)
    alpha: int = Field(32, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    #: None = every linear layer but the LM head (PEFT's "all-linear"): the LM head cannot carry
    #: an adapter because TRL computes log-probabilities from `lm_head.weight` directly.
    target_modules: list[str] | None = None

    @field_validator("target_modules")
    @classmethod
    def _no_lm_head(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and "lm_head" in value:
            raise ValueError("target_modules must not include 'lm_head' (TRL scores with lm_head.weight directly)")
        if value is not None and not value:
            raise ValueError("target_modules is empty; leave it unset for every linear layer")
        return value

    def peft_config(self) -> Any:
        """The `peft.LoraConfig` these settings describe."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.r,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=self.target_modules or "all-linear",
            task_type="CAUSAL_LM",
        )


class StageSettings(StrictModel):
    """What a GRPO and a DPO block set alike: optimizer, length of the stage, checkpoints,
    LoRA, seed, TRL's own options and where per-step logs go. The fields whose defaults or
    meaning differ (beta, batch_size, max_prompt_length, ...) are each subclass's own."""

    learning_rate: float = Field(1e-6, gt=0)
    grad_accum: int = Field(1, ge=1)  # micro-batches per step (memory, not semantics)
    max_steps: int | None = Field(None, ge=1)
    epochs: int = Field(1, ge=1)
    save_steps: int = Field(10, ge=1)
    lora: LoRASettings | None = None
    seed: int = 0
    #: Passed to the stage's TRL config (GRPOConfig, DPOConfig) as it is: any TRL option
    #: (grpo: `{warmup_steps: 10}`; dpo: `{loss_type: ipo}`, `{label_smoothing: 0.1}`); a key
    #: coevo sets from the block's own fields is refused (see `trl_config`).
    trl: dict[str, Any] = Field(default_factory=dict)
    #: Per-step logs to TensorBoard / Weights & Biases (TRL's integrations), into
    #: RUN/logs/<stage name>: none (default), tensorboard, wandb, or a list of them. TRL's
    #: history is kept in the run store either way.
    report_to: ReportTo = "none"


def machine_training_args() -> dict[str, Any]:
    """TrainingArguments for this machine: CPU-safe settings without CUDA, bf16 on a GPU.

    On a CPU: no bf16 (its autocast is slow there), and gradient checkpointing without
    re-entrant autograd (the re-entrant form loses the gradients of a model whose inputs need
    none): activations are recomputed in the backward pass instead of held. With the freed
    memory handed back after each stage (`give_back_freed_memory`) and the weight probe
    reading the KL reference, it took the quickstart's peak from 9.8 GB to 7.0 GB, its GRPO
    stage no slower (BENCHMARKS.md, "Where the quickstart's time goes"). A block's
    `trl: {gradient_checkpointing: false}` turns it off.
    """
    import torch

    if torch.cuda.is_available():
        return {"bf16": True, "gradient_checkpointing": True}
    return {"use_cpu": True, "bf16": False, "gradient_checkpointing": True,
            "gradient_checkpointing_kwargs": {"use_reentrant": False}}


def trl_config(config_class: type, block: str, own: dict[str, Any], passthrough: dict[str, Any]) -> Any:
    """TRL's `config_class` (GRPOConfig, DPOConfig) from coevo's own arguments, this
    machine's defaults (`machine_training_args`) and the block's `trl:` mapping, which goes to
    TRL as it is: any TRL option without a code change, the machine defaults included
    (`trl: {bf16: false}`).

    A `trl:` key that coevo sets itself is refused (it would be silently overridden, or
    override what coevo decided); a key TRL does not know is refused by TRL's own error,
    shown in one line.
    """
    clash = sorted(set(passthrough) & set(own))
    if clash:
        raise TrainError(f"{block}.trl sets {', '.join(clash)}, which coevo sets itself from the {block} block: "
                         f"set it there (or leave it to coevo) instead")
    try:
        return config_class(**own, **{**machine_training_args(), **passthrough})
    except TypeError as exc:
        raise TrainError(f"{block}.trl: {exc} (TRL's {config_class.__name__} has no such argument)") from None
