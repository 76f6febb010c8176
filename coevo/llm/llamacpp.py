"""`gguf:PATH` — a GGUF model through llama-cpp-python, in process: fast CPU inference.

llama.cpp decodes one sequence at a time here, so a batch is a loop. Its chat template comes
from the GGUF's own metadata, the same one transformers reads, so prompts match the
`local` backend's. n samples are n calls with seeds seed, seed+1, ...: different from each
other, and the same again on a rerun.
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path
from typing import Any

from coevo.llm.base import ModelError
from coevo.llm.common import copies, file_digest, truncate_at_stop
from coevo.types import Completion, Conversation, Sampling


class LlamaCppModel:
    """One `llama_cpp.Llama` instance; calls are serialised (a context is not thread-safe)."""

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        reuse_prefix: bool = False,
        model_id: str | None = None,
    ):
        """Load a GGUF file. n_threads defaults to the CPUs this process may use.

        reuse_prefix=True keeps llama.cpp's prompt-prefix reuse between calls: faster for
        long shared prompts, but seeded samples are then no longer reproducible call by call.
        """
        path = Path(path).expanduser()
        if not path.is_file():
            raise ModelError(f"GGUF file {path} does not exist")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelError(
                "llama-cpp-python is not installed; run `pip install 'llama-cpp-python[server]==0.3.36'`"
                " (or `make install`)"
            ) from exc
        threads = n_threads or _cpus()
        try:
            self.llama = Llama(
                model_path=str(path), n_ctx=n_ctx, n_threads=threads,
                n_gpu_layers=n_gpu_layers, verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self.path = path
        self.reuse_prefix = reuse_prefix
        # Named by file name and content so a moved file keeps its cache entries.
        self.model_id = model_id or f"gguf:{path.name}@{file_digest(path)[:16]}"
        self._lock = threading.Lock()

    def generate(
        self, conversations: list[Conversation], sampling: Sampling, n: int = 1
    ) -> list[list[Completion]]:
        """n completions per conversation; temperature 0 is greedy (computed once, copied)."""
        greedy = sampling.temperature <= 0
        base_seed = sampling.seed if sampling.seed is not None else random.randrange(2**31)
        results = []
        for conv_index, conversation in enumerate(conversations):
            messages = [m.model_dump() for m in conversation]
            if greedy:
                results.append(copies(self._one(messages, sampling, base_seed), n))
            else:
                results.append([self._one(messages, sampling, base_seed + i) for i in range(n)])
        return results

    def _one(self, messages: list[dict[str, Any]], sampling: Sampling, seed: int) -> Completion:
        with self._lock:
            if not self.reuse_prefix:
                # llama.cpp reuses the KV cache of the previous call's common prefix, and
                # logits computed that way differ in the last bits: a seeded sample would
                # then depend on what was asked before. A reset makes it depend only on
                # the call itself, at the price of evaluating the prompt again.
                self.llama.reset()
            response = self.llama.create_chat_completion(
                messages=messages,
                temperature=max(sampling.temperature, 0.0),
                top_p=sampling.top_p,
                # llama.cpp's defaults (top_k 40, min_p 0.05) would make it sample from a
                # different distribution than the other backends at the same settings.
                top_k=0,
                min_p=0.0,
                repeat_penalty=1.0,
                max_tokens=sampling.max_tokens,
                stop=list(sampling.stop) or None,
                seed=seed,
                response_format=_response_format(sampling),
            )
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        return Completion(
            text=truncate_at_stop(choice["message"]["content"] or "", sampling.stop),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
        )


def _cpus() -> int:
    # Affinity, not cpu_count: in a container or under taskset the two differ.
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _response_format(sampling: Sampling) -> dict | None:
    """llama.cpp turns a JSON Schema into a grammar that constrains every sampled token."""
    if sampling.json_schema is None:
        return None
    import json

    return {"type": "json_object", "schema": json.loads(sampling.json_schema)}
