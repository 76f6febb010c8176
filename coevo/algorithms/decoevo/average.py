"""DecoEvo's "Avg." column: each method's score averaged over the benchmarks within each run,
then over the runs (`coevo eval average`).

The paper optimises on three benchmarks (HealthBench, WritingBench, ResearchQA) and applies
each final solver skill, unchanged, to two transfer benchmarks (LLMEval-Med, EQ-Bench
Creative Writing v3); "Avg. is computed within each run as the unweighted mean over the five
benchmarks and then aggregated across runs". A run is one seed: the seeds of the benchmarks'
runs are matched (seed k of every benchmark is run k). So here, per method and seed, the mean
of that seed's score on every benchmark; then its mean and sample sd over the seeds, and
DecoEvo − SkillOpt over the same seeds with the paper's interval over matched runs (a
t-interval, `run_difference`).

A benchmark's scores come from a DecoEvo run folder (its summary.json: the test mean of each
method and seed) or from `coevo eval skill --run RUN --final-skills --json` (each method and
seed's final solver skill graded on a transfer benchmark). Only the seeds every benchmark has
for a method enter its average, and only the methods every benchmark has; the seeds and
methods left out are said (`left_out_seeds`, `left_out_methods`: method -> the benchmarks
that lack it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from coevo.algorithms.decoevo.skills import SOLVER, versions
from coevo.eval.paired import RunCI, run_difference
from coevo.eval.stats import mean_sd
from coevo.rundir.store import RunStore
from coevo.core.types import Record, Skill


class BenchmarkScores(Record):
    """One benchmark's score per (method, seed), and where it came from."""

    benchmark: str
    source: str
    scores: dict[str, dict[int, float]]   # method -> seed -> score (0-1)


class MethodAverage(Record):
    """One method's average over the benchmarks: per seed, then over the seeds."""

    mean: float | None
    sd: float | None
    n_runs: int
    per_run: dict[int, float]
    left_out_seeds: list[int] = Field(default_factory=list)


class FiveBenchmarkAverage(Record):
    """`coevo eval average --json`: the benchmarks averaged, each method's average, and the
    DecoEvo − SkillOpt difference over matched runs (None without both methods)."""

    benchmarks: list[str]
    methods: dict[str, MethodAverage]
    decoevo_minus_skillopt: RunCI | None
    #: Methods some benchmark has and another lacks (no average): method -> the lacking ones.
    left_out_methods: dict[str, list[str]] = Field(default_factory=dict)
    #: The paper's relative gains over SkillOpt, in percent: of each method's average over the
    #: benchmarks (its abstract's "2.8-5.0 %" is DecoEvo's), and of DecoEvo on each benchmark
    #: (its transfer statements), each a ratio of means over the seeds both methods have.
    relative_to_skillopt: dict[str, float] = Field(default_factory=dict)
    decoevo_relative_by_benchmark: dict[str, float] = Field(default_factory=dict)


def final_solver_skills(store: RunStore) -> dict[tuple[str, int], Skill]:
    """Each (method, seed)'s final solver skill: the last version it accepted."""
    final: dict[tuple[str, int], Skill] = {}
    for version in versions(store):
        if version.name == SOLVER and version.decision == "accepted":
            final[(version.method, version.seed)] = version
    return final


def run_scores(run_dir: Path) -> BenchmarkScores:
    """A DecoEvo run's test mean per method and seed (its summary.json and stored config)."""
    summary_file = run_dir / "summary.json"
    if not summary_file.is_file():
        raise ValueError(f"{run_dir}: no summary.json; give a finished DecoEvo run folder (or `coevo eval skill "
                         "--final-skills --json` output for a transfer benchmark)")
    summary = json.loads(summary_file.read_text(encoding="utf-8"))
    config = RunStore(run_dir).get_meta("config") or {}
    if summary.get("algorithm") != "decoevo" or "seeds" not in config:
        raise ValueError(f"{run_dir}: not a DecoEvo run (algorithm {summary.get('algorithm')!r})")
    scores = {method: {seed: value for seed, value in zip(config["seeds"], entry["per_seed"]) if value is not None}
              for method, entry in summary["methods"].items()}
    source = (config.get("data") or {}).get("source", str(run_dir))
    return BenchmarkScores(benchmark=str(source), source=str(run_dir), scores=scores)


def file_scores(path: Path) -> BenchmarkScores:
    """A transfer benchmark's scores: the JSON `coevo eval skill --final-skills --json` prints."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        rows = found["results"]
        scores: dict[str, dict[int, float]] = {}
        for row in rows:
            if row["gold_mean"] is not None:
                scores.setdefault(row["method"], {})[int(row["seed"])] = float(row["gold_mean"])
        return BenchmarkScores(benchmark=str(found["data"]), source=str(path), scores=scores)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not the JSON of `coevo eval skill --run RUN --final-skills --json` "
                         f"({type(exc).__name__}: {exc})") from None


def scores_of(path: Path) -> BenchmarkScores:
    """A benchmark's scores from a run folder or a transfer-results file."""
    if not path.exists():
        raise ValueError(f"{path}: no such run folder or file; give DecoEvo run folders and files of "
                         "`coevo eval skill --run RUN --final-skills --json`")
    return run_scores(path) if path.is_dir() else file_scores(path)


def average(benchmarks: list[BenchmarkScores]) -> FiveBenchmarkAverage:
    """Per method: each seed's unweighted mean over the benchmarks (seeds every benchmark has),
    then mean and sd over those seeds; DecoEvo − SkillOpt over matched runs."""
    if not benchmarks:
        raise ValueError("no benchmark to average: give DecoEvo run folders and transfer-results files")
    methods = sorted(set.intersection(*(set(b.scores) for b in benchmarks)))
    per_run: dict[str, dict[int, float]] = {}
    result: dict[str, MethodAverage] = {}
    for method in methods:
        seeds = [set(b.scores[method]) for b in benchmarks]
        matched, every = sorted(set.intersection(*seeds)), sorted(set.union(*seeds))
        runs = {seed: sum(b.scores[method][seed] for b in benchmarks) / len(benchmarks) for seed in matched}
        per_run[method] = runs
        mean, sd = mean_sd(runs.values()) if runs else (None, None)
        result[method] = MethodAverage(mean=mean, sd=sd if len(runs) > 1 else None, n_runs=len(runs), per_run=runs,
                                       left_out_seeds=[s for s in every if s not in runs])
    difference = None
    if {"decoevo", "skillopt"} <= set(per_run):
        common = sorted(set(per_run["decoevo"]) & set(per_run["skillopt"]))
        difference = run_difference({f"seed{s}": per_run["decoevo"][s] - per_run["skillopt"][s] for s in common})
    lacking = {method: [b.benchmark for b in benchmarks if method not in b.scores]
               for method in sorted(set.union(*(set(b.scores) for b in benchmarks))) if method not in result}
    return FiveBenchmarkAverage(benchmarks=[b.benchmark for b in benchmarks], methods=result,
                                decoevo_minus_skillopt=difference, left_out_methods=lacking,
                                relative_to_skillopt=_relative_averages(per_run),
                                decoevo_relative_by_benchmark={b.benchmark: gain for b in benchmarks
                                                               if (gain := _relative(b.scores, "decoevo")) is not None})


def _relative(scores: dict[str, dict[int, float]], method: str) -> float | None:
    """100 x (mean of `method` - mean of SkillOpt) / mean of SkillOpt over their common seeds."""
    mine, base = scores.get(method, {}), scores.get("skillopt", {})
    common = sorted(set(mine) & set(base))
    if not common:
        return None
    reference = sum(base[s] for s in common) / len(common)
    if reference <= 0:
        return None
    return 100.0 * (sum(mine[s] for s in common) / len(common) - reference) / reference


def _relative_averages(per_run: dict[str, dict[int, float]]) -> dict[str, float]:
    """Each method's average relative to SkillOpt's, in percent (SkillOpt itself left out)."""
    return {method: gain for method in per_run if method != "skillopt"
            if (gain := _relative(per_run, method)) is not None}


def average_rows(found: FiveBenchmarkAverage) -> list[dict[str, Any]]:
    """One table row per method: its average, sd, runs and the seeds left out."""
    relative = found.relative_to_skillopt
    return [{"method": name, "avg": m.mean, "sd": m.sd, "runs": m.n_runs,
             "vs_skillopt_%": None if name not in relative else round(relative[name], 1),
             "left_out_seeds": ", ".join(map(str, m.left_out_seeds)) or "-"} for name, m in found.methods.items()]
