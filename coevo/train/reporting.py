"""Where a training stage's logs go.

- `report_to` (a field of every training block): TRL's own integrations, TensorBoard and
  Weights & Biases, writing into RUN/logs/<stage name>; "none" by default.
- TRL's per-step dicts: not printed (TRL's PrinterCallback / ProgressCallback are removed)
  but logged to the `coevo.train.steps` logger, which `coevo.run.logs` sends to RUN/coevo.log
  (and with -v to the terminal), while a coevo progress bar counts the stage's steps.
- `StageInfo`: which stage of which run is training (name, round, kind, run folder, config),
  set by `coevo.train.stages.run_stage` for the glue underneath it (log folder, model card),
  so the glue's signatures stay those of a plain training call.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator

from coevo.train.errors import TrainError
from coevo.train.memory import give_back_freed_memory

log = logging.getLogger(__name__)
#: TRL's per-step dicts (loss, reward, kl, ...): the file log, not the terminal (coevo/run/logs.py).
steps_log = logging.getLogger("coevo.train.steps")

#: The integrations coevo offers by name, and how to install each one.
REPORTERS = {"tensorboard": "pip install tensorboard", "wandb": "pip install wandb"}


def check_report_to(value: str | list[str]) -> str | list[str]:
    """A pydantic validator body: `value` names only known integrations (or "none")."""
    names = [value] if isinstance(value, str) else list(value)
    unknown = [name for name in names if name != "none" and name not in REPORTERS]
    if unknown:
        raise ValueError(f"report_to: unknown {unknown}; use none, " + ", ".join(REPORTERS) + " or a list of them")
    if "none" in names and len(names) > 1:
        raise ValueError("report_to: 'none' cannot be combined with other integrations")
    return value


#: The type of a training block's `report_to` field: an integration, or a list of them.
ReportTo = Annotated[str | list[str], AfterValidator(check_report_to)]


def reporters(value: str | list[str]) -> list[str]:
    """The integrations `value` names, "none" left out."""
    return [name for name in ([value] if isinstance(value, str) else value) if name != "none"]


def require_reporters(value: str | list[str], block: str) -> None:
    """Refuse, naming the install command, an integration whose package is missing: TRL
    would otherwise fail only when the trainer is built, after the run's first rollouts."""
    for name in reporters(value):
        if importlib.util.find_spec(name) is None and not (name == "tensorboard" and _has("tensorboardX")):
            raise TrainError(f"{block}.report_to: {name} is not installed; run `{REPORTERS[name]}` "
                             f"(or set {block}.report_to: none)")


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


@dataclass(frozen=True)
class StageInfo:
    """The stage a trainer runs for: its store name, round, kind and run folder, and the
    run's algorithm and config (for the model card)."""

    name: str
    run_dir: Path
    round: int | None = None
    kind: str | None = None
    algorithm: str | None = None
    config: dict[str, Any] = field(default_factory=dict)


_current: ContextVar[StageInfo | None] = ContextVar("coevo_stage", default=None)


@contextlib.contextmanager
def stage_scope(info: StageInfo) -> Iterator[StageInfo]:
    """Name the stage the training calls inside this block run for."""
    token = _current.set(info)
    try:
        yield info
    finally:
        _current.reset(token)


def current_stage() -> StageInfo | None:
    """The stage set by the innermost `stage_scope`, or None (a training call on its own)."""
    return _current.get()


def logging_dir(output_dir: Path) -> Path:
    """Where the integrations write: RUN/logs/<stage name> inside a run, else output_dir/logs."""
    stage = current_stage()
    return stage.run_dir / "logs" / stage.name if stage is not None else Path(output_dir) / "logs"


def stage_label(kind: str, output_dir: Path) -> str:
    """A short name for the stage's progress bar and log lines."""
    stage = current_stage()
    return f"{kind.upper()} {stage.name}" if stage is not None else f"{kind.upper()} {Path(output_dir).name}"


def route_logs(trainer: Any, label: str, folder: Path) -> None:
    """Send a built trainer's logs where coevo wants them: TRL's printing callbacks out, a
    `StepLog` in, TensorBoard into `folder` (transformers 5 has no `logging_dir` argument:
    its callback reads TENSORBOARD_LOGGING_DIR once, when built, so it is told here), W&B's
    files under `folder` unless WANDB_DIR says otherwise."""
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)
    trainer.add_callback(StepLog(label))
    for callback in trainer.callback_handler.callbacks:
        if type(callback).__name__ == "TensorBoardCallback":
            callback.logging_dir = str(folder)
    if "wandb" in (trainer.args.report_to or []) and os.environ.get("WANDB_DIR") in (None, _wandb_dir[0]):
        folder.mkdir(parents=True, exist_ok=True)
        os.environ["WANDB_DIR"] = _wandb_dir[0] = str(folder)


_wandb_dir: list[str | None] = [None]  # the WANDB_DIR coevo set last (a user's own is kept)


def close_step_logs(trainer: Any) -> None:
    """Close the progress bar of a trainer's `StepLog` (training may have failed mid-way,
    and then TRL never calls on_train_end)."""
    for callback in _step_logs(trainer):
        callback.close()


def _step_logs(trainer: Any) -> list[Any]:
    """The `StepLog`s among a trainer's callbacks (one, where `route_logs` added it)."""
    handler = getattr(trainer, "callback_handler", None)
    return [c for c in getattr(handler, "callbacks", []) if _StepLogClass is not None and isinstance(c, _StepLogClass)]


def json_history(log_history: list[dict[str, Any]]) -> list[dict[str, float | int | None]]:
    """TRL's `log_history`, JSON-safe: numeric entries only (NaN and inf become None)."""
    import math

    history = []
    for entry in log_history:
        row: dict[str, float | int | None] = {}
        for key, value in entry.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            row[key] = value if isinstance(value, int) or math.isfinite(value) else None
        if row:
            history.append(row)
    return history


def _step_log_class() -> type:
    from transformers import TrainerCallback

    class _StepLog(TrainerCallback):
        """Log each of TRL's per-step dicts and advance a coevo progress bar of the stage's steps."""

        def __init__(self, label: str):
            self.label = label
            self._bar = contextlib.ExitStack()
            self._advance: Any = None
            self._shown = 0
            #: perf_counter() at the start of training and at the end of each step (see `step_timing`).
            self.marks: list[float] = []
            self.steps: list[int] = []

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.marks, self.steps = [time.perf_counter()], [state.global_step]
            if state.is_world_process_zero and self._advance is None:
                from coevo.core.progress import progress_bar

                self._shown = state.global_step
                self._advance = self._bar.enter_context(
                    progress_bar(self.label, total=state.max_steps, completed=state.global_step))

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            _wait_for_device()  # the step's kernels have run: its time is its own, not the next one's
            self.marks.append(time.perf_counter())
            self.steps.append(state.global_step)
            # The step's activations and logits are freed now: handed back, the next step's
            # backward does not stack its own on top of them in the resident set.
            give_back_freed_memory()
            if self._advance is not None and state.global_step > self._shown:
                self._advance(state.global_step - self._shown)
                self._shown = state.global_step

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            if state.is_world_process_zero and logs:
                steps_log.info("%s step %d: %s", self.label, state.global_step, logs)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.close()

        def close(self) -> None:
            self._bar.close()
            self._advance = None

    return _StepLog


def _wait_for_device() -> None:
    """Wait for queued GPU work (a no-op without CUDA)."""
    import torch

    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def step_timing(trainer: Any) -> dict[str, float]:
    """How long this process's optimizer steps took, from the trainer's `StepLog`:
    `first_step_seconds` (kernel compilation, allocator warm-up and the first sampling are in it)
    and, over the steps after it, `steady_step_seconds` (their mean) and `steady_tokens_per_s`
    (TRL's `num_tokens` counter, prompt and completion tokens of every sequence trained on,
    over their time). The steady figures are what a long stage's steps cost; with one step
    there are none."""
    marks, steps = next(((c.marks, c.steps) for c in _step_logs(trainer)), ([], []))
    if len(marks) < 2:
        return {}
    out = {"first_step_seconds": marks[1] - marks[0]}
    if len(marks) > 2:
        out["steady_step_seconds"] = (marks[-1] - marks[1]) / (len(marks) - 2)
        seen = {int(row["step"]): float(row["num_tokens"]) for row in trainer.state.log_history
                if "num_tokens" in row and "step" in row}
        if steps[1] in seen and steps[-1] in seen and marks[-1] > marks[1]:
            out["steady_tokens_per_s"] = (seen[steps[-1]] - seen[steps[1]]) / (marks[-1] - marks[1])
    return out


def StepLog(label: str) -> Any:  # noqa: N802 - a class made lazily (transformers loads late)
    """A TrainerCallback that logs TRL's per-step dicts and drives a coevo progress bar."""
    global _StepLogClass
    if _StepLogClass is None:
        _StepLogClass = _step_log_class()
    return _StepLogClass(label)


_StepLogClass: Any = None
