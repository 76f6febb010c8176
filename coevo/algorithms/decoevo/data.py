"""DecoEvo's data: disjoint partitions by a seeded hash, and gold-rubric grades."""

from __future__ import annotations

from typing import Any

from coevo.algorithms.decoevo.config import PARTITIONS, Partitions
from coevo.core.strict import ConfigError
from coevo.roles.decoevo import UNIT_SCORED
from coevo.tasks.loaders import DataError
from coevo.core.types import Sample


def make_partitions(samples: list[Sample], config: Partitions) -> dict[str, list[Sample]]:
    """The seven disjoint partitions (seeded hash), each capped at `sizes` when given."""
    from coevo.tasks.partition import partition

    parts = partition(samples, config.fractions, config.seed)
    return {name: parts[name][: config.sizes[name]] if name in config.sizes else parts[name]
            for name in PARTITIONS}


def gold_scores(grader: Any, samples: list[Sample], responses: list[str]) -> list[tuple[float | None, Any]]:
    """Gold-rubric grade of each response, mapped from 1-10 to 0-1 (a Python grader's and
    HealthBench's are already in [0, 1]), with its Judgment."""
    judged = grader.judge(samples, responses) if samples else []
    return [((j.score if j.source in ("python", UNIT_SCORED) else _unit(j.score)) if j.valid else None, j)
            for j in judged]


def _unit(grade: float | None) -> float | None:
    """A 1-10 grade on the 0-1 scale."""
    return None if grade is None else (grade - 1) / 9


def check_partitions(parts: dict[str, list[Sample]]) -> None:
    """Refuse partitions the run cannot use: graded ones without gold rubrics, empty ones."""
    for name in ("test", "diagnostic"):
        lacking = [s.id for s in parts[name] if s.rubric is None or not s.rubric.criteria]
        if lacking:
            raise DataError(f"{name} samples need gold rubrics for the final grader; {lacking[:3]} have "
                             "none. Map a rubric column (data.columns.rubric) or use bundled:writing")
    for name in ("train", "solver_gate", "test"):
        if not parts[name]:
            raise ConfigError(f"partition {name!r} is empty: add samples or raise partitions.fractions.{name}")
