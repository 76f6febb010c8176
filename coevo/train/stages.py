"""Training stages, run once per run folder: the resume bookkeeping of every loop.

A loop names each training stage (`coevolution/round1/critic`, `rlac/round1/generator`)
and hands over two callables: how to train it and how to put a finished stage's weights
back (`restore_checkpoint` for every loop here). The first time, the stage trains and its
`TrainResult` lands in the run store; on `--resume` the store's result comes back and the
weights are restored from its final checkpoint, so the loop reads the same either way and
holds no resume logic of its own. TAIScore and RLAC both train through `run_stage`.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coevo.rundir.store import RunStore
from coevo.train.common import TrainResult
from coevo.train.reporting import StageInfo, stage_scope
from coevo.train.settings import LoRASettings


@dataclass(frozen=True)
class StageOutcome:
    #: The stage's result, its checkpoint a path to open (the store's relative one resolved).
    result: TrainResult
    #: True when the stage had finished in an earlier process and was only restored.
    resumed: bool


def run_stage(store: RunStore, name: str, train: Callable[[], TrainResult],
              restore: Callable[[str], None], *, round: int | None = None,
              kind: str | None = None) -> StageOutcome:
    """Train stage `name` unless the store holds its result; then restore its checkpoint.

    `round` and `kind` ("grpo" | "dpo") are recorded with the result, beside TRL's per-step
    history (`store.training_logs()`); while `train` runs, the glue knows the stage
    (coevo.train.reporting.StageInfo: its log folder, its model card)."""
    done = store.step_result(name)
    if done:
        checkpoint = resolved_path(done["checkpoint"], store.run_dir)
        restore(checkpoint)
        return StageOutcome(TrainResult.model_validate({**done, "checkpoint": checkpoint}), resumed=True)
    info = StageInfo(name=name, run_dir=store.run_dir, round=round, kind=kind,
                     algorithm=store.get_meta("algorithm"), config=store.get_meta("config") or {})
    with stage_scope(info):
        result = train()
    result = result.model_copy(update={"round": round, "kind": kind or result.kind})
    record_stage(store, name, result)
    from coevo.core.progress import announce

    announce(stage_line(name, result, store.get_meta("algorithm")))
    return StageOutcome(result, resumed=False)


def record_stage(store: RunStore, name: str, result: TrainResult) -> None:
    """Record a finished stage (its checkpoint relative to the run folder), then drop its
    resume checkpoints (model + optimizer state, ~3x the model each): the stage's `final`
    checkpoint is all later rounds need."""
    store.finish_step(name, result.model_copy(update={"checkpoint": stored_path(result.checkpoint, store.run_dir)}))
    trainer_dir = Path(result.checkpoint).parent / "checkpoints"
    if trainer_dir.is_dir():
        shutil.rmtree(trainer_dir, ignore_errors=True)


def stored_path(path: str | Path | None, run_dir: Path) -> str | None:
    """`path` as the store and summary.json keep it: relative to the run folder when inside
    it (a run folder moved or copied elsewhere still resumes), else as it is (a base model's
    folder, a hub id)."""
    if path is None:
        return None
    try:
        return Path(path).resolve().relative_to(Path(run_dir).resolve()).as_posix()
    except ValueError:
        return str(path)


def resolved_path(path: str | Path | None, run_dir: Path) -> str | None:
    """A stored path back as one to open: relative ones are in the run folder; absolute ones
    (runs recorded before paths were stored relative, base models) are kept as they are."""
    if path is None or Path(path).is_absolute() or not (Path(run_dir) / path).exists():
        return None if path is None else str(path)
    return str(Path(run_dir) / path)


def stage_line(name: str, result: TrainResult, algorithm: str | None = None) -> str:
    """The console's one line for a finished stage, e.g. "critic GRPO round 1 (coevolution):
    2 steps, 31 s, loss 0.012, reward sd 0.21, weights moved 3e-05"."""
    role = name.rsplit("/", 1)[-1]
    tag = name.split("/round")[0] if "/round" in name else ""
    head = " ".join(x for x in (role, (result.kind or "").upper(),
                                f"round {result.round}" if result.round is not None else "") if x)
    if tag and tag != algorithm:
        head += f" ({tag})"
    metrics = result.metrics
    shown = (("loss", "train_loss" if "train_loss" in metrics else "loss"), ("reward sd", "reward_group_sd"),
             ("pairs", "pairs"))
    facts = [f"{result.steps} steps", f"{result.seconds:.0f} s"]
    facts += [f"{label} {metrics[key]:.3g}" for label, key in shown if key in metrics]
    if "weight_delta" in metrics:
        moved = metrics["weight_delta"]
        facts.append(f"weights moved {moved:.1g}" if moved else "weights UNCHANGED")
    return f"{head}: " + ", ".join(facts)


def restore_checkpoint(policy: Any, checkpoint: str | Path, lora: LoRASettings | None) -> None:
    """Put a finished stage's weights back into `policy` (a LocalModel) in place: a LoRA
    stage's adapter goes into the same adapter wrapping a fresh policy gets (made here if the
    policy has none yet), full weights into the model; the cache id follows the checkpoint."""
    from coevo.train import distributed
    from coevo.train.checkpoints import load_final
    from coevo.train.common import prepare_lora

    distributed.tell("restore", key=distributed.key_of(policy), checkpoint=str(checkpoint), lora=lora)
    prepare_lora(policy, lora)
    load_final(policy.model, checkpoint)
    policy.model.eval()
    policy.refresh_model_id(checkpoint)
