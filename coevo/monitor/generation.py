"""`generation_anchor`: the anchor a TRL user needs most, in one call.

An anchor measures what the training reward is meant to reward, on held-out prompts, with
the policy as it is now. For a generator that means: sample the trainer's current model on
each held-out prompt and score what it wrote. Written by hand that is a dozen lines that are
easy to get subtly wrong (the trainer's model sits in train mode, often with gradient
checkpointing, which turns the generation cache off; gradients must not be recorded; train
mode must come back). `HackingMonitor` hands the anchor the trainer's model and tokenizer
when training begins (`bind`), so the user writes

    monitor = HackingMonitor({"held_out": generation_anchor(prompts, score)})

with `score(prompt, completion) -> float` (None: unreadable, left out) or a `python:FILE.py:f`
spec of that signature.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Score = Callable[[str, str], "float | None"]


class GenerationAnchor:
    """{held-out prompt i: score of the current policy's greedy answer to it}."""

    def __init__(self, prompts: Sequence[str], score: Score | str, *, max_new_tokens: int = 64):
        if isinstance(prompts, str) or not prompts or not all(isinstance(p, str) and p for p in prompts):
            raise ValueError("generation_anchor needs a list of held-out prompts (non-empty strings), e.g. "
                             "generation_anchor(['Write a haiku about rain.', ...], score)")
        if max_new_tokens < 1:
            raise ValueError(f"generation_anchor: max_new_tokens must be at least 1, got {max_new_tokens}")
        self.prompts, self.max_new_tokens = list(prompts), max_new_tokens
        self.score = _scorer(score)
        self.model: Any = None
        self.tokenizer: Any = None

    def bind(self, model: Any, tokenizer: Any) -> None:
        """The trainer's model and tokenizer (HackingMonitor calls this as training begins)."""
        self.model, self.tokenizer = model, tokenizer

    def __call__(self) -> dict[str, float]:
        if self.model is None or self.tokenizer is None:
            raise RuntimeError("generation_anchor has no model yet: it is bound when training begins, so pass the "
                               "monitor in the trainer's callbacks (callbacks=[monitor])")
        found = {}
        for i, (prompt, completion) in enumerate(zip(self.prompts, self.completions())):
            value = self.score(prompt, completion)
            if value is not None:
                found[str(i)] = float(value)
        return found

    def completions(self) -> list[str]:
        """The current policy's greedy answers: eval mode, no gradients, the cache on; the
        model's mode and cache setting restored after."""
        import torch

        model = getattr(self.model, "module", self.model)  # a DDP wrapper holds the model
        was_training, config = model.training, getattr(model, "config", None)
        cache = getattr(config, "use_cache", None)
        model.eval()
        if config is not None:
            config.use_cache = True
        try:
            with torch.no_grad():
                return [self._generate(model, prompt) for prompt in self.prompts]
        finally:
            if config is not None and cache is not None:
                config.use_cache = cache
            model.train(was_training)

    def _generate(self, model: Any, prompt: str) -> str:
        tokenizer = self.tokenizer
        if getattr(tokenizer, "chat_template", None):
            text = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                 add_generation_prompt=True)
        else:
            text = prompt
        inputs = tokenizer(text, return_tensors="pt", add_special_tokens=False).to(model.device)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        output = model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False, pad_token_id=pad)
        return tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)


def generation_anchor(prompts: Sequence[str], score: Score | str, *, max_new_tokens: int = 64) -> GenerationAnchor:
    """An anchor that samples the trainer's current model on `prompts` and scores each answer
    with `score(prompt, completion) -> float | None` (or a `python:FILE.py:f` spec)."""
    return GenerationAnchor(prompts, score, max_new_tokens=max_new_tokens)


def _scorer(score: Score | str) -> Score:
    if isinstance(score, str):
        from coevo.llm.python_functions import is_python_spec, load_python_function

        if not is_python_spec(score):
            raise ValueError(f"generation_anchor: score {score!r} is neither a function nor a python:FILE.py:f spec; "
                             "give f(prompt, completion) -> float")
        return python_scorer(load_python_function(score), "generation_anchor")
    if not callable(score):
        raise TypeError(f"generation_anchor: score must be a function f(prompt, completion) -> float, "
                        f"got {type(score).__name__}")
    return score


def python_scorer(loaded: Any, where: str) -> Score:
    """The f(prompt, completion) a `python:FILE.py:f` spec names (its function must be named)."""
    function = getattr(loaded.module, loaded.function or "", None)
    if not callable(function):
        raise ValueError(f"{where}: {loaded.spec!r} names no function; give python:FILE.py:f with "
                         "f(prompt, completion) -> float")
    return function


__all__ = ["GenerationAnchor", "generation_anchor", "python_scorer"]
