"""Many processes, one run: rank 0 runs the run, every other rank only trains.

Under `torchrun --nproc_per_node N` or `accelerate launch --multi_gpu --num_processes N`
every process starts `coevo run`. Rank 0 alone runs the outer loop: every generation and
judge call, every evaluation, every write to the run folder. The other ranks run
`coevo.run.ranks.follow()` and do what rank 0 tells them, in the order it tells them:

    load     a trainable model (the same spec and options rank 0 loaded through
             `coevo.train.trainable.load_trainable`; named by a key)
    restore  a finished stage's checkpoint into one of them
    dpo      enter `train_dpo` with rank 0's pairs and settings (all ranks train together:
             DDP / DeepSpeed / FSDP as accelerate is configured, and leave together)
    grpo     enter `train_grpo` with rank 0's prompts; rewards come from rank 0 (below)
    end      the run is over

TRL calls a GRPO reward function on each rank for that rank's completions. `shared_reward`
gathers every rank's completions to rank 0, which scores them all in one call (it is the only
process with an actor, a judge and the run store) and sends each rank its rewards back.

Messages travel on a gloo process group (objects over a collective), which exists beside
the training backend's (NCCL on GPUs). A one-process run never touches any of this.

This module is the message layer only: the trainers import it, so it imports no trainer, no
model loading and nothing above train/ (tests/test_import_layers.py).
"""

from __future__ import annotations

import datetime
import itertools
import logging
import os
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

#: How long a rank waits for the next message: rank 0 may generate and judge for hours
#: between two training stages. (A rank that dies ends the whole group: torchrun stops it.)
WAIT = datetime.timedelta(hours=24)
_group: Any = None
_keys = itertools.count()


def world_size() -> int:
    """Processes in this run (torchrun / accelerate launch set WORLD_SIZE)."""
    return _count("WORLD_SIZE")


def local_world_size() -> int:
    """This run's processes on this machine (torchrun sets LOCAL_WORLD_SIZE): they share its cores."""
    return _count("LOCAL_WORLD_SIZE")


def _count(variable: str) -> int:
    value = os.environ.get(variable, "1")
    return int(value) if value.isdigit() and int(value) > 0 else 1


def rank() -> int:
    value = os.environ.get("RANK", "0")
    return int(value) if value.isdigit() else 0


def is_distributed() -> bool:
    return world_size() > 1


def is_main() -> bool:
    """True on rank 0, and in every one-process run."""
    return rank() == 0


def die_with_launcher() -> None:
    """Under torchrun / accelerate launch, have the kernel end this process when its launcher
    dies (Linux `PR_SET_PDEATHSIG`). A launcher killed with `kill -9` cannot stop its workers;
    without this they would go on running the run unsupervised, holding its folder's lock,
    and a `--resume` would find the folder busy. SIGTERM, not SIGKILL: rank 0 may still
    mark its run as stopped on the way out."""
    import ctypes
    import signal
    import sys

    if not is_distributed() or not sys.platform.startswith("linux"):
        return
    launcher = os.getppid()
    pr_set_pdeathsig = 1
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0) != 0:
        log.warning("could not tie this process to its launcher (prctl errno %d)", ctypes.get_errno())
    elif os.getppid() != launcher:  # the launcher died before the call above: follow it now
        os.kill(os.getpid(), signal.SIGTERM)


def init() -> None:
    """Join the run's process group (once), and make the gloo group messages travel on."""
    global _group
    if not is_distributed() or _group is not None:
        return
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend=backend, timeout=WAIT)
    _group = dist.new_group(backend="gloo", timeout=WAIT)


def _broadcast(message: Any) -> Any:
    import torch.distributed as dist

    box = [message]
    dist.broadcast_object_list(box, src=0, group=_group)
    return box[0]


def tell(kind: str, **payload: Any) -> None:
    """Rank 0: send the other ranks their next instruction (no-op in a one-process run)."""
    if is_distributed() and is_main():
        init()
        _broadcast((kind, payload))


def announce_load(model: Any, spec: str, options: dict[str, Any]) -> None:
    """Rank 0 loaded a trainable model: the others load the same one, under a shared key."""
    if is_distributed() and is_main():
        model.dist_key = f"m{next(_keys)}"
        tell("load", key=model.dist_key, spec=spec, options=options)


def key_of(policy: Any) -> str | None:
    return getattr(policy, "dist_key", None)


def end() -> None:
    """Rank 0, when the run is over (finished or not): let the other ranks exit."""
    if is_distributed() and is_main() and _group is not None:
        try:
            _broadcast(("end", {}))
            leave()
        except Exception as exc:  # noqa: BLE001 - a group already torn down has nobody to tell
            log.debug("could not tell the other ranks the run ended: %s", exc)


def leave() -> None:
    """Every rank, at the end: meet, then take the process groups down. A process that
    exits with its gloo group still up can abort in the group's threads ("terminate called
    without an active exception")."""
    global _group
    import torch.distributed as dist

    if dist.is_initialized():
        dist.barrier(group=_group)
        dist.destroy_process_group()
    _group = None


def next_instruction() -> tuple[str, dict[str, Any]]:
    """Ranks 1..N-1: wait for rank 0's next `tell` (coevo/run/ranks.py acts on it)."""
    return _broadcast(None)


def shared_reward(reward_fn: Callable[..., list[float]] | None) -> Callable[..., list[float]]:
    """A GRPO reward every rank calls for its own completions, computed on rank 0 only
    (`reward_fn` there; None on the other ranks). One-process runs get `reward_fn` itself."""
    if not is_distributed():
        assert reward_fn is not None
        return reward_fn

    def reward(prompts: list, completions: list, **columns: Any) -> list[float | None]:
        import torch.distributed as dist

        n = len(prompts)
        # Only per-completion columns travel; TRL's own objects (trainer_state, ...) stay local.
        rows = {k: v for k, v in columns.items() if isinstance(v, list) and len(v) == n}
        gathered: list[Any] = [None] * world_size()
        dist.all_gather_object(gathered, (prompts, completions, rows), group=_group)
        scattered: list[Any] = [None]
        if is_main():
            assert reward_fn is not None
            merged_prompts = [p for part in gathered for p in part[0]]
            merged_completions = [c for part in gathered for c in part[1]]
            merged = {k: [v for part in gathered for v in part[2][k]] for k in rows}
            others = {k: v for k, v in columns.items() if k not in rows}
            rewards = list(reward_fn(prompts=merged_prompts, completions=merged_completions, **merged, **others))
            sizes, start, parts = [len(part[0]) for part in gathered], 0, []
            for size in sizes:
                parts.append(rewards[start:start + size])
                start += size
            dist.scatter_object_list(scattered, parts, src=0, group=_group)
        else:
            dist.scatter_object_list(scattered, None, src=0, group=_group)
        return scattered[0]

    return reward
