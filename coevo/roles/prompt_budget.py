"""Fitting a prompt into a token budget without losing its head: shorten one field's MIDDLE.

The critic's prompt (TAIScore Table 6) is a header, the instruction x and the response y0.
Cutting an over-long prompt from the left (as TRL once did) drops the header and x, so the
critic would train on prompts it never sees in use. Instead the response alone is
shortened: its beginning and end are kept and a visible marker replaces the middle
(`[… 812 tokens of the response omitted …]`), so the critic knows text is missing.

Counting is in tokens of the model's own tokenizer (the whole chat-templated user turn, as
the model is fed it) when the model is a local one with a tokenizer (transformers, vLLM);
for a served model coevo has no tokenizer, and `approximate_tokens` stands in for it.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Defined in llm/common.py, where train/grpo.py counts its prompts the same way (train/ sits
# below roles/); kept importable from here, where the rest of the budget is.
from coevo.llm.common import chat_tokens

log = logging.getLogger(__name__)

#: What replaces the omitted middle; `{n}` is how many tokens of the field were left out.
MARKER = "\n[… {n} tokens of the response omitted …]\n"

TokenCounter = Callable[[str], int]


def approximate_tokens(text: str) -> int:
    """Tokens of `text` where no tokenizer is at hand (served models): UTF-8 bytes / 3,
    rounded up. English BPE tokenizers average ~4 bytes per token, so this over-counts them
    (a prompt counted as fitting fits); CJK text, ~3 bytes a character and about a token per
    character, comes out near its true count."""
    return math.ceil(len(text.encode("utf-8")) / 3)


def token_counter(model: Any) -> TokenCounter:
    """How many tokens a user turn holding `text` costs `model`: its chat template applied
    and tokenized, as the model is fed it (a transformers model's `.tokenizer`, a vLLM
    engine's `get_tokenizer()`); `approximate_tokens` for models without a tokenizer here."""
    tokenizer = _tokenizer_of(model)
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        return approximate_tokens

    def count(text: str) -> int:
        return chat_tokens(tokenizer, [{"role": "user", "content": text}])

    return count


def _tokenizer_of(model: Any) -> Any:
    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None:
        return tokenizer
    engine = getattr(model, "llm", None)  # a vLLM engine (coevo.llm.vllm_backend)
    return engine.get_tokenizer() if hasattr(engine, "get_tokenizer") else None


@dataclass(frozen=True)
class Fitted:
    """A rendered prompt, and how many tokens of its shortened field were left out (0: none)."""

    text: str
    omitted: int = 0

    @property
    def shortened(self) -> bool:
        return self.omitted > 0


def fit_middle(render: Callable[[str], str], field: str, budget: int, count: TokenCounter) -> Fitted:
    """`render(field)` within `budget` tokens (by `count`), shortening only `field`, in its middle.

    `render` builds the whole prompt around a value of the field (the header and the other
    fields stay as they are). A prompt that fits comes back untouched. Otherwise the field
    keeps as many characters as fit, half from its start and half from its end, around
    `MARKER`; the longest such prompt within the budget is found by bisection on the count
    of the whole prompt, so the result is within the budget by `count`'s own measure. When
    even an empty field leaves the prompt over the budget (the rest alone is too long), the
    field is only the marker and a warning says so: the rest is never cut.
    """
    whole = render(field)
    if count(whole) <= budget:
        return Fitted(whole)
    empty = count("")  # the chat template's own tokens, not part of any omitted text

    def attempt(keep: int) -> Fitted:
        head, tail = field[: (keep + 1) // 2], field[len(field) - keep // 2:] if keep >= 2 else ""
        omitted = max(1, count(field[len(head): len(field) - len(tail)]) - empty)
        return Fitted(render(head + MARKER.format(n=omitted) + tail), omitted)

    best = attempt(0)
    if count(best.text) > budget:
        log.warning("a prompt is %d tokens over its budget of %d even without its response: it is kept whole "
                    "(the response omitted); raise the budget (grpo.max_prompt_length)",
                    count(best.text) - budget, budget)
        return best
    low, high = 0, len(field) - 1  # the most characters kept such that the prompt fits
    while low < high:
        mid = (low + high + 1) // 2
        candidate = attempt(mid)
        if count(candidate.text) <= budget:
            low, best = mid, candidate
        else:
            high = mid - 1
    return best
