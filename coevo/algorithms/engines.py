"""What a trained role generates with between its trainings (TAIScore's `actor_engine` and
`critic_engine`, RLAC's `generator_engine` and `critic_engine`).

`transformers`: the trained model itself (~16 tokens/s for the embedded model on this CPU).
`vllm` (TAIScore's actor): a vLLM engine on its latest finished `final/` (full weights, or a
LoRA adapter on the base). `llamacpp`: llama.cpp on a GGUF written from the role's weights as
they are now (`llm/gguf_export.py`; ~100 tokens/s here; Llama-architecture models). A copy is
made again only when the role's checkpoint changes (the base, then each of its stages'
weights), the old one closed. A copy's model id names its weights (the GGUF's digest, the
checkpoint folder), so the call cache never answers one set of weights with another's.
While the other role trains, a role with an engine copy needs its transformers weights for
nothing: `parked` frees them for the stage (coevo/train/parking.py). While the role itself
trains, its copy of the weights it starts from serves nothing (the stage ends with new
weights, and the next copy is of those): `training` closes it for the stage.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from coevo.llm.gguf_export import ExportError, discard_copy

log = logging.getLogger(__name__)

Engine = Literal["transformers", "vllm", "llamacpp"]


class GenerationCopy:
    """One trained role's generation model, following its checkpoints."""

    def __init__(self, backend: Any, role: str, spec: str, options: dict[str, Any], local: Any, engine: Engine,
                 folder: Path):
        self.backend, self.role, self.spec, self.options = backend, role, spec, options
        self.local, self.engine, self.folder = local, engine, Path(folder)
        self._held: tuple[str | None, Any, bool] | None = None  # (checkpoint, model, shared)
        self._parked = False
        self._training: str | None = None  # the role's own stage, while it runs

    def model(self, checkpoint: str | None) -> Any:
        """The model to generate with while the role's latest weights are `checkpoint`'s (None:
        the base weights): the trained model itself, or an engine copy of those weights."""
        if self.engine == "transformers":
            return self.local
        if self._held is None or self._held[0] != checkpoint:
            if self._training:  # a copy of weights in the middle of a stage: a bug in the caller
                raise RuntimeError(f"the {self.role} is training in {self._training}; no copy of its weights can be "
                                   "made before the stage ends")
            if self._parked:  # a copy of freed weights would be empty: a bug in the caller
                raise RuntimeError(f"the {self.role}'s weights are parked; no copy of {checkpoint} can be made now")
            self.close()
            if self.engine == "vllm":
                model, shared = self.backend.load_copy(self.spec, checkpoint, **self.options)
            else:
                # One file per checkpoint, named by it: a resumed run writes the same weights under
                # the same name, so its cached calls still answer.
                name = hashlib.sha256(str(checkpoint or "base").encode()).hexdigest()[:12]
                try:
                    model = self.backend.load_gguf_copy(self.local, self.folder / f"{self.role}-{name}.gguf")
                except ExportError as exc:  # copy_refusal's reasons: it generates where it trains, said once
                    log.warning("%s_engine llamacpp: %s; the %s generates with transformers instead",
                                self.role, exc, self.role)
                    self.engine = "transformers"
                    return self.local
                shared = False
            self._held = (checkpoint, model, shared)
        return self._held[1]

    @contextlib.contextmanager
    def parked(self, checkpoint: str | None, stage: str) -> Iterator[None]:
        """While `stage` (another role's training) runs, the role generates only from its
        engine copy of `checkpoint` (made now if it is not there yet), and its trained model's
        weights are freed, to be reloaded after. The transformers engine generates with those
        weights: nothing is parked then."""
        from coevo.train.parking import parked

        if self.model(checkpoint) is self.local:
            yield
            return
        with parked(self.local, f"{stage}: the {self.role} generates on {self.engine}") as freed:
            self._parked = freed
            try:
                yield
            finally:
                self._parked = False

    @contextlib.contextmanager
    def training(self, stage: str) -> Iterator[None]:
        """While the role itself trains in `stage`: its copy is closed now, not when the next
        one is made after the stage, so its memory (the GGUF's pages, llama.cpp's context) is
        free for the stage's peak; no copy can be made until the stage ends."""
        if self._held is not None and not self._held[2]:  # a shared engine (vLLM's base) stays open
            log.info("%s: the %s's %s copy of its previous weights closed while it trains", stage, self.role,
                     self.engine)
        self.close()
        self._training = stage
        try:
            yield
        finally:
            self._training = None

    def close(self) -> None:
        """Stop the copy (unless shared: vLLM's base engine) and remove its GGUF file."""
        if self._held is not None and not self._held[2]:
            if self.engine == "llamacpp":
                discard_copy(self._held[1])
            else:
                getattr(self._held[1], "close", lambda: None)()
        self._held = None


@contextlib.contextmanager
def generating_on(role: Any, copy: Any) -> Iterator[None]:
    """The role (a Critic, an Actor: anything with `model` and `count_tokens`) writes with
    `copy` (None: its own model) inside; the copy is closed and its file removed after. Its
    prompts stay the trained model's: the token budget is counted with the same tokenizer."""
    if copy is None:
        yield
        return
    _ = role.count_tokens  # resolved on the trained model before the swap
    trained, role.model = role.model, copy
    try:
        yield
    finally:
        role.model = trained
        discard_copy(copy)
