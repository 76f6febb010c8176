"""GRPO's samples from llama.cpp on the policy's current weights (TRL's `rollout_func`).

TRL samples a GRPO step's completions with the trained model's own `generate`: on this CPU,
transformers writes the embedded 135M model at ~16 tokens/s where llama.cpp writes it at
~100. With `grpo.rollout_engine: llamacpp` the policy's weights are written to a GGUF
(`llm/gguf_export.py`: F16, the same tokenizer) whenever the optimizer has stepped since the
last one, llama.cpp loads it, and each prompt's completion is sampled there token by token:
the prompt's token ids are the trainer's own (its chat template), the completion's are the
ids llama.cpp sampled, ending with the end-of-sequence id where the model stopped, as TRL's
own sampling ends them. So the samples are on-policy up to F16 rounding, and TRL scores,
trains and logs them as its own (clipped ratio, lengths).

The loss's log-probabilities are still the trainer's (transformers), so nothing of the update
changes; only where the tokens were written. Llama-architecture models only (others keep
TRL's sampling; on GPUs `use_vllm` is TRL's fast path).
"""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

from coevo.train import distributed

log = logging.getLogger(__name__)


class LlamaCppRollout:
    """A `rollout_func`: one completion per prompt row (TRL repeats each prompt
    `num_generations` times), each row its own seed."""

    def __init__(self, policy: Any, workdir: Path, *, temperature: float, top_p: float, max_tokens: int,
                 seed: int = 0, n_ctx: int = 4096, repetition_penalty: float = 1.0):
        self.policy, self.workdir = policy, Path(workdir)
        self.repetition_penalty = repetition_penalty
        self.temperature, self.top_p, self.max_tokens, self.n_ctx = temperature, top_p, max_tokens, n_ctx
        self.seed, self.rank = seed, 0
        self.rng = random.Random(seed)
        self.llama: Any = None
        self.synced_step: int | None = None
        self.exports = 0  # how many times the weights were written (one per optimizer step)

    def sync(self, step: int) -> None:
        """Write the current weights and load them, unless this step's are loaded already."""
        if self.llama is not None and self.synced_step == step:
            return
        from llama_cpp import Llama

        from coevo.llm.gguf_export import export_gguf
        from coevo.llm.llamacpp import _cpus

        # One file per process: the ranks of a many-process run write their copies side by side.
        path = export_gguf(self.policy.model, self.workdir / f"policy-rank{self.rank}-step{step}.gguf")
        self.close()
        # This rank's share of the cores: the ranks on one machine sample at the same time, and
        # llama.cpp's threads wait for each other by spinning. Measured on 2 cores, the
        # test-sized TAIScore run's GRPO step in two processes: 43 and 112 s with 2 threads per
        # rank, 45 s with 1 (BENCHMARKS.md, "The slow tests, profiled").
        threads = max(1, _cpus() // distributed.local_world_size())
        self.llama = Llama(model_path=str(path), n_ctx=self.n_ctx, n_threads=threads, verbose=False)
        for old in self.workdir.glob(f"policy-rank{self.rank}-step*.gguf"):  # loaded: no longer needed
            if old != path:
                old.unlink(missing_ok=True)
        self.synced_step, self.exports = step, self.exports + 1

    def close(self) -> None:
        if self.llama is not None:
            self.llama.close()
            self.llama = None

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list]:
        rank = int(getattr(getattr(trainer, "accelerator", None), "process_index", 0) or 0)
        if rank != self.rank:
            # Each process samples its own share of a group: with one seed for all, two ranks
            # would write the same critique, every group's rewards would tie and GRPO learn nothing.
            self.rank, self.rng = rank, random.Random(self.seed * 1_000_003 + rank)
        self.sync(trainer.state.global_step)
        tokenizer = trainer.processing_class
        stop_ids = set(getattr(trainer, "eos_token_ids", None) or [tokenizer.eos_token_id])
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for prompt in prompts:
            prompt_ids = _prompt_ids(tokenizer, prompt)
            completion = self._sample(prompt_ids, stop_ids)
            out["prompt_ids"].append(prompt_ids)
            out["completion_ids"].append(completion)
            # Not the sampling's own log-probabilities (TRL uses them only to correct vLLM's
            # samples): zeros keep the shape; the loss computes its own.
            out["logprobs"].append([0.0] * len(completion))
        return out

    def _sample(self, prompt_ids: list[int], stop_ids: set[int]) -> list[int]:
        self.llama.reset()  # no prefix carried over from the previous row: each sample is its own
        self.llama.set_seed(self.rng.randrange(2**31))
        ids: list[int] = []
        # llama.cpp's defaults (top_k 40, min_p 0.05) would sample another distribution than TRL's.
        for token in self.llama.generate(prompt_ids, temp=self.temperature, top_p=self.top_p, top_k=0, min_p=0.0,
                                         repeat_penalty=self.repetition_penalty, reset=True):
            ids.append(int(token))
            if token in stop_ids or len(ids) >= self.max_tokens:
                break
        return ids


def _prompt_ids(tokenizer: Any, prompt: Any) -> list[int]:
    """A prompt row's token ids as TRL's own sampling makes them: a conversation through the
    chat template (with the generation prompt), plain text as it is."""
    if isinstance(prompt, list):
        ids = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
        return list(ids if isinstance(ids, list) else ids["input_ids"])  # a list, or a BatchEncoding
    return tokenizer(prompt, add_special_tokens=False)["input_ids"]


def rollout_for(policy: Any, settings: Any, workdir: Path) -> LlamaCppRollout | None:
    """The rollout function `settings.rollout_engine` asks for, or None (TRL samples itself).
    `llamacpp` where llama.cpp cannot take the model (or is not installed) is said once and
    falls back to TRL's."""
    if getattr(settings, "rollout_engine", "transformers") != "llamacpp":
        return None
    from coevo.llm.gguf_export import copy_refusal

    refusal = copy_refusal(policy.model)
    if refusal:
        log.warning("grpo.rollout_engine llamacpp: %s; TRL samples with transformers instead", refusal)
        return None
    # The context holds what one sample can need, a whole prompt and a whole completion, and no
    # more: each token of context costs KV cache (~23 KB a token for the embedded model).
    return LlamaCppRollout(policy, workdir, temperature=settings.temperature, top_p=settings.top_p,
                           max_tokens=settings.max_completion_length, seed=settings.seed,
                           n_ctx=settings.max_prompt_length + settings.max_completion_length,
                           repetition_penalty=settings.repetition_penalty)
