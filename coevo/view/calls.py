"""The model calls of a run as the viewer shows them: who made each, where, how long it took,
and whether it stopped at its token limit.

Every cached call keeps, beside its request, a `"call"` record (see `coevo/llm/cache.py`):
the role and stage that made it (`coevo/llm/call_tags.py`), its seconds and its cut-off
flag. Calls cached before that record existed carry none: their role and stage are None,
and their cut-off flag is worked out from the completion's token count against the
request's `max_tokens`, where both are known.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from coevo.roles.parsing import strip_reasoning

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore


class CallInfo(BaseModel):
    """One cached model call, in the words of the sample page."""

    role: str | None = None              # "actor", "critic", "judge:taiscore", ... (None: not recorded)
    stage: str | None = None             # the stage whose work it was, e.g. "taiscore/round1/eval"
    step: str | None = None              # what the role was asked for: respond, critique, revise, judge
    model_id: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    seconds: float | None = None         # its share of the backend call it was batched in
    #: The batch that share is of: its completions and distinct calls (None: not worked out;
    #: see `batch_sizes`). One completion of one call: `seconds` is that call's own latency.
    batch_completions: int | None = None
    batch_calls: int | None = None
    cached: bool | None = None           # the backend's own cache answered it (where it says)
    max_tokens: int | None = None
    cut_off: bool | None = None          # stopped at max_tokens (None: unknown)

    @property
    def latency_text(self) -> str:
        """`seconds` as what it is: a call's own latency only when its batch held it alone,
        else the batch's time shared evenly over its completions (the cache records no more)."""
        if self.seconds is None:
            return "latency not recorded"
        shown = f"{self.seconds:.2f} s"
        if self.batch_completions == 1:
            return f"latency {shown} (this call alone: not batched)"
        if self.batch_completions is None:
            return f"latency {shown}: a batch average per completion (batch size not recorded)"
        calls = (f"{self.batch_calls} calls" if self.batch_calls == self.batch_completions
                 else f"{self.batch_completions} completions of {self.batch_calls} calls")
        return f"latency {shown}: batch average per call, {calls}"

    @property
    def tagged(self) -> bool:
        """Whether the call records who made it (calls of older runs do not)."""
        return self.role is not None or self.stage is not None


def call_info(call: dict[str, Any]) -> CallInfo:
    """A `store.cached_calls` row as a CallInfo."""
    request = call.get("request") or {}
    record = request.get("call") or {}
    max_tokens = (request.get("sampling") or {}).get("max_tokens")
    # A backend that counts no tokens (a replay model) leaves them at 0: unknown, not zero.
    prompt_tokens = call.get("prompt_tokens") or None
    completion_tokens = call.get("completion_tokens") or None
    cut = record.get("cut_off")
    if cut is None and completion_tokens is not None and max_tokens is not None:
        cut = completion_tokens >= max_tokens
    return CallInfo(role=record.get("role"), stage=record.get("stage"), step=record.get("step"),
                    model_id=call.get("model_id", ""), prompt_tokens=prompt_tokens,
                    completion_tokens=completion_tokens, seconds=record.get("seconds"),
                    cached=call.get("cached"), max_tokens=max_tokens, cut_off=cut)


def batch_sizes(store: RunStore, calls: list[dict[str, Any]]) -> None:
    """Fill in each call's `info.batch_completions` and `batch_calls`. The cache shares one
    backend call's seconds evenly among the completions it made (llm/cache.py), so the
    completions of one batch are those of its stage and role recording the very same seconds."""
    groups: dict[tuple[str, str], set[float]] = {}
    for call in calls:
        info = call["info"]
        if info.seconds is not None and info.stage and info.role:
            groups.setdefault((info.stage, info.role), set()).add(info.seconds)
    counted: dict[tuple[str, str, float], tuple[int, set[str]]] = {}
    for (stage, role), seconds in groups.items():
        tags: dict[str, Any] = {"stage": stage, "role": role, "seconds": sorted(seconds)}
        for row in store.cached_calls(limit=None, tags=tags):
            key = (stage, role, ((row["request"] or {}).get("call") or {}).get("seconds"))
            n, keys = counted.get(key, (0, set()))
            counted[key] = (n + 1, keys | {row["key"]})
    for call in calls:
        info = call["info"]
        found = counted.get((info.stage or "", info.role or "", info.seconds))  # type: ignore[arg-type]
        if found:
            info.batch_completions, info.batch_calls = found[0], len(found[1])


def cut_off_shares(store: RunStore) -> list[dict[str, Any]]:
    """Per (stage, role), in the order first seen: {"stage", "role", "n": calls, "cut_off":
    how many stopped at their token limit}; calls that record no stage or role have None."""
    calls: Counter[tuple[str | None, str | None]] = Counter()
    cut: Counter[tuple[str | None, str | None]] = Counter()
    for call in store.cached_calls(limit=None):
        info = call_info(call)
        calls[info.stage, info.role] += 1
        cut[info.stage, info.role] += bool(info.cut_off)
    return [{"stage": stage, "role": role, "n": n, "cut_off": cut[stage, role]}
            for (stage, role), n in calls.items()]


#: The rollout field each step's text becomes (a judge's raw answer is its judgment's).
STEP_FIELD = {"respond": "y0", "critique": "c", "revise": "y1", "revise_no_critique": "y1"}


def cut_off_texts(store: RunStore) -> set[tuple[str, str]]:
    """(field, text) of every text that came from a call cut off at its limit: field "y0",
    "c", "y1", "judge:<name>" for a judge's answer, "any" where the call records no step
    (an older run's). Texts both as answered and with reasoning stripped (what the roles keep)."""
    found: set[tuple[str, str]] = set()
    for call in store.cached_calls(limit=None, cut_off=True):
        info = call_info(call)
        field = STEP_FIELD.get(info.step or "") or (info.role if info.step == "judge" and info.role else "any")
        for text in {call["completion"].strip(), strip_reasoning(call["completion"]).strip()}:
            if text:
                found.add((field, text))
    return found
