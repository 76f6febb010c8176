"""What the DPO and GRPO glue share besides settings (coevo.train.settings), checkpoints
(coevo.train.checkpoints) and measuring (coevo.train.measuring): the result record of a
stage (`TrainResult`), the model it trains (the LoRA wrap and what TRL leaves on it), and
the trainer's lifetime (its callbacks, the processes it spans, what it frees when done).

The trainers change `LocalModel.model` in place (or wrap it in a PEFT adapter once), so an
algorithm keeps one `LocalModel` per trained role across rounds and samples from it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from coevo.train.memory import give_back_freed_memory

if TYPE_CHECKING:
    from coevo.train.settings import LoRASettings


class TrainResult(BaseModel):
    """One finished training stage: where the final checkpoint is, what it cost, and TRL's
    per-step log. `checkpoint` is the folder as saved; the run store keeps it relative to
    the run folder (coevo.train.stages), so a moved run folder still resumes."""

    checkpoint: str
    steps: int
    seconds: float
    seconds_per_step: float
    peak_rss_mb: float
    metrics: dict[str, float] = Field(default_factory=dict)
    resumed_from: str | None = None
    #: TRL's `log_history`, numeric entries only: one dict per logged step (loss, grad_norm,
    #: reward, reward_std, kl, ...) and the closing summary (train_loss, train_runtime).
    history: list[dict[str, float | int | None]] = Field(default_factory=list)
    round: int | None = None
    kind: Literal["grpo", "dpo"] | None = None


def stage_callbacks(extra: list[Any] | None = None) -> list[Any]:
    """Callbacks every stage uses, plus the caller's.

    transformers saves a full checkpoint (weights + optimizer state) when training ends even
    off the `save_steps` grid; coevo writes `final/` right after, so that extra checkpoint is
    pure cost (~100 GB for an 8B model) and is skipped.
    """
    from transformers import TrainerCallback

    class SkipEndCheckpoint(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
            if control.should_training_stop and args.save_steps and state.global_step % args.save_steps:
                control.should_save = False
            return control

    return [SkipEndCheckpoint(), *(extra or [])]


def is_peft(model: Any) -> bool:
    """Whether `model` is a PEFT wrapper (its checkpoints are adapter folders)."""
    try:
        from peft import PeftModel
    except ImportError:  # pragma: no cover - peft is a dependency
        return False
    return isinstance(model, PeftModel)


def prepare_lora(policy: Any, lora: LoRASettings | None) -> None:
    """Wrap `policy.model` in a fresh LoRA adapter, once; later stages keep training that adapter.

    Wrapping here (not through the trainer's peft_config) lets round t>0 pass the same PeftModel
    again: TRL refuses a PeftModel together with a peft_config. A freshly initialised LoRA
    adapter has B=0, so the wrapped model computes exactly what the policy computed before.
    """
    if lora is None or is_peft(policy.model):
        return
    from peft import get_peft_model

    policy.model = get_peft_model(policy.model, lora.peft_config())


def base_of(model: Any) -> Any:
    """The transformers model under a PEFT wrapper (or the model itself)."""
    return model.get_base_model() if is_peft(model) else model


def unpatch_forward(model: Any) -> None:
    """Undo TRL's fused-LM-head patch (an instance attribute `forward`), so repeated stages
    do not stack wrappers; generation is unaffected either way."""
    if model is not None and "forward" in vars(base_of(model)):
        del vars(base_of(model))["forward"]


def drop_reference_adapter(model: Any) -> None:
    """Delete TRL's frozen "ref" copy of the adapter after a stage; the next stage makes a fresh one."""
    if is_peft(model) and "ref" in model.peft_config:
        model.delete_adapter("ref")
        model.set_adapter("default")


def release(trainer: Any) -> None:
    """Drop what a finished trainer holds (optimizer state, reference model, accelerator
    handles) now: the algorithms run many stages in one process, and a trainer kept alive
    by reference cycles would keep ~2x the policy's size in Adam state per stage."""
    import gc

    for name in ("optimizer", "lr_scheduler", "ref_model"):
        if hasattr(trainer, name):
            setattr(trainer, name, None)
    accelerator = getattr(trainer, "accelerator", None)
    # Not accelerator.free_memory(): under DeepSpeed it destroys the engine that still owns
    # the policy's (partitioned) parameters, which the caller goes on using.
    for name in ("_models", "_optimizers", "_schedulers", "_dataloaders"):
        if accelerator is not None and isinstance(getattr(accelerator, name, None), list):
            setattr(accelerator, name, [])
    gc.collect()
    give_back_freed_memory()


def world_size() -> int:
    """Processes training together (torchrun / accelerate launch set WORLD_SIZE)."""
    from coevo.train import distributed

    return distributed.world_size()
