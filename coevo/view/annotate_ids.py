"""Opaque ids for everything an annotator's pages name: a batch (one stage's pairs of one kind,
or one comparison of conditions) and a pair.

A pair's key (`STAGE|KIND|ROLLOUT_IDS`) names its rollouts, its stage names a condition and a
round: shown in a url or a form, they tell a person which text is which run's, or let them
look the rollouts up. So pages carry ids made from the key by an HMAC under a secret kept in
the run's store (meta `annotation_secret`, drawn the first time the viewer needs it): the same
id for the same pair on every visit and for every annotator (a link stays good, Back works),
unguessable from the key without the secret, and read back by the server alone, which
recomputes the ids of the run's batches and of a batch's pairs (`find_batch`, `find_pair`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coevo.view.annotate_pairs import PAIR_KINDS, Pair, round0_stage, store_pairs

if TYPE_CHECKING:
    from pathlib import Path

    from coevo.rundir.store import RunStore

#: The run store's meta key of the secret the ids are made with.
SECRET_META = "annotation_secret"
BATCH_PREFIX, PAIR_PREFIX = "b-", "p-"


def run_secret(store: RunStore, run_dir: str | Path | None = None) -> bytes | None:
    """The run's id secret; drawn and saved (through a writable store on `run_dir`) the first
    time, in one transaction, so that two first requests at once still agree on one. None
    where the run has none and `run_dir` is not given (a read-only look: no id exists yet)."""
    found = store.get_meta(SECRET_META)
    if found is None and run_dir is not None:
        from coevo.rundir.store import RunStore

        writer = RunStore(run_dir)
        try:
            found = writer.update_meta(SECRET_META, lambda old: old or secrets.token_hex(32))
        finally:
            writer.close()
    return None if found is None else bytes.fromhex(found)


def _mac(secret: bytes, text: str, length: int) -> str:
    return hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()[:length]


def batch_id(secret: bytes, stage: str, kind: str) -> str:
    """The opaque id of a stage's pairs of one kind (a comparison's: its id with vs_condition)."""
    return BATCH_PREFIX + _mac(secret, f"batch\0{stage}\0{kind}", 12)


def pair_id(secret: bytes, key: str) -> str:
    """The opaque id of the pair whose key is `key`."""
    return PAIR_PREFIX + _mac(secret, f"pair\0{key}", 16)


@dataclass(frozen=True)
class Batch:
    """A set of pairs labelled one after another: its id, and (server-side only) its stage
    (a comparison's id for vs_condition) and kind."""

    id: str
    stage: str
    kind: str


def batch_of(secret: bytes, stage: str, kind: str) -> Batch:
    return Batch(batch_id(secret, stage, kind), stage, kind)


def stage_batches(store: RunStore, secret: bytes, comparisons: list[str] | tuple[str, ...] = ()) -> list[Batch]:
    """Every batch the run can have, with or without pairs: each rollout stage's kinds, then
    each comparison of conditions (`comparisons`: their ids)."""
    out = [batch_of(secret, stage, kind) for stage, _ in store.rollout_stages() for kind in PAIR_KINDS
           if kind != "vs_condition"]
    return out + [batch_of(secret, cid, "vs_condition") for cid in comparisons]


def find_batch(batches: list[Batch], wanted: str) -> Batch | None:
    """The batch whose id is `wanted` (compared in constant time), or None."""
    return next((b for b in batches if hmac.compare_digest(b.id, wanted)), None)


def find_pair(secret: bytes, pairs: list[Pair], wanted: str) -> Pair | None:
    """The pair of `pairs` whose id is `wanted`, or None."""
    return next((p for p in pairs if hmac.compare_digest(pair_id(secret, p.key), wanted)), None)


def overview(store: RunStore, secret: bytes, seed: int = 0, done: dict[str, Any] | None = None,
             compared: dict[str, list[Pair]] | None = None) -> list[dict[str, Any]]:
    """Per batch with pairs: its id, stage and kind (the stage shown only to a researcher who
    asks), how many pairs and how many of them are in `done` (an annotator's labels by pair
    key); `headline` marks the last round's `vs_round0` batch (win_rate_vs_round0's).
    `compared`: the `vs_condition` pairs by comparison id, listed last."""
    done = done or {}
    out = []
    for stage, _ in store.rollout_stages():
        for kind, pairs in store_pairs(store, stage, seed).items():
            if pairs:
                out.append({"batch": batch_id(secret, stage, kind), "stage": stage, "kind": kind,
                            "pairs": len(pairs), "headline": False, "labelled": sum(p.key in done for p in pairs)})
    for cid, pairs in (compared or {}).items():
        if pairs:
            out.append({"batch": batch_id(secret, cid, "vs_condition"), "stage": cid, "kind": "vs_condition",
                        "pairs": len(pairs), "headline": False, "labelled": sum(p.key in done for p in pairs)})
    last: dict[str | None, dict[str, Any]] = {}
    for row in out:
        if row["kind"] == "vs_round0":
            # Stages come in the order they began: a condition's last one seen is its last round.
            last[round0_stage(row["stage"])] = row
    for row in last.values():
        row["headline"] = True
    return out


def labelled_batches(store: RunStore, secret: bytes | None, records: list[dict[str, Any]]) -> list[Batch]:
    """The batches of a run's label records (their stage and kind), for reading a batch id back
    where only the labels are at hand (an export: comparisons of conditions have no rollouts)."""
    if secret is None:
        return []
    found = stage_batches(store, secret)
    known = {(b.stage, b.kind) for b in found}
    extra = {(r["stage"], r["kind"]) for r in records
             if r.get("stage") and r.get("kind") and (r["stage"], r["kind"]) not in known}
    return found + [batch_of(secret, stage, kind) for stage, kind in sorted(extra)]
