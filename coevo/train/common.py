"""What the DPO and GRPO glue share: LoRA settings, the result record, trainer arguments for
this machine, checkpoint saving/loading, resume detection and a peak-memory probe.

The trainers change `LocalModel.model` in place (or wrap it in a PEFT adapter once), so an
algorithm keeps one `LocalModel` per trained role across rounds and samples from it directly.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import resource
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from coevo.checkpoint_identity import RESULT_FILE
from coevo.strict import StrictModel
from coevo.train.errors import TrainError
from coevo.train.memory import give_back_freed_memory
from coevo.train.reporting import close_step_logs, current_stage, json_history, step_timing

log = logging.getLogger(__name__)

# RESULT_FILE is written into `final/` after everything else: its presence marks a stage as
# finished (and its digest names the weights there: coevo/checkpoint_identity.py).


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


def drop_reference_adapter(model: Any) -> None:
    """Delete TRL's frozen "ref" copy of the adapter after a stage; the next stage makes a fresh one."""
    if is_peft(model) and "ref" in model.peft_config:
        model.delete_adapter("ref")
        model.set_adapter("default")


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
    """README.md in `final` (coevo.modelcard), named by the stage it belongs to, if any."""
    from coevo.modelcard import write_model_card

    stage = current_stage()
    origin = getattr(getattr(base_of(policy.model), "config", None), "_name_or_path", None)
    try:
        write_model_card(final, kind=result.kind or "?", origin=origin, steps=result.steps, metrics=result.metrics,
                         lora=is_peft(policy.model), stage=stage.name if stage else None,
                         round=stage.round if stage else None, algorithm=stage.algorithm if stage else None,
                         config=stage.config if stage else None)
    except Exception as exc:  # a card is documentation: never lose a trained stage over it
        log.warning("no model card written in %s: %s", final, exc)


@dataclass(frozen=True)
class Measurement:
    """What one `trainer.train()` cost and did: wall seconds, peak resident memory (MiB),
    the largest change of a trainable weight (see `weight_probe`) and, on a GPU, the peak
    memory torch allocated on it (MiB)."""

    seconds: float
    peak_rss_mb: float
    weight_delta: float
    peak_gpu_mb: float | None = None

    def metrics(self) -> dict[str, float]:
        """What a stage's result records of it besides time and resident memory."""
        gpu = {} if self.peak_gpu_mb is None else {"peak_gpu_mb": self.peak_gpu_mb}
        return {"weight_delta": self.weight_delta, **gpu}


def measured_train(trainer: Any, model: Any, resume_from: str | None, *, reference: Any = None) -> Measurement:
    """Run `trainer.train()` (from `resume_from`, if any), measuring time, memory and how far
    `model`'s trainable weights moved. Afterwards, even when training fails, drop TRL's frozen
    "ref" adapter and undo its forward patches on the model and the `reference` model, so the
    next stage starts from a clean model."""
    try:
        entry = getattr(trainer, "ref_model", None)  # the policy at entry, where TRL keeps one
        with PeakRSS() as rss, PeakGPU() as gpu, Stopwatch() as clock, weight_probe(model, entry) as moved:
            trainer.train(resume_from_checkpoint=resume_from)
    finally:
        close_step_logs(trainer)
        drop_reference_adapter(trainer.model)
        unpatch_forward(trainer.model)
        unpatch_forward(reference)
    return Measurement(seconds=clock.seconds, peak_rss_mb=rss.peak_mb, weight_delta=moved.max_abs_delta,
                       peak_gpu_mb=gpu.peak_mb)


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


def final_metrics(log_history: list[dict[str, Any]]) -> dict[str, float]:
    """The last logged value of every numeric metric, plus train_loss from the summary log."""
    metrics: dict[str, float] = {}
    for entry in log_history:
        for key, value in entry.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("step", "epoch"):
                metrics[key] = float(value)
    return metrics


class PeakRSS:
    """Peak resident memory (MiB) while the block runs, sampled from /proc every 50 ms.

    `ru_maxrss` is the peak of the whole process life, so it cannot tell a LoRA stage from
    the full stage that ran before it; sampling can. Falls back to ru_maxrss off Linux.
    """

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.peak_mb = current_rss_mb()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_mb = max(self.peak_mb, current_rss_mb())

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_mb = max(self.peak_mb, current_rss_mb())


def current_rss_mb() -> float:
    """Resident memory of this process now, in MiB."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakGPU:
    """Peak GPU memory (MiB) torch allocated on this process's device while the block ran:
    everything held then (both roles' weights, the reference, gradients, optimizer state,
    activations), not only the stage's own. None without CUDA."""

    def __init__(self) -> None:
        self.peak_mb: float | None = None
        self._torch: Any = None

    def __enter__(self) -> PeakGPU:
        import torch

        if torch.cuda.is_available():
            self._torch = torch
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._torch is not None:
            self._torch.cuda.synchronize()
            self.peak_mb = self._torch.cuda.max_memory_allocated() / 2**20


class Stopwatch:
    """Wall-clock seconds of a block."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.start


class weight_probe:
    """How far a block moved a model's trainable weights: `max_abs_delta`, the largest
    |w_after − w_before| over every trainable parameter (LoRA: the adapter's).

    A stage whose delta is 0 changed nothing (every GRPO group's rewards were equal, say);
    the algorithms surface that as a finding instead of a silent success. The snapshot is
    a CPU copy of the trainable parameters only: for full fine-tuning of a large model,
    give the stage LoRA or expect one extra copy of the weights in host memory.
    """

    def __init__(self, model: Any, entry: Any = None):
        """`entry`: a model holding the same weights as `model` now, under the same names (a
        full fine-tuning stage's KL reference): compared against instead of a copy."""
        self.model = model
        self.entry = entry
        self.max_abs_delta = 0.0
        self._before: dict[str, Any] = {}

    def __enter__(self) -> weight_probe:
        trainable = {name: p for name, p in self.model.named_parameters() if p.requires_grad}
        held = dict(self.entry.named_parameters()) if self.entry is not None else {}
        if trainable and all(name in held and held[name].shape == p.shape for name, p in trainable.items()):
            self._before = {name: held[name] for name in trainable}  # no second copy of the weights
        else:
            self._before = {name: p.detach().to("cpu", copy=True) for name, p in trainable.items()}
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        delta = 0.0
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                before = self._before.get(name)
                if before is not None and before.shape == p.shape:
                    delta = max(delta, float((p.detach().to("cpu").float() - before.detach().to("cpu").float())
                                             .abs().max()))
        self.max_abs_delta = delta
        self._before = {}


def world_size() -> int:
    """Processes training together (torchrun / accelerate launch set WORLD_SIZE)."""
    from coevo.train import distributed

    return distributed.world_size()
