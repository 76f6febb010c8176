"""Disjoint shards and named partitions by a seeded hash of the sample id.

Why hash-based rather than shuffle-based: a sample's place depends only on its own id
and the seed, never on which other samples are present or in what order they were read.
So a data set that grows (new prompts appended) keeps every old sample where it was, and
a held-out test partition never leaks into training across runs or machines.
Python's built-in ``hash`` is salted per process, so a cryptographic hash is used instead.

The one exception is the small-set repair in :func:`partition`, described there.
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_right
from collections.abc import Sequence

from coevo.core.types import Sample

_SCALE = float(2**64)


def _hash64(sample_id: str, seed: int) -> int:
    # The NUL separator keeps (seed=1, id="23") and (seed=12, id="3") apart.
    digest = hashlib.blake2b(f"{seed}\x00{sample_id}".encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def unit_hash(sample_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by (sample_id, seed) and spread uniformly over ids."""
    return _hash64(sample_id, seed) / _SCALE


def shard_of(sample_id: str, n_shards: int, seed: int) -> int:
    """The shard (0 .. n_shards-1) that `sample_id` belongs to under `seed`."""
    if n_shards < 1:
        raise ValueError(f"n_shards must be >= 1, got {n_shards}.")
    return _hash64(sample_id, seed) % n_shards


def split_shards(samples: Sequence[Sample], n_shards: int, seed: int) -> list[list[Sample]]:
    """Split `samples` into `n_shards` disjoint shards by :func:`shard_of`.

    Every sample lands in exactly one shard and keeps its input order within it. Shards
    are only roughly equal in size (a hash, not a deal), and a small set may leave some
    shards empty.
    """
    shards: list[list[Sample]] = [[] for _ in range(max(n_shards, 0))]
    for sample in samples:
        shards[shard_of(sample.id, n_shards, seed)].append(sample)
    return shards


def partition(
    samples: Sequence[Sample], fractions: dict[str, float], seed: int
) -> dict[str, list[Sample]]:
    """Split `samples` into named, disjoint partitions of about the given `fractions`.

    `fractions` maps a partition name to its share, e.g. DecoEvo's
    ``{"pilot": .05, "train": .4, "probe": .1, "solver_gate": .1, "generator_gate": .1,
    "diagnostic": .05, "test": .2}``; shares must be >= 0 and sum to 1. The result has
    every name, in the given order, and each sample in exactly one partition, in input
    order.

    How a sample is placed: its :func:`unit_hash` ``u`` falls into one interval of
    [0, 1) cut in the order of `fractions`, each interval as wide as its share. This
    depends on nothing but the id and the seed, so adding samples never moves old ones.

    Small sets: by chance a partition with a share > 0 may receive no sample. When there
    are at least as many samples as partitions with a share > 0, each empty one is then
    given one sample, taken from the partition most over its expected size (among those
    holding at least two), choosing the sample whose ``u`` lies nearest the empty
    partition's interval. The repair is deterministic, but, being a function of the whole
    set, it is the one case in which growing the set can move a sample (back to its
    hash-given partition). With fewer samples than such partitions, some stay empty.
    """
    names = list(fractions)
    shares = [float(fractions[name]) for name in names]
    _check_fractions(fractions, shares)

    bounds: list[float] = []
    total = 0.0
    for share in shares:
        bounds.append(total)
        total += share
    # Float sums like 0.1 * 10 stop short of 1.0; the top of [0, 1) goes to the last
    # partition with a share rather than falling off the end or into a zero-share one.
    last_positive = max(i for i, share in enumerate(shares) if share > 0)

    members: list[list[tuple[float, int]]] = [[] for _ in names]
    for position, sample in enumerate(samples):
        u = unit_hash(sample.id, seed)
        index = bisect_right(bounds, u) - 1
        # Zero-width intervals share a bound with their neighbour; step back onto one
        # that actually has a share.
        while index > 0 and shares[index] == 0:
            index -= 1
        index = min(index, last_positive)
        members[index].append((u, position))

    _fill_empty(members, shares, bounds, len(samples))
    return {
        name: [samples[position] for _, position in sorted(group, key=lambda m: m[1])]
        for name, group in zip(names, members)
    }


def _check_fractions(fractions: dict[str, float], shares: list[float]) -> None:
    if not fractions:
        raise ValueError("fractions is empty; give at least one partition, e.g. {'all': 1.0}.")
    bad = {name: share for name, share in zip(fractions, shares) if not share >= 0}
    if bad:
        raise ValueError(f"fractions must be >= 0; got {bad}.")
    total = math.fsum(shares)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(
            f"fractions must sum to 1, got {total:.6g} for {fractions}; "
            "every sample has to land in exactly one partition."
        )


def _fill_empty(
    members: list[list[tuple[float, int]]], shares: list[float], bounds: list[float], n: int
) -> None:
    positive = [i for i, share in enumerate(shares) if share > 0]
    if n < len(positive):
        return
    for empty in positive:
        if members[empty]:
            continue
        donors = [i for i in range(len(members)) if len(members[i]) >= 2]
        # Pigeonhole: n >= #positive and one of them is empty, so some partition holds
        # two or more; `donors` cannot be empty here.
        donor = max(donors, key=lambda i: (len(members[i]) - shares[i] * n, -i))
        low, high = bounds[empty], bounds[empty] + shares[empty]

        def distance(member: tuple[float, int]) -> tuple[float, int]:
            u = member[0]
            gap = low - u if u < low else (u - high if u >= high else 0.0)
            return (gap, member[1])

        chosen = min(members[donor], key=distance)
        members[donor].remove(chosen)
        members[empty].append(chosen)
