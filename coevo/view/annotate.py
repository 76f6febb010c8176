"""Blind pairwise human annotation in the viewer: the labels, who made them, and the pages.

Pick a stage; get its pairs (coevo.view.annotate_pairs) one at a time, the judges' verdicts
hidden; press A, B or tie (buttons, or the keys a / b / t). Each label is saved at once into
the run store (records kind "annotation", one per annotator and pair), so closing the page
loses nothing and coming back resumes at the first pair not yet labelled. Labelling a pair
again replaces its label (the earlier ones kept in the record's `history`); the review page
lists a person's labels, each with a link to change it and an undo that deletes it.

Blinding: which text is on which side is drawn at random the first time a pair is served to
a person and kept on the server, in a record (kind "annotation_served") under an opaque
random token; the page holds only that token, and a label is taken only with a token the
server handed out (400 otherwise). Pair urls name the pair, so the browser's Back shows the
pair labelled last, whose label can then be changed; the pages are not cached.

Two conditions' final answers (`vs_condition`, the TAIScore paper's Table 2) are offered as
`coevo view` was told (`create_app`'s `comparisons`: --conditions, --against, --prompts), each
comparison under an opaque id, so that neither the page nor its url names a condition.

Several people can label the same run: each is asked their name once (kept in a cookie; the
`annotator` url parameter switches) and sees their own progress. `coevo eval annotations`
(coevo.view.annotate_export) writes each one's labels, their majority vote and Fleiss' κ.
"""

from __future__ import annotations

import json
import re
import secrets
import shlex
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request

from coevo.eval.annotators import DEFAULT_ANNOTATOR
from coevo.view.annotate_conditions import ComparisonSpec, run_comparisons
from coevo.view.annotate_pairs import (
    KIND,
    KIND_TITLES,
    PAIR_KINDS,
    Pair,
    annotator_of,
    labels_by_annotator,
    queue,
    round0_stage,
    store_pairs,
)

if TYPE_CHECKING:
    from pathlib import Path

    from fastapi.responses import Response

    from coevo.store import RunStore

router = APIRouter()

#: Server-side side mapping of served pairs: token -> {pair, stage, kind, left, annotator, seed}.
SERVED = "annotation_served"
LABELS = ("A", "B", "tie")
#: The cookie that remembers who is labelling in this browser.
COOKIE = "coevo_annotator"
#: An annotator name: it names files (human_NAME.jsonl), so letters, digits, _ . - only.
_ANNOTATOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: Every annotation page shows what the store holds now: Back must fetch it again, not
#: bring back a copy whose buttons were already used.
_NO_STORE = {"Cache-Control": "no-store"}


def check_annotator(name: str) -> str:
    """`name` if it is a usable annotator name, else ValueError saying what one looks like."""
    if not _ANNOTATOR_RE.fullmatch(name):
        raise ValueError(f"annotator must be 1-64 letters, digits, _ . or - (e.g. alice or {DEFAULT_ANNOTATOR}), "
                         f"not {name!r}")
    return name


def record_key(pair_key: str, annotator: str) -> str:
    """The store key of one annotator's label of a pair. The default annotator's key is the
    pair's own, as it was before annotators had names, so an old label and a new one of the
    same pair are one record."""
    return pair_key if annotator == DEFAULT_ANNOTATOR else f"{pair_key}#annotator={annotator}"


def labels(store: RunStore, stage: str | None = None,
           annotator: str = DEFAULT_ANNOTATOR) -> dict[str, dict[str, Any]]:
    """One annotator's labels saved so far (pair key -> record), of one stage or all."""
    return labels_by_annotator(store, stage).get(annotator, {})


def compared_pairs(store: RunStore, spec: ComparisonSpec | None = None) -> dict[str, list[Pair]]:
    """The run's `vs_condition` pairs by comparison id, as `spec` (the viewer's --conditions,
    --against, --prompts) asks; none where the run has nothing to compare."""
    from coevo.tasks.errors import DataError

    try:
        return {cid: pairs for cid, (_, pairs) in run_comparisons(store, spec or ComparisonSpec()).items()}
    except (DataError, FileNotFoundError):  # checked when the viewer started: a run changed since offers none
        return {}


def stages_overview(store: RunStore, seed: int = 0, annotator: str | None = DEFAULT_ANNOTATOR,
                    compared: dict[str, list[Pair]] | None = None) -> list[dict[str, Any]]:
    """Per stage and kind with pairs: how many pairs there are and how many `annotator` has
    labelled; `headline` marks the last round's `vs_round0` pairs (win_rate_vs_round0's).
    `compared`: the `vs_condition` pairs by comparison id, listed last, under their ids."""
    done = labels(store, annotator=annotator) if annotator else {}
    out = []
    for stage, _ in store.rollout_stages():
        for kind, pairs in store_pairs(store, stage, seed).items():
            if pairs:
                out.append({"stage": stage, "kind": kind, "pairs": len(pairs), "headline": False,
                            "labelled": sum(p.key in done for p in pairs)})
    for stage, pairs in (compared or {}).items():
        if pairs:
            out.append({"stage": stage, "kind": "vs_condition", "pairs": len(pairs), "headline": False,
                        "labelled": sum(p.key in done for p in pairs)})
    last: dict[str | None, dict[str, Any]] = {}
    for row in out:
        if row["kind"] == "vs_round0":
            # Stages come in the order they began: a condition's last one seen is its last round.
            last[round0_stage(row["stage"])] = row
    for row in last.values():
        row["headline"] = True
    return out


def label_record(pair: Pair, left: str, label: str, seed: int, annotator: str = DEFAULT_ANNOTATOR,
                 earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """The store record of one label: who, what was shown where, the choice, its winner, and
    (`earlier`: the label it replaces) the labels it replaced, oldest first."""
    check_annotator(annotator)
    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    if left not in pair.candidates:
        raise ValueError(f"left must be one of {pair.candidates}, not {left!r}")
    right = pair.candidates[1 - pair.candidates.index(left)]
    winner = {"A": left, "B": right, "tie": "tie"}[label]
    history = []
    if earlier:
        history = [*earlier.get("history", []),
                   {k: earlier.get(k) for k in ("label", "winner", "left", "labelled_at")}]
    return {"pair": pair.key, "stage": pair.stage, "kind": pair.kind, "candidates": list(pair.candidates),
            "rollout_ids": list(pair.rollout_ids), "left": left, "right": right, "label": label,
            "winner": winner, "seed": seed, "annotator": annotator,
            "labelled_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "history": history}


def _writing(run_dir: str | Path):
    # The viewer reads through read-only stores; its writes (labels, served pairs) go through
    # a writable store opened for each and closed at once (SQLite's WAL lets it go beside a
    # run that is still writing).
    from coevo.store import RunStore

    return RunStore(run_dir)


def save_label(run_dir: str | Path, record: dict[str, Any]) -> None:
    """Write one label into the run's store (replacing the annotator's earlier one)."""
    store = _writing(run_dir)
    try:
        store.put_record(KIND, record_key(record["pair"], annotator_of(record)), record)
    finally:
        store.close()


def delete_label(run_dir: str | Path, pair_key: str, annotator: str) -> bool:
    """Delete `annotator`'s label of a pair (undo); whether there was one."""
    store = _writing(run_dir)
    try:
        return store.delete_record(KIND, record_key(pair_key, annotator))
    finally:
        store.close()


def served(store: RunStore, run_dir: str | Path, pair: Pair, annotator: str, seed: int) -> tuple[str, str]:
    """(token, left candidate) of `pair` as served to `annotator`: the one drawn the first
    time it was served to them, else a new random side under a new unguessable token."""
    for token, record in store.get_records(SERVED):
        if record.get("pair") == pair.key and record.get("annotator") == annotator:
            return token, record["left"]
    token, left = secrets.token_urlsafe(18), secrets.choice(pair.candidates)
    writer = _writing(run_dir)
    try:
        writer.put_record(SERVED, token, {"pair": pair.key, "stage": pair.stage, "kind": pair.kind, "left": left,
                                          "annotator": annotator, "seed": seed,
                                          "served_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    finally:
        writer.close()
    return token, left


def shown_label(record: dict[str, Any] | None, left: str) -> str | None:
    """A stored label in the terms of a page whose left text is `left`: "A", "B" or "tie"."""
    if record is None:
        return None
    return "tie" if record["winner"] == "tie" else ("A" if record["winner"] == left else "B")


# ─── routes ─────────────────────────────────────────────────────────────────────────


def _spec(request: Request) -> ComparisonSpec:
    return getattr(request.app.state, "comparisons", None) or ComparisonSpec()


def _pairs_of(request: Request, store: RunStore, stage: str, kind: str, seed: int) -> list[Pair]:
    if kind not in PAIR_KINDS:
        raise HTTPException(status_code=400, detail=f"kind must be one of {', '.join(PAIR_KINDS)}, not {kind!r}")
    if kind == "vs_condition":
        compared = compared_pairs(store, _spec(request))
        if stage not in compared:
            raise HTTPException(status_code=404, detail=f"no comparison {stage!r} in this run; its comparisons: "
                                f"{', '.join(compared) or 'none'} (the Annotate page lists them)")
        return queue(compared[stage], seed)
    stages = [s for s, _ in store.rollout_stages()]
    if stage not in stages:
        raise HTTPException(status_code=404, detail=f"no stage {stage!r} with rollouts in this run; "
                            f"its stages: {', '.join(stages) or 'none'}")
    return queue(store_pairs(store, stage, seed)[kind], seed)  # type: ignore[index]


def _who(request: Request, given: str) -> str | None:
    """The annotator: the `annotator` parameter (400 when malformed), else the cookie's, else
    None (the page asks)."""
    if given:
        try:
            return check_annotator(given)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
    remembered = request.cookies.get(COOKIE, "")
    return remembered if _ANNOTATOR_RE.fullmatch(remembered) else None


def _remember(response: Response, given: str, annotator: str | None) -> Response:
    for name, value in _NO_STORE.items():
        response.headers[name] = value
    if given and annotator:  # named in the url: this browser labels under that name from now on
        response.set_cookie(COOKIE, annotator, max_age=365 * 24 * 3600, samesite="lax")
    return response


@router.get("/runs/{run_id}/annotate")
def annotate_page(request: Request, run_id: str, stage: str = "", kind: str = "revision", seed: int = 0,
                  annotator: str = "", pair: str = ""):
    """Without a stage: the stages to annotate, with the annotator's progress. With one and no
    `pair`: a redirect to the next pair the annotator has not labelled (the stage's "all
    labelled" page when none is left). With `pair`: that pair, with its label if it has one."""
    from fastapi.responses import RedirectResponse

    from coevo.view.context import reading, render, run_path

    given, who = annotator, _who(request, annotator)
    run_dir = run_path(request, run_id)
    common = {"run_id": run_id, "active": "annotate", "needs_plotly": False, "seed": seed, "annotator": who,
              "kind_titles": KIND_TITLES, "run_dir": shlex.quote(str(run_dir))}
    with reading(request, run_id) as store:
        if not stage:
            everyone = labels_by_annotator(store)
            page = render(request, "annotate.html", stage=None,
                          overview=stages_overview(store, seed, who, compared_pairs(store, _spec(request))),
                          total_labels=store.record_count(KIND), mine=len(everyone.get(who or "", {})),
                          annotators={name: len(done) for name, done in everyone.items()}, **common)
            return _remember(page, given, who)
        pairs = _pairs_of(request, store, stage, kind, seed)
        if who is None:
            return _remember(render(request, "annotate.html", stage=stage, kind=kind, ask_name=True, pair_key=pair,
                                    **common), given, who)
        done = labels(store, stage, who)
        todo = [p for p in pairs if p.key not in done]
        if not pair and todo:
            query = {"stage": stage, "kind": kind, **({"seed": seed} if seed else {}),
                     **({"annotator": given} if given else {}), "pair": todo[0].key}
            return _remember(RedirectResponse(f"/runs/{run_id}/annotate?{urlencode(query)}", status_code=303),
                             given, who)
        shown = next((p for p in pairs if p.key == pair), None)
        if pair and shown is None:
            raise HTTPException(status_code=404, detail=f"stage {stage!r} has no {kind} pair {pair!r}")
        token = left = right = None
        if shown is not None:
            token, left = served(store, run_dir, shown, who, seed)
            right = shown.candidates[1 - shown.candidates.index(left)]
    page = render(request, "annotate.html", stage=stage, kind=kind, pair=shown, token=token, left=left, right=right,
                  current=shown_label(done.get(shown.key) if shown else None, left or ""),
                  labelled=len(pairs) - len(todo), total=len(pairs), todo=len(todo), ask_name=False, **common)
    return _remember(page, given, who)


async def _form(request: Request) -> tuple[dict[str, Any], bool]:
    body = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            form = json.loads(body or b"{}")
        except json.JSONDecodeError as exc:
            raise HTTPException(status_code=400, detail=f"the body is not JSON: {exc}") from None
        if not isinstance(form, dict):
            raise HTTPException(status_code=400, detail="the body must be a JSON object: {\"token\", \"label\"}")
        return form, True
    from urllib.parse import parse_qs

    return {k: v[-1] for k, v in parse_qs(body.decode("utf-8"), keep_blank_values=True).items()}, False


@router.post("/runs/{run_id}/annotate/label")
async def annotate_label(request: Request, run_id: str):
    """Save one label (form or JSON: `token`, the pair page's, and `label`: A, B or tie), then
    go on to the next pair (303 to the stage's queue; JSON in, JSON out). A token this viewer
    did not serve is refused (400): the side a label means is known only for a served pair."""
    from fastapi.responses import JSONResponse, RedirectResponse

    from coevo.view.context import reading, run_path

    form, is_json = await _form(request)
    missing = [k for k in ("token", "label") if not form.get(k)]
    if missing:
        raise HTTPException(status_code=400, detail=f"a label needs {' and '.join(missing)} (the pair page's "
                            "form sends both)")
    token, label = str(form["token"]), str(form["label"])
    if label not in LABELS:
        raise HTTPException(status_code=400, detail=f"label must be one of {', '.join(LABELS)}, not {label!r}")
    with reading(request, run_id) as store:
        serving = store.get_record(SERVED, token)
        if serving is None:
            raise HTTPException(status_code=400, detail=f"unknown pair token {token[:40]!r}: this viewer takes "
                                "labels only for pairs it served; reload the annotation page and label from it")
        stage, kind, who = serving["stage"], serving["kind"], serving["annotator"]
        pair = next((p for p in _pairs_of(request, store, stage, kind, serving["seed"]) if p.key == serving["pair"]),
                    None)
        earlier = store.get_record(KIND, record_key(serving["pair"], who))
    if pair is None:
        raise HTTPException(status_code=404, detail=f"stage {stage!r} no longer has {kind} pair {serving['pair']!r}")
    record = label_record(pair, serving["left"], label, serving["seed"], who, earlier)
    save_label(run_path(request, run_id), record)
    if is_json:
        # In the page's terms only: the winner's name would say which side was which.
        return JSONResponse({"saved": {k: record[k] for k in ("pair", "label", "annotator", "labelled_at")},
                             "replaced": shown_label(earlier, serving["left"])})
    seed = serving["seed"]
    query = urlencode({"stage": stage, "kind": kind, **({"seed": seed} if seed else {}), "annotator": who})
    return RedirectResponse(f"/runs/{run_id}/annotate?{query}", status_code=303)


@router.get("/runs/{run_id}/annotate/review")
def annotate_review(request: Request, run_id: str, annotator: str = ""):
    """The annotator's labels, newest first: the pair, the text they preferred, when, a link
    to change it and an undo."""
    from coevo.view.context import reading, render

    given, who = annotator, _who(request, annotator)
    rows = []
    with reading(request, run_id) as store:
        mine = labels(store, annotator=who) if who else {}
        pairs: dict[str, Pair] = {}
        for stage in sorted({record["stage"] for record in mine.values()}):
            for kind_pairs in store_pairs(store, stage, limit=None).values():
                pairs.update((p.key, p) for p in kind_pairs)
        if any(record["kind"] == "vs_condition" for record in mine.values()):
            for kind_pairs in compared_pairs(store, _spec(request)).values():
                pairs.update((p.key, p) for p in kind_pairs)
    for key, record in sorted(mine.items(), key=lambda item: item[1].get("labelled_at", ""), reverse=True):
        pair = pairs.get(key)
        winner = record["winner"]
        rows.append({"key": key, "stage": record["stage"], "kind": record["kind"], "x": pair.x if pair else None,
                     "tie": winner == "tie", "preferred": pair.text_of(winner) if pair and winner != "tie" else None,
                     "other": (pair.text_of(pair.candidates[1 - pair.candidates.index(winner)])
                               if pair and winner != "tie" else None),
                     "changes": len(record.get("history", [])), "at": record.get("labelled_at", ""),
                     "change": f"/runs/{run_id}/annotate?" + urlencode(
                         {"stage": record["stage"], "kind": record["kind"], "pair": key})})
    page = render(request, "annotate_review.html", run_id=run_id, active="annotate", needs_plotly=False,
                  annotator=who, rows=rows)
    return _remember(page, given, who)


@router.post("/runs/{run_id}/annotate/undo")
async def annotate_undo(request: Request, run_id: str):
    """Delete one of the annotator's labels (form: `pair`; the annotator from the cookie or
    an `annotator` field), then back to the review list."""
    from fastapi.responses import RedirectResponse

    from coevo.view.context import run_path

    form, _ = await _form(request)
    who = _who(request, str(form.get("annotator") or ""))
    if who is None:
        raise HTTPException(status_code=400, detail="whose label? give your annotator name (the annotate page asks)")
    key = str(form.get("pair") or "")
    if not delete_label(run_path(request, run_id), key, who):
        raise HTTPException(status_code=404, detail=f"{who} has no label of pair {key!r} to undo")
    return RedirectResponse(f"/runs/{run_id}/annotate/review?{urlencode({'annotator': who})}", status_code=303)


@router.get("/runs/{run_id}/annotate/export")
def annotate_export(request: Request, run_id: str, stage: str = "", file: str = "human", judge: str = "",
                    annotator: str = ""):
    """The labels (`file=human`: one annotator's with `annotator=NAME`, else everyone's
    majority vote where several labelled) or a judge's scores of the same pairs (`file=judge`,
    the judge `export_annotations` picks, or `judge=NAME`) as JSONL for `coevo eval agreement`."""
    from fastapi.responses import Response

    from coevo.tasks.loaders import DataError
    from coevo.view.annotate_export import annotation_lines
    from coevo.view.context import reading

    if file not in ("human", "judge"):
        raise HTTPException(status_code=400, detail=f"file must be human or judge, not {file!r}")
    chosen_annotator = _who(request, annotator) if annotator else None
    with reading(request, run_id) as store:
        try:
            lines = annotation_lines(store, stage or None, chosen_annotator)
        except DataError as exc:  # several annotators who share no pair: no majority to give
            raise HTTPException(status_code=409, detail=str(exc)) from None
    if not lines.labels:
        raise HTTPException(status_code=404, detail="no annotation to export yet; label pairs first at "
                            f"/runs/{run_id}/annotate")
    if file == "human":
        rows, name = lines.human, f"human_{annotator}.jsonl" if annotator else "human.jsonl"
    else:
        chosen = judge or lines.judge
        if chosen not in lines.judges:
            raise HTTPException(status_code=404, detail=f"no judge {chosen!r} scored the labelled pairs; "
                                f"judges: {', '.join(lines.judges) or 'none'}")
        rows, name = lines.judges[chosen], "judge.jsonl" if not judge else f"judge_{chosen}.jsonl"
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    return Response(body, media_type="application/x-ndjson",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})
