"""TAIScore's data (Appendix C): queries rated and pooled into disjoint shards, and the held-out
prompts every round is evaluated on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coevo.algorithms.taiscore.config import TaiScoreConfig
from coevo.core.strict import ConfigError
from coevo.tasks.deepresearch import RULES
from coevo.tasks.pools import PoolReport, quality_pools
from coevo.core.types import Sample

# ─── entry point ────────────────────────────────────────────────────────────────────


@dataclass
class DataSplit:
    """The run's data: the T disjoint training pools, the held-out prompts, how pools were made."""

    shards: list[list[Sample]]
    held_out: list[Sample]
    report: PoolReport


def held_out_split(config: TaiScoreConfig, samples: list[Sample], eval_samples: list[Sample] | None
                   ) -> tuple[list[Sample], list[Sample]]:
    """(training queries, held-out prompts): a separate evaluation set (`evaluation.data`,
    e.g. WritingBench, as the paper evaluates) or a seeded-hash share of `data`."""
    from coevo.tasks.partition import partition, unit_hash

    ev = config.evaluation
    if eval_samples is not None:
        held_ids = {s.id for s in eval_samples}
        train, held_out = [s for s in samples if s.id not in held_ids], list(eval_samples)
    elif ev.prompts:
        if ev.prompts >= len(samples):
            raise ConfigError(f"evaluation.prompts={ev.prompts} leaves none of the {len(samples)} prompts "
                              "for training; lower it or raise data.limit")
        ranked = sorted(samples, key=lambda s: unit_hash(s.id, config.seed))
        held_ids = {s.id for s in ranked[: ev.prompts]}
        train = [s for s in samples if s.id not in held_ids]
        held_out = [s for s in samples if s.id in held_ids]
    elif ev.holdout > 0:
        parts = partition(samples, {"train": 1 - ev.holdout, "eval": ev.holdout}, config.seed)
        train, held_out = parts["train"], parts["eval"]
    else:
        train, held_out = list(samples), []
    return train, (held_out[: ev.limit] if ev.limit else held_out)


def query_ratings(config: TaiScoreConfig, samples: list[Sample], judge_model: Any = None
                  ) -> dict[str, int | None] | None:
    """Each query's 1-5 quality score (None: unreadable), or None when there are none.

    From the data's `quality_column` when its rows carry one; else, with
    `data.filter_queries`, from the judge's Table 11 grade (an `openscholar:` source: the
    research-question grader of `filter_template`; one call per query; without a judge, as in
    `coevo plan`, None: the ratings are not known yet).
    """
    column = config.data.quality_column
    rated = [s for s in samples if s.meta.get(column) is not None]
    if rated:
        if len(rated) < len(samples):
            raise ConfigError(f"{len(samples) - len(rated)} of {len(samples)} training queries have no "
                              f"{column!r} score; give every row a 1-5 score, or none (data.filter_queries "
                              "then grades them with the judge)")
        return {s.id: _quality(s, column) for s in samples}
    if not config.data.filter_queries or judge_model is None:
        return None
    from coevo.roles.query_filter import filter_queries

    _, judgments = filter_queries(samples, judge_model, config.roles.judge.sampling, min_score=1,
                                  template=filter_template(config.data.source))
    return {s.id: (int(j.score) if j.valid and j.score is not None else None) for s, j in zip(samples, judgments)}


def filter_template(source: str) -> str | None:
    """The query grader's prompt for a data source: OpenScholar's research-question grader
    (coevo/prompts/openscholar_query_filter.md, App. C's DR-Tulu-style filter) for an
    `openscholar:` source; None, Table 11's writing-task grader, for the others."""
    from coevo.tasks.benchmarks import benchmark_of

    return "openscholar_query_filter" if benchmark_of(source) == "openscholar" else None


def rules_removed(config: TaiScoreConfig) -> dict[str, int] | None:
    """What the source's rule-based stage removed as it was read, per rule, with `rows` read
    (an `openscholar:` source: App. C's rules, tasks/deepresearch.py); None for other sources."""
    from coevo.tasks.benchmarks import benchmark_of, read_benchmark

    if benchmark_of(config.data.source) != "openscholar":
        return None
    read = read_benchmark(config.data.source, limit=config.data.limit)
    return {"rows": read.rows, **{rule: read.removed.get(rule, 0) for rule in RULES}, "kept": len(read.samples)}


def _quality(sample: Sample, column: str) -> int:
    value = sample.meta[column]
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = float("nan")
    if not (score.is_integer() and 1 <= score <= 5):
        raise ConfigError(f"query {sample.id!r}: {column!r} must be an integer score from 1 to 5, got {value!r}")
    return int(score)


def split_data(config: TaiScoreConfig, samples: list[Sample], judge_model: Any = None,
               eval_samples: list[Sample] | None = None) -> DataSplit:
    """Held-out prompts, then Appendix C's T disjoint pools of the rest (`quality_pools`)."""
    train, held_out = held_out_split(config, samples, eval_samples)
    ratings = query_ratings(config, train, judge_model)
    shards, report = quality_pools(train, ratings, config.rounds, pool_total=config.data.pool_total,
                                   pool_size=config.data.pool_size, seed=config.seed, top_up=config.data.top_up)
    if (rules := rules_removed(config)) is not None:
        report.rules_removed = {rule: rules[rule] for rule in RULES}
        report.notes.append(f"App. C's rules kept {rules['kept']} of {rules['rows']} rows: removed "
                            + ", ".join(f"{rules[rule]} {rule}" for rule in RULES))
    empty = [t for t, shard in enumerate(shards) if not shard]
    if empty:
        raise ConfigError(
            f"{len(train)} training prompts ({sum(report.sizes)} eligible) left pool(s) {empty} of "
            f"{config.rounds} empty; use more data (data.limit) or fewer rounds")
    return DataSplit(shards=shards, held_out=held_out, report=report)
