"""The viewer's sample pages: every rollout of every stage, and one rollout in full.

`/runs/{run_id}/samples` lists the rollouts (x -> y0 -> critique -> y1 and their judgments)
of every stage, filterable by stage, round, condition, judge validity and score range and
sortable by reward or score, narrowed to rollouts with a text cut off at its token limit (a
column of the list says which were) or holding a search text. `/runs/{run_id}/samples/{rollout_id}` shows one side by side, with an
inline diff of y0 -> y1, each judge's per-criterion scores and reasons, and the model calls
behind it, filed under the role and stage each call recorded (see `calls_behind`).

The data functions (`sample_rows`, `filter_rows`, `word_diff`, `calls_behind`) take a store
and plain values, so they are tested without a server.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request

from coevo.eval.constraints import CONSTRAINTS
from coevo.roles.parsing import strip_reasoning
from coevo.rundir.store import stage_round
from coevo.view.calls import batch_sizes, call_info, cut_off_texts

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore
    from coevo.core.types import Rollout

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
    def length(self) -> str:
        """The answer's length in characters, `y0 → y1` where it was revised (a revision that
        only grows is a sign a judge pays for length)."""
        y0 = len(self.rollout.y0 or "")
        return f"{y0}" if self.rollout.y1 is None else f"{y0} → {len(self.rollout.y1)}"

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
    cut_off: str | None = None           # yes: some text came from a call cut off at its limit | no
    search: str | None = None            # a substring of x, y0, the critique or y1 (any case)


def filter_rows(rows: list[SampleRow], f: Filters,
                cut_texts: set[tuple[str, str]] | None = None) -> list[SampleRow]:
    """The rows `f` keeps, sorted as it asks; rows without the sort key go last.
    `cut_texts`: the run's `calls.cut_off_texts`, needed by the cut-off filter."""
    needle = f.search.casefold() if f.search else None
    kept = []
    for row in rows:
        if f.cut_off and (cut_off_row(row.rollout, cut_texts or set()) != (f.cut_off == "yes")):
            continue
        if needle and not any(needle in (text or "").casefold()
                              for text in (row.rollout.x, row.rollout.y0, row.rollout.c, row.rollout.y1)):
            continue
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


def cut_off_row(rollout: Rollout, cut_texts: set[tuple[str, str]]) -> bool:
    """Whether any text of the rollout came from a call cut off at its token limit: its y0,
    critique or y1 from a call of that step, a judgment from its judge's call, or any of
    them from a call that records no step (older runs)."""
    texts = {"y0": rollout.y0, "c": rollout.c, "y1": rollout.y1}
    for part, text in texts.items():
        text = (text or "").strip()
        if text and ((part, text) in cut_texts or ("any", text) in cut_texts):
            return True
    for name, judgment in rollout.judgments.items():
        raw = (judgment.raw or "").strip()
        if raw and ((f"judge:{judgment.judge or name}", raw) in cut_texts or ("any", raw) in cut_texts):
            return True
    return False


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
#: Characters of a text searched for in the cache: enough to be distinctive, and found in
#: the model's answer even where the rollout kept it with its reasoning stripped.
_NEEDLE = 200
#: Cached calls read per text before ranking them (tagged calls are few per role and text).
_CANDIDATES = 200


@dataclass
class Slot:
    """One text of a rollout and what the call that made it must record."""

    label: str                       # what the text is: "initial response y0", "judgment gold_rubric_y0"
    text: str | None
    tags: dict[str, str | list[str]]  # the recorded tags a call needs to have made it
    role: str                        # the role to name where no call records one (older runs)
    context: list[str | None]        # texts that call's prompt held (to rank calls with equal answers)
    #: A pairwise judgment's two responses in the order the judge was shown them (empty: unknown).
    shown: list[str] = field(default_factory=list)
    #: Texts of the rollout that judge was NOT shown (a judgment against round 0 never saw y1).
    absent: list[str] = field(default_factory=list)
    note: str = ""                   # what the judgment compared, in words


#: What a pairwise judgment's shown-order labels stand for: a text of its rollout, or "round0",
#: π_0's answer to the same prompt (TAIScore's win rate; read from the round-0 eval stage).
PAIR_TEXTS = {"y0": "y0", "y1": "y1", "current": "y0", "round0": "round0"}


def rollout_slots(rollout: Rollout, round0: str | None = None) -> list[Slot]:
    """y0, the critique, y1 and each judgment, with the step (or judge) that makes each.
    `round0`: π_0's answer to this prompt, which a `pairwise_vs_round0` judgment compared."""
    x, y0, c, y1 = rollout.x, rollout.y0, rollout.c, rollout.y1
    slots = [Slot("initial response y0", y0, {"step": "respond"}, "actor", [x]),
             Slot("critique", c, {"step": "critique"}, "critic", [x, y0]),
             # The no-critique control revises with a template of its own: a step of its own.
             Slot("revision y1", y1, {"step": "revise" if c is not None else "revise_no_critique"}, "actor",
                  [x, y0, c])]
    # Constraint checks and `python:` scorers are code: no model call stands behind them.
    slots += [_judgment_slot(name, j, rollout, round0)
              for name, j in rollout.judgments.items() if j.source == "model" and j.judge != CONSTRAINTS]
    return slots


def _judgment_slot(name: str, judgment: Any, rollout: Rollout, round0: str | None) -> Slot:
    """A judgment's slot. A pairwise judgment records the labels of the two responses in the
    order it was shown them: its call must hold those texts in that order and none of the
    rollout's others (round 0's answer against this round's is not y0 against y1, though
    both are this judge's calls in this stage, and give the same one-token answer)."""
    x, y0, y1 = rollout.x, rollout.y0, rollout.y1
    judge = judgment.judge or name
    labels = (judgment.model_extra or {}).get("shown_order")
    slot = Slot(f"judgment {name}", judgment.raw, {"role": f"judge:{judge}"}, f"judge:{judge}",
                [x, y1 if y1 and not name.endswith("_y0") else y0])
    if not (isinstance(labels, list) and len(labels) == 2 and all(label in PAIR_TEXTS for label in labels)):
        return slot
    texts = {"y0": y0, "y1": y1, "round0": round0}
    shown = [texts[PAIR_TEXTS[label]] for label in labels]
    slot.context = [x, *shown]
    slot.shown = [t for t in shown if t] if all(shown) else []
    slot.absent = [t for t in (y0, y1) if t and t.strip() and t not in shown]
    words = {"round0": "round 0's answer", "current": "this round's answer y0", "y0": "y0", "y1": "y1"}
    slot.note = f"The judge was shown {words[labels[0]]} first, then {words[labels[1]]}."
    return slot


def round0_answer(store: RunStore, rollout: Rollout, stage: str | None) -> str | None:
    """π_0's answer to this rollout's prompt (the y0 saved in the round-0 eval stage beside
    `stage`): what a `pairwise_vs_round0` judgment compared this round's answer with."""
    if not stage or not any((j.model_extra or {}).get("shown_order") and "round0" in j.model_extra["shown_order"]
                            for j in rollout.judgments.values()):
        return None
    base_stage = re.sub(r"round\d+/eval$", "round0/eval", stage)
    return next((row["rollout"].y0 for row in store.rollouts_of_sample(rollout.sample_id, limit=200)
                 if row["stage"] == base_stage and row["rollout"].sample_id == rollout.sample_id), None)


def calls_behind(store: RunStore, rollout: Rollout, stage: str | None = None) -> list[dict[str, Any]]:
    """The cached model calls that produced this rollout's texts: y0, the critique, y1 and
    each judge's answer, each filed under the role and stage the call recorded. Each entry:
    {"label", "role", "stage", "found": [call, ...], "more": n, "by_text": bool}, with calls
    as `store.cached_calls` gives them plus "info" (a CallInfo); a text whose calls came
    from several (role, stage) gets one entry per pair, one with no call an empty "found".

    Only calls recording the step that makes the text (`respond` for y0, `revise` for y1,
    the judge's own name for its answer) can stand behind it, so a revision equal to its
    y0 is filed under the revision. Calls of older runs record nothing: for them (and only
    when no recorded call fits) the calls are found by their answer's text, with
    `by_text` set. Among calls that gave the same answer, those whose request holds the
    most of what that call must have been shown (the prompt; then y0, the critique) are kept,
    and of those the ones made in the rollout's own `stage`, where any was (a replay model or
    a cache hit gives one text to calls of several stages). A pairwise judgment's calls must
    also hold its two responses in the order it recorded and none of the rollout's texts it
    was not shown (`_judgment_slot`): `pairwise_vs_round0` is round 0's answer against this
    round's, not the same judge's y0-against-y1 call of the stage. Each call's "info" also
    says the batch its latency is an average over (`calls.batch_sizes`)."""
    out: list[dict[str, Any]] = []
    seen_by_text: set[tuple[str, int]] = set()
    for slot in rollout_slots(rollout, round0_answer(store, rollout, stage)):
        needle = (slot.text or "").strip()[:_NEEDLE]
        if not needle:
            continue
        calls = []
        if (slot.shown or slot.absent) and stage:  # a pairwise answer is one token: thousands of calls gave it
            calls = store.cached_calls(output_contains=needle, limit=_CANDIDATES, tags={**slot.tags, "stage": stage})
        calls = calls or store.cached_calls(output_contains=needle, limit=_CANDIDATES, tags=slot.tags)
        by_text = not calls
        if by_text:
            calls = [call for call in store.cached_calls(output_contains=needle, limit=50, untagged=True)
                     if (call["key"], call["index"]) not in seen_by_text]
        matching = _best_matches(calls, slot, stage)
        chosen = matching[:CALLS_PER_TEXT]
        if by_text:  # one untagged call is not shown as the maker of two texts
            seen_by_text.update((call["key"], call["index"]) for call in chosen)
        groups: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
        for call in chosen:
            call["info"] = info = call_info(call)
            groups.setdefault((info.role or slot.role, info.stage), []).append(call)
        more = max(0, len(matching) - len(chosen))
        if not groups:
            out.append({"label": slot.label, "role": slot.role, "stage": None, "found": [], "more": 0,
                        "by_text": by_text, "note": slot.note})
        for (role, made_in), found in groups.items():
            out.append({"label": slot.label, "role": role, "stage": made_in, "found": found, "more": more,
                        "by_text": by_text, "note": slot.note})
            more = 0  # said once, under the text's first heading
    batch_sizes(store, [call for piece in out for call in piece["found"]])
    return out


def _best_matches(calls: list[dict[str, Any]], slot: Slot, stage: str | None) -> list[dict[str, Any]]:
    """The calls whose request held the most of `slot.context`; of those, the ones that gave
    exactly the text, and of those, the ones made in `stage`."""
    needles = [n.strip()[:_NEEDLE] for n in slot.context if n and n.strip()]
    text = (slot.text or "").strip()

    ordered = [n.strip()[:_NEEDLE] for n in slot.shown]
    absent = [n.strip()[:_NEEDLE] for n in slot.absent]

    def rank(call: dict[str, Any]) -> tuple[int, bool, bool, bool, bool]:
        shown = _request_text(call["request"])
        answer = call["completion"].strip()
        made_here = stage is not None and ((call["request"] or {}).get("call") or {}).get("stage") == stage
        # A pairwise judgment's responses in the order shown, and none of the texts it never saw.
        in_order = len(ordered) != 2 or -1 < shown.find(ordered[0]) <= shown.rfind(ordered[1])
        unseen = not any(n in shown for n in absent)
        return (sum(n in shown for n in needles), in_order, unseen,
                text in (answer, strip_reasoning(answer).strip()), made_here)

    ranked = [(rank(call), call) for call in calls]
    best = max((r for r, _ in ranked), default=None)
    return [call for r, call in ranked if r == best]


def _request_text(request: dict[str, Any] | None) -> str:
    if not request:
        return ""
    return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m)
                     for m in request.get("messages") or [])


#: What a judgment's numbers are, beside each other on the sample page.
SCORE_WORDS = {
    "sampled": "the score the judge wrote: the integer (or answer) in its sampled text; for several "
               "criteria, their weighted mean",
    "expected": "the probability-weighted mean over the score's tokens (G-Eval): Σ p(v)·v over the answers "
                "v the judge could have written at that position, from the backend's log-probabilities; "
                "it differs from the sampled score by how unsure the judge was (— where the backend gave "
                "no log-probabilities)",
    "criteria": "each criterion's score as the judge wrote it (sampled integers); the judgment's expected "
                "score, where there is one, weighs every criterion's score tokens instead",
}


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
                 sort: str = "", order: str = "desc", cut_off: str = "", q: str = "", page: int = 1):
    """Every rollout of every stage, filtered and sorted by the query parameters."""
    from coevo.view.context import reading, render

    if validity not in ("", "valid", "invalid", "unjudged"):
        raise HTTPException(status_code=400, detail=f"validity must be valid, invalid or unjudged, not {validity!r}")
    if sort not in ("", "reward", "score"):
        raise HTTPException(status_code=400, detail=f"sort must be reward or score, not {sort!r}")
    if cut_off not in ("", "yes", "no"):
        raise HTTPException(status_code=400, detail=f"cut_off must be yes or no, not {cut_off!r}")
    f = Filters(stage=stage or None, round=_number("round", round, int), condition=condition or None,
                validity=validity or None, judge=judge or None, score_min=_number("score_min", score_min),
                score_max=_number("score_max", score_max), sort=sort or None,
                order="asc" if order == "asc" else "desc", cut_off=cut_off or None, search=q.strip() or None)
    with reading(request, run_id) as store:
        rows = sample_rows(store)
        # The cut-off calls only (one query): the filter and the list's "cut off" column.
        cut_texts = cut_off_texts(store)
        calls_kept = store.cache_size() > 0  # without a cache, nothing is known about cut-offs
    kept = filter_rows(rows, f, cut_texts)
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = min(max(1, page), pages)
    facets = {
        "stages": list(dict.fromkeys(r.stage for r in rows)),
        "rounds": sorted({r.round for r in rows if r.round is not None}),
        "conditions": sorted({r.rollout.condition for r in rows}),
        "judges": sorted({name for r in rows for name in r.judges}),
    }
    query = {k: v for k, v in request.query_params.items() if k != "page"}
    shown = kept[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
    cut = {row.id: cut_off_row(row.rollout, cut_texts) if calls_kept else None for row in shown}
    return render(request, "samples.html", run_id=run_id, active="samples", filters=f, facets=facets,
                  rows=shown, total=len(rows), matched=len(kept), cut=cut,
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
        calls = calls_behind(store, rollout, row["stage"])
        related = [SampleRow(r["id"], r["stage"], stage_round(r["stage"], r["round"]), r["rollout"])
                   for r in store.rollouts_of_sample(rollout.sample_id, limit=51) if r["id"] != rollout_id][:50]
    judges = [judgment_view(name, j) for name, j in rollout.judgments.items()]
    diff = word_diff(rollout.y0, rollout.y1) if rollout.y1 is not None else None
    return render(request, "sample.html", run_id=run_id, active="samples", row=row, rollout=rollout,
                  round=stage_round(row["stage"], row["round"]), judges=judges, diff=diff, calls=calls,
                  related=related, snippet=snippet, score_words=SCORE_WORDS)
