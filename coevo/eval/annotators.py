"""Several annotators' pairwise labels merged as the TAIScore paper merges them (Appendix E, Table 2).

Three annotators label each pair of texts: the first is better, the second is, or a tie.
The outcome of a pair is the label at least two of them chose (in general: more than half
of the annotators); three different labels is "no majority", which is counted and listed,
never guessed. Their agreement is Fleiss' κ (statsmodels' implementation) over the same
items, with its n (items, annotators) and a bootstrap 95 % CI over items.

Each annotator is one JSONL file, in either form coevo writes:
- `{group, candidate, score}` lines, two per pair (what `coevo eval annotations RUN --out
  DIR` writes as human.jsonl): the higher score is the preferred text, equal scores a tie;
- the viewer's annotation records (`{pair, candidates, winner, ...}`, one per pair).
A run labelled in `coevo view` by several people holds one annotator per name the viewer
recorded (records from before names were recorded are DEFAULT_ANNOTATOR's).

Only pairs every annotator labelled are merged: a pair two of three people saw has no
three-way majority, and Fleiss' κ needs the same number of ratings per item. How many
were left out, and whose labels they lacked, is part of the result.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from coevo.core.jsonl import iter_jsonl
from coevo.tasks.errors import DataError

#: The name of the viewer's annotator when none is given, and of records saved before the
#: viewer recorded names (they were all one person's).
DEFAULT_ANNOTATOR = "annotator1"
#: A pair's label, relative to the order its candidates are listed in (the first file's).
CATEGORIES = ("first", "second", "tie")
TIE = "tie"
_EXAMPLE = '{"group": "pair-1", "candidate": "y1", "score": 1.0}'


@dataclass(frozen=True)
class Label:
    """One annotator's label of one pair: its two candidates as listed, and the preferred
    candidate (or "tie"). `extra` carries the pair's stage and kind where the file has them."""

    candidates: tuple[str, str]
    winner: str
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass
class AnnotatorLabels:
    """One annotator's labels: group (pair) id -> Label; `source` says where they came from."""

    name: str
    source: str
    labels: dict[str, Label]


class Agreement(BaseModel):
    """Fleiss' κ over the merged items; `kappa` is None where it is undefined (every label in
    one category: no chance-corrected agreement to measure). `ci` is the bootstrap percentile
    interval over items (None with fewer than 2 items or no defined resample)."""

    measure: str = "fleiss_kappa"
    kappa: float | None
    n_items: int
    n_annotators: int
    #: Share of agreeing annotator pairs per item, averaged (Fleiss' P̄): the raw agreement.
    observed: float
    ci: list[float] | None
    level: float
    n_boot: int


class MergedItem(BaseModel):
    """One pair's votes and its majority: `winner` is a candidate, "tie" or None (no majority);
    `label` is the same as first / second / tie (None: no majority)."""

    group: str
    candidates: list[str]
    votes: dict[str, str]
    winner: str | None
    label: str | None
    extra: dict[str, Any] = {}


class MergeResult(BaseModel):
    """Majority labels of the pairs every annotator labelled, their counts, and agreement."""

    annotators: list[str]
    sources: dict[str, str]
    n_items: int
    counts: dict[str, int]
    no_majority: list[str]
    #: Pairs some but not all annotators labelled: left out of the merge.
    n_partial: int
    #: annotator -> how many of those partial pairs they did not label.
    missing: dict[str, int]
    agreement: Agreement
    items: list[MergedItem]
    note: str | None = None


# ─── reading ────────────────────────────────────────────────────────────────────────


def label_from_scores(group: str, scores: dict[str, float], where: str) -> Label:
    """A pair's label from its two candidates' scores: the higher one wins, equal is a tie."""
    if len(scores) != 2:
        raise DataError(f"{where}: pair {group!r} has {len(scores)} candidate(s) ({', '.join(scores)}); a pairwise "
                        "label has exactly two lines per group: the preferred text scored higher, or both equal "
                        "for a tie")
    (a, sa), (b, sb) = scores.items()
    return Label((a, b), TIE if sa == sb else (a if sa > sb else b))


def _score(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        raise DataError(f"{where}: score must be a number (1 preferred, 0 not, 0.5 each for a tie), not {value!r}")
    return float(value)


def _from_record(row: dict[str, Any], where: str) -> tuple[str, Label]:
    candidates = row.get("candidates")
    if not (isinstance(candidates, list) and len(candidates) == 2 and all(isinstance(c, str) for c in candidates)):
        raise DataError(f"{where}: a viewer record needs `candidates`, the pair's two candidate names, "
                        f"not {candidates!r}")
    winner = row.get("winner")
    if winner != TIE and winner not in candidates:
        raise DataError(f"{where}: winner must be one of {candidates + [TIE]}, not {winner!r}")
    extra = {k: row[k] for k in ("stage", "kind") if k in row}
    return str(row["pair"]), Label((candidates[0], candidates[1]), winner, extra)


def _with_extra(label: Label, extra: dict[str, Any]) -> Label:
    return Label(label.candidates, label.winner, extra)


def read_annotator_file(path: str | Path, name: str | None = None) -> AnnotatorLabels:
    """One annotator's labels from a JSONL file of `{group, candidate, score}` lines or of
    the viewer's annotation records. The name is the records' `annotator`, else `name`,
    else the file's stem. Raises DataError naming the file and line of a problem."""
    path = Path(path)
    if not path.is_file():
        what = "is a folder, not a file" if path.is_dir() else "does not exist"
        raise DataError(f"annotator file {path} {what}: give one JSONL file per annotator, e.g. the "
                        "human.jsonl `coevo eval annotations RUN --out DIR` writes")
    scores: dict[str, dict[str, float]] = {}
    extras: dict[str, dict[str, Any]] = {}
    records: dict[str, Label] = {}
    names: set[str] = set()
    with path.open(encoding="utf-8") as lines:
        for number, row in iter_jsonl(lines, str(path), DataError, _EXAMPLE):
            where = f"{path}: line {number}"
            if "pair" in row and "winner" in row:
                key, label = _from_record(row, where)
                records[key] = label  # a later label of a pair replaces it, as in the viewer's store
                names.add(str(row.get("annotator") or DEFAULT_ANNOTATOR))
            elif {"group", "candidate", "score"} <= row.keys():
                group, candidate = str(row["group"]), str(row["candidate"])
                if candidate in scores.get(group, {}):
                    raise DataError(f"{where}: pair {group!r} lists candidate {candidate!r} twice")
                scores.setdefault(group, {})[candidate] = _score(row["score"], where)
                extras.setdefault(group, {k: row[k] for k in ("stage", "kind") if k in row})
            else:
                raise DataError(f"{where} has neither {{group, candidate, score}} (e.g. {_EXAMPLE}) nor a viewer "
                                "record's {pair, candidates, winner}")
    if scores and records:
        raise DataError(f"{path} mixes score lines and viewer records: keep one form per file")
    if len(names) > 1:
        raise DataError(f"{path} holds the records of several annotators ({', '.join(sorted(names))}): give one "
                        "file per annotator, or the run folder itself")
    labels = records or {g: _with_extra(label_from_scores(g, s, str(path)), extras[g]) for g, s in scores.items()}
    if not labels:
        raise DataError(f"{path} holds no label: each line is one of a pair's two candidates, e.g. {_EXAMPLE}")
    return AnnotatorLabels(name=next(iter(names)) if names else (name or path.stem), source=str(path), labels=labels)


def from_records(name: str, records: Iterable[dict[str, Any]], source: str) -> AnnotatorLabels:
    """One annotator's labels from the viewer's stored annotation records."""
    labels = dict(_from_record(r, f"{source} ({name})") for r in records)
    return AnnotatorLabels(name=name, source=source, labels=labels)


def read_annotator_files(paths: Iterable[str | Path]) -> list[AnnotatorLabels]:
    """Each file one annotator. Two files of one name (a/labels.jsonl, b/labels.jsonl) are
    told apart by their paths."""
    found = [read_annotator_file(p) for p in paths]
    taken = Counter(a.name for a in found)
    for a in found:
        if taken[a.name] > 1:
            a.name = a.source
    if len({a.name for a in found}) < len(found):
        raise DataError(f"the same annotator file is given twice: {', '.join(a.source for a in found)}")
    return found


# ─── merging ────────────────────────────────────────────────────────────────────────


def fleiss_kappa(counts: Any) -> float | None:
    """Fleiss' κ of an items × categories table of rating counts (each row sums to the number
    of annotators), by statsmodels; None where undefined (all ratings in one category)."""
    import numpy as np
    from statsmodels.stats.inter_rater import fleiss_kappa as _fleiss

    table = np.asarray(counts, dtype=float)
    shares = table.sum(axis=0) / table.sum()
    if np.isclose((shares ** 2).sum(), 1.0):  # chance agreement is 1: κ is 0/0
        return None
    return float(_fleiss(table, method="fleiss"))


def _observed(table: Any) -> float:
    # Fleiss' P̄: per item, the share of annotator pairs that agree; averaged over items.
    n = table.sum(axis=1)
    return float(((table * (table - 1)).sum(axis=1) / (n * (n - 1))).mean())


def _bootstrap_ci(table: Any, n_boot: int, level: float, seed: int) -> list[float] | None:
    """Percentile interval of κ over items resampled with replacement (numpy's seeded
    generator, so the same labels give the same interval)."""
    import numpy as np

    if len(table) < 2 or n_boot < 1:
        return None
    rng = np.random.default_rng(seed)
    draws = [fleiss_kappa(table[rng.integers(0, len(table), len(table))]) for _ in range(n_boot)]
    values = [k for k in draws if k is not None]
    if not values:
        return None
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [tail, 100 - tail])
    return [float(lo), float(hi)]


def merge_annotators(annotators: list[AnnotatorLabels], *, n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> MergeResult:
    """Majority vote per pair over the pairs every annotator labelled, and Fleiss' κ over
    them. A label is the majority when more than half the annotators chose it (two of
    three); otherwise the pair is "no majority". Raises DataError with fewer than two
    annotators, a pair whose candidates differ between annotators, or no pair all labelled."""
    import numpy as np

    if len(annotators) < 2:
        given = ", ".join(a.source for a in annotators) or "none"
        raise DataError(f"merging needs at least two annotators' labels; got {len(annotators)} ({given}): give "
                        "one file per annotator, or a run labelled under several names in `coevo view`")
    names = [a.name for a in annotators]
    everyone = set.intersection(*(set(a.labels) for a in annotators))
    anyone = set.union(*(set(a.labels) for a in annotators))
    if not everyone:
        sizes = ", ".join(f"{a.name}: {len(a.labels)}" for a in annotators)
        raise DataError(f"no pair is labelled by all {len(annotators)} annotators ({sizes} pairs; "
                        f"{len(anyone)} pairs in all): are these labels of the same pairs (the same run and stage)?")
    partial = anyone - everyone
    missing = {a.name: sum(g not in a.labels for g in partial) for a in annotators}
    first = annotators[0]
    items: list[MergedItem] = []
    rows: list[list[int]] = []
    for group in sorted(everyone):
        candidates = first.labels[group].candidates
        votes: dict[str, str] = {}
        for a in annotators:
            label = a.labels[group]
            if set(label.candidates) != set(candidates):
                raise DataError(f"pair {group!r} has candidates {list(candidates)} for {first.name} but "
                                f"{list(label.candidates)} for {a.name}: the files label different pairs")
            votes[a.name] = label.winner
        # first / second are the first annotator's candidate order: the same for every vote.
        categories = [TIE if w == TIE else CATEGORIES[candidates.index(w)] for w in votes.values()]
        tally = Counter(categories)
        rows.append([tally[c] for c in CATEGORIES])
        top, n_top = tally.most_common(1)[0]
        label = top if n_top * 2 > len(annotators) else None
        winner = None if label is None else (TIE if label == TIE else candidates[CATEGORIES.index(label)])
        items.append(MergedItem(group=group, candidates=list(candidates), votes=votes, winner=winner, label=label,
                                extra=first.labels[group].extra))
    table = np.asarray(rows, dtype=float)
    agreement = Agreement(kappa=fleiss_kappa(table), n_items=len(items), n_annotators=len(annotators),
                          observed=_observed(table), ci=_bootstrap_ci(table, n_boot, level, seed), level=level,
                          n_boot=n_boot)
    counts = {c: sum(i.label == c for i in items) for c in CATEGORIES}
    counts["no_majority"] = sum(i.label is None for i in items)
    note = None
    if partial:
        whose = ", ".join(f"{n} lacks {k}" for n, k in missing.items() if k)
        note = (f"{len(partial)} of {len(anyone)} pairs are not labelled by every annotator ({whose}): merged over "
                f"the {len(everyone)} pairs all {len(annotators)} labelled")
    return MergeResult(annotators=names, sources={a.name: a.source for a in annotators}, n_items=len(items),
                       counts=counts, no_majority=[i.group for i in items if i.label is None], n_partial=len(partial),
                       missing=missing, agreement=agreement, items=items, note=note)


def majority_lines(result: MergeResult) -> list[dict[str, Any]]:
    """majority.jsonl: one line per merged pair with its votes and majority (winner None:
    no majority)."""
    return [{"group": i.group, "candidates": i.candidates, "winner": i.winner, "label": i.label, "votes": i.votes,
             **i.extra} for i in result.items]


def majority_score_lines(result: MergeResult) -> list[dict[str, Any]]:
    """The majority labels as `{group, candidate, score}` lines (1 / 0, 0.5 each for a tie),
    what `coevo eval agreement` compares with a judge; pairs with no majority are left out."""
    return [{"group": i.group, "candidate": c, "score": 0.5 if i.winner == TIE else float(i.winner == c), **i.extra}
            for i in result.items if i.winner is not None for c in i.candidates]


# ─── files in, files and words out ──────────────────────────────────────────────────


def merge_files(paths: Iterable[str | Path], **kwargs: Any) -> MergeResult:
    """Read one JSONL file per annotator and merge them (`merge_annotators`'s keywords)."""
    return merge_annotators(read_annotator_files(paths), **kwargs)


def write_merge(result: MergeResult, out_dir: str | Path) -> dict[str, str]:
    """Write `majority.jsonl` (every merged pair's votes and majority) and `human.jsonl` (the
    majority labels as scores, for `coevo eval agreement`) into `out_dir`; their paths."""
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, rows in (("majority", majority_lines(result)), ("human", majority_score_lines(result))):
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
        paths[name] = str(path)
    return paths


def vote_rows(result: MergeResult) -> list[dict[str, Any]]:
    """One table row per merged pair: its id, each annotator's vote, the majority."""
    return [{"pair": i.group, **i.votes, "majority": i.winner or "no majority"} for i in result.items]


def summary_lines(result: MergeResult) -> list[str]:
    """The merge in words: counts, the no-majority pairs, Fleiss' κ with its n and CI."""
    c, a = result.counts, result.agreement
    lines = [f"{result.n_items} pairs, {len(result.annotators)} annotators ({', '.join(result.annotators)}): "
             f"first {c['first']}, second {c['second']}, tie {c['tie']}, no majority {c['no_majority']}"]
    if result.no_majority:
        lines.append("no majority: " + ", ".join(result.no_majority))
    kappa = "undefined (every label in one category)" if a.kappa is None else f"{a.kappa:.3f}"
    ci = f", {a.level:.0%} CI [{a.ci[0]:.3f}, {a.ci[1]:.3f}] ({a.n_boot} bootstrap resamples of pairs)" if a.ci else ""
    lines.append(f"Fleiss' kappa {kappa}{ci}; n = {a.n_items} pairs x {a.n_annotators} annotators; "
                 f"raw agreement {a.observed:.3f}")
    if result.note:
        lines.append(result.note)
    return lines
