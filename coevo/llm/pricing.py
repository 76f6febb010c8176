"""What a model's tokens cost: a role's `price` option, in dollars per million tokens.

    roles:
      judge:
        model: openai:gpt-4o-mini@https://api.openai.com/v1
        options: {price: {input: 0.15, output: 0.60}}     # USD per 1M prompt / completion tokens

`load_model` takes `price` off the options before the backend sees them and hands back the
model `Priced` (the shared model itself is left alone: two roles may share one model at two
prices); the call cache records the price beside each fresh call (never in its key), and
`coevo.plan.cost` adds the dollars up per stage and role.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, ValidationError

from coevo.llm.base import ModelError
from coevo.core.strict import StrictModel


class Price(StrictModel):
    """Dollars per million prompt (`input`) and completion (`output`) tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    def dollars(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input + completion_tokens * self.output) / 1e6


def read_price(value: Any, spec: str) -> Price:
    """A `price` option as given (`{input: 0.15, output: 0.6}` or `[0.15, 0.6]`), checked."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        value = {"input": value[0], "output": value[1]}
    try:
        return Price.model_validate(value)
    except ValidationError:
        raise ModelError(f"model {spec!r}: price {value!r} is not {{input: USD, output: USD}} per million "
                         "tokens (e.g. `price: {input: 0.15, output: 0.6}`)") from None


class Priced:
    """A model with its role's price; every other attribute is the model's own."""

    def __init__(self, inner: Any, price: Price):
        self.inner, self.price = inner, price

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def generate(self, conversations: Any, sampling: Any, n: int = 1) -> Any:
        return self.inner.generate(conversations, sampling, n)


def price_of(model: Any) -> Price | None:
    """The price hung on a model (through any wrappers that forward attributes), if any."""
    price = getattr(model, "price", None)
    return price if isinstance(price, Price) else None
