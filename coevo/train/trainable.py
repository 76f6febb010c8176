"""Loading a model to train: the one place a trainable model is loaded, and told to the
other ranks of a many-process run.

Under torchrun / accelerate launch every rank must hold the same trainable models, because
all of them enter each training stage together (coevo/train/distributed.py). Rank 0 decides
which ones; this function loads the model and, on rank 0, sends the other ranks the spec and
options to load it too (under a shared key the later stages name it by). Loading a model is
llm/'s job and knows nothing of ranks; announcing it is here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coevo.train import distributed

if TYPE_CHECKING:
    from coevo.llm.local import LocalModel
    from coevo.rundir.store import RunStore


def load_trainable(spec: str, *, store: RunStore | None = None, **options: Any) -> LocalModel:
    """A fresh `LocalModel` of `spec` (`smollm2` or `hf:PATH_OR_ID`; other specs are refused
    with a ModelError) with the backend `options`, announced to the other ranks."""
    # Looked up when called, not imported at module level: tests stand in for load_model.
    from coevo.llm import specs

    model = specs.load_model(spec, store=store, trainable=True, **options)
    distributed.announce_load(model, spec, options)  # the other ranks load it too
    return model
