"""Blind pairwise human annotation in the viewer: the labels, who made them, and the pages.

Pick a batch (a stage's pairs of one kind); get its pairs (coevo.view.annotate_pairs) one at
a time, the judges' verdicts hidden; press A, B or tie (buttons, or the keys a / b / t). Each
label is saved at once into the run store (records kind "annotation", one per annotator and
pair; coevo.view.annotate_records), so closing the page loses nothing and coming back resumes
at the first pair not yet labelled. Labelling a pair
again replaces its label (the earlier ones kept in the record's `history`); the review page
lists a person's labels, each with a link to change it and an undo that deletes it.

Blinding: which text is on which side is drawn at random the first time a pair is served to
a person and kept on the server, in a record (kind "annotation_served") under an opaque
random token; the page holds only that token, and a label is taken only with a token the
server handed out (400 otherwise). No url, form field or text of these pages names a rollout,
a stage, a condition or a round: a batch (a stage's pairs of one kind, or a comparison of
conditions) and a pair go by opaque ids the server alone reads back (coevo.view.annotate_ids);
the stages behind the batches are listed only to a researcher who asks (`reveal=stages`).
Pair urls name the pair by its id, so the browser's Back shows the pair labelled last, whose
label can then be changed; the pages are not cached. A text that stopped at its token limit
is marked so; a finished batch shows the annotator's agreement with the judge
(coevo.view.annotate_shown).

Two conditions' final answers (`vs_condition`, the TAIScore paper's Table 2) are offered as
`coevo view` was told (`create_app`'s `comparisons`: --conditions, --against, --prompts).

Several people can label the same run: each is asked their name once (kept in a cookie; the
`annotator` url parameter switches) and sees their own progress. `coevo eval annotations`
(coevo.view.annotate_export) writes each one's labels, their majority vote and Fleiss' κ.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Request

from coevo.eval.annotators import DEFAULT_ANNOTATOR
from coevo.eval.metric_defs import MIN_ITEMS
from coevo.view.annotate_conditions import ComparisonSpec, run_comparisons
from coevo.view.annotate_ids import (
    Batch,
    batch_id,
    batch_of,
    find_batch,
    find_pair,
    overview,
    pair_id,
    run_secret,
    stage_batches,
)
from coevo.view.annotate_pairs import KIND, KIND_TITLES, PAIR_KINDS, Pair, labels_by_annotator, queue, store_pairs
from coevo.view.annotate_records import (
    ANNOTATOR_RE,
    LABELS,
    SERVED,
    check_annotator,
    delete_label,
    label_record,
    labels,
    record_key,
    save_label,
    served,
    shown_label,
)

if TYPE_CHECKING:
    from pathlib import Path

    from fastapi.responses import Response

    from coevo.rundir.store import RunStore

router = APIRouter()

#: The cookie that remembers who is labelling in this browser.
COOKIE = "coevo_annotator"
#: Every annotation page shows what the store holds now: Back must fetch it again, not
#: bring back a copy whose buttons were already used.
_NO_STORE = {"Cache-Control": "no-store"}


def compared_pairs(store: RunStore, spec: ComparisonSpec | None = None) -> dict[str, list[Pair]]:
    """The run's `vs_condition` pairs by comparison id, as `spec` (the viewer's --conditions,
    --against, --prompts) asks, or an annotation folder's own (`coevo annotate FILE`: its two
    systems on every row); none where the run has nothing to compare."""
    from coevo.tasks.errors import DataError
    from coevo.view.annotate_file import file_spec

    try:
        return {cid: pairs for cid, (_, pairs) in
                run_comparisons(store, file_spec(store) or spec or ComparisonSpec()).items()}
    except (DataError, FileNotFoundError):  # checked when the viewer started: a run changed since offers none
        return {}


def stages_overview(store: RunStore, secret: bytes, seed: int = 0, annotator: str | None = DEFAULT_ANNOTATOR,
                    compared: dict[str, list[Pair]] | None = None) -> list[dict[str, Any]]:
    """Per batch with pairs (annotate_ids.overview): its id, stage, kind, how many pairs and
    how many `annotator` has labelled."""
    return overview(store, secret, seed, labels(store, annotator=annotator) if annotator else {}, compared)


# ─── routes ─────────────────────────────────────────────────────────────────────────


def _spec(request: Request) -> ComparisonSpec:
    return getattr(request.app.state, "comparisons", None) or ComparisonSpec()


def _batch(request: Request, store: RunStore, secret: bytes, wanted: str) -> Batch:
    """The batch whose id is `wanted` (404 naming where the batches are listed)."""
    found = find_batch(stage_batches(store, secret), wanted)
    if found is None:  # a comparison of conditions: its pairs are worked out only where asked for
        found = find_batch(stage_batches(store, secret, list(compared_pairs(store, _spec(request)))), wanted)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no batch {wanted!r} in this run; the Annotate page lists "
                            "its batches")
    return found


def _stage_batch(request: Request, store: RunStore, secret: bytes, stage: str, kind: str) -> Batch:
    """The batch of a stage and kind (a researcher's link names them): 400 for an unknown
    kind, 404 for a stage (or comparison) the run does not have."""
    if kind not in PAIR_KINDS:
        raise HTTPException(status_code=400, detail=f"kind must be one of {', '.join(PAIR_KINDS)}, not {kind!r}")
    if kind == "vs_condition":
        compared = compared_pairs(store, _spec(request))
        if stage not in compared:
            raise HTTPException(status_code=404, detail=f"no comparison {stage!r} in this run; its comparisons: "
                                f"{', '.join(compared) or 'none'} (the Annotate page lists them)")
    else:
        stages = [s for s, _ in store.rollout_stages()]
        if stage not in stages:
            raise HTTPException(status_code=404, detail=f"no stage {stage!r} with rollouts in this run; "
                                f"its stages: {', '.join(stages) or 'none'}")
    return batch_of(secret, stage, kind)


def _pairs_of(request: Request, store: RunStore, batch: Batch, seed: int) -> list[Pair]:
    if batch.kind == "vs_condition":
        return queue(compared_pairs(store, _spec(request)).get(batch.stage, []), seed)
    return queue(store_pairs(store, batch.stage, seed)[batch.kind], seed)  # type: ignore[index]


def batch_url(run_id: str, batch: str, seed: int = 0, annotator: str = "", pair: str = "") -> str:
    """The url of a batch (its next unlabelled pair) or of one of its pairs: ids only."""
    query = {"batch": batch, **({"seed": seed} if seed else {}), **({"annotator": annotator} if annotator else {}),
             **({"pair": pair} if pair else {})}
    return f"/runs/{run_id}/annotate?{urlencode(query)}"


def _who(request: Request, given: str) -> str | None:
    """The annotator: the `annotator` parameter (400 when malformed), else the cookie's, else
    None (the page asks)."""
    if given:
        try:
            return check_annotator(given)
        except ValueError as exc:
            raise HTTPException(status_code=400, detail=str(exc)) from None
    remembered = request.cookies.get(COOKIE, "")
    return remembered if ANNOTATOR_RE.fullmatch(remembered) else None


def _remember(response: Response, given: str, annotator: str | None) -> Response:
    for name, value in _NO_STORE.items():
        response.headers[name] = value
    if given and annotator:  # named in the url: this browser labels under that name from now on
        response.set_cookie(COOKIE, annotator, max_age=365 * 24 * 3600, samesite="lax")
    return response


@router.get("/runs/{run_id}/annotate")
def annotate_page(request: Request, run_id: str, batch: str = "", seed: int = 0, annotator: str = "",
                  pair: str = "", stage: str = "", kind: str = "revision", reveal: str = ""):
    """Without a batch: the batches to annotate, with the annotator's progress (their stages
    only with `reveal=stages`). With one and no `pair`: a redirect to the next pair the
    annotator has not labelled (the batch's "all labelled" page, with their agreement with the
    judge, when none is left). With `pair` (a pair id): that pair, with its label if it has
    one. `stage` and `kind` (a researcher's link) redirect to that batch's url."""
    from fastapi.responses import RedirectResponse

    from coevo.view.annotate_shown import batch_agreement, cut_off_sides, cut_texts
    from coevo.view.context import reading, render, run_path

    given, who = annotator, _who(request, annotator)
    run_dir = run_path(request, run_id)
    common = {"run_id": run_id, "active": "annotate", "needs_plotly": False, "seed": seed, "annotator": who,
              "kind_titles": KIND_TITLES, "run_dir": shlex.quote(str(run_dir)), "min_items": MIN_ITEMS}
    with reading(request, run_id) as store:
        secret = run_secret(store, run_dir)
        if stage and not batch:
            chosen = _stage_batch(request, store, secret, stage, kind)
            opaque = pair_id(secret, pair) if pair and not pair.startswith("p-") else pair
            return _remember(RedirectResponse(batch_url(run_id, chosen.id, seed, given, opaque), status_code=303),
                             given, who)
        if not batch:
            everyone = labels_by_annotator(store)
            page = render(request, "annotate.html", batch=None, reveal=reveal == "stages",
                          overview=stages_overview(store, secret, seed, who, compared_pairs(store, _spec(request))),
                          total_labels=store.record_count(KIND), mine=len(everyone.get(who or "", {})),
                          annotators={name: len(done) for name, done in everyone.items()}, **common)
            return _remember(page, given, who)
        chosen = _batch(request, store, secret, batch)
        pairs = _pairs_of(request, store, chosen, seed)
        common |= {"batch": chosen.id, "kind": chosen.kind}
        if who is None:
            return _remember(render(request, "annotate.html", ask_name=True, pair_id=pair, **common), given, who)
        done = labels(store, chosen.stage, who)
        todo = [p for p in pairs if p.key not in done]
        if not pair and todo:
            return _remember(RedirectResponse(batch_url(run_id, chosen.id, seed, given, pair_id(secret, todo[0].key)),
                                              status_code=303), given, who)
        shown = find_pair(secret, pairs, pair) if pair else None
        if pair and shown is None:
            raise HTTPException(status_code=404, detail=f"this batch has no pair {pair!r}")
        token = left = right = None
        cut: dict[str, bool] = {}
        if shown is not None:
            token, left = served(store, run_dir, shown, who, seed)
            right = shown.candidates[1 - shown.candidates.index(left)]
            cut = cut_off_sides(shown, cut_texts(store, chosen.kind, _spec(request)))
        agreement = batch_agreement(done, pairs) if not todo else None
    page = render(request, "annotate.html", pair=shown, pair_id=pair, token=token, left=left, right=right, cut=cut,
                  current=shown_label(done.get(shown.key) if shown else None, left or ""), agreement=agreement,
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
        who, seed, secret = serving["annotator"], serving["seed"], run_secret(store, run_path(request, run_id))
        batch = batch_of(secret, serving["stage"], serving["kind"])
        pair = next((p for p in _pairs_of(request, store, batch, seed) if p.key == serving["pair"]), None)
        earlier = store.get_record(KIND, record_key(serving["pair"], who))
    if pair is None:
        raise HTTPException(status_code=404, detail="the pair this token was served for is no longer in its batch "
                            "(its stage was run again?); reload the annotation page")
    record = label_record(pair, serving["left"], label, seed, who, earlier)
    save_label(run_path(request, run_id), record)
    if is_json:
        # In the page's terms only: the winner's name would say which side was which, the key
        # which rollouts.
        return JSONResponse({"saved": {"pair": pair_id(secret, pair.key),
                                       **{k: record[k] for k in ("label", "annotator", "labelled_at")}},
                             "replaced": shown_label(earlier, serving["left"])})
    return RedirectResponse(batch_url(run_id, batch.id, seed, who), status_code=303)


@router.get("/runs/{run_id}/annotate/review")
def annotate_review(request: Request, run_id: str, annotator: str = ""):
    """The annotator's labels, newest first: the pair, the text they preferred, when, a link
    to change it and an undo (each pair and batch by its id)."""
    from coevo.view.context import reading, render, run_path

    given, who = annotator, _who(request, annotator)
    rows = []
    with reading(request, run_id) as store:
        secret = run_secret(store, run_path(request, run_id))
        mine = labels(store, annotator=who) if who else {}
        pairs: dict[str, Pair] = {}
        for stage in sorted({record["stage"] for record in mine.values()}):
            for kind_pairs in store_pairs(store, stage, limit=None).values():
                pairs.update((p.key, p) for p in kind_pairs)
        if any(record["kind"] == "vs_condition" for record in mine.values()):
            for kind_pairs in compared_pairs(store, _spec(request)).values():
                pairs.update((p.key, p) for p in kind_pairs)
    for key, record in sorted(mine.items(), key=lambda item: item[1].get("labelled_at", ""), reverse=True):
        pair, winner = pairs.get(key), record["winner"]
        batch, opaque = batch_id(secret, record["stage"], record["kind"]), pair_id(secret, key)
        rows.append({"pair": opaque, "batch": batch, "x": pair.x if pair else None,
                     "tie": winner == "tie", "preferred": pair.text_of(winner) if pair and winner != "tie" else None,
                     "other": (pair.text_of(pair.candidates[1 - pair.candidates.index(winner)])
                               if pair and winner != "tie" else None),
                     "changes": len(record.get("history", [])), "at": record.get("labelled_at", ""),
                     "change": batch_url(run_id, batch, pair=opaque)})
    page = render(request, "annotate_review.html", run_id=run_id, active="annotate", needs_plotly=False,
                  annotator=who, rows=rows)
    return _remember(page, given, who)


@router.post("/runs/{run_id}/annotate/undo")
async def annotate_undo(request: Request, run_id: str):
    """Delete one of the annotator's labels (form: `pair`; the annotator from the cookie or
    an `annotator` field), then back to the review list."""
    from fastapi.responses import RedirectResponse

    from coevo.view.context import reading, run_path

    form, _ = await _form(request)
    who = _who(request, str(form.get("annotator") or ""))
    if who is None:
        raise HTTPException(status_code=400, detail="whose label? give your annotator name (the annotate page asks)")
    given = str(form.get("pair") or "")
    with reading(request, run_id) as store:
        secret = run_secret(store, run_path(request, run_id))
        mine = labels(store, annotator=who)
    # The review page sends the pair's id; a script may send its key (the exports' group).
    key = given if given in mine else next((k for k in mine if pair_id(secret, k) == given), given)
    if not delete_label(run_path(request, run_id), key, who):
        raise HTTPException(status_code=404, detail=f"{who} has no label of pair {given!r} to undo")
    return RedirectResponse(f"/runs/{run_id}/annotate/review?{urlencode({'annotator': who})}", status_code=303)


@router.get("/runs/{run_id}/annotate/export")
def annotate_export(request: Request, run_id: str, stage: str = "", file: str = "human", judge: str = "",
                    annotator: str = "", batch: str = ""):
    """The labels (`file=human`: one annotator's with `annotator=NAME`, else everyone's
    majority vote where several labelled) or a judge's scores of the same pairs (`file=judge`,
    the judge `export_annotations` picks, or `judge=NAME`) as JSONL for `coevo eval agreement`;
    of one `batch` (its id) or `stage`, or of all."""
    from fastapi.responses import Response

    from coevo.tasks.loaders import DataError
    from coevo.view.annotate_export import annotation_lines
    from coevo.view.context import reading, run_path

    if file not in ("human", "judge"):
        raise HTTPException(status_code=400, detail=f"file must be human or judge, not {file!r}")
    chosen_annotator = _who(request, annotator) if annotator else None
    with reading(request, run_id) as store:
        kind = None
        if batch:
            chosen = _batch(request, store, run_secret(store, run_path(request, run_id)), batch)
            stage, kind = chosen.stage, chosen.kind
        try:
            lines = annotation_lines(store, stage or None, chosen_annotator, kind)
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
