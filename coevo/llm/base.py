"""The one model protocol every backend implements.

A call takes a batch of conversations and returns `n` completions for each. Batching is
the backend's business (transformers pads a batch, the OpenAI client fans requests out
concurrently, llama.cpp loops): callers always hand over the whole batch they have.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from coevo.core.types import Completion, Conversation, Message, Sampling


class ModelError(RuntimeError):
    """A model could not be built or reached; the message says what to fix."""


@runtime_checkable
class ChatModel(Protocol):
    #: Stable identity for cache keys: backend + model path/name + revision.
    model_id: str

    def generate(
        self, conversations: list[Conversation], sampling: Sampling, n: int = 1
    ) -> list[list[Completion]]:
        """Return, for each conversation, a list of `n` completions (in order)."""
        ...


def user(text: str) -> Conversation:
    """The papers' prompts are single user turns; this builds one."""
    return [Message(role="user", content=text)]


class PerRequestSampling:
    """For backends that implement `generate_each` (a sampling per request): `generate` is
    the special case of one sampling for every conversation."""

    def generate(self, conversations: list[Conversation], sampling: Sampling, n: int = 1) -> list[list[Completion]]:
        return self.generate_each(conversations, [sampling] * len(conversations), n)  # type: ignore[attr-defined]


def generate_each(model: Any, conversations: list[Conversation], samplings: Sequence[Sampling],
                  n: int = 1, on_result: Callable[[int, list[Completion]], None] | None = None,
                  ) -> list[list[Completion]]:
    """n completions per conversation, each decoded under its own sampling (its own answer
    schema, typically: a critic's schema quotes the output it critiques).

    Backends that take per-request settings (vLLM, OpenAI-compatible servers, and the
    wrappers in front of them) get the whole list in one call through their `generate_each`;
    others get one `generate` call per distinct sampling. Results come back in order.
    `on_result(i, completions)` is called as each conversation's answers arrive, where the
    backend can tell (a server answering requests one by one): a caller can keep what
    finished when a later request fails."""
    if len(samplings) != len(conversations):
        raise ValueError(f"{len(conversations)} conversations but {len(samplings)} samplings")
    each = getattr(model, "generate_each", None)
    if each is not None:
        if on_result is not None and "on_result" in inspect.signature(each).parameters:
            return each(conversations, list(samplings), n, on_result=on_result)
        return each(conversations, list(samplings), n)
    return by_sampling(model.generate, conversations, samplings, n, on_result)


def by_sampling(generate: Any, conversations: list[Conversation], samplings: Sequence[Sampling],
                n: int, on_result: Callable[[int, list[Completion]], None] | None = None,
                ) -> list[list[Completion]]:
    """`generate_each` on a backend that takes one sampling per call: one call per group."""
    groups: dict[Sampling, list[int]] = {}
    for i, sampling in enumerate(samplings):
        groups.setdefault(sampling, []).append(i)
    results: list[list[Completion]] = [[] for _ in conversations]
    for sampling, rows in groups.items():
        for i, completions in zip(rows, generate([conversations[i] for i in rows], sampling, n)):
            results[i] = completions
            if on_result is not None:
                on_result(i, completions)
    return results
