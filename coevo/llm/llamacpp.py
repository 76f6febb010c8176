"""`gguf:PATH` — a GGUF model through llama-cpp-python, in process: fast CPU inference.

llama.cpp decodes one sequence at a time here, so a batch is a loop. Its chat template comes
from the GGUF's own metadata, the same one transformers reads, so prompts match the
`local` backend's. n samples are n calls with seeds seed, seed+1, ...: different from each
other, and the same again on a rerun.

Token log-probabilities (`Sampling.logprobs > 0`) are computed after the answer is written,
by one extra batched pass over the answer's own tokens that keeps the logits of every
position. llama-cpp-python's own `logprobs` option needs `logits_all=True`, which keeps an
n_ctx × vocabulary matrix (800 MB for this model at n_ctx 4096) and sorts the whole
vocabulary at every token in Python; the extra pass costs one prompt-sized evaluation.

A call keeps the previous call's prompt prefix in whole 64-token blocks (`llamacpp_prefix.py`:
the answers are bit for bit those of a fresh evaluation), and a batch is asked in an order that
puts shared beginnings together: the judge audit's 22 variants of 2 items took 0.33x the time.
"""

from __future__ import annotations

import json
import os
import random
import threading
from pathlib import Path
from typing import Any

from coevo.llm import llamacpp_grammar
from coevo.llm.base import ModelError
from coevo.llm.common import copies, file_digest, truncate_at_stop
from coevo.llm.llamacpp_prefix import AlignedPrefixReuse
from coevo.core.types import Completion, Conversation, Sampling

# Tokens per prompt-evaluation batch, and so the grain of prefix reuse: a shared beginning
# shorter than one block is evaluated again. Measured in BENCHMARKS.md ("The judge's prompts").
PREFIX_BLOCK = 64


class LlamaCppModel:
    """One `llama_cpp.Llama` instance; calls are serialised (a context is not thread-safe)."""

    def __init__(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        reuse_prefix: bool = True,
        prefix_block: int = PREFIX_BLOCK,
        grammar_last: bool = True,
        model_id: str | None = None,
    ):
        """Load a GGUF file. n_threads defaults to the CPUs this process may use.

        reuse_prefix keeps the previous call's prompt prefix, in whole blocks of `prefix_block`
        tokens (the context's batch size), so every call computes what a fresh evaluation would
        (`llamacpp_prefix.py`); False evaluates every prompt from its first token.
        grammar_last draws a schema-bound token first and asks the grammar after, where that
        gives the same distribution (`llamacpp_grammar.py`); False masks every candidate first.
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
                n_gpu_layers=n_gpu_layers, n_batch=prefix_block, verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"llama.cpp cannot load {path}: {exc}") from exc
        self.path = path
        self._prefix = AlignedPrefixReuse(self.llama, self.llama.n_batch) if reuse_prefix else None
        if grammar_last:
            llamacpp_grammar.install(self.llama)
        self.supports_logprobs = True
        # Named by file name and content so a moved file keeps its cache entries.
        self.model_id = model_id or f"gguf:{path.name}@{file_digest(path)[:16]}"
        self._lock = threading.Lock()

    def close(self) -> None:
        """Free the model and its context now (a generation copy of a trained role is
        replaced every round; waiting for the garbage collector would hold two)."""
        with self._lock:
            self.llama.close()

    def generate(
        self, conversations: list[Conversation], sampling: Sampling, n: int = 1
    ) -> list[list[Completion]]:
        """n completions per conversation; temperature 0 is greedy (computed once, copied)."""
        greedy = sampling.temperature <= 0
        base_seed = sampling.seed if sampling.seed is not None else random.randrange(2**31)
        asked = [[m.model_dump() for m in conversation] for conversation in conversations]
        results: list[list[Completion]] = [[] for _ in asked]
        # Conversations that share a beginning go one after another, so the kept prefix serves
        # them all; the order changes no answer (each is computed as if asked first).
        for index in sorted(range(len(asked)), key=lambda i: json.dumps(asked[i])):
            if greedy:
                results[index] = copies(self._one(asked[index], sampling, base_seed), n)
            else:
                results[index] = [self._one(asked[index], sampling, base_seed + i) for i in range(n)]
        return results

    def _one(self, messages: list[dict[str, Any]], sampling: Sampling, seed: int) -> Completion:
        with self._lock:
            if self._prefix is not None:
                self._prefix.before_prompt()
            else:
                self.llama.reset()
            response = self.llama.create_chat_completion(
                messages=messages,
                temperature=max(sampling.temperature, 0.0),
                top_p=sampling.top_p,
                # llama.cpp's defaults (top_k 40, min_p 0.05) would make it sample from a
                # different distribution than the other backends at the same settings.
                top_k=0,
                min_p=0.0,
                repeat_penalty=sampling.repetition_penalty,
                max_tokens=sampling.max_tokens,
                stop=list(sampling.stop) or None,
                seed=seed,
                response_format=_response_format(sampling),
            )
            choice = response["choices"][0]
            usage = response.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens", 0))
            tokens = top = None
            if sampling.logprobs:
                tokens, top = self._answer_logprobs(prompt_tokens, sampling.logprobs)
        text = choice["message"]["content"] or ""
        if tokens is not None and "".join(tokens) != text:
            tokens = top = None  # the answer was re-spelled (stop string, trimming): no map
        return Completion(
            text=truncate_at_stop(text, sampling.stop),
            prompt_tokens=prompt_tokens,
            completion_tokens=int(usage.get("completion_tokens", 0)),
            tokens=tokens,
            top_logprobs=top,
        )

    def _answer_logprobs(self, prompt_tokens: int, k: int) -> tuple[list[str], list[dict[str, float]]]:
        """The answer's token texts and the top-k log-probabilities at each of its positions.

        Re-evaluates the answer's tokens in batches whose every position keeps its logits
        (llama-cpp-python 0.3.36's batch and context objects: pinned, and tested). Position i
        of the answer is predicted by the logits after token prompt+i-1.
        """
        import numpy as np

        llama = self.llama
        ids = [int(t) for t in llama.input_ids[:llama.n_tokens]]
        answer = ids[prompt_tokens:]
        if llama.n_tokens < prompt_tokens or not answer:
            return [], []
        start = prompt_tokens - 1
        if self._prefix is not None:
            self._prefix.forget_from(start)
        llama._ctx.kv_cache_seq_rm(-1, start, -1)
        llama.n_tokens = start
        rows = []
        inputs = ids[start:start + len(answer)]
        for i in range(0, len(inputs), llama.n_batch):
            batch = inputs[i:i + llama.n_batch]
            llama._batch.set_batch(batch=batch, n_past=llama.n_tokens, logits_all=True)
            llama._ctx.decode(llama._batch)
            logits = np.ctypeslib.as_array(llama._ctx.get_logits(), shape=(len(batch) * llama.n_vocab(),))
            rows.append(logits.reshape(len(batch), llama.n_vocab()).copy())
            llama.n_tokens += len(batch)
        logits = np.concatenate(rows)
        logits = logits - logits.max(axis=1, keepdims=True)
        logprobs = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        texts, top = [], []
        for i, token in enumerate(answer):
            before = ids[:prompt_tokens + i]
            texts.append(self._piece(token, before))
            best = np.argpartition(-logprobs[i], k)[:k]
            alternatives = {self._piece(int(t), before): float(logprobs[i, t]) for t in best}
            alternatives[texts[-1]] = float(logprobs[i, token])
            top.append(alternatives)
        return texts, top

    def _piece(self, token: int, before: list[int]) -> str:
        return self.llama.detokenize([token], prev_tokens=before[-8:]).decode("utf-8", errors="ignore")


def _cpus() -> int:
    # Affinity, not cpu_count: in a container or under taskset the two differ.
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def _response_format(sampling: Sampling) -> dict | None:
    """llama.cpp turns a JSON Schema into a grammar that constrains every sampled token (its
    converter ignores integer bounds, so those become enums first)."""
    if sampling.json_schema is None:
        return None
    schema = llamacpp_grammar.bounded_integers_as_enums(json.loads(sampling.json_schema))
    return {"type": "json_object", "schema": schema}
