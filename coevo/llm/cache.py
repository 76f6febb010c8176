"""A ChatModel wrapper that answers from the run store before asking the model.

Key = (model id, messages, sampling, sample index). A resumed or repeated run therefore
asks the model nothing it already answered; only the missing sample indices of a call
are requested, so a call for n=4 after a crash at n=2 costs two completions, not four.
"""

from __future__ import annotations

import hashlib
import json

from coevo.llm.base import ChatModel, PerRequestSampling
from coevo.store import RunStore
from coevo.types import Completion, Conversation, Sampling


def call_request(conversation: Conversation, sampling: Sampling) -> dict:
    """What a call asked: its messages and sampling (kept beside its cached answers)."""
    return {"messages": [m.model_dump() for m in conversation], "sampling": sampling.model_dump(mode="json")}


def call_key(model_id: str, request: dict) -> str:
    """The cache key of a call to `model_id` with `request` (its `call_request`)."""
    payload = json.dumps({"model": model_id, **request}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()


class CachedModel(PerRequestSampling):
    """Wraps any ChatModel; every completion goes through `store`'s cache."""

    def __init__(self, inner: ChatModel, store: RunStore):
        self.inner = inner
        self.store = store

    @property
    def model_id(self) -> str:
        # Read through on every call: a trained policy refreshes its id after each update,
        # and a cached id would let the cache answer with the old policy's outputs.
        return self.inner.model_id

    def __getattr__(self, name: str):
        # Backend extras (a local model's `.model`, `.tokenizer`) stay reachable. (Every
        # generating method is defined here, so none can reach the model around the cache.)
        return getattr(self.inner, name)

    def generate_each(
        self, conversations: list[Conversation], samplings: list[Sampling], n: int = 1
    ) -> list[list[Completion]]:
        """Each conversation under its own sampling; only the misses reach the model, in as
        few calls as the backend allows (see `generate_each` in base.py)."""
        from coevo.llm.base import generate_each

        requests = [call_request(conv, sampling) for conv, sampling in zip(conversations, samplings)]
        keys = [call_key(self.model_id, request) for request in requests]
        found = [self.store.cache_get(key, n) for key in keys]
        hits = [set(entry) for entry in found]
        # Group the misses by how many samples each conversation still needs, so that the
        # backend still sees whole batches (one batched call per distinct count).
        by_missing: dict[int, list[int]] = {}
        for i, entry in enumerate(found):
            if len(entry) < n:
                by_missing.setdefault(n - len(entry), []).append(i)
        for missing, rows in by_missing.items():
            arrived: dict[int, list[Completion]] = {}  # filled from the backend's thread as answers come
            try:
                fresh = generate_each(self.inner, [conversations[i] for i in rows], [samplings[i] for i in rows],
                                      missing, on_result=arrived.__setitem__)
            except BaseException:
                # A request failed for good (a server down past the retry budget) or the
                # run was stopped: keep the answers that did arrive, so a resumed run asks
                # the model nothing that finished.
                for j, completions in list(arrived.items()):
                    i = rows[j]
                    self._keep(keys[i], found[i], n, completions, requests[i])
                raise
            for i, completions in zip(rows, fresh):
                self._keep(keys[i], found[i], n, completions, requests[i])
        return [
            [found[i][idx].model_copy(update={"cached": idx in hits[i]}) for idx in range(n)]
            for i in range(len(conversations))
        ]

    def _keep(self, key: str, found: dict[int, Completion], n: int, completions: list[Completion],
              request: dict) -> None:
        """Store new completions in the sample slots still free, and note them in `found`."""
        free = [idx for idx in range(n) if idx not in found]
        new = dict(zip(free, completions))
        self.store.cache_put(key, self.model_id, new, request=request)
        found.update(new)
