"""What every benchmark does with its result: print it, and write it where `--json` says."""

from __future__ import annotations

import json
from pathlib import Path


def report(result: dict, path: Path | None) -> None:
    """Print `result` as JSON on stdout; also write it to `path` (folders made) when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
