"""Query filtering with the seed's grader prompt (TAIScore paper, Table 11, Appendix C), and
`load_data`: a config's data, filtered when it asks.

The paper keeps scores 4–5 and tops up with sampled score-3 queries; `min_score=3` keeps
every GRADE decision, and the returned judgments let a caller apply the paper's rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from coevo.settings.config import DataConfig
from coevo.llm.base import ChatModel
from coevo.settings.role_specs import JudgeRole
from coevo.roles.judges import QueryFilterJudge
from coevo.tasks.loaders import load_samples
from coevo.core.types import JudgeSampling, Judgment, Sample, Sampling


def filter_queries(
    samples: Sequence[Sample],
    model: ChatModel,
    sampling: Sampling,
    min_score: int = 3,
    template: str | Path | None = None,
) -> tuple[list[Sample], list[Judgment]]:
    """Grade each query 1–5 and keep those scored at least `min_score`.

    Returns `(kept, judgments)`: `kept` preserves input order; `judgments` has one entry
    per input sample (in order), so invalid grades — never kept — can be counted.
    """
    judgments = QueryFilterJudge(model, sampling, template).judge(samples)
    kept = [
        sample
        for sample, judgment in zip(samples, judgments)
        if judgment.valid and judgment.score is not None and judgment.score >= min_score
    ]
    return kept, judgments


def load_data(data: DataConfig, judge_model: Any = None, sampling: JudgeSampling | None = None) -> list[Sample]:
    """Samples from a data config (`data:` block), query-filtered with the judge model
    when the config asks for it (`filter_queries`). Here, not in tasks/loaders.py: loading
    data asks a judge only through this function, so tasks/ stays below roles/."""
    samples = load_samples(data.source, columns=data.columns or None, limit=data.limit)
    if data.filter_queries:
        samples, _ = filter_queries(samples, judge_model, sampling or JudgeRole().sampling)
    return samples
