"""The annotation records in a run's store: each label (kind "annotation", one per annotator
and pair) and each pair as served to a person (kind "annotation_served": which text was put on
the left, under the opaque token the page holds). The pages that make them: coevo.view.annotate.
"""

from __future__ import annotations

import re
import secrets
import time
from typing import TYPE_CHECKING, Any

from coevo.eval.annotators import DEFAULT_ANNOTATOR
from coevo.view.annotate_pairs import KIND, Pair, annotator_of, labels_by_annotator

if TYPE_CHECKING:
    from pathlib import Path

    from coevo.rundir.store import RunStore

#: Server-side side mapping of served pairs: token -> {pair, stage, kind, left, annotator, seed}.
SERVED = "annotation_served"
LABELS = ("A", "B", "tie")
#: An annotator name: it names files (human_NAME.jsonl), so letters, digits, _ . - only.
ANNOTATOR_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_annotator(name: str) -> str:
    """`name` if it is a usable annotator name, else ValueError saying what one looks like."""
    if not ANNOTATOR_RE.fullmatch(name):
        raise ValueError(f"annotator must be 1-64 letters, digits, _ . or - (e.g. alice or {DEFAULT_ANNOTATOR}), "
                         f"not {name!r}")
    return name


def record_key(pair_key: str, annotator: str) -> str:
    """The store key of one annotator's label of a pair. The default annotator's key is the
    pair's own, as it was before annotators had names, so an old label and a new one of the
    same pair are one record."""
    return pair_key if annotator == DEFAULT_ANNOTATOR else f"{pair_key}#annotator={annotator}"


def labels(store: RunStore, stage: str | None = None,
           annotator: str = DEFAULT_ANNOTATOR) -> dict[str, dict[str, Any]]:
    """One annotator's labels saved so far (pair key -> record), of one stage or all."""
    return labels_by_annotator(store, stage).get(annotator, {})


def label_record(pair: Pair, left: str, label: str, seed: int, annotator: str = DEFAULT_ANNOTATOR,
                 earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """The store record of one label: who, what was shown where, the choice, its winner, and
    (`earlier`: the label it replaces) the labels it replaced, oldest first."""
    check_annotator(annotator)
    if label not in LABELS:
        raise ValueError(f"label must be one of {', '.join(LABELS)}, not {label!r}")
    if left not in pair.candidates:
        raise ValueError(f"left must be one of {pair.candidates}, not {left!r}")
    right = pair.candidates[1 - pair.candidates.index(left)]
    winner = {"A": left, "B": right, "tie": "tie"}[label]
    history = []
    if earlier:
        history = [*earlier.get("history", []),
                   {k: earlier.get(k) for k in ("label", "winner", "left", "labelled_at")}]
    return {"pair": pair.key, "stage": pair.stage, "kind": pair.kind, "candidates": list(pair.candidates),
            "rollout_ids": list(pair.rollout_ids), "left": left, "right": right, "label": label,
            "winner": winner, "seed": seed, "annotator": annotator,
            "labelled_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "history": history}


def _writing(run_dir: str | Path):
    # The viewer reads through read-only stores; its writes (labels, served pairs) go through
    # a writable store opened for each and closed at once (SQLite's WAL lets it go beside a
    # run that is still writing).
    from coevo.rundir.store import RunStore

    return RunStore(run_dir)


def save_label(run_dir: str | Path, record: dict[str, Any]) -> None:
    """Write one label into the run's store (replacing the annotator's earlier one)."""
    store = _writing(run_dir)
    try:
        store.put_record(KIND, record_key(record["pair"], annotator_of(record)), record)
    finally:
        store.close()


def delete_label(run_dir: str | Path, pair_key: str, annotator: str) -> bool:
    """Delete `annotator`'s label of a pair (undo); whether there was one."""
    store = _writing(run_dir)
    try:
        return store.delete_record(KIND, record_key(pair_key, annotator))
    finally:
        store.close()


def served(store: RunStore, run_dir: str | Path, pair: Pair, annotator: str, seed: int) -> tuple[str, str]:
    """(token, left candidate) of `pair` as served to `annotator`: the one drawn the first
    time it was served to them, else a new random side under a new unguessable token."""
    for token, record in store.get_records(SERVED):
        if record.get("pair") == pair.key and record.get("annotator") == annotator:
            return token, record["left"]
    token, left = secrets.token_urlsafe(18), secrets.choice(pair.candidates)
    writer = _writing(run_dir)
    try:
        writer.put_record(SERVED, token, {"pair": pair.key, "stage": pair.stage, "kind": pair.kind, "left": left,
                                          "annotator": annotator, "seed": seed,
                                          "served_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    finally:
        writer.close()
    return token, left


def shown_label(record: dict[str, Any] | None, left: str) -> str | None:
    """A stored label in the terms of a page whose left text is `left`: "A", "B" or "tie"."""
    if record is None:
        return None
    return "tie" if record["winner"] == "tie" else ("A" if record["winner"] == left else "B")
