"""The TAIScore paper's query pools (Appendix C): quality-rated queries, sized, split.

The paper rates every query 1–5 with the Table 11 grader, keeps every query rated 4–5
(4,937), tops them up with a random sample of those rated 3 to its target of 9,000, shuffles,
and splits them into three disjoint shards of K = 3,000. `quality_pools` is that rule for
any sizes. Every "random" choice is a seeded hash of the sample id (as in `partition.py`):
which queries a pool holds depends on the ids and the seed, never on the file's order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from coevo.tasks.partition import unit_hash
from coevo.core.types import Sample

#: Salts that keep the seeded draws of one run independent of each other.
_TOP_UP, _SHUFFLE, _CRITIC = 101, 202, 303


class PoolReport(BaseModel):
    """What the pool rule did, for the log, `summary.json → data` and `coevo plan`."""

    sizes: list[int]
    #: Queries per quality score ("5" … "1"), "unreadable" (a grade the judge could not
    #: give) and "unrated" (no score at all).
    histogram: dict[str, int] = Field(default_factory=dict)
    rated_high: int = 0        # rated 4–5: all kept (up to pool_total)
    rated_three: int = 0       # rated 3: the pool of the top-up
    topped_up: int = 0         # rated 3 and drawn
    dropped: int = 0           # rated below 3, unreadable, or past the pools' total
    #: Rows a source's rule-based stage removed before any rating, per rule (OpenScholar's
    #: App. C rules: unsupported_intent, too_short, not_english; empty for other sources).
    rules_removed: dict[str, int] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


def seeded_sample(samples: Sequence[Sample], k: int | None, seed: int, salt: int = _CRITIC) -> list[Sample]:
    """`k` of `samples` drawn uniformly without replacement by a seeded hash of their ids
    (all of them when k is None or larger), in their input order."""
    if k is None or k >= len(samples):
        return list(samples)
    ranked = sorted(samples, key=lambda s: unit_hash(s.id, seed * 1000 + salt))
    chosen = {s.id for s in ranked[:k]}
    return [s for s in samples if s.id in chosen]


def sample_critic_queries(pool: Sequence[Sample], k: int | None, seed: int, pool_index: int) -> list[Sample]:
    """The critic's GRPO queries of one pool: a seeded sample of `k` (paper: 2K of 3K), not
    the pool's first rows (which would follow the data file's order)."""
    return seeded_sample(pool, k, seed * 100 + pool_index, _CRITIC)


def quality_pools(
    samples: Sequence[Sample],
    quality: Mapping[str, int | None] | None,
    n_pools: int,
    *,
    pool_total: int | None,
    pool_size: int | None,
    seed: int,
    top_up: bool = True,
) -> tuple[list[list[Sample]], PoolReport]:
    """`n_pools` disjoint pools by Appendix C's rule.

    `quality` maps a sample id to its 1–5 score (None: unreadable); without it (no ratings
    at all) every sample is eligible and drawn alike. Then: every query rated 4–5, topped up
    with a seeded sample of those rated 3 to `pool_total` (None: all of them; `top_up` false:
    never, as App. C pools OpenScholar's queries), shuffled by a
    seeded hash and dealt into pools of `pool_size` (None: the selection split evenly).
    Queries rated below 3 or unreadable never enter a pool.
    """
    report = PoolReport(sizes=[])
    if quality is None:
        report.histogram = {"unrated": len(samples)}
        high, three = list(samples), []
        report.notes.append(f"no quality scores: all {len(samples)} queries are eligible alike (the paper rates "
                            "them first: a `quality` column, or data.filter_queries)")
    else:
        scores = [quality.get(s.id) for s in samples]
        report.histogram = {str(k): v for k, v in sorted(Counter(
            "unreadable" if q is None else str(q) for q in scores).items(), reverse=True)}
        high = [s for s, q in zip(samples, scores) if q is not None and q >= 4]
        three = [s for s, q in zip(samples, scores) if q == 3]
        report.rated_high, report.rated_three = len(high), len(three)
    total = pool_total if pool_total is not None else len(high) + len(three)
    if len(high) > total:
        report.notes.append(f"{len(high)} queries rated 4-5 exceed data.pool_total={total}: a seeded sample of "
                            f"{total} of them is used")
        high = seeded_sample(high, total, seed, _TOP_UP)
    topped = seeded_sample(three, max(total - len(high), 0), seed, _TOP_UP) if top_up else []
    report.topped_up = len(topped) if quality is not None else 0
    selected = sorted([*high, *topped], key=lambda s: unit_hash(s.id, seed * 1000 + _SHUFFLE))
    if pool_size is not None and pool_size * n_pools > len(selected):
        report.notes.append(f"{len(selected)} selected queries cannot fill {n_pools} pools of "
                            f"data.pool_size={pool_size}: they are dealt into {n_pools} smaller pools")
        pool_size = None
    if pool_size is None:  # every selected query in some pool; sizes differ by at most one
        pools = [selected[t::n_pools] for t in range(n_pools)]
    else:
        pools = [selected[t * pool_size:(t + 1) * pool_size] for t in range(n_pools)]
    report.sizes = [len(p) for p in pools]
    report.dropped = len(samples) - sum(report.sizes)
    return pools, report


__all__ = ["PoolReport", "sample_critic_queries", "quality_pools", "seeded_sample"]
