"""The viewer's sample pages: every rollout of every stage, and one rollout in full.

`/runs/{run_id}/samples` lists the rollouts (x -> y0 -> critique -> y1 and their judgments)
of every stage, filterable by stage, round, condition, judge validity and score range and
sortable by reward or score. `/runs/{run_id}/samples/{rollout_id}` shows one side by side,
with an inline diff of y0 -> y1, each judge's per-criterion scores and reasons, and the model
calls behind it, found in the run's cache by the texts they answered.

The data functions (`sample_rows`, `filter_rows`, `word_diff`, `calls_behind`) take a store
and plain values, so they are tested without a server.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request

from coevo.store import stage_round

if TYPE_CHECKING:
    from coevo.store import RunStore
    from coevo.types import Rollout

router = APIRouter()

#: Rows per page of the samples list: a taiscore run holds thousands of GRPO rollouts.
PAGE_SIZE = 100
#: Characters of each text shown in a list cell.
SNIPPET = 160


def snippet(text: str | None, size: int = SNIPPET) -> str:
    """The start of a text on one line, for a table cell."""
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= size else flat[: size - 1] + "…"


@dataclass
class SampleRow:
    """One rollout as the samples list shows it."""

    id: int
    stage: str
    round: int | None
    rollout: Rollout
    #: Per judge: (valid, score, reward).
    judges: dict[str, tuple[bool, float | None, float | None]] = field(default_factory=dict)

    @property
    def validity(self) -> str:
        """'unjudged', 'invalid' (some judgment unreadable) or 'valid'."""
        if not self.judges:
            return "unjudged"
        return "valid" if all(valid for valid, _, _ in self.judges.values()) else "invalid"

    @property
    def reward(self) -> float | None:
        """The training reward one of its judgments gave (TAIScore's GRPO), else None."""
        return next((r for _, _, r in self.judges.values() if r is not None), None)

    def score(self, judge: str | None) -> float | None:
        """The score of `judge` (None: the first judge that scored it)."""
        if judge:
            return self.judges.get(judge, (False, None, None))[1]
        return next((s for valid, s, _ in self.judges.values() if valid and s is not None), None)


def sample_rows(store: RunStore, stage: str | None = None) -> list[SampleRow]:
    """Every rollout of the run (or of one stage), with its round and judges' scores."""
    rows = []
    for row in store.rollout_rows(stage):
        rollout = row["rollout"]
        judges = {name: (j.valid, j.score, j.reward) for name, j in rollout.judgments.items()}
        rows.append(SampleRow(row["id"], row["stage"], stage_round(row["stage"], row["round"]), rollout, judges))
    return rows


@dataclass
class Filters:
    """What the samples list is narrowed to and sorted by (the page's query parameters)."""

    stage: str | None = None
    round: int | None = None
    condition: str | None = None
    validity: str | None = None          # valid | invalid | unjudged
    judge: str | None = None             # whose score the range and the score sort use
    score_min: float | None = None
    score_max: float | None = None
    sort: str | None = None              # reward | score | (None: as saved)
    order: str = "desc"


def filter_rows(rows: list[SampleRow], f: Filters) -> list[SampleRow]:
    """The rows `f` keeps, sorted as it asks; rows without the sort key go last."""
    kept = []
    for row in rows:
        if f.stage and row.stage != f.stage:
            continue
        if f.round is not None and row.round != f.round:
            continue
        if f.condition and row.rollout.condition != f.condition:
            continue
        if f.validity and row.validity != f.validity:
            continue
        if f.judge and f.judge not in row.judges:
            continue
        if f.score_min is not None or f.score_max is not None:
            score = row.score(f.judge)
            if score is None or (f.score_min is not None and score < f.score_min) or (
                    f.score_max is not None and score > f.score_max):
                continue
        kept.append(row)
    if f.sort in ("reward", "score"):
        def key(row: SampleRow) -> float | None:
            return row.reward if f.sort == "reward" else row.score(f.judge)

        known = [r for r in kept if key(r) is not None]
        known.sort(key=key, reverse=f.order != "asc")  # type: ignore[arg-type, return-value]
        kept = known + [r for r in kept if key(r) is None]
    return kept


def word_diff(old: str, new: str) -> list[tuple[str, str]]:
    """y0 -> y1 as (op, text) pieces, op one of equal / delete / insert, by words (spaces
    and punctuation kept as their own tokens, so the pieces join back into either text)."""
    a, b = _tokens(old), _tokens(new)
    pieces: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(("equal", "".join(a[i1:i2])))
            continue
        if op in ("delete", "replace"):
            pieces.append(("delete", "".join(a[i1:i2])))
        if op in ("insert", "replace"):
            pieces.append(("insert", "".join(b[j1:j2])))
    return pieces


def _tokens(text: str) -> list[str]:
    return re.findall(r"\s+|\w+|[^\w\s]", text or "")


#: How many cached calls to show per text (a replay model may give one answer to many calls).
CALLS_PER_TEXT = 3
#: Characters of a text searched for in the cache: enough to be distinctive, and a prefix
#: of the model's answer even where the rollout kept it stripped.
_NEEDLE = 200


def calls_behind(store: RunStore, rollout: Rollout) -> list[dict[str, Any]]:
    """The cached model calls that produced this rollout's texts: y0, the critique, y1 and
    each judge's answer. Each: {"role", "found": [call, ...], "more": n} with calls as
    `store.cached_calls` gives them. Where several calls gave the same text (a replay model,
    a short answer), those whose request holds the most of what that call must have been
    shown (the prompt; then y0, the critique) are the ones kept."""
    x, y0, c, y1 = rollout.x, rollout.y0, rollout.c, rollout.y1
    texts = [("actor: initial response y0", y0, [x]), ("critic: critique", c, [x, y0]),
             ("actor: revision y1", y1, [x, y0, c])]
    texts += [(f"judge: {name}", j.raw, [x, y1 if y1 and not name.endswith("_y0") else y0])
              for name, j in rollout.judgments.items()]
    seen: set[tuple[str, int]] = set()
    out = []
    for role, text, context in texts:
        needle = (text or "").strip()[:_NEEDLE]
        if not needle:
            continue
        calls = store.cached_calls(output_contains=needle, limit=50)
        needles = [n.strip()[:_NEEDLE] for n in context if n and n.strip()]
        ranked = [(sum(n in _request_text(call["request"]) for n in needles), call) for call in calls]
        best = max((rank for rank, _ in ranked), default=0)
        matching = [call for rank, call in ranked if rank == best]
        chosen = [call for call in matching if (call["key"], call["index"]) not in seen][:CALLS_PER_TEXT]
        seen.update((call["key"], call["index"]) for call in chosen)
        out.append({"role": role, "found": chosen, "more": max(0, len(matching) - len(chosen))})
    return out


def _request_text(request: dict[str, Any] | None) -> str:
    if not request:
        return ""
    return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m)
                     for m in request.get("messages") or [])


def judgment_view(name: str, judgment: Any) -> dict[str, Any]:
    """A judgment for the page: its numbers, per-criterion (score, reason) rows, the reasons
    no score goes with (a pairwise judge's shown order) and its extra fields."""
    criteria = [{"name": k, "score": v, "reason": judgment.reasons.get(k, "")} for k, v in judgment.scores.items()]
    other = {k: v for k, v in judgment.reasons.items() if k not in judgment.scores}
    return {"name": name, "j": judgment, "criteria": criteria, "other_reasons": other,
            "extra": dict(judgment.model_extra or {})}


# ─── routes ─────────────────────────────────────────────────────────────────────────


def _number(name: str, value: str | None, kind: type = float) -> Any:
    """A query parameter as a number; '' is 'not given'; anything else is a 400 naming it."""
    if value is None or value.strip() == "":
        return None
    try:
        return kind(value)
    except ValueError:
        raise HTTPException(status_code=400, detail=f"{name} must be a number, not {value!r}") from None


@router.get("/runs/{run_id}/samples")
def samples_page(request: Request, run_id: str, stage: str = "", round: str = "", condition: str = "",
                 validity: str = "", judge: str = "", score_min: str = "", score_max: str = "",
                 sort: str = "", order: str = "desc", page: int = 1):
    """Every rollout of every stage, filtered and sorted by the query parameters."""
    from coevo.view.context import reading, render

    if validity not in ("", "valid", "invalid", "unjudged"):
        raise HTTPException(status_code=400, detail=f"validity must be valid, invalid or unjudged, not {validity!r}")
    if sort not in ("", "reward", "score"):
        raise HTTPException(status_code=400, detail=f"sort must be reward or score, not {sort!r}")
    f = Filters(stage=stage or None, round=_number("round", round, int), condition=condition or None,
                validity=validity or None, judge=judge or None, score_min=_number("score_min", score_min),
                score_max=_number("score_max", score_max), sort=sort or None,
                order="asc" if order == "asc" else "desc")
    with reading(request, run_id) as store:
        rows = sample_rows(store)
    kept = filter_rows(rows, f)
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = min(max(1, page), pages)
    facets = {
        "stages": list(dict.fromkeys(r.stage for r in rows)),
        "rounds": sorted({r.round for r in rows if r.round is not None}),
        "conditions": sorted({r.rollout.condition for r in rows}),
        "judges": sorted({name for r in rows for name in r.judges}),
    }
    query = {k: v for k, v in request.query_params.items() if k != "page"}
    return render(request, "samples.html", run_id=run_id, active="samples", filters=f, facets=facets,
                  rows=kept[(page - 1) * PAGE_SIZE: page * PAGE_SIZE], total=len(rows), matched=len(kept),
                  page=page, pages=pages, query=query, snippet=snippet)


@router.get("/runs/{run_id}/samples/{rollout_id}")
def sample_page(request: Request, run_id: str, rollout_id: int):
    """One rollout: x, y0, critique, y1 side by side, the y0 -> y1 diff, judges, calls."""
    from coevo.view.context import reading, render

    with reading(request, run_id) as store:
        row = store.rollout_row(rollout_id)
        if row is None:
            raise HTTPException(status_code=404, detail=f"run {run_id!r} has no rollout {rollout_id}; "
                                f"see /runs/{run_id}/samples")
        rollout = row["rollout"]
        calls = calls_behind(store, rollout)
        related = [SampleRow(r["id"], r["stage"], stage_round(r["stage"], r["round"]), r["rollout"])
                   for r in store.rollouts_of_sample(rollout.sample_id, limit=51) if r["id"] != rollout_id][:50]
    judges = [judgment_view(name, j) for name, j in rollout.judgments.items()]
    diff = word_diff(rollout.y0, rollout.y1) if rollout.y1 is not None else None
    return render(request, "sample.html", run_id=run_id, active="samples", row=row, rollout=rollout,
                  round=stage_round(row["stage"], row["round"]), judges=judges, diff=diff, calls=calls,
                  related=related, snippet=snippet)
