"""Reading JSON Lines with errors that name the file and line: one reader for every JSONL input.

Datasets, rollouts to judge, replay scripts, knowledge corpora and code problems all come
as JSONL written by hand or by other tools, so a bad line must say where it is and what a
good one looks like, in the error type of the caller (DataError, ModelError, ...).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any


def iter_jsonl(
    lines: Iterable[str], label: str, error: type[Exception] = ValueError,
    example: str = '{"prompt": "..."}',
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield `(line number, object)` for each non-blank line; raise `error` on a bad one.
    `example` is the well-formed line the error shows."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(
                f"{label}: line {number} is not valid JSON ({exc.msg} at column {exc.colno}). "
                "Each line must hold exactly one JSON object."
            ) from None
        if not isinstance(row, dict):
            raise error(
                f"{label}: line {number} is a JSON {type(row).__name__}, not an object. "
                f"Each line must be an object such as {example}."
            )
        yield number, row
