"""Load task samples from the bundled sets or from the user's own files.

A source is one of:

- ``bundled:NAME`` — a set shipped inside the package (``bundled:writing``);
- a ``.jsonl`` file, one JSON object per line;
- a ``.parquet`` file;
- a folder written by ``datasets.Dataset.save_to_disk``;
- ``writingbench:PATH`` / ``hellobench:PATH`` — a benchmark's own JSONL, its per-query
  criteria as the gold rubric (:mod:`coevo.tasks.benchmarks`).

Every row becomes a :class:`coevo.core.types.Sample`. ``columns`` maps our field names to the
user's column names, so data never has to be rewritten to fit coevo. Columns that map to
no field are kept in ``Sample.meta`` rather than dropped: they are often what a user wants
to slice results by later (difficulty, source, language).

Every failure is a :class:`DataError` whose message names the problem and the fix,
because these errors are read by people pointing the CLI at a file, not by programmers.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from coevo.core.jsonl import iter_jsonl
from coevo.tasks.errors import DataError
from coevo.core.types import Rubric, Sample

# A plain dict, not a registry: adding a bundled set is one line and one data file.
BUNDLED: dict[str, str] = {
    "writing": "writing_prompts.jsonl",
    # Short-form writing (at most 80 words each): answers, critiques and revisions that end
    # within small token limits, so the quickstart's judges score finished texts.
    "writing_short": "writing_short.jsonl",
}

FIELDS: tuple[str, ...] = ("id", "prompt", "genre", "reference", "rubric", "meta")
REQUIRED: tuple[str, ...] = ("prompt",)

_SOURCES_HELP = (
    "a .jsonl file, a .parquet file, a folder saved by datasets' save_to_disk, or "
    + ", ".join(f"bundled:{name}" for name in BUNDLED)
)


def load_samples(
    source: str | os.PathLike[str],
    *,
    columns: dict[str, str] | None = None,
    limit: int | None = None,
) -> list[Sample]:
    """Read samples from `source` (``bundled:NAME``, ``.jsonl``, ``.parquet`` or a
    ``datasets`` folder).

    `columns` maps our field names (id, prompt, genre, reference, rubric, meta) to the
    column names in the data, e.g. ``{"prompt": "instruction", "id": "uid"}``.
    A row without an id gets one derived from a hash of its prompt, so ids stay the same
    across runs and machines. `limit` keeps the first `limit` rows.

    Raises DataError for a missing file, a file that is not UTF-8 text (a binary file), a
    line that is not JSON, a missing required column, an unreadable rubric, or duplicate ids.
    """
    from coevo.tasks.benchmarks import benchmark_of, load_benchmark

    if benchmark_of(source) is not None:  # `writingbench:PATH`, `hellobench:PATH`: the benchmark's own rows
        if columns:
            raise DataError(f"{source}: columns= does not apply to a benchmark source (its row format is "
                            "fixed); drop data.columns, or give the file as a plain .jsonl with columns")
        try:
            return load_benchmark(source, limit=limit)
        except UnicodeDecodeError:  # a binary file given as the benchmark's JSONL
            path = Path(os.fspath(source).split(":", 1)[1]).expanduser()
            raise _not_text(path, "Give the benchmark's own JSONL file, one JSON object per line") from None
    mapping = _check_columns(columns)
    if limit is not None and limit < 0:
        raise DataError(f"limit must be >= 0 or None, got {limit}.")
    label = str(source)
    samples: list[Sample] = []
    seen: dict[str, str] = {}
    for where, row in _rows(source, mapping, limit):
        sample = _to_sample(row, mapping, where, label)
        if sample.id in seen:
            raise DataError(
                f"{label}: duplicate id {sample.id!r} at {where} (first seen at "
                f"{seen[sample.id]}). Ids must be unique: fix the data, map another "
                "column with columns={'id': ...}, or drop the id column so ids are "
                "derived from the prompt (then identical prompts must be removed)."
            )
        seen[sample.id] = where
        samples.append(sample)
    if not samples:
        raise DataError(f"{label} holds no samples{' (limit is 0)' if limit == 0 else ''}: "
                        "give a source with at least one row")
    return samples


def derive_id(prompt: str) -> str:
    """Stable id for a row without one: a short hash of its prompt text."""
    return "h-" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


# ------------------------------------------------------------------ reading rows


def _check_columns(columns: dict[str, str] | None) -> dict[str, str]:
    mapping = {field: field for field in FIELDS}
    for field, column in (columns or {}).items():
        if field not in FIELDS:
            raise DataError(
                f"columns= has unknown field {field!r}; its keys are our field names "
                f"{list(FIELDS)} and its values are your column names, "
                "e.g. columns={'prompt': 'instruction'}."
            )
        mapping[field] = column
    return mapping


def _rows(
    source: str | os.PathLike[str], mapping: dict[str, str], limit: int | None
) -> Iterator[tuple[str, dict[str, Any]]]:
    text = os.fspath(source)
    if text.startswith("bundled:"):
        name = text.removeprefix("bundled:")
        if name not in BUNDLED:
            raise DataError(
                f"unknown bundled set {name!r}; available: "
                + ", ".join(f"bundled:{n}" for n in BUNDLED)
            )
        resource = resources.files("coevo.tasks").joinpath("data", BUNDLED[name])
        lines = resource.read_text(encoding="utf-8").splitlines()
        yield from _take(_jsonl_rows(lines, text), limit)
        return

    path = Path(text).expanduser()
    if not path.exists():
        raise DataError(f"no such file or folder: {path}. Give {_SOURCES_HELP}.")
    if path.is_dir():
        rows = _dataset_rows(_load_from_disk(path), path, mapping, limit)
    elif path.suffix.lower() in (".jsonl", ".ndjson"):
        with path.open(encoding="utf-8-sig") as handle:
            try:
                yield from _take(_jsonl_rows(handle, str(path)), limit)
            except UnicodeDecodeError:  # a binary file (a .zip, a .parquet) named .jsonl
                raise _not_text(path, f"Give {_SOURCES_HELP}") from None
        return
    elif path.suffix.lower() == ".parquet":
        rows = _dataset_rows(_load_parquet(path), path, mapping, limit)
    else:
        raise DataError(f"cannot read {path}: unsupported file type. Give {_SOURCES_HELP}.")
    yield from rows


def _not_text(path: Path, fix: str) -> DataError:
    """The error for a file that is not UTF-8 text, naming the line and byte where it stops
    being text (read again as bytes: a text reader only knows the chunk it was decoding)."""
    offset = 0
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return DataError(f"data file {path} is not UTF-8 text (line {number}, byte {offset + exc.start}): "
                                 f"a binary file, or text in another encoding? {fix}.")
            offset += len(line)
    return DataError(f"data file {path} is not UTF-8 text: a binary file, or text in another encoding? {fix}.")


def _take(rows: Iterator[tuple[str, dict[str, Any]]], limit: int | None):
    # Stopping early (rather than slicing afterwards) means a bad line past the limit
    # does not block a quick look at the first rows of a large file.
    if limit == 0:
        return
    for count, item in enumerate(rows, start=1):
        yield item
        if count == limit:
            return


def _jsonl_rows(lines, label: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for number, row in iter_jsonl(lines, label, DataError):
        yield f"line {number}", row


@contextlib.contextmanager
def _quiet_datasets():
    # Progress bars are datasets' global state: silence them for our short reads and
    # restore whatever the user had.
    import datasets

    was_enabled = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        yield datasets
    finally:
        if was_enabled:
            datasets.enable_progress_bars()


def _load_parquet(path: Path):
    with _quiet_datasets() as datasets, tempfile.TemporaryDirectory() as cache:
        # from_parquet writes an Arrow copy into its cache even in memory mode; a
        # throwaway cache keeps every file a user loads from piling up in ~/.cache.
        try:
            return datasets.Dataset.from_parquet(str(path), keep_in_memory=True, cache_dir=cache)
        except Exception as exc:  # pyarrow raises several types for a damaged file
            raise DataError(f"cannot read Parquet file {path}: {exc}") from None


def _load_from_disk(path: Path):
    with _quiet_datasets() as datasets:
        try:
            loaded = datasets.load_from_disk(str(path))
        except FileNotFoundError:
            raise DataError(
                f"{path} is a folder but not one saved by datasets' save_to_disk "
                f"(no dataset_info.json / dataset_dict.json). Give {_SOURCES_HELP}."
            ) from None
    if isinstance(loaded, datasets.DatasetDict):
        splits = list(loaded)
        if len(splits) != 1:
            raise DataError(
                f"{path} holds several splits {splits}; point at one of them, "
                f"e.g. {path / splits[0]}."
            )
        loaded = loaded[splits[0]]
    return loaded


def _dataset_rows(dataset, path: Path, mapping: dict[str, str], limit: int | None):
    # Column checks happen once here, on the schema, instead of once per row.
    _require(dataset.column_names, mapping, f"{path}")
    if limit is not None:
        dataset = dataset.select(range(min(limit, len(dataset))))
    for index, row in enumerate(dataset):
        yield f"row {index}", row


# ------------------------------------------------------------------ building samples


def _require(present, mapping: dict[str, str], where: str) -> None:
    for field in REQUIRED:
        column = mapping[field]
        if column not in present:
            if column == field:
                fix = f"Name your {field} column with columns={{'{field}': '<your column>'}}."
            else:
                fix = f"columns= maps {field!r} to {column!r}, which is not among them."
            raise DataError(
                f"{where}: missing required column {column!r} for field {field!r}; "
                f"columns present: {sorted(present)}. {fix}"
            )


def _to_sample(row: Mapping[str, Any], mapping: dict[str, str], where: str, label: str) -> Sample:
    _require(row.keys(), mapping, f"{label}: {where}")
    prompt = row[mapping["prompt"]]
    if not isinstance(prompt, str) or not prompt.strip():
        raise DataError(f"{label}: {where}: the prompt must be a non-empty string, got {prompt!r}.")

    raw_id = row.get(mapping["id"])
    sample_id = derive_id(prompt) if raw_id is None or raw_id == "" else str(raw_id)

    meta = row.get(mapping["meta"]) or {}
    if not isinstance(meta, dict):
        raise DataError(f"{label}: {where}: 'meta' must be an object, got {type(meta).__name__}.")
    used = {mapping[field] for field in FIELDS}
    extras = {key: value for key, value in row.items() if key not in used}
    # An explicit meta object wins over loose columns of the same name.
    meta = {**extras, **meta}

    return Sample(
        id=sample_id,
        prompt=prompt,
        genre=_optional_str(row.get(mapping["genre"])),
        reference=_optional_str(row.get(mapping["reference"])),
        rubric=_rubric(row.get(mapping["rubric"]), where, label),
        meta=meta,
    )


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _rubric(value: Any, where: str, label: str) -> Rubric | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        # Parquet and CSV-born datasets often carry nested data as a JSON string.
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise DataError(
                f"{label}: {where}: the rubric is a string but not JSON; give "
                '{"criteria": [{"name": ..., "description": ..., "weight": ...}]}.'
            ) from None
    if isinstance(value, list):
        value = {"criteria": value}
    try:
        return Rubric.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(part) for part in first["loc"]) or "rubric"
        raise DataError(
            f"{label}: {where}: unreadable rubric ({at}: {first['msg']}). Expected "
            '{"criteria": [{"name": ..., "description": ..., "weight": ...}]}.'
        ) from None
