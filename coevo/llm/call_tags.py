"""Who made a model call, and in which stage: tags the cache keeps beside each call.

Roles set their name (`actor`, `critic`, `judge:taiscore`, ...) and what they were asked for
(`respond`, `critique`, `revise`, `judge`); algorithms set the stage whose work a call
belongs to (`taiscore/round1/eval`, the name `store.save_rollout` gets). The viewer files a
call under the role and stage it records, instead of guessing them from the call's text (a
revision equal to its y0, or a short answer, matches the wrong role's call).

A `contextvars.ContextVar` carries the tags: nested `tagged(...)` blocks merge (the inner
value of a key wins), and each thread or asyncio task sees its own. Tags never enter a
cache key (see `llm/cache.py`): a resumed run finds its calls whatever they were tagged.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_TAGS: ContextVar[dict[str, Any]] = ContextVar("coevo_call_tags", default={})


@contextmanager
def tagged(**tags: Any) -> Iterator[dict[str, Any]]:
    """Tag every model call made inside the block (`role=`, `stage=`, `step=`, ...), on top
    of the tags already set; a None value leaves a key as the outer block set it."""
    merged = {**_TAGS.get(), **{key: value for key, value in tags.items() if value is not None}}
    token = _TAGS.set(merged)
    try:
        yield merged
    finally:
        _TAGS.reset(token)


def current_tags() -> dict[str, Any]:
    """The tags in force here (a copy: {} outside every `tagged` block)."""
    return dict(_TAGS.get())
