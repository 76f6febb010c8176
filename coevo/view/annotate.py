"""Pairwise human annotation in the viewer, and its export for `coevo eval agreement`.

Pick a stage; get its pairs one at a time, each shown left / right in a seeded random order,
the judges' verdicts hidden; press A, B or tie (buttons, or the keys a / b / t). Each label is
saved at once into the run store (records kind "annotation", keyed by the pair, so a second
label of a pair replaces the first), so closing the page loses nothing and coming back
resumes at the first pair not yet labelled.

Several people can label the same run: each works under an annotator name (the page's
`annotator` field; default DEFAULT_ANNOTATOR, which records saved before names existed
also belong to), and sees their own progress. `export_annotations` then writes each one's
labels, their majority vote and Fleiss' κ (`coevo.eval.annotators`), as the TAIScore paper
merges its three annotators.

Two kinds of pair come from a stage's rollouts:
- `revision`: y0 against y1 of one rollout (did the critique-guided revision help?);
- `critique`: two different critiques of the same response (same x and y0), where a stage
  holds several (TAIScore's GRPO groups, the controls' conditions).

`export_annotations` writes the labels as `human.jsonl` and the judges' scores of the same
pairs as `judge.jsonl`, both `{group, candidate, score}` lines (group = the pair), which is
what `coevo eval agreement --a human.jsonl --b judge.jsonl` reads: judge-human agreement is
one command. A human label becomes scores 1 / 0 (0.5 each for a tie); a judge's scores are
its own: a pairwise verdict P(y1 preferred) for y1 and 1 - P for y0; a per-response judge
(the gold rubric) S(y0) and S(y1); a critique's reward for each critique.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import time
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastapi import APIRouter, HTTPException, Request

from coevo.eval.annotators import DEFAULT_ANNOTATOR, MergeResult

if TYPE_CHECKING:
    from coevo.store import RunStore
    from coevo.types import Rollout

router = APIRouter()

KIND = "annotation"
PairKind = Literal["revision", "critique"]
PAIR_KINDS: tuple[PairKind, ...] = ("revision", "critique")
LABELS = ("A", "B", "tie")
#: Critique pairs per response at most: a GRPO group of 8 critiques has 28 pairs; a few,
#: chosen by the seeded order, say as much about agreement at a fraction of the clicks.
MAX_CRITIQUE_PAIRS = 6
#: Judges whose score is not about one candidate, so they give no pair's scores.
_NOT_PER_CANDIDATE = ("pairwise_vs_round0", "pairwise_vs_round0_swapped")
#: An annotator name: it names files (human_NAME.jsonl), so letters, digits, _ . - only.
_ANNOTATOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


def annotator_of(record: dict[str, Any]) -> str:
    """Who made a stored label (records without a name are DEFAULT_ANNOTATOR's)."""
    return str(record.get("annotator") or DEFAULT_ANNOTATOR)


@dataclass
class Pair:
    """Two candidates to compare for one prompt. `key` (stage, kind and rollout ids) is the
    group id of the exports and the annotation record's key."""

    key: str
    stage: str
    kind: PairKind
    x: str
    #: The response both critiques are about (critique pairs), shown above them.
    context: str | None
    candidates: tuple[str, str]
    texts: tuple[str, str]
    rollout_ids: tuple[int, ...]
    #: judge name -> {candidate: score or None (unreadable)}; hidden while annotating.
    judges: dict[str, dict[str, float | None]] = field(default_factory=dict)

    def text_of(self, candidate: str) -> str:
        return self.texts[self.candidates.index(candidate)]


def _rank(seed: int, key: str) -> str:
    # sha256, not Python's salted hash: the same order on every visit and every machine.
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def shown_order(pair: Pair, seed: int = 0) -> tuple[str, str]:
    """(left, right) candidates of `pair`: a seeded coin flip per pair, so y1 is on the left
    about half the time and a person cannot learn which side the revision is on."""
    swap = int(_rank(seed, "side:" + pair.key)[:8], 16) % 2 == 1
    a, b = pair.candidates
    return (b, a) if swap else (a, b)


def _revision_scores(rollout: Rollout) -> dict[str, dict[str, float | None]]:
    """Each judge's scores of y0 and y1 of one rollout, where it gave one per response."""
    out: dict[str, dict[str, float | None]] = {}
    for name, j in rollout.judgments.items():
        if name.endswith("_y0") or name in _NOT_PER_CANDIDATE:
            continue
        if name == "pairwise" or "shown_order" in (j.model_extra or {}):
            # The pairwise judge's score is P(y1 preferred) (0.5: tie), in the original order.
            p = j.score if j.valid else None
            out[name] = {"y0": None if p is None else 1.0 - p, "y1": p}
        elif f"{name}_y0" in rollout.judgments:
            before = rollout.judgments[f"{name}_y0"]
            out[name] = {"y0": before.score if before.valid else None, "y1": j.score if j.valid else None}
    return out


def stage_pairs(rows: list[dict[str, Any]], stage: str, seed: int = 0,
                limit: int | None = MAX_CRITIQUE_PAIRS) -> dict[PairKind, list[Pair]]:
    """The pairs of one stage's rollouts (`store.rollout_rows(stage)`), by kind; at most
    `limit` critique pairs per response (the first in the seeded order; None: all)."""
    revision: list[Pair] = []
    by_response: dict[tuple[str, str], list[tuple[int, Rollout]]] = {}
    for row in rows:
        r: Rollout = row["rollout"]
        rid = row["id"]
        if r.y1 is not None and r.y1.strip() and r.y0.strip():
            revision.append(Pair(key=f"{stage}|revision|{rid}", stage=stage, kind="revision", x=r.x, context=None,
                                 candidates=("y0", "y1"), texts=(r.y0, r.y1), rollout_ids=(rid,),
                                 judges=_revision_scores(r)))
        if r.c and r.c.strip():
            by_response.setdefault((r.x, r.y0), []).append((rid, r))
    critique: list[Pair] = []
    for (x, y0), group in by_response.items():
        distinct: dict[str, tuple[int, Rollout]] = {}
        for rid, r in group:
            distinct.setdefault((r.c or "").strip(), (rid, r))
        found = []
        for (ra, a), (rb, b) in combinations(sorted(distinct.values(), key=lambda item: item[0]), 2):
            ca, cb = f"c{ra}", f"c{rb}"
            judges = {}
            for name in a.judgments.keys() & b.judgments.keys():
                if name.endswith("_y0") or name in _NOT_PER_CANDIDATE or name == "pairwise":
                    continue
                ja, jb = a.judgments[name], b.judgments[name]
                judges[name] = {ca: _critique_score(ja), cb: _critique_score(jb)}
            found.append(Pair(key=f"{stage}|critique|{ra}-{rb}", stage=stage, kind="critique", x=x, context=y0,
                              candidates=(ca, cb), texts=(a.c or "", b.c or ""), rollout_ids=(ra, rb),
                              judges=judges))
        found.sort(key=lambda p: _rank(seed, p.key))
        critique += found if limit is None else found[:limit]
    return {"revision": revision, "critique": critique}


def _critique_score(judgment: Any) -> float | None:
    # What the critic was rewarded with where it trained on it (unreadable answers got
    # `invalid_reward`), else the judge's score.
    if judgment.reward is not None:
        return judgment.reward
    return judgment.score if judgment.valid else None


def queue(pairs: list[Pair], seed: int = 0) -> list[Pair]:
    """The pairs in the seeded random order a person labels them in."""
    return sorted(pairs, key=lambda p: _rank(seed, p.key))


def labels_by_annotator(store: RunStore, stage: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """The labels saved so far, of one stage or all: annotator -> pair key -> record."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for _, record in store.get_records(KIND):
        if stage is None or record.get("stage") == stage:
            out.setdefault(annotator_of(record), {})[record["pair"]] = record
    return dict(sorted(out.items()))


def labels(store: RunStore, stage: str | None = None,
           annotator: str = DEFAULT_ANNOTATOR) -> dict[str, dict[str, Any]]:
    """One annotator's labels saved so far (pair key -> record), of one stage or all."""
    return labels_by_annotator(store, stage).get(annotator, {})


def stages_overview(store: RunStore, seed: int = 0, annotator: str = DEFAULT_ANNOTATOR) -> list[dict[str, Any]]:
    """Per stage and kind with pairs: how many pairs there are and how many `annotator`
    has labelled."""
    done = labels(store, annotator=annotator)
    out = []
    for stage, _ in store.rollout_stages():
        for kind, pairs in stage_pairs(store.rollout_rows(stage), stage, seed).items():
            if pairs:
                out.append({"stage": stage, "kind": kind, "pairs": len(pairs),
                            "labelled": sum(p.key in done for p in pairs)})
    return out


def label_record(pair: Pair, left: str, label: str, seed: int,
                 annotator: str = DEFAULT_ANNOTATOR) -> dict[str, Any]:
    """The store record of one label: who, what was shown where, the choice, its winner."""
    check_annotator(annotator)
    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    if left not in pair.candidates:
        raise ValueError(f"left must be one of {pair.candidates}, not {left!r}")
    right = pair.candidates[1 - pair.candidates.index(left)]
    winner = {"A": left, "B": right, "tie": "tie"}[label]
    return {"pair": pair.key, "stage": pair.stage, "kind": pair.kind, "candidates": list(pair.candidates),
            "rollout_ids": list(pair.rollout_ids), "left": left, "right": right, "label": label,
            "winner": winner, "seed": seed, "annotator": annotator, "labelled_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def save_label(run_dir: str | Path, record: dict[str, Any]) -> None:
    """Write one label into the run's store. The viewer reads through read-only stores; this
    is its one write, through a writable store opened for it and closed at once (SQLite's
    WAL lets it go beside a run that is still writing)."""
    from coevo.store import RunStore

    store = RunStore(run_dir)
    try:
        store.put_record(KIND, record_key(record["pair"], annotator_of(record)), record)
    finally:
        store.close()


# ─── export ─────────────────────────────────────────────────────────────────────────

#: Which judge judge.jsonl holds when the labelled pairs have several: the one that
#: decides between the two candidates first, then the per-response and reward judges.
_JUDGE_PREFERENCE = ("pairwise", "gold_rubric", "taiscore", "outcome_gain", "critique_quality", "adherence")


@dataclass
class AnnotationExport:
    """The JSONL lines of an export: the human labels (one annotator's, or with several their
    majority vote), each annotator's, and each judge's scores of the same pairs; `judge` is
    the judge judge.jsonl holds (None when no pair has a judge's score); `merge` the majority
    vote and agreement where several annotators labelled."""

    human: list[dict[str, Any]]
    judges: dict[str, list[dict[str, Any]]]
    judge: str | None
    labels: int
    annotators: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    merge: MergeResult | None = None


def _human_lines(done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    # A label as scores: 1 for the preferred text, 0 for the other, 0.5 each for a tie.
    return [{"group": key, "candidate": candidate,
             "score": 0.5 if record["winner"] == "tie" else float(record["winner"] == candidate),
             "stage": record["stage"], "kind": record["kind"]}
            for key, record in done.items() for candidate in record["candidates"]]


def annotation_lines(store: RunStore, stage: str | None = None, annotator: str | None = None) -> AnnotationExport:
    """The human labels of a run (or one stage; one annotator's, or everyone's) and the
    judges' scores of the same pairs, as {group, candidate, score} lines. With several
    annotators `human` is their majority vote over the pairs all labelled (no-majority pairs
    left out) and `merge` says more; raises DataError where they share no pair. A pair whose
    rollouts are gone (a stage re-run) keeps its human lines; the judges then have no score."""
    from coevo.eval.annotators import from_records, majority_score_lines, merge_annotators

    by_annotator = labels_by_annotator(store, stage)
    if annotator is not None:
        by_annotator = {annotator: by_annotator.get(annotator, {})} if annotator in by_annotator else {}
    done: dict[str, dict[str, Any]] = {}
    for records in by_annotator.values():
        done.update(records)  # every labelled pair, whoever labelled it, for the judges' lines
    pairs: dict[str, Pair] = {}
    for st in sorted({record["stage"] for record in done.values()}):
        for kind_pairs in stage_pairs(store.rollout_rows(st), st, limit=None).values():
            pairs.update((p.key, p) for p in kind_pairs)
    per_annotator = {name: _human_lines(records) for name, records in by_annotator.items()}
    merge = None
    if len(by_annotator) > 1:
        merge = merge_annotators([from_records(name, records.values(), "the run's labels")
                                  for name, records in by_annotator.items()])
        human = majority_score_lines(merge)
    else:
        human = next(iter(per_annotator.values()), [])
    judges: dict[str, list[dict[str, Any]]] = {}
    names: dict[str, int] = {}
    for key, record in done.items():
        pair = pairs.get(key)
        for name, scores in (pair.judges if pair else {}).items():
            names[name] = names.get(name, 0) + 1
            judges.setdefault(name, []).extend(
                {"group": key, "candidate": c, "score": scores.get(c), "judge": name} for c in record["candidates"])
    ranked = sorted(names, key=lambda n: (-names[n], _JUDGE_PREFERENCE.index(n) if n in _JUDGE_PREFERENCE
                                          else len(_JUDGE_PREFERENCE), n))
    return AnnotationExport(human=human, judges={n: judges[n] for n in ranked},
                            judge=ranked[0] if ranked else None, labels=len(done), annotators=per_annotator,
                            merge=merge)


def export_annotations(run_dir: str | Path, out_dir: str | Path, stage: str | None = None,
                       annotator: str | None = None) -> dict[str, Any]:
    """Write `human.jsonl` (the labels) and `judge.jsonl` (the judge that scored most of the
    labelled pairs), plus `judge_<name>.jsonl` per judge when several did, into `out_dir`.
    Where several annotators labelled (and `annotator` does not pick one), human.jsonl is
    their majority vote, `human_<name>.jsonl` each one's labels and `majority.jsonl` every
    merged pair's votes and majority. Returns {"labels", "human", "judge", "judge_name",
    "judges": {name: path}, "annotators": {name: path}, "majority": path or None, "merge":
    the majority vote and Fleiss' κ or None}. Raises DataError when there is no label to
    export (naming where to make them)."""
    from coevo.eval.annotators import majority_lines
    from coevo.store import RunStore
    from coevo.tasks.loaders import DataError

    store = RunStore(run_dir, read_only=True)
    try:
        names = list(labels_by_annotator(store, stage))
        lines = annotation_lines(store, stage, annotator)
        stages = [s for s, _ in store.rollout_stages()]
    finally:
        store.close()
    if stage is not None and stage not in stages:
        raise DataError(f"{run_dir} has no stage {stage!r}; its stages: {', '.join(stages) or 'none'}")
    if annotator is not None and annotator not in names:
        where = f" in stage {stage!r}" if stage else ""
        raise DataError(f"{run_dir} holds no label by annotator {annotator!r}{where}; its annotators: "
                        f"{', '.join(names) or 'none'}")
    if not lines.labels:
        where = f" of stage {stage!r}" if stage else ""
        raise DataError(f"{run_dir} holds no annotation{where} yet: label pairs in `coevo view {run_dir}` "
                        "(Annotate), then export them")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"labels": lines.labels, "human": str(_write(out / "human.jsonl", lines.human)),
                              "judge": None, "judge_name": lines.judge, "judges": {}, "annotators": {},
                              "majority": None, "merge": None}
    if lines.merge is not None:
        result["annotators"] = {name: str(_write(out / f"human_{name}.jsonl", rows))
                                for name, rows in lines.annotators.items()}
        result["majority"] = str(_write(out / "majority.jsonl", majority_lines(lines.merge)))
        result["merge"] = lines.merge.model_dump()
    if lines.judge is not None:
        result["judge"] = str(_write(out / "judge.jsonl", lines.judges[lines.judge]))
        if len(lines.judges) > 1:
            result["judges"] = {name: str(_write(out / f"judge_{name}.jsonl", rows))
                                for name, rows in lines.judges.items()}
        else:
            result["judges"] = {lines.judge: result["judge"]}
    return result


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")
    return path


# ─── routes ─────────────────────────────────────────────────────────────────────────


def _pairs_of(store: RunStore, stage: str, kind: str, seed: int) -> list[Pair]:
    if kind not in PAIR_KINDS:
        raise HTTPException(status_code=400, detail=f"kind must be revision or critique, not {kind!r}")
    stages = [s for s, _ in store.rollout_stages()]
    if stage not in stages:
        raise HTTPException(status_code=404, detail=f"no stage {stage!r} with rollouts in this run; "
                            f"its stages: {', '.join(stages) or 'none'}")
    return queue(stage_pairs(store.rollout_rows(stage), stage, seed)[kind], seed)  # type: ignore[index]


def _annotator(name: str) -> str:
    try:
        return check_annotator(name or DEFAULT_ANNOTATOR)
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None


@router.get("/runs/{run_id}/annotate")
def annotate_page(request: Request, run_id: str, stage: str = "", kind: str = "revision", seed: int = 0,
                  annotator: str = DEFAULT_ANNOTATOR):
    """Without a stage: the stages to annotate, with `annotator`'s progress. With one: the
    next pair `annotator` has not labelled."""
    from coevo.view.context import reading, render, run_path

    annotator = _annotator(annotator)
    # Links keep the name; the default one stays out of them, so old bookmarks stay the same.
    who = "" if annotator == DEFAULT_ANNOTATOR else f"&annotator={annotator}"
    with reading(request, run_id) as store:
        if not stage:
            everyone = labels_by_annotator(store)
            return render(request, "annotate.html", run_id=run_id, active="annotate", needs_plotly=False,
                          overview=stages_overview(store, seed, annotator), stage=None, seed=seed,
                          run_dir=shlex.quote(str(run_path(request, run_id))), total_labels=store.record_count(KIND),
                          annotator=annotator, who=who,
                          annotators={name: len(done) for name, done in everyone.items()})
        pairs = _pairs_of(store, stage, kind, seed)
        done = labels(store, stage, annotator)
    todo = [p for p in pairs if p.key not in done]
    pair = todo[0] if todo else None
    left, right = shown_order(pair, seed) if pair else (None, None)
    return render(request, "annotate.html", run_id=run_id, active="annotate", needs_plotly=False, overview=None,
                  stage=stage, kind=kind, seed=seed, pair=pair, left=left, right=right, annotator=annotator, who=who,
                  labelled=len(pairs) - len(todo), total=len(pairs), run_dir=shlex.quote(str(run_path(request, run_id))))


@router.post("/runs/{run_id}/annotate/label")
async def annotate_label(request: Request, run_id: str):
    """Save one label (form or JSON: stage, kind, pair, left, label, seed, annotator), then
    go on to the next pair (303 to the stage's page; JSON in, JSON out)."""
    from fastapi.responses import JSONResponse, RedirectResponse

    from coevo.view.context import reading, run_path

    body = await request.body()
    is_json = request.headers.get("content-type", "").startswith("application/json")
    if is_json:
        try:
            form = json.loads(body or b"{}")
        except json.JSONDecodeError as exc:
            raise HTTPException(status_code=400, detail=f"the body is not JSON: {exc}") from None
    else:
        from urllib.parse import parse_qs

        form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8"), keep_blank_values=True).items()}
    missing = [k for k in ("stage", "pair", "left", "label") if not form.get(k)]
    if missing:
        raise HTTPException(status_code=400, detail=f"a label needs {', '.join(missing)}")
    stage, kind = str(form["stage"]), str(form.get("kind") or "revision")
    try:
        seed = int(form.get("seed") or 0)
    except (TypeError, ValueError):
        raise HTTPException(status_code=400, detail=f"seed must be a number, not {form.get('seed')!r}") from None
    annotator = _annotator(str(form.get("annotator") or DEFAULT_ANNOTATOR))
    with reading(request, run_id) as store:
        pairs = {p.key: p for p in _pairs_of(store, stage, kind, seed)}
    pair = pairs.get(str(form["pair"]))
    if pair is None:
        raise HTTPException(status_code=404, detail=f"stage {stage!r} has no {kind} pair {form['pair']!r}")
    try:
        record = label_record(pair, str(form["left"]), str(form["label"]), seed, annotator)
    except ValueError as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None
    save_label(run_path(request, run_id), record)
    if is_json:
        return JSONResponse({"saved": record})
    from urllib.parse import urlencode

    query = urlencode({"stage": stage, "kind": kind, **({"seed": seed} if seed else {}),
                       **({"annotator": annotator} if annotator != DEFAULT_ANNOTATOR else {})})
    return RedirectResponse(f"/runs/{run_id}/annotate?{query}", status_code=303)


@router.get("/runs/{run_id}/annotate/export")
def annotate_export(request: Request, run_id: str, stage: str = "", file: str = "human", judge: str = "",
                    annotator: str = ""):
    """The labels (`file=human`: one annotator's with `annotator=NAME`, else everyone's
    majority vote where several labelled) or a judge's scores of the same pairs (`file=judge`,
    the judge `export_annotations` picks, or `judge=NAME`) as JSONL for `coevo eval agreement`."""
    from fastapi.responses import Response

    from coevo.tasks.loaders import DataError
    from coevo.view.context import reading

    if file not in ("human", "judge"):
        raise HTTPException(status_code=400, detail=f"file must be human or judge, not {file!r}")
    with reading(request, run_id) as store:
        try:
            lines = annotation_lines(store, stage or None, _annotator(annotator) if annotator else None)
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
