"""DeepResearch-Gym's report-level metrics (TAIScore §5.1, Table 1): KPR, KPC and report quality.

Per report: KPR = 100 x supported / n and KPC = 100 x contradicted / n over its n reference key
points (`roles/deepresearch.py:KeyPointJudge`, one call per report), and its quality, the
judge's 1-10 mean over the report-level criteria mapped onto 0-100 (`ReportQualityJudge`).
Over a set of reports each metric is the mean over the reports the judge could read, with its
n and Student-t 95 % interval (`eval/stats.py:mean_metrics`); over several output sets (Table 1:
three), the mean of the sets' means, their sd and the number of sets (`over_sets`), as the
gold score does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coevo.eval.stats import mean_metrics, mean_sd
from coevo.core.types import Judgment, Sample

#: The three metrics, in Table 1's order (`coevo/eval/metric_defs.py` defines each).
METRICS = ("kpr", "kpc", "report_quality")


def judge_reports(key_points: Any, quality: Any, samples: Sequence[Sample],
                  reports: Sequence[str]) -> list[dict[str, Judgment]]:
    """Each report's judgments, {"key_points": ..., "report_quality": ...}, in order."""
    points = key_points.judge(samples, reports)
    rated = quality.judge(samples, reports)
    return [{"key_points": p, "report_quality": q} for p, q in zip(points, rated)]


def report_values(judged: Sequence[dict[str, Judgment]]) -> dict[str, list[float]]:
    """Per metric, the values of the reports whose judgment was readable."""
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    for each in judged:
        points, quality = each["key_points"], each["report_quality"]
        if points.valid and "kpr" in points.scores:
            values["kpr"].append(points.scores["kpr"])
            values["kpc"].append(points.scores["kpc"])
        if quality.valid and quality.score is not None:
            values["report_quality"].append(quality.score)
    return values


def set_metrics(judged: Sequence[dict[str, Judgment]]) -> dict[str, float | None]:
    """One output set's `kpr`, `kpc`, `report_quality`, each with `_n` and `_lo`/`_hi`."""
    metrics: dict[str, float | None] = {}
    for name, values in report_values(judged).items():
        metrics |= mean_metrics(name, values, scale=(0.0, 100.0))  # all three are percents / 0-100
    return metrics


def over_sets(sets: Sequence[dict[str, float | None]]) -> dict[str, float | None]:
    """Table 1's protocol over several output sets: each metric the mean of the sets' values,
    `<metric>_set_sd` their sd and `<metric>_sets` how many sets had one; `<metric>_n` stays the
    first set's number of reports (the interval of one set does not describe the mean of sets)."""
    if len(sets) == 1:
        return dict(sets[0])
    out: dict[str, float | None] = {}
    for name in METRICS:
        present = [s[name] for s in sets if s.get(name) is not None]
        out[f"{name}_n"] = sets[0].get(f"{name}_n")
        if not present:
            out |= {name: None, f"{name}_sets": 0.0}
            continue
        mean, sd = mean_sd(present)  # type: ignore[arg-type]
        out |= {name: mean, f"{name}_set_sd": sd, f"{name}_sets": float(len(present))}
    return out


def invalid_count(judged: Sequence[dict[str, Judgment]]) -> tuple[float, float]:
    """(judgments, unreadable ones) of a set, for the round's invalid-judgment rate."""
    every = [j for each in judged for j in each.values()]
    return float(len(every)), float(sum(not j.valid for j in every))


__all__ = ["METRICS", "invalid_count", "judge_reports", "over_sets", "report_values", "set_metrics"]
