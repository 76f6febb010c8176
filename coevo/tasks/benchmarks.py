"""WritingBench, HelloBench and HealthBench rows, read from the user's local copy, as Samples
whose per-query criteria are the gold rubric.

Both benchmarks publish JSONL with a checklist per query; the papers score answers
against exactly those criteria, so they are the `Sample.rubric` (gold: the final grader
and the diagnostic trajectory read it, no optimisation role does). A data source names
the format and the file: `writingbench:PATH`, `hellobench:PATH` or `healthbench:PATH`.
Nothing is downloaded: the user brings the file (WritingBench: `benchmark_all.jsonl` of
X-PLUG/WritingBench; HelloBench: one of `HelloBench/*.jsonl` of Quehry/HelloBench;
HealthBench: `healthbench*.jsonl` of openai/simple-evals).

Row formats:
- WritingBench: `index`, `domain1`, `domain2`, `lang`, `query`, and `checklist` (the
  authors' release; OpenCompass's copy calls it `criteria`): a list of
  `{name, criteria_description, "1-2": ..., "3-4": ..., ..., "9-10": ...}`. The official
  critic scores each criterion 1-10 with those band descriptions and averages them, so
  the bands stay in the criterion's description and every weight is 1.
- HelloBench: `id`, `instruction`, `checklists` (a list of yes/no questions), `category`
  (the subcategory), `num_checklist`. Its official score weights the checklist items by
  per-subcategory regression weights kept outside the rows (the repository's
  `Checklists/*.json`); here every item weighs 1, which the loader's docs say.
- HealthBench: `prompt_id`, `prompt` (the conversation: a list of `{role, content}`, ending
  with the user's turn), `rubrics` (a list of `{criterion, points, tags}`; points are signed:
  a negative criterion is something a good answer avoids), `example_tags`. The rubric keeps
  each criterion's signed points as its weight; grade it with `roles.grader.kind: healthbench`
  (met or not per criterion, points met over positive points, clipped to [0, 1]). A
  conversation of several turns becomes one prompt, each turn under its speaker's name.
- OpenScholar (`openscholar:PATH`, training queries) and DeepResearch-Gym
  (`deepresearch_gym:PATH`, evaluation rows with reference key points): TAIScore's deep-research
  domain, read by `tasks/deepresearch.py`. OpenScholar rows pass Appendix C's rule-based stage
  as they are read; `read_benchmark` counts what each rule removed.

A PATH of the form `bundled:NAME` names a file shipped in coevo/tasks/data/ (the tiny
examples' samples, e.g. `openscholar:bundled:openscholar_tiny.jsonl`).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from coevo.core.jsonl import iter_jsonl
from coevo.tasks.deepresearch import RowRemoved, deepresearch_gym_row, openscholar_row
from coevo.tasks.errors import DataError
from coevo.tasks.transfer_benchmarks import eqbench_cw_row, llmeval_med_row, whole_file_rows
from coevo.core.types import Criterion, Rubric, Sample

#: WritingBench's score bands, in the order the official critic prompt lists them.
_BANDS = ("1-2", "3-4", "5-6", "7-8", "9-10")


def _writingbench(row: dict[str, Any], where: str) -> Sample:
    query = _text(row, "query", where)
    if row.get("index") in (None, ""):
        raise DataError(f"{where}: no 'index' (WritingBench rows carry a numeric index as their id)")
    items = row.get("checklist", row.get("criteria"))
    if not isinstance(items, list) or not items:
        raise DataError(f"{where}: 'checklist' must be a non-empty list of criteria "
                        "({name, criteria_description, '1-2': ..., ...}); "
                        f"got {type(items).__name__ if items is not None else 'nothing'}")
    criteria = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise DataError(f"{where}: checklist item {number} is a {type(item).__name__}, not an object "
                            "{name, criteria_description, '1-2': ..., ...}")
        name = item.get("name")
        description = item.get("criteria_description", item.get("description"))
        if not isinstance(name, str) or not name.strip() or not isinstance(description, str):
            raise DataError(f"{where}: checklist item {number} needs a 'name' and a 'criteria_description' "
                            f"(strings); it has keys {sorted(item)}")
        bands = [f"{band}: {item[band]}" for band in _BANDS if item.get(band)]
        text = description.strip() + ("\nScore bands: " + " | ".join(bands) if bands else "")
        criteria.append(Criterion(name=name.strip(), description=text, weight=1.0))
    _unique_names(criteria, where)
    meta = {key: row[key] for key in ("domain1", "domain2", "lang") if key in row}
    return Sample(id=f"writingbench-{row['index']}", prompt=query, genre=_optional(row.get("domain2")),
                  rubric=Rubric(criteria=criteria), meta={"benchmark": "writingbench", **meta})


def _hellobench(row: dict[str, Any], where: str) -> Sample:
    instruction = _text(row, "instruction", where)
    if row.get("id") in (None, ""):
        raise DataError(f"{where}: no 'id' (HelloBench rows carry a string id)")
    items = row.get("checklists")
    if not isinstance(items, list) or not items or not all(isinstance(i, str) and i.strip() for i in items):
        raise DataError(f"{where}: 'checklists' must be a non-empty list of non-empty strings "
                        f"(yes/no questions); got {items!r:.120}")
    expected = row.get("num_checklist")
    if expected is not None and expected != len(items):
        raise DataError(f"{where}: num_checklist is {expected} but 'checklists' holds {len(items)} items: "
                        "the row is cut or edited; restore it from the benchmark's file")
    criteria = [Criterion(name=f"checklist_{n}", description=text.strip(), weight=1.0)
                for n, text in enumerate(items, start=1)]
    meta = {key: row[key] for key in ("category", "num_checklist") if key in row}
    return Sample(id=f"hellobench-{row['id']}", prompt=instruction, genre=_optional(row.get("category")),
                  rubric=Rubric(criteria=criteria), meta={"benchmark": "hellobench", **meta})


def _healthbench(row: dict[str, Any], where: str) -> Sample:
    if row.get("prompt_id") in (None, ""):
        raise DataError(f"{where}: no 'prompt_id' (HealthBench rows carry one as their id)")
    turns = row.get("prompt")
    if (not isinstance(turns, list) or not turns or not all(isinstance(t, dict) and isinstance(t.get("content"), str)
                                                            and isinstance(t.get("role"), str) for t in turns)):
        raise DataError(f"{where}: 'prompt' must be the conversation, a non-empty list of {{role, content}} "
                        f"strings; got {turns!r:.120}")
    items = row.get("rubrics")
    if not isinstance(items, list) or not items:
        raise DataError(f"{where}: 'rubrics' must be a non-empty list of {{criterion, points, tags}}")
    criteria = []
    for number, item in enumerate(items, start=1):
        text, points = (item.get("criterion"), item.get("points")) if isinstance(item, dict) else (None, None)
        if not isinstance(text, str) or not text.strip() or isinstance(points, bool) \
                or not isinstance(points, (int, float)) or points == 0:
            raise DataError(f"{where}: rubric item {number} needs a 'criterion' (text) and non-zero 'points' "
                            f"(a number, negative for what to avoid); got {item!r:.120}")
        criteria.append(Criterion(name=f"rubric_{number}", description=text.strip(), weight=float(points)))
    if not any(c.weight > 0 for c in criteria):
        raise DataError(f"{where}: no rubric item has positive points, so no answer can score: the row is cut")
    prompt = turns[0]["content"] if len(turns) == 1 else "\n\n".join(f"{t['role']}: {t['content']}" for t in turns)
    tags = row.get("example_tags")
    return Sample(id=f"healthbench-{row['prompt_id']}", prompt=prompt,
                  rubric=Rubric(criteria=criteria),
                  meta={"benchmark": "healthbench", **({"example_tags": tags} if isinstance(tags, list) else {})})


#: Source prefix -> row reader. A plain dict: a third benchmark is one function and one line.
BENCHMARKS: dict[str, Callable[[dict[str, Any], str], Sample]] = {
    "writingbench": _writingbench,
    "hellobench": _hellobench,
    "healthbench": _healthbench,
    "openscholar": openscholar_row,
    "deepresearch_gym": deepresearch_gym_row,
    "eqbench_cw": eqbench_cw_row,
    "llmeval_med": llmeval_med_row,
}
#: Benchmarks published as one JSON document, not JSONL (tasks/transfer_benchmarks.py).
WHOLE_FILE = ("eqbench_cw", "llmeval_med")


@dataclass
class BenchmarkRead:
    """A benchmark file read: its samples, the rows read, and the rows each rule removed
    (OpenScholar's Appendix C rules; empty for the others)."""

    samples: list[Sample]
    rows: int = 0
    removed: dict[str, int] = field(default_factory=dict)


def benchmark_of(source: str | os.PathLike[str]) -> str | None:
    """The benchmark a data source names (`writingbench:PATH` -> "writingbench"), or None."""
    prefix, sep, _ = os.fspath(source).partition(":")
    return prefix if sep and prefix in BENCHMARKS else None


def load_benchmark(source: str | os.PathLike[str], *, limit: int | None = None) -> list[Sample]:
    """Samples of a benchmark source (`writingbench:PATH`, `hellobench:PATH`, `healthbench:PATH`,
    `openscholar:PATH`, `deepresearch_gym:PATH`), gold rubrics and key points included.

    Raises DataError naming the line and the fix for a missing file, a line that is not
    JSON, a row without its query or checklist, or a duplicate id.
    """
    return read_benchmark(source, limit=limit).samples


def benchmark_path(source: str | os.PathLike[str]) -> Path:
    """The file a benchmark source names: its PATH, or a bundled file for `bundled:NAME`."""
    rest = os.fspath(source).split(":", 1)[1]
    if rest.startswith("bundled:"):
        return Path(str(resources.files("coevo.tasks").joinpath("data", rest.removeprefix("bundled:"))))
    return Path(rest).expanduser()


def read_benchmark(source: str | os.PathLike[str], *, limit: int | None = None) -> BenchmarkRead:
    """`load_benchmark`, with how many rows were read and what each rule removed; `limit`
    counts the samples kept."""
    text = os.fspath(source)
    name = benchmark_of(text)
    if name is None:
        raise DataError(f"{text}: not a benchmark source; give " + " or ".join(f"{b}:PATH" for b in BENCHMARKS))
    path = benchmark_path(text)
    if not path.is_file():
        raise DataError(f"{text}: no such file {path}. Download the benchmark's JSONL yourself (coevo never "
                        f"downloads it) and give its path, e.g. {name}:/data/{name}.jsonl")
    if limit is not None and limit < 0:
        raise DataError(f"limit must be >= 0 or None, got {limit}.")
    read = BenchmarkRead(samples=[])
    removed: Counter[str] = Counter()
    seen: dict[str, str] = {}
    with path.open(encoding="utf-8-sig") as handle:
        rows = (whole_file_rows(name, path, text) if name in WHOLE_FILE
                else ((f"line {number}", row) for number, row in iter_jsonl(handle, text, DataError)))
        for label, row in rows:
            if limit is not None and len(read.samples) >= limit:
                break
            read.rows += 1
            try:
                sample = BENCHMARKS[name](row, f"{text}: {label}")
            except RowRemoved as rule:
                removed[rule.rule] += 1
                continue
            if sample.id in seen:
                raise DataError(f"{text}: {label}: duplicate id {sample.id!r} (first at {seen[sample.id]}); the "
                                "file holds a row twice: remove one")
            seen[sample.id] = label
            read.samples.append(sample)
    read.removed = dict(removed)
    if not read.samples:
        because = (f": the rules removed all {read.rows} ({read.removed}); give queries that pass them"
                   if removed else "")
        raise DataError(f"{text} holds no rows{' (limit is 0)' if limit == 0 else because}")
    return read


def _text(row: dict[str, Any], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataError(f"{where}: {key!r} must be a non-empty string (the task the model answers); "
                        f"the row has keys {sorted(row)}")
    return value


def _unique_names(criteria: list[Criterion], where: str) -> None:
    # The gold grader reports a grade per criterion name: two of one name would merge.
    names = [c.name for c in criteria]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise DataError(f"{where}: checklist names {repeated} repeat; each criterion needs its own name")


def _optional(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


__all__ = ["BENCHMARKS", "BenchmarkRead", "benchmark_of", "benchmark_path", "load_benchmark", "read_benchmark"]
