"""Agreement between two judges that scored the same groups of candidates.

Follows the TAIScore paper's cross-judge check (appendix D.1): for each prompt (a group)
several candidates are scored by both judges.

- **Top-1 overlap**: each judge's top set is *all* its highest-scoring candidates (scores
  are discrete, so ties at the top are common); the overlap is the share of groups whose
  two top sets share at least one candidate.
- **Pairwise agreement**: over every pair of candidates in a group, keep the pairs on
  which both judges express a strict preference, and count how often they prefer the same
  candidate. Pairs tied by either judge are excluded (and counted).

A pairwise judge's verdict is a share, P(this candidate preferred), written as p for one
candidate and 1 - p for the other. A share within TIE_MARGIN of 0.5 is a tie, not a verdict:
it is counted with the ties and, apart, as a tie by that rule (`n_margin_ties`).

Only groups present in both inputs, and within them only candidates scored by both, are
compared: a candidate one judge failed to score (an invalid judgment, ``None``/NaN) says
nothing about agreement. The groups only one input holds are counted and named (`Unmatched`):
two files of different runs or stages share no group, and a silent 0 would hide it.

Pairwise agreement comes with what a reader needs to judge it: its n, a Wilson 95 %
interval, and the chance agreement of two independent raters with the same marginals
(each pair oriented by its candidates' names: the share of pairs each rater decides for
the first name, e.g. for y0 over y1), with Cohen's kappa = (observed - chance) / (1 - chance).
"""

from __future__ import annotations

import math
import os
from itertools import combinations

from pydantic import BaseModel

from coevo.eval.stats import wilson_interval
from coevo.core.jsonl import iter_jsonl
from coevo.tasks.loaders import DataError

Scores = dict[str, dict[str, float]]
"""group id -> candidate id -> score."""

#: A judge's share P(preferred) this close to 0.5 (or closer) is a tie. A pairwise judge that
#: cannot choose still writes a probability a hair off 0.5 (its two shown orders averaged, or
#: the logprobs of its two answers), and counting that hair as a verdict turns "could not
#: tell" into agreement or disagreement with a person; a judge that prefers one text moves its
#: share well past this. Human labels (1, 0, or 0.5 each) are exact and never near it.
TIE_MARGIN = 0.05
#: How far from 1 a two-candidate group's scores may sum and still be one share (p, 1 - p):
#: only floating-point rounding, so that two rubric scores never pass for a share.
_SHARE_SUM = 1e-9


class TopOverlap(BaseModel):
    """Top-1 overlap; `overlap` is None when no group is shared."""

    overlap: float | None
    n_groups: int
    n_overlapping: int


class PairwiseAgreement(BaseModel):
    """Pairwise agreement on strict preferences; `agreement` (and all that comes with it) is
    None when no pair qualifies. `n_tied` counts every pair either side tied, `n_margin_ties`
    those among them that were a judge's share within `tie_margin` of 0.5."""

    agreement: float | None
    n_pairs: int
    n_agree: int
    n_tied: int
    n_margin_ties: int = 0
    tie_margin: float = TIE_MARGIN
    #: Wilson 95 % interval of `agreement` over the n_pairs pairs.
    agreement_lo: float | None = None
    agreement_hi: float | None = None
    #: The agreement two independent raters with these marginals would reach by chance.
    chance_agreement: float | None = None
    #: Cohen's kappa; None where chance agreement is 1 (both raters always decide one way).
    kappa: float | None = None


class Unmatched(BaseModel):
    """The groups only one input holds: left out of both measures, counted and named here."""

    unmatched_a: int = 0
    unmatched_b: int = 0
    #: A few of each side's unmatched group ids (sorted), to see what did not match.
    unmatched_a_examples: list[str] = []
    unmatched_b_examples: list[str] = []


class JudgeAgreement(Unmatched):
    """Both metrics with their counts and what was left out, as reported by the CLI."""

    overlap: float | None
    n_groups: int
    agreement: float | None
    n_pairs: int
    n_agree: int
    n_tied: int
    n_margin_ties: int = 0
    tie_margin: float = TIE_MARGIN
    agreement_lo: float | None = None
    agreement_hi: float | None = None
    chance_agreement: float | None = None
    kappa: float | None = None


#: How many unmatched group ids `unmatched` names per side.
EXAMPLES = 3


class ScoresFile(BaseModel):
    """Scores read from a JSONL file, with how many lines were invalid judgments."""

    scores: Scores
    n_valid: int
    n_invalid: int


def _usable(score) -> bool:
    return score is not None and not (isinstance(score, float) and math.isnan(score))


def margin_tie(scores: dict[str, float], margin: float = TIE_MARGIN) -> bool:
    """Whether a group's scores are one share (p, 1 - p: two candidates on [0, 1] summing to 1)
    within `margin` of 0.5 but not exactly 0.5: a tie by the margin rule only."""
    if len(scores) != 2:
        return False
    p, q = scores.values()
    if not (0 <= p <= 1 and 0 <= q <= 1 and abs(p + q - 1) <= _SHARE_SUM):
        return False
    return p != q and abs(p - 0.5) <= margin + _SHARE_SUM


def _settled(scores: dict[str, float], margin: float) -> dict[str, float]:
    # A share within the margin is read as the tie it is: 0.5 each.
    return {c: 0.5 for c in scores} if margin_tie(scores, margin) else scores


def _shared(a: Scores, b: Scores, margin: float = TIE_MARGIN):
    """Yield (group, {cand: score_a}, {cand: score_b}, tied by the margin rule) over groups with
    a shared candidate; a share within `margin` of 0.5 comes as 0.5 each."""
    for group in a.keys() & b.keys():
        common = [
            cand for cand in a[group]
            if cand in b[group] and _usable(a[group][cand]) and _usable(b[group][cand])
        ]
        if common:
            sa, sb = {c: a[group][c] for c in common}, {c: b[group][c] for c in common}
            by_margin = margin_tie(sa, margin) or margin_tie(sb, margin)
            yield group, _settled(sa, margin), _settled(sb, margin), by_margin


def _top_set(scores: dict[str, float]) -> set[str]:
    best = max(scores.values())
    return {cand for cand, score in scores.items() if score == best}


def top1_overlap(a: Scores, b: Scores) -> TopOverlap:
    """Share of shared groups whose two top sets (all highest-scoring candidates) intersect.

    A group counts when both judges scored at least one common candidate in it.
    """
    n_groups = n_overlapping = 0
    for _, sa, sb, _ in _shared(a, b):
        n_groups += 1
        n_overlapping += bool(_top_set(sa) & _top_set(sb))
    return TopOverlap(
        overlap=n_overlapping / n_groups if n_groups else None,
        n_groups=n_groups,
        n_overlapping=n_overlapping,
    )


def pairwise_agreement(a: Scores, b: Scores, margin: float = TIE_MARGIN) -> PairwiseAgreement:
    """Share of within-group candidate pairs, strictly ordered by both judges, that both
    judges order the same way. Pairs tied by either judge are excluded and counted in
    `n_tied`; a share within `margin` of 0.5 is a tie (and counted in `n_margin_ties` too).
    """
    n_pairs = n_agree = n_tied = n_margin = a_first = b_first = 0
    for _, sa, sb, by_margin in _shared(a, b, margin):
        for x, y in combinations(sorted(sa), 2):
            da, db = sa[x] - sa[y], sb[x] - sb[y]
            if da == 0 or db == 0:
                n_tied += 1
                n_margin += by_margin
                continue
            n_pairs += 1
            n_agree += (da > 0) == (db > 0)
            a_first += da > 0
            b_first += db > 0
    if not n_pairs:
        return PairwiseAgreement(agreement=None, n_pairs=0, n_agree=0, n_tied=n_tied, n_margin_ties=n_margin,
                                 tie_margin=margin)
    observed = n_agree / n_pairs
    _, lo, hi = wilson_interval(n_agree, n_pairs)
    pa, pb = a_first / n_pairs, b_first / n_pairs
    chance = pa * pb + (1 - pa) * (1 - pb)
    return PairwiseAgreement(
        agreement=observed,
        n_pairs=n_pairs,
        n_agree=n_agree,
        n_tied=n_tied,
        n_margin_ties=n_margin,
        tie_margin=margin,
        agreement_lo=lo,
        agreement_hi=hi,
        chance_agreement=chance,
        kappa=(observed - chance) / (1 - chance) if chance < 1 else None,
    )


def unmatched(a: Scores, b: Scores, examples: int = EXAMPLES) -> Unmatched:
    """How many groups only `a` holds and only `b` holds, with a few of each named."""
    only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
    return Unmatched(unmatched_a=len(only_a), unmatched_b=len(only_b),
                     unmatched_a_examples=only_a[:examples], unmatched_b_examples=only_b[:examples])


def judge_agreement(a: Scores, b: Scores) -> JudgeAgreement:
    """Top-1 overlap and pairwise agreement of judges `a` and `b`, and the groups left out,
    in one record."""
    top = top1_overlap(a, b)
    pairs = pairwise_agreement(a, b)
    return JudgeAgreement(overlap=top.overlap, n_groups=top.n_groups, **pairs.model_dump(),
                          **unmatched(a, b).model_dump())


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


def report_rows(result: JudgeAgreement) -> list[dict[str, str]]:
    """The agreement as table rows (measure, value, 95 % interval, n, what it means)."""
    from coevo.eval.metric_defs import MIN_ITEMS

    def num(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    few = result.n_pairs < MIN_ITEMS
    interval = ("" if result.agreement_lo is None or result.agreement_hi is None
                else "too few to tell" if few else f"[{num(result.agreement_lo)}, {num(result.agreement_hi)}]")
    return [
        {"measure": "pairwise agreement", "value": num(result.agreement), "95% interval": interval,
         "n": f"{result.n_pairs} pairs",
         "note": f"{result.n_agree} agree; {result.n_tied} pairs tied by either left out ({tie_note(result)})"},
        {"measure": "chance agreement", "value": num(result.chance_agreement), "95% interval": "",
         "n": f"{result.n_pairs} pairs", "note": "two independent raters with these marginals"},
        {"measure": "Cohen's kappa", "value": num(result.kappa), "95% interval": "", "n": f"{result.n_pairs} pairs",
         "note": "0: chance level, 1: full agreement"},
        {"measure": "top-1 overlap", "value": num(result.overlap), "95% interval": "", "n": f"{result.n_groups} groups",
         "note": "groups whose top-scored candidates overlap"},
    ]


def tie_note(result: PairwiseAgreement | JudgeAgreement) -> str:
    """How many of the ties were a judge's share within the margin of 0.5, in words."""
    margin = f"{result.tie_margin:g}"
    return (f"{result.n_margin_ties} of them a judge's share within ±{margin} of 0.5, "
            f"a tie by that rule")


def tie_rule_line(result: PairwiseAgreement | JudgeAgreement) -> str:
    """The tie rule and what it did, as one line under the table."""
    pairs = "pair was a tie" if result.n_margin_ties == 1 else "pairs were ties"
    return (f"ties: a judge's share within ±{result.tie_margin:g} of 0.5 counts as a tie, not a verdict; "
            f"{result.n_margin_ties} {pairs} by that rule, among the {result.n_tied} tied pairs left out")


def left_out_lines(result: JudgeAgreement, a: str = "A", b: str = "B") -> list[str]:
    """What was not compared, in words: the groups only one side holds, a few named."""
    lines = []
    for side, count, examples in ((a, result.unmatched_a, result.unmatched_a_examples),
                                  (b, result.unmatched_b, result.unmatched_b_examples)):
        if count:
            more = f", ... ({count - len(examples)} more)" if count > len(examples) else ""
            lines.append(f"left out: {count} group{'s' if count != 1 else ''} only in {side} "
                         f"({', '.join(examples)}{more})")
    return lines
