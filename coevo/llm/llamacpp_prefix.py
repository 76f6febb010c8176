"""Prompt-prefix reuse in llama.cpp that computes exactly what a fresh evaluation computes.

llama-cpp-python keeps the previous call's KV cache and evaluates only the tokens past the
prompt's common prefix with it. That saves the judge most of its time (its calls repeat long
instructions, the task and y0; prompt processing is ~3x slower than writing on this CPU), but
the suffix is then evaluated in batches that start wherever the prefix ended, and a batch's
shape decides how llama.cpp's matrix kernels group their sums: the logits differ in their last
bits, and a seeded sample or a greedy tie would depend on what was asked before.

Here the kept prefix is cut back to a whole number of blocks (`block` tokens, the context's
batch size), and only to blocks that were themselves evaluated as whole blocks of a prompt. The
rest of the prompt is then evaluated in blocks that start where a fresh evaluation's would: each
block sees the same cache contents and has the same shape, so every logit is the fresh one, bit
for bit (tests/llm/test_llamacpp_prefix.py holds this against a reset before every call).

Measured (BENCHMARKS.md, "The judge's prompts"): on this CPU build llama-cpp-python's own,
unaligned reuse also gave the fresh bits (its quantised and F16 kernels compute each row alone),
and was 16 % faster than 64-token blocks on the audit's calls. The alignment is kept because
that is a property of one build, not of llama.cpp: tiled matrix kernels (GPU BLAS, some CPU
GEMMs) sum differently for differently shaped batches, and there the cut is what keeps a
seeded run reproducible.
"""

from __future__ import annotations

from typing import Any, Sequence


class AlignedPrefixReuse:
    """Wraps one `llama_cpp.Llama`'s `eval` so the next prompt reuses only whole, clean blocks."""

    def __init__(self, llama: Any, block: int):
        self.llama, self.block = llama, block
        # KV positions [0, clean) were computed as whole blocks of a prompt from a clean start.
        self.clean = 0
        self._prompt_next = False
        self._eval = llama.eval
        llama.eval = self.eval

    def before_prompt(self) -> None:
        """The next `eval` is a call's prompt (the ones after it are the tokens it writes)."""
        self._prompt_next = True

    def forget_from(self, position: int) -> None:
        """Positions from `position` on were re-evaluated outside a prompt (logprob re-reads)."""
        self.clean = min(self.clean, position // self.block * self.block)

    def eval(self, tokens: Sequence[int]) -> None:
        llama = self.llama
        if not self._prompt_next:
            return self._eval(tokens)
        self._prompt_next = False
        kept = min(llama.n_tokens // self.block * self.block, self.clean)
        # The tokens between the aligned cut and llama-cpp-python's own prefix are still in
        # input_ids (they are the common prefix): evaluate them again, in the fresh blocks.
        tokens = [int(t) for t in llama.input_ids[kept:llama.n_tokens]] + [int(t) for t in tokens]
        llama.n_tokens = kept
        self._eval(tokens)
        self.clean = kept + len(tokens) // self.block * self.block
