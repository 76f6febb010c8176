"""The one model protocol every backend implements.

A call takes a batch of conversations and returns `n` completions for each. Batching is
the backend's business (transformers pads a batch, the OpenAI client fans requests out
concurrently, llama.cpp loops): callers always hand over the whole batch they have.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from coevo.types import Completion, Conversation, Message, Sampling


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
