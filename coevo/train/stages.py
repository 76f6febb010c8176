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

from coevo.store import RunStore
from coevo.train.common import LoRASettings, TrainResult


@dataclass(frozen=True)
class StageOutcome:
    result: TrainResult
    #: True when the stage had finished in an earlier process and was only restored.
    resumed: bool


def run_stage(store: RunStore, name: str, train: Callable[[], TrainResult],
              restore: Callable[[str], None]) -> StageOutcome:
    """Train stage `name` unless the store holds its result; then restore its checkpoint."""
    done = store.step_result(name)
    if done:
        restore(done["checkpoint"])
        return StageOutcome(TrainResult.model_validate(done), resumed=True)
    result = train()
    record_stage(store, name, result)
    return StageOutcome(result, resumed=False)


def record_stage(store: RunStore, name: str, result: TrainResult) -> None:
    """Record a finished stage, then drop its resume checkpoints (model + optimizer state,
    ~3x the model each): the stage's `final` checkpoint is all later rounds need."""
    store.finish_step(name, result.model_dump())
    trainer_dir = Path(result.checkpoint).parent / "checkpoints"
    if trainer_dir.is_dir():
        shutil.rmtree(trainer_dir, ignore_errors=True)


def restore_checkpoint(policy: Any, checkpoint: str | Path, lora: LoRASettings | None) -> None:
    """Put a finished stage's weights back into `policy` (a LocalModel) in place: a LoRA
    stage's adapter goes into the same adapter wrapping a fresh policy gets (made here if the
    policy has none yet), full weights into the model; the cache id follows the checkpoint."""
    from coevo.train import distributed
    from coevo.train.common import load_final, prepare_lora

    distributed.tell("restore", key=distributed.key_of(policy), checkpoint=str(checkpoint), lora=lora)
    prepare_lora(policy, lora)
    load_final(policy.model, checkpoint)
    policy.model.eval()
    policy.refresh_model_id(checkpoint)
