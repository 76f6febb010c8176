"""What names the weights a finished training stage saved: the stage folder and its result record.

A leaf, below both sides that need it: train/ writes `RESULT_FILE` into a stage's `final/`
folder when the stage finishes, and the transformers backend (llm/local.py) names a model
restored from that folder by it, so that a cache keyed by model id never answers for other
weights. Neither imports the other for it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: The record a finished stage writes beside its weights (a `TrainResult` as JSON).
RESULT_FILE = "trainer_result.json"


def checkpoint_identity(folder: str | Path) -> str:
    """`<last 4 parts of the folder>:<16 hex digits of its result record>`, or `:unfinished`
    when the stage never wrote one. Reading the record, not the weights, costs nothing at any
    size and is right under ZeRO-3, where each rank holds only a slice of the weights; the
    same stage trained again writes another record (its times), so it gets another name."""
    folder = Path(folder)
    record = folder / RESULT_FILE
    digest = hashlib.sha256(record.read_bytes()).hexdigest()[:16] if record.is_file() else "unfinished"
    return f"{'/'.join(folder.parts[-4:])}:{digest}"
