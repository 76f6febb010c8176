"""Blind pairwise annotation of any two systems' outputs (`coevo annotate FILE.jsonl`), without
a coevo run: two checkpoints' completions from a TRL run's logs, two APIs' answers, anything.

A person labels such pairs with the same pages, ids, blinding, labels and export as a run's
comparison of two conditions (the TAIScore paper's Table 2), so nothing is built twice and
`coevo eval annotations` / `coevo eval agreement` read the labels as they read a run's. To get
there the rows are written into a small annotation folder (a run store, `run.sqlite`) as two
conditions' held-out answers: system NAME's outputs are the rollouts of stage
`NAME/round0/eval`, one per row, matched by the row's sample id, and the folder's meta says
it is an annotation folder (algorithm "annotate"; `FILE_META`: the systems, in the order wins
are counted, and how many rows), so that the annotation pages compare exactly those two
systems on every row (`file_spec`), however the folder is served.

Rows: `{"prompt": ..., "a": ..., "b": ...}` (the systems named by --a-name / --b-name) or
`{"prompt": ..., "outputs": {"NAME1": ..., "NAME2": ...}}` (named by the keys); an optional
`id` names the row (default: its line number). A malformed row is refused in one line naming
the line and the fix. The folder remembers the rows it was made from (a digest): the same FILE
again reuses it, labels kept; different rows are refused rather than put beside the labels of
others.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.tasks.errors import DataError

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore
    from coevo.view.annotate_conditions import ComparisonSpec

#: The run store's meta key of an annotation folder: {"source", "digest", "names", "rows"}.
FILE_META = "annotate_file"
#: The algorithm an annotation folder records, as a run records its own.
ALGORITHM = "annotate"
#: The default folder beside FILE: FILE's stem + this.
FOLDER_SUFFIX = ".annotate"
#: A system's name: it names a stage (`NAME/round0/eval`) and the export's candidates.
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
#: Names the export gives a meaning of its own (a label's winner "tie").
_RESERVED = {"tie"}
_EXAMPLE = '{"prompt": "...", "a": "...", "b": "..."}'


@dataclass(frozen=True)
class FileRows:
    """The rows of FILE: the two systems' names (wins counted for the first), each row as
    (sample id, prompt, first's output, second's output), and a digest of the rows."""

    names: tuple[str, str]
    rows: list[tuple[str, str, str, str]]
    digest: str


@dataclass(frozen=True)
class AnnotationFolder:
    """What `import_file` made or found: the folder, the systems, how many rows, whether it
    was made now, and how many labels it already holds."""

    path: Path
    names: tuple[str, str]
    rows: int
    created: bool
    labels: int


def stage_of(name: str) -> str:
    """The store stage a system's outputs are the rollouts of."""
    return f"{name}/round0/eval"


def default_folder(file: Path) -> Path:
    """FILE's annotation folder when no --out is given: beside it, its stem + `.annotate`."""
    return file.with_name(file.stem + FOLDER_SUFFIX)


def check_name(name: str, option: str) -> str:
    """`name` if it can name a system, else DataError saying what one looks like."""
    if not NAME_RE.fullmatch(name) or name in _RESERVED:
        raise DataError(f"{option} {name!r} cannot name a system: use 1-64 letters, digits, _ . + or - "
                        "(not 'tie'), e.g. step500")
    return name


def _text(row: dict[str, Any], field: str, where: str, shown: str | None = None) -> str:
    value = row.get(field) if shown is None else row["outputs"].get(field)
    label = shown or repr(field)
    if not isinstance(value, str):
        kinds = {bool: "true/false", int: "a number", float: "a number", list: "a list", dict: "an object"}
        what = "is missing" if value is None else f"is {kinds.get(type(value), type(value).__name__)}, not text"
        raise DataError(f"{where}: {label} {what}; each row needs text for it, e.g. {_EXAMPLE}")
    if not value.strip():
        raise DataError(f"{where}: {label} is empty; give it text, or drop the row (an empty output is "
                        "nothing to compare)")
    return value


def _row_names(row: dict[str, Any], where: str, picked: tuple[str | None, str | None],
               first: tuple[str, str] | None) -> tuple[str, str]:
    """The two `outputs` keys this row's systems are: those --a-name / --b-name pick, else
    the row's two keys (in the first row's order, which every row must have)."""
    outputs = row["outputs"]
    if not isinstance(outputs, dict):
        raise DataError(f"{where}: 'outputs' must be an object of two systems' outputs, e.g. "
                        '{"outputs": {"step500": "...", "step1000": "..."}}')
    if picked[0] and picked[1]:
        missing = [n for n in picked if n not in outputs]
        if missing:
            raise DataError(f"{where}: 'outputs' has no {missing[0]!r} (--a-name / --b-name); its systems: "
                            f"{', '.join(map(str, outputs)) or 'none'}")
        return picked[0], picked[1]
    if len(outputs) != 2:
        raise DataError(f"{where}: 'outputs' has {len(outputs)} systems ({', '.join(map(str, outputs))}), not two; "
                        "pick two with --a-name NAME --b-name NAME")
    keys = tuple(outputs)
    if first is not None and set(keys) != set(first):
        raise DataError(f"{where}: 'outputs' names {', '.join(keys)}, but the first row names "
                        f"{', '.join(first)}; every row must hold the same two systems")
    return first or (keys[0], keys[1])


def _one_row(row: dict[str, Any], where: str, picked: tuple[str | None, str | None],
             first: tuple[str, str] | None) -> tuple[tuple[str, str], str, str, str]:
    """(the systems' names, the prompt, the first's output, the second's) of one row."""
    prompt = _text(row, "prompt", where)
    if "outputs" in row:
        if "a" in row or "b" in row:
            raise DataError(f"{where}: give either 'a' and 'b' or 'outputs', not both")
        names = _row_names(row, where, picked, first)
        return names, prompt, _text(row, names[0], where, f"outputs[{names[0]!r}]"), \
            _text(row, names[1], where, f"outputs[{names[1]!r}]")
    if "a" not in row and "b" not in row:
        raise DataError(f"{where}: no outputs to compare; each row needs 'a' and 'b' (or 'outputs': "
                        f"{{NAME: text, NAME: text}}), e.g. {_EXAMPLE}")
    names = (picked[0] or "a", picked[1] or "b")
    return names, prompt, _text(row, "a", where), _text(row, "b", where)


def _row_id(row: dict[str, Any], number: int, where: str, seen: dict[str, int]) -> str:
    """The row's sample id: its `id` (text or a whole number), else `line<N>`; unique."""
    given = row.get("id")
    if given is not None and (isinstance(given, bool) or not isinstance(given, (str, int)) or not str(given).strip()):
        raise DataError(f"{where}: 'id' must be text or a whole number naming the row, not {given!r}")
    sid = str(given) if given is not None else f"line{number}"
    if sid in seen:
        raise DataError(f"{where}: id {sid!r} is line {seen[sid]}'s too; give each row its own id (or none)")
    seen[sid] = number
    return sid


def read_rows(file: Path, a_name: str | None = None, b_name: str | None = None) -> FileRows:
    """FILE's rows and the two systems' names (wins counted for the first), the digest of the
    rows alone (the names are checked apart, to say which to pass); DataError, one
    line naming the line and the fix, for a missing file or a malformed row."""
    from coevo.core.jsonl import iter_jsonl

    if bool(a_name) != bool(b_name):
        raise DataError("give both --a-name and --b-name (the two systems' names), or neither")
    picked = (check_name(a_name, "--a-name") if a_name else None, check_name(b_name, "--b-name") if b_name else None)
    if picked[0] and picked[0] == picked[1]:
        raise DataError(f"--a-name and --b-name are both {a_name!r}: name two different systems")
    if not file.is_file():
        raise DataError(f"{file} is not a file; give a JSONL file of rows such as {_EXAMPLE}")
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise DataError(f"{file} is not UTF-8 text; give a JSONL file of rows such as {_EXAMPLE}") from None
    names: tuple[str, str] | None = None
    rows, seen = [], {}
    for number, row in iter_jsonl(lines, str(file), DataError, _EXAMPLE):
        where = f"{file}: line {number}"
        got, prompt, first, second = _one_row(row, where, picked, names)
        names = names or (check_name(got[0], f"{where}: system"), check_name(got[1], f"{where}: system"))
        rows.append((_row_id(row, number, where, seen), prompt, first, second))
    if names is None:
        raise DataError(f"{file} holds no rows; each line is one prompt and two outputs, e.g. {_EXAMPLE}")
    if names[0] == names[1]:
        raise DataError(f"{file}: both systems are named {names[0]!r}; pass --a-name NAME --b-name NAME")
    digest = hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()
    return FileRows(names=names, rows=rows, digest=digest)


def _existing(out: Path, rows: FileRows, fresh: bool) -> AnnotationFolder | None:
    """The annotation folder already at `out` made from these rows (None: make it; an
    unfinished one, or with `fresh` any, is deleted first); DataError for a file, a folder of
    other things, a run, or an annotation folder of other rows or other names."""
    import shutil

    from coevo.rundir.store import STORE_FILE, RunStore
    from coevo.view.annotate_pairs import KIND

    if out.exists() and not out.is_dir():
        raise DataError(f"--out {out} is a file, not a folder: give a folder for the annotation store")
    if not (out / STORE_FILE).is_file():
        if out.is_dir() and any(out.iterdir()):
            raise DataError(f"--out {out} holds files but no {STORE_FILE}: give a new or empty folder")
        return None
    store = RunStore(out, read_only=True)
    try:
        meta, algorithm, labels = store.get_meta(FILE_META), store.get_meta("algorithm"), store.record_count(KIND)
    finally:
        store.close()
    if algorithm != ALGORITHM:
        raise DataError(f"--out {out} is a coevo run ({algorithm or 'unknown'}), not an annotation folder: give "
                        "another --out (to label a run's pairs: `coevo view RUN`, Annotate)")
    same_rows = meta is not None and meta.get("digest") == rows.digest and not fresh
    if same_rows and tuple(meta["names"]) == rows.names:
        return AnnotationFolder(out, rows.names, int(meta["rows"]), False, labels)
    if same_rows:
        first, second = meta["names"]
        raise DataError(f"--out {out} names these rows' systems {first} and {second}, not {' and '.join(rows.names)}: "
                        f"pass --a-name {first} --b-name {second} to go on with its {labels} labels, or --fresh to "
                        "start it over (its labels are deleted)")
    if meta is not None and not fresh:
        raise DataError(f"--out {out} was made from other rows ({meta.get('rows')} rows of "
                        f"{' vs '.join(meta.get('names', []))}, {labels} labels): give another --out, or --fresh "
                        "to start it over (its labels are deleted)")
    shutil.rmtree(out)  # unfinished (no FILE_META yet), or --fresh: an annotation folder, never anything else
    return None


def import_file(file: Path, out: Path | None = None, a_name: str | None = None, b_name: str | None = None,
                fresh: bool = False) -> AnnotationFolder:
    """FILE's rows in an annotation folder (`out`, default `default_folder(file)`): made now,
    or the one made earlier from the same rows, its labels kept. DataError (one line naming
    the fix) for a malformed row or an `out` that is not this file's annotation folder."""
    import time

    from coevo.rundir.store import RunStore
    from coevo.core.types import Rollout

    rows = read_rows(file, a_name, b_name)
    out = out or default_folder(file)
    found = _existing(out, rows, fresh)
    if found is not None:
        return found
    store = RunStore(out)
    try:
        store.set_meta("algorithm", ALGORITHM)
        store.set_meta("status", "finished")
        store.set_meta("started", time.time())
        for side, name in enumerate(rows.names):
            for sid, prompt, *texts in rows.rows:
                store.save_rollout(stage_of(name), Rollout(sample_id=sid, x=prompt, y0=texts[side], condition=name),
                                   round=0)
        # Last: a folder holding it is whole (an interrupted import is made again next time).
        store.set_meta(FILE_META, {"source": str(file), "digest": rows.digest, "names": list(rows.names),
                                   "rows": len(rows.rows)})
    finally:
        store.close()
    return AnnotationFolder(out, rows.names, len(rows.rows), True, 0)


def file_spec(store: RunStore) -> ComparisonSpec | None:
    """The one comparison an annotation folder's pages offer: its two systems (wins counted
    for the first) on every row; None for a run."""
    from coevo.view.annotate_conditions import ComparisonSpec

    meta = store.get_meta(FILE_META)
    if not isinstance(meta, dict) or len(meta.get("names") or ()) != 2:
        return None
    first, second = meta["names"]
    return ComparisonSpec(pairs=((first, second),), prompts=max(1, int(meta.get("rows") or 1)))
