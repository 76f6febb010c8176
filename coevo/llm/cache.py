"""A ChatModel wrapper that answers from the run store before asking the model.

Key = (model id, messages, sampling, sample index). A resumed or repeated run therefore
asks the model nothing it already answered; only the missing sample indices of a call
are requested, so a call for n=4 after a crash at n=2 costs two completions, not four.

Beside each call's request the store keeps `"call"`: who asked and in which stage (the
tags of `llm/call_tags.py`), the seconds it took (per completion), the model's price where
its role gives one, and whether it stopped at its token limit. None of that is in the key: a
resumed run, tagged or timed differently, still hits. Hits are counted per stage and role
(`RunStore.cache_hits_by_call`), for the run's cost (coevo/plan/cost.py).
"""

from __future__ import annotations

import hashlib
import json
import time

from coevo.llm.base import ChatModel, PerRequestSampling
from coevo.llm.call_tags import current_tags
from coevo.llm.pricing import price_of
from coevo.rundir.store import RunStore
from coevo.core.types import Completion, Conversation, Sampling


def call_request(conversation: Conversation, sampling: Sampling) -> dict:
    """What a call asked: its messages and sampling (kept beside its cached answers)."""
    asked = sampling.model_dump(mode="json")
    if asked.get("repetition_penalty") == 1.0:
        # Left out when off, so the calls of runs made before the setting existed keep their keys.
        del asked["repetition_penalty"]
    return {"messages": [m.model_dump() for m in conversation], "sampling": asked}


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
        # Read here, in the caller's context: a backend may answer from threads of its own.
        tags = current_tags()
        price = price_of(self.inner)
        if price is not None:  # each call's dollars are counted from its tokens (coevo/plan/cost.py)
            tags["price"] = [price.input, price.output]
        answered = sum(len(entry) for entry in found)
        if answered:
            self.store.count_cache_hits(tags.get("stage"), tags.get("role"), answered)
        for missing, rows in by_missing.items():
            arrived: dict[int, list[Completion]] = {}  # filled from the backend's thread as answers come
            began = time.perf_counter()
            try:
                fresh = generate_each(self.inner, [conversations[i] for i in rows], [samplings[i] for i in rows],
                                      missing, on_result=arrived.__setitem__)
            except BaseException:
                # A request failed for good (a server down past the retry budget) or the
                # run was stopped: keep the answers that did arrive, so a resumed run asks
                # the model nothing that finished.
                seconds = (time.perf_counter() - began) / len(rows)
                for j, completions in list(arrived.items()):
                    i = rows[j]
                    self._keep(keys[i], found[i], n, completions, requests[i], {**tags, "seconds": seconds})
                raise
            # A batch is one backend call: its time is shared evenly among its items.
            seconds = (time.perf_counter() - began) / len(rows)
            for i, completions in zip(rows, fresh):
                self._keep(keys[i], found[i], n, completions, requests[i], {**tags, "seconds": seconds})
        return [
            [found[i][idx].model_copy(update={"cached": idx in hits[i]}) for idx in range(n)]
            for i in range(len(conversations))
        ]

    def _keep(self, key: str, found: dict[int, Completion], n: int, completions: list[Completion],
              request: dict, call: dict | None = None) -> None:
        """Store new completions in the sample slots still free, and note them in `found`;
        `call` (tags and seconds) is kept beside the request, never in the key."""
        free = [idx for idx in range(n) if idx not in found]
        new = dict(zip(free, completions))
        if call and "seconds" in call:  # a call's time, shared by the completions it made
            call = {**call, "seconds": call["seconds"] / max(1, len(new))}
        # One stored request per cut-off value: the samples of one call may differ in it.
        by_cut: dict[bool | None, dict[int, Completion]] = {}
        for idx, completion in new.items():
            by_cut.setdefault(cut_off(completion, request), {})[idx] = completion
        for cut, part in by_cut.items():
            self.store.cache_put(key, self.model_id, part,
                                 request={**request, "call": {**(call or {}), "cut_off": cut}})
        found.update(new)


def cut_off(completion: Completion, request: dict) -> bool | None:
    """Whether a completion stopped at its token limit (None where either is unknown: a
    backend that counts no tokens, a replay model, leaves `completion_tokens` at 0)."""
    limit = (request.get("sampling") or {}).get("max_tokens")
    if not completion.completion_tokens or limit is None:
        return None
    return completion.completion_tokens >= limit
