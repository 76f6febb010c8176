"""Agreement between two judges that scored the same groups of candidates.

Follows the TAIScore paper's cross-judge check (appendix D.1): for each prompt (a group)
several candidates are scored by both judges.

- **Top-1 overlap**: each judge's top set is *all* its highest-scoring candidates (scores
  are discrete, so ties at the top are common); the overlap is the share of groups whose
  two top sets share at least one candidate.
- **Pairwise agreement**: over every pair of candidates in a group, keep the pairs on
  which both judges express a strict preference, and count how often they prefer the same
  candidate. Pairs tied by either judge are excluded (and counted).

Only groups present in both inputs, and within them only candidates scored by both, are
compared: a candidate one judge failed to score (an invalid judgment, ``None``/NaN) says
nothing about agreement.
"""

from __future__ import annotations

import math
import os
from itertools import combinations

from pydantic import BaseModel

from coevo.jsonl import iter_jsonl
from coevo.tasks.loaders import DataError

Scores = dict[str, dict[str, float]]
"""group id -> candidate id -> score."""


class TopOverlap(BaseModel):
    """Top-1 overlap; `overlap` is None when no group is shared."""

    overlap: float | None
    n_groups: int
    n_overlapping: int


class PairwiseAgreement(BaseModel):
    """Pairwise agreement on strict preferences; `agreement` is None when no pair qualifies."""

    agreement: float | None
    n_pairs: int
    n_agree: int
    n_tied: int


class JudgeAgreement(BaseModel):
    """Both metrics with their counts, as reported by the CLI."""

    overlap: float | None
    n_groups: int
    agreement: float | None
    n_pairs: int
    n_agree: int
    n_tied: int


class ScoresFile(BaseModel):
    """Scores read from a JSONL file, with how many lines were invalid judgments."""

    scores: Scores
    n_valid: int
    n_invalid: int


def _usable(score) -> bool:
    return score is not None and not (isinstance(score, float) and math.isnan(score))


def _shared(a: Scores, b: Scores):
    """Yield (group, {cand: score_a}, {cand: score_b}) over groups with a shared candidate."""
    for group in a.keys() & b.keys():
        common = [
            cand for cand in a[group]
            if cand in b[group] and _usable(a[group][cand]) and _usable(b[group][cand])
        ]
        if common:
            yield group, {c: a[group][c] for c in common}, {c: b[group][c] for c in common}


def _top_set(scores: dict[str, float]) -> set[str]:
    best = max(scores.values())
    return {cand for cand, score in scores.items() if score == best}


def top1_overlap(a: Scores, b: Scores) -> TopOverlap:
    """Share of shared groups whose two top sets (all highest-scoring candidates) intersect.

    A group counts when both judges scored at least one common candidate in it.
    """
    n_groups = n_overlapping = 0
    for _, sa, sb in _shared(a, b):
        n_groups += 1
        n_overlapping += bool(_top_set(sa) & _top_set(sb))
    return TopOverlap(
        overlap=n_overlapping / n_groups if n_groups else None,
        n_groups=n_groups,
        n_overlapping=n_overlapping,
    )


def pairwise_agreement(a: Scores, b: Scores) -> PairwiseAgreement:
    """Share of within-group candidate pairs, strictly ordered by both judges, that both
    judges order the same way. Pairs tied by either judge are excluded and counted in
    `n_tied`.
    """
    n_pairs = n_agree = n_tied = 0
    for _, sa, sb in _shared(a, b):
        for x, y in combinations(sorted(sa), 2):
            da, db = sa[x] - sa[y], sb[x] - sb[y]
            if da == 0 or db == 0:
                n_tied += 1
                continue
            n_pairs += 1
            n_agree += (da > 0) == (db > 0)
    return PairwiseAgreement(
        agreement=n_agree / n_pairs if n_pairs else None,
        n_pairs=n_pairs,
        n_agree=n_agree,
        n_tied=n_tied,
    )


def judge_agreement(a: Scores, b: Scores) -> JudgeAgreement:
    """Top-1 overlap and pairwise agreement of judges `a` and `b` in one record."""
    top = top1_overlap(a, b)
    pairs = pairwise_agreement(a, b)
    return JudgeAgreement(
        overlap=top.overlap,
        n_groups=top.n_groups,
        agreement=pairs.agreement,
        n_pairs=pairs.n_pairs,
        n_agree=pairs.n_agree,
        n_tied=pairs.n_tied,
    )


def read_scores_jsonl(path: str | os.PathLike[str]) -> ScoresFile:
    """Read one judge's scores: lines ``{"group": ..., "candidate": ..., "score": ...}``.

    Group and candidate ids are read as strings so that ``1`` and ``"1"`` match across
    files. A null score is an invalid judgment: it is skipped and counted in `n_invalid`.
    Raises DataError, naming the line, for bad JSON, missing keys, a non-numeric score or
    a (group, candidate) given twice.
    """
    scores: Scores = {}
    seen: dict[tuple[str, str], int] = {}
    n_valid = n_invalid = 0
    try:
        handle = open(path, encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"no such scores file: {path}.") from None
    with handle:
        for number, row in iter_jsonl(handle, str(path), DataError,
                                      example='{"group": ..., "candidate": ..., "score": ...}'):
            where = f"{path}: line {number}"
            missing = [key for key in ("group", "candidate", "score") if key not in row]
            if missing:
                raise DataError(f"{where} lacks {missing}; keys present: {sorted(row)}.")
            key = (str(row["group"]), str(row["candidate"]))
            if key in seen:
                raise DataError(
                    f"{where} repeats group {key[0]!r} candidate {key[1]!r} (first on line "
                    f"{seen[key]}); give each candidate one score per judge."
                )
            seen[key] = number
            score = row["score"]
            if score is None:
                n_invalid += 1
                continue
            numeric = isinstance(score, (int, float)) and not isinstance(score, bool)
            if not numeric or not math.isfinite(score):
                raise DataError(f"{where}: score must be a finite number or null, got {score!r}.")
            scores.setdefault(key[0], {})[key[1]] = float(score)
            n_valid += 1
    if not seen:
        raise DataError(f"{path} holds no scores: give one JSON line per (group, candidate) with its score.")
    return ScoresFile(scores=scores, n_valid=n_valid, n_invalid=n_invalid)
