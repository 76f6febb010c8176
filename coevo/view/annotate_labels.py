"""`coevo eval annotations` as a library call: a run's labels exported (annotate_export.py),
or several annotators' JSONL files merged by majority vote (coevo/eval/annotators.py), and
what was written, in words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from coevo.eval.annotators import MergeResult


@dataclass
class CollectedLabels:
    """`result` is what --json prints; `merge` the majority vote (None: one annotator)."""

    result: dict[str, Any]
    merge: MergeResult | None
    from_run: bool


def collect_labels(sources: list[Path], out_dir: Path | None, stage: str | None) -> CollectedLabels:
    """Export the labels of the run `sources[0]` (a folder) into `out_dir`, or merge the
    annotator files `sources` (into `out_dir` when given). coevo/commands/evaluate.py has checked the mix."""
    from coevo.eval.annotators import MergeResult, merge_files, write_merge
    from coevo.view.annotate_export import export_annotations

    if sources[0].is_dir():
        result = export_annotations(sources[0], out_dir, stage=stage)
        merge = result["merge"]
        return CollectedLabels(result, None if merge is None else MergeResult.model_validate(merge), True)
    merged = merge_files(sources)
    result = {**merged.model_dump(), **(write_merge(merged, out_dir) if out_dir else {})}
    return CollectedLabels(result, merged, False)


def written_lines(labels: CollectedLabels, out_dir: Path | None) -> list[str]:
    """After the vote table: the merge in words, then each file written and what to run next."""
    from coevo.eval.annotators import summary_lines

    result = labels.result
    lines = []
    if labels.merge is not None:
        lines += summary_lines(labels.merge)
        lines += [f"wrote {path}: annotator {name}" for name, path in
                  (result["annotators"] if labels.from_run else {}).items()]
        if result.get("majority"):
            lines.append(f"wrote {result['majority']}: each pair's votes and majority")
    if not labels.from_run:
        return lines + ([f"wrote {result['human']}: the majority labels as scores"] if out_dir else [])
    lines.append(f"wrote {result['human']}: {result['labels']} labelled pairs")
    if result.get("conditions"):
        from coevo.view.annotate_export import condition_table

        lines += ["comparisons of conditions (the paper's Table 2):",
                  *condition_table(result["conditions"]).splitlines(), f"wrote {result['conditions_table']}: that table"]
    if result["judge"] is None:
        return lines + ["no judge scored these pairs, so there is no judge.jsonl to compare with"]
    lines += [f"wrote {path}: judge {name}" for name, path in result["judges"].items()]
    return lines + [f"agreement: coevo eval agreement --a {result['human']} --b {result['judge']}"]
