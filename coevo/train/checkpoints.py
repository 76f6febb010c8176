"""A training stage's checkpoints: TRL's `checkpoint-N` folders it resumes from
(`last_checkpoint`, `global_step`), the `final/` folder it ends with (`save_checkpoint`,
`load_final`, `finish_stage` with its model card, `adopt_finished` for a stage finished
before the process died), and the folder that holds the policy's entry weights for TRL's
reference model (`entry_folder`, `origin_named`)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coevo.core.checkpoint_identity import RESULT_FILE
from coevo.train.common import TrainResult, base_of, is_peft, release
from coevo.train.errors import TrainError
from coevo.train.measuring import final_metrics
from coevo.train.reporting import current_stage, json_history, step_timing

log = logging.getLogger(__name__)

# RESULT_FILE is written into `final/` after everything else: its presence marks a stage as
# finished (and its digest names the weights there: coevo/core/checkpoint_identity.py).


def global_step(checkpoint: str | None) -> int:
    """The optimizer step a TRL checkpoint was saved at (0 without one)."""
    if checkpoint is None:
        return 0
    state = Path(checkpoint) / "trainer_state.json"
    return int(json.loads(state.read_text()).get("global_step", 0)) if state.exists() else 0


def last_checkpoint(checkpoints: Path) -> str | None:
    """The newest complete `checkpoint-N` folder TRL saved under `checkpoints`, if any.

    The trainer writes `trainer_state.json` last, after the weights, optimizer and RNG
    state: a folder without a readable one was being written when the process died (a
    `kill -9`, a preempted node) and is passed over for the one before it."""
    if not checkpoints.is_dir():
        return None
    found = sorted(((int(match.group(1)), path) for path in checkpoints.iterdir()
                    if path.is_dir() and (match := re.fullmatch(r"checkpoint-(\d+)", path.name))), reverse=True)
    for _, path in found:
        if _complete(path):
            return str(path)
        log.warning("skipping %s: it was not completely written (the process died while saving it)", path)
    return None


def _complete(checkpoint: Path) -> bool:
    try:
        json.loads((checkpoint / "trainer_state.json").read_text())
    except (OSError, ValueError):
        return False
    return True


def save_checkpoint(model: Any, tokenizer: Any, path: str | Path) -> str:
    """Save a loadable checkpoint: a transformers folder, or a PEFT adapter folder
    (adapter_config.json naming the base model) when `model` carries a LoRA adapter."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if is_peft(model):
        # Only the policy's adapter: TRL's DPO adds a frozen "ref" copy while it trains.
        model.save_pretrained(str(path), selected_adapters=["default"])
    else:
        model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return str(path)


def load_final(model: Any, path: str | Path) -> None:
    """Load a finished stage's weights (from `save_checkpoint`) into `model` in place."""
    path = Path(path)
    if is_peft(model):
        from peft import set_peft_model_state_dict
        from peft.utils import load_peft_weights

        set_peft_model_state_dict(model, load_peft_weights(str(path)), adapter_name="default")
        return
    if (path / "adapter_config.json").exists():
        raise TrainError(f"{path} holds a LoRA adapter but the policy has none; set lora: in the settings")
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(str(path), dtype=model.dtype)
    model.load_state_dict(saved.state_dict())


def adopt_finished(policy: Any, final: Path, kind: str) -> TrainResult:
    """A stage whose `final` exists finished before the process died: load its weights into
    the policy instead of training again, and return its recorded result."""
    result = TrainResult.model_validate_json((final / RESULT_FILE).read_text())
    log.info("%s stage already finished at %s; loading it instead of training again", kind, final)
    load_final(policy.model, final)
    policy.model.eval()
    policy.refresh_model_id(final)
    return result.model_copy(update={"resumed_from": str(final)})


def finish_stage(policy: Any, trainer: Any, final: Path, *, kind: str, start_step: int, seconds: float,
                 peak_rss_mb: float, metrics: dict[str, float], resumed_from: str | None) -> TrainResult:
    """Hand the trained weights back to the policy, save `final` with its model card, and
    record the result (with TRL's per-step history).

    The result file is written last: its presence marks the stage as finished.
    """
    if is_peft(trainer.model):
        policy.model = trainer.model
    policy.model.eval()
    steps_run = max(trainer.state.global_step - start_step, 1)
    if getattr(trainer, "is_deepspeed_enabled", False) or getattr(trainer, "is_fsdp_enabled", False):
        # Sharded parameters: the trainer gathers them (ZeRO-3 16-bit / FSDP full state dict).
        trainer.save_model(str(final))
        checkpoint = str(final)
    else:
        checkpoint = str(final)
        if trainer.accelerator.is_main_process:  # one copy, whatever the number of processes
            save_checkpoint(policy.model, policy.tokenizer, final)
    result = TrainResult(
        checkpoint=checkpoint,
        steps=trainer.state.global_step,
        seconds=seconds,
        seconds_per_step=seconds / steps_run,
        peak_rss_mb=peak_rss_mb,
        metrics={**final_metrics(trainer.state.log_history), **step_timing(trainer), **metrics},
        resumed_from=resumed_from,
        history=json_history(trainer.state.log_history),
        kind=kind,
        round=stage.round if (stage := current_stage()) is not None else None,
    )
    if trainer.accelerator.is_main_process:
        _model_card(policy, final, result)
        (final / RESULT_FILE).write_text(result.model_dump_json(indent=2))
    trainer.accelerator.wait_for_everyone()  # every rank names the new weights by the same record
    policy.refresh_model_id(final)
    release(trainer)
    return result


def _model_card(policy: Any, final: Path, result: TrainResult) -> None:
    """README.md in `final` (coevo.train.modelcard), named by the stage it belongs to, if any."""
    from coevo.train.modelcard import write_model_card

    stage = current_stage()
    origin = getattr(getattr(base_of(policy.model), "config", None), "_name_or_path", None)
    try:
        write_model_card(final, kind=result.kind or "?", origin=origin, steps=result.steps, metrics=result.metrics,
                         lora=is_peft(policy.model), stage=stage.name if stage else None,
                         round=stage.round if stage else None, algorithm=stage.algorithm if stage else None,
                         config=stage.config if stage else None)
    except Exception as exc:  # a card is documentation: never lose a trained stage over it
        log.warning("no model card written in %s: %s", final, exc)


def entry_folder(policy: Any) -> Path | None:
    """The folder that holds the policy's full weights as they are now (its load path, or the
    `final/` the last stage saved; see LocalModel.weights_on_disk), or None: LoRA policies,
    and weights changed since they were saved."""
    folder = getattr(policy, "weights_on_disk", None)
    if folder is None or is_peft(policy.model) or not Path(folder).is_dir():
        return None
    return Path(folder)


@contextlib.contextmanager
def origin_named(model: Any, folder: Path | None) -> Iterator[None]:
    """While a TRL trainer is built, name `folder` as the model's origin. TRL builds a full
    fine-tuning reference (DPO's, GRPO's KL) by loading the model's origin, under DeepSpeed
    or FSDP partitioned as the policy is: lent the stage's entry weights, that reference is
    the policy at entry, which a copy in memory of partitioned parameters could not be. The
    name is put back after, since cache ids are derived from it."""
    if folder is None:
        yield
        return
    original = model.config._name_or_path
    model.config._name_or_path = str(folder)
    try:
        yield
    finally:
        model.config._name_or_path = original
