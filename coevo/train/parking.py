"""A trained model's weights put away while another role trains (no copy of a
model's weights where none serves).

A role that generates from an engine copy of its weights (a GGUF on llama.cpp, a vLLM engine)
reads its transformers weights only in its own training stage. While the other role trains,
those weights are idle (the embedded model's: 540 MB in fp32, on top of the training stage's
peak). `parked` frees them for that time and loads them back after, bit for bit, from the
folder that holds them (`LocalModel.weights_on_disk`: the load path, or the `final/` the last
stage saved). Where no folder holds them (a LoRA policy, weights changed since saved, a
partitioned ZeRO-3 model) they stay where they are.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coevo.train.checkpoints import entry_folder
from coevo.train.errors import TrainError
from coevo.train.memory import give_back_freed_memory

log = logging.getLogger(__name__)


@contextlib.contextmanager
def parked(policy: Any, why: str) -> Iterator[bool]:
    """Inside: `policy`'s weights freed (True), or left in place (False: none to reload from).
    `why` names the role and the stage, for the log."""
    folder = _reload_folder(policy)
    if folder is None:
        yield False
        return
    megabytes = sum(p.numel() * p.element_size() for p in policy.model.parameters()) // 2**20
    shapes = park(policy.model)
    log.info("%s: %d MB of transformers weights parked (reloaded from %s after)", why, megabytes, folder)
    try:
        yield True
    finally:
        unpark(policy.model, folder, shapes)


def _reload_folder(policy: Any) -> Path | None:
    """The folder to reload the weights from, or None where parking would lose or misplace
    them."""
    model = getattr(policy, "model", None)
    if model is None or not hasattr(model, "named_parameters"):
        return None
    params = list(model.parameters())
    if not params or any(hasattr(p, "ds_id") or p.numel() == 0 for p in params):  # ZeRO-3, or parked already
        return None
    return entry_folder(policy)


def park(model: Any) -> dict[str, tuple[int, ...]]:
    """Free every parameter's storage (an empty tensor of its dtype and device in its place;
    the Parameter objects stay, so tied weights stay tied); their shapes by name."""
    import torch

    shapes = {}
    for name, param in model.named_parameters():
        shapes[name] = tuple(param.shape)
        param.grad = None
        param.data = torch.empty(0, dtype=param.dtype, device=param.device)
    give_back_freed_memory()
    return shapes


def unpark(model: Any, folder: Path, shapes: dict[str, tuple[int, ...]]) -> None:
    """Put back the weights `park` freed, from `folder` (loaded in the parameters' dtype)."""
    from transformers import AutoModelForCausalLM

    first = next(iter(model.parameters()))
    saved = dict(AutoModelForCausalLM.from_pretrained(str(folder), dtype=first.dtype).named_parameters())
    for name, param in model.named_parameters():
        source = saved.get(name)
        if source is None or tuple(source.shape) != shapes[name]:
            raise TrainError(f"cannot reload the parked weights from {folder}: its {name} is "
                             f"{None if source is None else tuple(source.shape)}, the model's {shapes[name]}")
        param.data = source.data.to(param.device)

