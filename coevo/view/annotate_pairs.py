"""The pairs a person can label in the viewer, built from a run's stored rollouts.

Three kinds of pair:
- `revision`: y0 against y1 of one rollout (did the critique-guided revision help?);
- `critique`: two different critiques of the same response (same x and y0), where a stage
  holds several (TAIScore's GRPO groups, the controls' conditions);
- `vs_round0`: a TAIScore evaluation round's answer against round 0's answer to the same
  prompt, the pairs behind the headline `win_rate_vs_round0` (each judged in both shown
  orders; coevo.eval.both_orders). They come from stages `TAG/roundR/eval` (R >= 1) whose
  rollouts carry the `pairwise_vs_round0` judgments, matched by sample id to the rollouts
  of `TAG/round0/eval`;
- `vs_condition`: two conditions' final held-out answers to the same prompt (the TAIScore
  paper's Table 2: TAIScore vs the off-the-shelf critic, co-evolution vs TAIScore), each
  side the last `TAG/roundR/eval` stage of a condition (or a named round), of this run or of
  another (`coevo view RUN --against OTHER`). A `Comparison` names its two sides, first-named
  first; its pairs cover a seeded sample of prompts (`sample_prompts`, 50 as the paper) that
  every comparison of the run shares. A comparison's stage is an opaque id, so no page or
  url names a condition. They are built in coevo.view.annotate_conditions.

A pair's `candidates` name its texts in the run's terms (y0 / y1, cRID, round0 / roundR);
they stay on the server: the annotation page shows only "A" and "B" (coevo.view.annotate).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal

from coevo.eval.annotators import DEFAULT_ANNOTATOR

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore
    from coevo.core.types import Judgment, Rollout

#: The store's record kind of a label (one per annotator and pair; coevo.view.annotate writes them).
KIND = "annotation"

PairKind = Literal["revision", "critique", "vs_round0", "vs_condition"]
PAIR_KINDS: tuple[PairKind, ...] = ("revision", "critique", "vs_round0", "vs_condition")
#: What each kind asks, as the stages list and the pair page word it (no side's name in it).
KIND_TITLES = {"revision": "a response and its revision (did the revision help?)",
               "critique": "two critiques of one response",
               "vs_round0": "this round's answer and round 0's (the pairs behind win_rate_vs_round0)",
               "vs_condition": "two systems' answers to one prompt (which systems is not shown)"}
#: Critique pairs per response at most: a GRPO group of 8 critiques has 28 pairs; a few,
#: chosen by the seeded order, say as much about agreement at a fraction of the clicks.
MAX_CRITIQUE_PAIRS = 6
#: Judges whose score is not about one candidate, so they give no revision pair's scores.
_NOT_PER_CANDIDATE = ("pairwise_vs_round0", "pairwise_vs_round0_swapped")
#: The both-orders judge of a `vs_round0` pair, as judge.jsonl names it.
BOTH_ORDERS_JUDGE = "pairwise_vs_round0"
EVAL_STAGE = re.compile(r"(?P<tag>.+)/round(?P<round>\d+)/eval")


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


def rank(seed: int, key: str) -> str:
    # sha256, not Python's salted hash: the same order on every visit and every machine.
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def queue(pairs: list[Pair], seed: int = 0) -> list[Pair]:
    """The pairs in the seeded random order a person labels them in."""
    return sorted(pairs, key=lambda p: rank(seed, p.key))


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


def _critique_score(judgment: Judgment) -> float | None:
    # What the critic was rewarded with where it trained on it (unreadable answers got
    # `invalid_reward`), else the judge's score.
    if judgment.reward is not None:
        return judgment.reward
    return judgment.score if judgment.valid else None


def _critique_pairs(rows: list[dict[str, Any]], stage: str, seed: int, limit: int | None) -> list[Pair]:
    by_response: dict[tuple[str, str], list[tuple[int, Rollout]]] = {}
    for row in rows:
        r: Rollout = row["rollout"]
        if r.c and r.c.strip():
            by_response.setdefault((r.x, r.y0), []).append((row["id"], r))
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
                judges[name] = {ca: _critique_score(a.judgments[name]), cb: _critique_score(b.judgments[name])}
            found.append(Pair(key=f"{stage}|critique|{ra}-{rb}", stage=stage, kind="critique", x=x, context=y0,
                              candidates=(ca, cb), texts=(a.c or "", b.c or ""), rollout_ids=(ra, rb),
                              judges=judges))
        found.sort(key=lambda p: rank(seed, p.key))
        critique += found if limit is None else found[:limit]
    return critique


def round0_stage(stage: str) -> str | None:
    """`TAG/round0/eval` for a TAIScore evaluation stage `TAG/roundR/eval` with R >= 1, else None."""
    match = EVAL_STAGE.fullmatch(stage)
    if match is None or int(match["round"]) == 0:
        return None
    return f"{match['tag']}/round0/eval"


def _both_orders_score(rollout: Rollout) -> float | None:
    """The averaged preference for this round's answer over round 0's (1: this round's), as
    `win_rate_vs_round0` counts it; None unless both shown orders' verdicts are readable."""
    as_given = rollout.judgments.get(BOTH_ORDERS_JUDGE)
    swapped = rollout.judgments.get(f"{BOTH_ORDERS_JUDGE}_swapped")
    if as_given is None or swapped is None or not (as_given.valid and swapped.valid):
        return None
    if as_given.score is None or swapped.score is None:
        return None
    return (as_given.score + swapped.score) / 2


def round0_pairs(rows: list[dict[str, Any]], base_rows: list[dict[str, Any]], stage: str) -> list[Pair]:
    """`vs_round0` pairs of evaluation stage `stage` (its rows) against round 0's (`base_rows`):
    one per prompt whose answer the pairwise judge compared with round 0's."""
    match = EVAL_STAGE.fullmatch(stage)
    if match is None:
        return []
    current = f"round{match['round']}"
    base = {row["rollout"].sample_id: row for row in base_rows}
    out = []
    for row in rows:
        r: Rollout = row["rollout"]
        before = base.get(r.sample_id)
        if BOTH_ORDERS_JUDGE not in r.judgments or before is None:
            continue
        old = before["rollout"].y0
        if not (old.strip() and r.y0.strip()):
            continue
        p = _both_orders_score(r)
        out.append(Pair(key=f"{stage}|vs_round0|{row['id']}-{before['id']}", stage=stage, kind="vs_round0", x=r.x,
                        context=None, candidates=("round0", current), texts=(old, r.y0),
                        rollout_ids=(row["id"], before["id"]),
                        judges={BOTH_ORDERS_JUDGE: {"round0": None if p is None else 1.0 - p, current: p}}))
    return out


def stage_pairs(rows: list[dict[str, Any]], stage: str, seed: int = 0, limit: int | None = MAX_CRITIQUE_PAIRS,
                base_rows: list[dict[str, Any]] | None = None) -> dict[PairKind, list[Pair]]:
    """The pairs of one stage's rollouts (`store.rollout_rows(stage)`), by kind; at most
    `limit` critique pairs per response (the first in the seeded order; None: all).
    `base_rows`: round 0's evaluation rollouts, for a later round's `vs_round0` pairs."""
    revision: list[Pair] = []
    for row in rows:
        r: Rollout = row["rollout"]
        rid = row["id"]
        if r.y1 is not None and r.y1.strip() and r.y0.strip():
            revision.append(Pair(key=f"{stage}|revision|{rid}", stage=stage, kind="revision", x=r.x, context=None,
                                 candidates=("y0", "y1"), texts=(r.y0, r.y1), rollout_ids=(rid,),
                                 judges=_revision_scores(r)))
    return {"revision": revision, "critique": _critique_pairs(rows, stage, seed, limit),
            "vs_round0": round0_pairs(rows, base_rows or [], stage)}


def store_pairs(store: RunStore, stage: str, seed: int = 0,
                limit: int | None = MAX_CRITIQUE_PAIRS) -> dict[PairKind, list[Pair]]:
    """`stage_pairs` of a stage of the run in `store`, round 0's rows fetched where it needs them."""
    base = round0_stage(stage)
    base_rows = store.rollout_rows(base) if base else None
    return stage_pairs(store.rollout_rows(stage), stage, seed, limit, base_rows=base_rows)


def annotator_of(record: dict[str, Any]) -> str:
    """Who made a stored label (records without a name are DEFAULT_ANNOTATOR's)."""
    return str(record.get("annotator") or DEFAULT_ANNOTATOR)


def labels_by_annotator(store: RunStore, stage: str | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """The labels saved so far, of one stage or all: annotator -> pair key -> record."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for _, record in store.get_records(KIND):
        if stage is None or record.get("stage") == stage:
            out.setdefault(annotator_of(record), {})[record["pair"]] = record
    return dict(sorted(out.items()))
