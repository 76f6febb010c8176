"""Schema-bound sampling in llama.cpp that checks the grammar on the sampled token first.

llama-cpp-python puts the JSON Schema's grammar at the head of its sampler chain, so at every
step the grammar is matched against all 49 k candidate tokens before one is drawn: a judge's
schema-bound answer is written at a fraction of free text's speed on this CPU (BENCHMARKS.md,
"Schema-bound sampling"). llama.cpp's own sampler (`common_sampler_sample`, what `llama-server`
runs) draws first from the unconstrained distribution and asks the grammar about that one token.
Most tokens of a JSON answer are ones the grammar allows (the judge's: 96-97 %), so most steps
check one token. On a refusal, greedy decoding checks the BEST candidates by logit in one pass
(the first allowed is the masked argmax) and sampling draws again, up to REDRAWS times; only
then are all candidates masked and the draw made from what is left.

The result is the grammar-first chain's distribution, not an approximation, when nothing
truncates the candidates before the draw: greedy decoding (the same tokens), and temperature
sampling with top_p 1 (redrawing until the grammar allows is rejection sampling: a token t is
drawn with p(t) / Z, Z the allowed mass, whether the REDRAWS run out or not). With top_p < 1,
top_k, min_p or typical_p the truncation would apply to another set, so those calls keep
llama-cpp-python's chain. Seeded samples differ from the grammar-first chain's (a refusal uses
the random stream again): the same distribution, another stream.
"""

from __future__ import annotations

import ctypes
import functools
import math
from typing import Any

#: Candidates a greedy refusal checks in one grammar pass before masking every one.
BEST = 256
#: Fresh draws a sampled refusal makes before masking every candidate.
REDRAWS = 8


def bounded_integers_as_enums(schema: Any) -> Any:
    """`schema` with every integer that has both bounds written as the list of its values.

    llama-cpp-python's JSON-Schema-to-grammar converter drops `minimum` and `maximum`: a judge
    asked for a 1-10 score could write 0 or 100, which the reader then refuses (measured: 4 of 11
    greedy TAIScore answers of the embedded judge, BENCHMARKS.md "Schema-bound sampling"). An
    enum is a grammar of literals, so the bounds hold token by token."""
    if isinstance(schema, list):
        return [bounded_integers_as_enums(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    low, high = schema.get("minimum"), schema.get("maximum")
    if schema.get("type") == "integer" and isinstance(low, int) and isinstance(high, int) and 0 <= high - low <= 1000:
        return {"enum": list(range(low, high + 1))}
    return {key: bounded_integers_as_enums(value) for key, value in schema.items()}


def install(llama: Any) -> None:
    """Make `llama`'s schema-bound calls check the grammar last where that is exact."""
    llama._init_sampler = functools.partial(_init_sampler, llama, llama._init_sampler)


def exact(temp: float, top_p: float, top_k: int, min_p: float, typical_p: float) -> bool:
    """Whether drawing first and checking after gives the grammar-first chain's distribution."""
    if temp < 0.0:  # llama-cpp-python then draws from the untempered softmax: left to it
        return False
    truncates = top_p < 1.0 or top_k > 0 or min_p > 0.0 or typical_p < 1.0
    return temp == 0.0 or not truncates


def _init_sampler(llama: Any, grammar_first: Any, **settings: Any) -> Any:
    grammar = settings.get("grammar")
    neutral = (settings.get("repeat_penalty", 1.0) == 1.0 and not settings.get("frequency_penalty")
               and not settings.get("presence_penalty") and not settings.get("mirostat_mode")
               and settings.get("logits_processor") is None)
    if grammar is None or not neutral or not exact(settings["temp"], settings["top_p"], settings["top_k"],
                                                   settings["min_p"], settings["typical_p"]):
        return grammar_first(**settings)
    return GrammarLastSampler(llama, grammar, temp=settings["temp"], seed=llama._seed)


class GrammarLastSampler:
    """Stands in for llama-cpp-python's sampler chain (`Llama._sampler`, asked `sample(ctx, idx)`)."""

    def __init__(self, llama: Any, grammar: Any, *, temp: float, seed: int):
        import llama_cpp
        from llama_cpp._internals import LlamaSampler

        self._c = llama_cpp
        self.greedy = temp == 0.0
        self.draw = LlamaSampler()  # what follows the grammar in llama-cpp-python's chain here
        if self.greedy:
            self.draw.add_greedy()
        else:
            self.draw.add_temp(temp)
            self.draw.add_dist(seed)
        self.grammar = llama_cpp.llama_sampler_init_grammar(
            llama._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8"))
        if not self.grammar:
            raise ValueError("llama.cpp could not build a sampler from the answer schema's grammar")
        self.n_vocab = llama.n_vocab()
        self._all = (llama_cpp.llama_token_data * self.n_vocab)()
        self.refused = self.steps = 0

    def sample(self, ctx: Any, idx: int = -1) -> int:
        c = self._c
        token = c.llama_sampler_sample(self.draw.sampler, ctx.ctx, idx)
        self.steps += 1
        if not self._allowed([token])[0]:
            self.refused += 1
            token = self._retry(ctx, idx)
        c.llama_sampler_accept(self.grammar, token)
        return token

    def _retry(self, ctx: Any, idx: int) -> int:
        """After a refusal. Greedy: the first allowed of the best candidates by logit (ties by id,
        as llama.cpp's greedy breaks them) is the masked argmax. Sampling: fresh draws until one is
        allowed is rejection sampling, exact; after REDRAWS refusals, one full mask."""
        import numpy as np

        c = self._c
        if self.greedy:
            logits = self._logits(ctx, idx)
            best = np.argpartition(-logits, BEST)[:BEST]
            best = best[np.lexsort((best, -logits[best]))]
            allowed = self._allowed(best.tolist(), logits[best].tolist())
            # A find at the last logit kept could tie an unchecked token with a lower id.
            if any(allowed) and logits[best[allowed.index(True)]] > logits[best[-1]]:
                return int(best[allowed.index(True)])
        else:
            for _ in range(REDRAWS):
                token = c.llama_sampler_sample(self.draw.sampler, ctx.ctx, idx)
                if self._allowed([token])[0]:
                    return token
        return self._masked_draw(ctx, idx)

    def _allowed(self, tokens: list[int], logits: list[float] | None = None) -> list[bool]:
        """Which of `tokens` the grammar allows next (one grammar pass over just these)."""
        c = self._c
        table = self._all
        for i, token in enumerate(tokens):
            table[i].id, table[i].logit, table[i].p = token, 0.0 if logits is None else logits[i], 0.0
        checked = c.llama_token_data_array(data=table, size=len(tokens), selected=-1, sorted=False)
        c.llama_sampler_apply(self.grammar, ctypes.byref(checked))
        return [not math.isinf(table[i].logit) for i in range(len(tokens))]

    def _masked_draw(self, ctx: Any, idx: int) -> int:
        """The grammar-first chain's draw: every candidate masked, then the same draw."""
        import numpy as np

        c = self._c
        table = np.frombuffer(self._all, dtype=np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)]))
        table["id"] = np.arange(self.n_vocab, dtype=np.int32)
        table["logit"], table["p"] = self._logits(ctx, idx), 0.0
        candidates = c.llama_token_data_array(data=self._all, size=self.n_vocab, selected=-1, sorted=False)
        c.llama_sampler_apply(self.grammar, ctypes.byref(candidates))
        c.llama_sampler_apply(self.draw.sampler, ctypes.byref(candidates))
        return int(candidates.data[candidates.selected].id)

    def _logits(self, ctx: Any, idx: int) -> Any:
        """The context's logits at `idx`, viewed in place (no copy)."""
        import numpy as np

        return np.ctypeslib.as_array(self._c.llama_get_logits_ith(ctx.ctx, idx), shape=(self.n_vocab,))

    def close(self) -> None:
        if self.grammar is not None:
            self._c.llama_sampler_free(self.grammar)
            self.grammar = None

    def __del__(self) -> None:
        self.close()
