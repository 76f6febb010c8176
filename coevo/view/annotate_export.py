"""The viewer's human labels exported for `coevo eval agreement` (`coevo eval annotations RUN`).

`export_annotations` writes the labels as `human.jsonl` and the judges' scores of the same
pairs as `judge.jsonl`, both `{group, candidate, score}` lines (group = the pair), which is
what `coevo eval agreement --a human.jsonl --b judge.jsonl` reads: judge-human agreement is
one command. A human label becomes scores 1 / 0 (0.5 each for a tie), with the annotator's
name on each line; a judge's scores are its own: a pairwise verdict P(y1 preferred) for y1
and 1 - P for y0; a per-response judge (the gold rubric) S(y0) and S(y1); a critique's
reward for each critique; the both-orders verdict of a `vs_round0` pair (the averaged
preference, as `win_rate_vs_round0` counts it) for the later round's answer.

Where several annotators labelled, human.jsonl is their majority vote (coevo.eval.annotators,
as the TAIScore paper merges its three annotators), `human_NAME.jsonl` each one's labels and
`majority.jsonl` every merged pair's votes.

Labels of `vs_condition` pairs (two conditions' final answers, the paper's Table 2) also give
a Table-2 table per comparison: the majority vote's wins for the first-named condition, ties,
wins for the second, pairs with no majority, the annotators' Fleiss' κ with its n and 95 %
CI, and the first's share of the decided pairs with a Wilson 95 % interval
(`conditions.jsonl`, `conditions.md`; `condition_rows`).

The output folder is replaced as a whole, so an export of one stage never sits beside the
files of an earlier export of another: the files are written into a new folder beside it,
which then takes its place. A folder holding anything an export does not write is left
alone (DataError naming it).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.view.annotate_pairs import KIND, Pair, labels_by_annotator, store_pairs

if TYPE_CHECKING:
    from coevo.eval.annotators import MergeResult
    from coevo.rundir.store import RunStore

#: Which judge judge.jsonl holds when the labelled pairs have several: the one that
#: decides between the two candidates first, then the per-response and reward judges.
_JUDGE_PREFERENCE = ("pairwise_vs_round0", "pairwise", "gold_rubric", "taiscore", "outcome_gain", "critique_quality",
                     "adherence")
#: The files an export writes; a folder holding anything else is not an export's to replace.
_EXPORT_FILE = re.compile(r"(human|judge|majority|conditions)(_[A-Za-z0-9_.-]+)?\.jsonl|conditions\.md")


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
    #: The Table-2 rows of the labelled comparisons of conditions (condition_rows).
    conditions: list[dict[str, Any]] = field(default_factory=list)


def _human_lines(name: str, done: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    # A label as scores: 1 for the preferred text, 0 for the other, 0.5 each for a tie.
    return [{"group": key, "candidate": candidate,
             "score": 0.5 if record["winner"] == "tie" else float(record["winner"] == candidate),
             "stage": record["stage"], "kind": record["kind"], "annotator": name}
            for key, record in done.items() for candidate in record["candidates"]]


def rank_judges(counts: dict[str, int]) -> list[str]:
    """Judge names by how many labelled pairs each scored (most first), ties broken by
    _JUDGE_PREFERENCE: the first is the judge judge.jsonl holds."""
    return sorted(counts, key=lambda n: (-counts[n], _JUDGE_PREFERENCE.index(n) if n in _JUDGE_PREFERENCE
                                         else len(_JUDGE_PREFERENCE), n))


def annotation_lines(store: RunStore, stage: str | None = None, annotator: str | None = None,
                     kind: str | None = None) -> AnnotationExport:
    """The human labels of a run (or one stage, or one stage's pairs of one `kind`; one
    annotator's, or everyone's) and the
    judges' scores of the same pairs, as {group, candidate, score} lines. With several
    annotators `human` is their majority vote over the pairs all labelled (no-majority pairs
    left out) and `merge` says more; raises DataError where they share no pair. A pair whose
    rollouts are gone (a stage re-run) keeps its human lines; the judges then have no score."""
    from coevo.eval.annotators import from_records, majority_score_lines, merge_annotators

    by_annotator = labels_by_annotator(store, stage)
    if kind is not None:
        by_annotator = {name: {k: r for k, r in records.items() if r.get("kind") == kind}
                        for name, records in by_annotator.items()}
        by_annotator = {name: records for name, records in by_annotator.items() if records}
    if annotator is not None:
        by_annotator = {annotator: by_annotator.get(annotator, {})} if annotator in by_annotator else {}
    done: dict[str, dict[str, Any]] = {}
    for records in by_annotator.values():
        done.update(records)  # every labelled pair, whoever labelled it, for the judges' lines
    pairs: dict[str, Pair] = {}
    for st in sorted({record["stage"] for record in done.values()}):
        for kind_pairs in store_pairs(store, st, limit=None).values():
            pairs.update((p.key, p) for p in kind_pairs)
    per_annotator = {name: _human_lines(name, records) for name, records in by_annotator.items()}
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
    ranked = rank_judges(names)
    return AnnotationExport(human=human, judges={n: judges[n] for n in ranked},
                            judge=ranked[0] if ranked else None, labels=len(done), annotators=per_annotator,
                            merge=merge, conditions=condition_rows(by_annotator))


def export_annotations(run_dir: str | Path, out_dir: str | Path, stage: str | None = None,
                       annotator: str | None = None) -> dict[str, Any]:
    """Replace `out_dir` with `human.jsonl` (the labels) and `judge.jsonl` (the judge that
    scored most of the labelled pairs), plus `judge_<name>.jsonl` per judge when several did.
    Where several annotators labelled (and `annotator` does not pick one), human.jsonl is
    their majority vote, `human_<name>.jsonl` each one's labels and `majority.jsonl` every
    merged pair's votes and majority. Returns {"labels", "human", "judge", "judge_name",
    "judges": {name: path}, "annotators": {name: path}, "majority": path or None, "merge":
    the majority vote and Fleiss' κ or None}. Raises DataError when there is no label to
    export (naming where to make them) or `out_dir` holds files an export did not write."""
    from coevo.rundir.store import RunStore

    store = RunStore(run_dir, read_only=True)
    try:
        stage, kind = batch_stage(store, stage)
        names = list(labels_by_annotator(store, stage))
        lines = annotation_lines(store, stage, annotator, kind)
        # A comparison of conditions is a stage of its labels only (an opaque id, no rollouts).
        stages = [s for s, _ in store.rollout_stages()] + sorted(
            {r["stage"] for _, r in store.get_records(KIND) if r.get("kind") == "vs_condition"})
    finally:
        store.close()
    _check_labels(run_dir, lines, stage, stages, annotator, names)
    out = Path(out_dir)
    check_replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=out.parent))
    try:
        written, result = _export_files(lines, out)
        for name, rows in written.items():
            (new / name).write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows),
                                    encoding="utf-8")
        if lines.conditions:
            (new / "conditions.md").write_text(condition_table(lines.conditions), encoding="utf-8")
        _swap(new, out)
    finally:
        if new.exists():
            shutil.rmtree(new)
    return result


def batch_stage(store: RunStore, stage: str | None) -> tuple[str | None, str | None]:
    """(stage, kind) of `stage` where it is a batch id the annotation pages name (coevo.view.
    annotate_ids), else (stage, None): `--stage` takes either."""
    from coevo.view.annotate_ids import BATCH_PREFIX, find_batch, labelled_batches, run_secret

    if stage is None or not stage.startswith(BATCH_PREFIX):
        return stage, None
    found = find_batch(labelled_batches(store, run_secret(store), [r for _, r in store.get_records(KIND)]), stage)
    return (found.stage, found.kind) if found else (stage, None)


def _check_labels(run_dir: str | Path, lines: AnnotationExport, stage: str | None, stages: list[str],
                  annotator: str | None, names: list[str]) -> None:
    """DataError unless there are labels to export: the stage and annotator asked for exist
    (`stages`, `names`: the run's) and hold at least one label."""
    from coevo.tasks.loaders import DataError

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


def _export_files(lines: AnnotationExport, out: Path) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """({file name: its JSONL rows}, export_annotations' result naming each file under `out`):
    human.jsonl always; each annotator's file and majority.jsonl where several were merged;
    judge.jsonl, and judge_<name>.jsonl per judge where several scored, where any did."""
    from coevo.eval.annotators import majority_lines

    written: dict[str, list[dict[str, Any]]] = {"human.jsonl": lines.human}
    result: dict[str, Any] = {"labels": lines.labels, "human": str(out / "human.jsonl"), "judge": None,
                              "judge_name": lines.judge, "judges": {}, "annotators": {}, "majority": None,
                              "merge": None}
    if lines.merge is not None:
        for name, rows in lines.annotators.items():
            written[f"human_{name}.jsonl"] = rows
            result["annotators"][name] = str(out / f"human_{name}.jsonl")
        written["majority.jsonl"] = majority_lines(lines.merge)
        result["majority"] = str(out / "majority.jsonl")
        result["merge"] = lines.merge.model_dump()
    result["conditions"] = lines.conditions
    if lines.conditions:
        written["conditions.jsonl"] = lines.conditions
        result["conditions_table"] = str(out / "conditions.md")
    if lines.judge is not None:
        written["judge.jsonl"] = lines.judges[lines.judge]
        result["judge"] = str(out / "judge.jsonl")
        if len(lines.judges) > 1:
            for name, rows in lines.judges.items():
                written[f"judge_{name}.jsonl"] = rows
                result["judges"][name] = str(out / f"judge_{name}.jsonl")
        else:
            result["judges"] = {lines.judge: result["judge"]}
    return written, result


def check_replaceable(out: Path) -> None:
    """DataError unless `out` is absent, empty or holds only files an export writes: an export
    replaces the folder as a whole, and must never take anything else with it."""
    from coevo.tasks.loaders import DataError

    if not out.exists():
        return
    if not out.is_dir():
        raise DataError(f"--out {out} is a file, not a folder: give a folder for the exported labels")
    others = sorted(p.name for p in out.iterdir() if not (p.is_file() and _EXPORT_FILE.fullmatch(p.name)))
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise DataError(f"{out} holds files an annotation export did not write ({shown}); the export replaces "
                        "its folder as a whole, so give a new or empty folder, or one an earlier export wrote")


def _swap(new: Path, out: Path) -> None:
    # Rename the old folder aside first, then the new one into its place: at no moment is
    # there a half-written folder under `out`'s name.
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
        old.rmdir()
        out.rename(old)
    new.rename(out)
    if old is not None:
        shutil.rmtree(old)


# ─── Table 2: comparisons of conditions ─────────────────────────────────────────────


def _one_annotator_counts(records: list[dict[str, Any]], first: str, second: str) -> dict[str, int]:
    # One person's labels are their own majority: nothing to vote on, no pair without one.
    return {"first": sum(r["winner"] == first for r in records), "second": sum(r["winner"] == second for r in records),
            "tie": sum(r["winner"] == "tie" for r in records), "no_majority": 0}


def condition_rows(by_annotator: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per comparison of conditions with labels (`labels_by_annotator`'s), Table 2's row:
    majority-vote wins for the first-named condition, ties, wins for the second and pairs with
    no majority (the paper's first / second / tie split), over the pairs every annotator of
    the comparison labelled; their Fleiss' κ with n and 95 % CI (None with one annotator);
    and the first's share of the decided pairs with its Wilson 95 % interval."""
    from coevo.eval.annotators import from_records, merge_annotators
    from coevo.eval.stats import wilson_interval
    from coevo.tasks.errors import DataError

    per: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, records in by_annotator.items():
        for record in records.values():
            if record.get("kind") == "vs_condition":
                per.setdefault(record["stage"], {}).setdefault(name, []).append(record)
    rows = []
    for cid, by_name in per.items():
        first, second = next(iter(by_name.values()))[0]["candidates"]
        kappa = ci = None
        partial = 0
        if len(by_name) > 1:
            try:
                merge = merge_annotators([from_records(n, recs, "the run's labels") for n, recs in by_name.items()])
            except DataError:  # they labelled different pairs of it: no vote to count yet
                merge = None
            counts = merge.counts if merge else {"first": 0, "second": 0, "tie": 0, "no_majority": 0}
            n_items, partial = (merge.n_items, merge.n_partial) if merge else (0, sum(map(len, by_name.values())))
            kappa, ci = (merge.agreement.kappa, merge.agreement.ci) if merge else (None, None)
        else:
            [records] = by_name.values()
            counts, n_items = _one_annotator_counts(records, first, second), len(records)
        decided = counts["first"] + counts["second"]
        share = wilson_interval(counts["first"], decided) if decided else None
        rows.append({"comparison": f"{first} vs {second}", "id": cid, "first": first, "second": second,
                     "first_wins": counts["first"], "ties": counts["tie"], "second_wins": counts["second"],
                     "no_majority": counts["no_majority"], "pairs": n_items, "partial_pairs": partial,
                     "annotators": sorted(by_name), "kappa": kappa, "kappa_ci": ci,
                     "first_share": share[0] if share else None,
                     "first_share_ci": [share[1], share[2]] if share else None, "first_share_n": decided})
    return sorted(rows, key=lambda row: row["comparison"])


def _kappa_text(row: dict[str, Any]) -> str:
    if len(row["annotators"]) < 2:
        return "— (one annotator)"
    if row["kappa"] is None:
        return "undefined (one category)"
    ci = f" [{row['kappa_ci'][0]:.2f}, {row['kappa_ci'][1]:.2f}]" if row["kappa_ci"] else ""
    return f"{row['kappa']:.2f}{ci}, n = {row['pairs']} x {len(row['annotators'])}"


def condition_table(rows: list[dict[str, Any]]) -> str:
    """The rows as the paper's Table 2 (Markdown), with what it leaves unsaid: the pairs with
    no majority, the annotators' κ and the first's share of decided pairs, each with its n."""
    lines = ["| Comparison (A vs. B) | A | Tie | B | no majority | pairs | Fleiss' κ [95% CI], n | "
             "A's share of decided [95% CI], n |", "|---|---|---|---|---|---|---|---|"]
    for row in rows:
        share = ("—" if row["first_share"] is None else
                 f"{row['first_share']:.2f} [{row['first_share_ci'][0]:.2f}, {row['first_share_ci'][1]:.2f}], "
                 f"n = {row['first_share_n']}")
        lines.append(f"| {row['comparison']} | {row['first_wins']} | {row['ties']} | {row['second_wins']} | "
                     f"{row['no_majority']} | {row['pairs']} | {_kappa_text(row)} | {share} |")
    return "\n".join(lines) + "\n\nMajority vote of the annotators per pair (a label at least two of three chose); " \
        "A is the first-named condition.\n"
