"""DecoEvo's result records and summary.json: per-method test score over seeds (and the test
answers' constraint pass rate with its Wilson CI, where prompts state constraints), the CIs of
DecoEvo - SkillOpt (over matched runs, as the paper reports it, and pooled over (seed,
question) pairs), skill versions, solver-gate ties, cost per inner / outer step,
the diagnostic trajectory, the judge audits (`audit`, audit.py), and the report's
table and plot (set in the run store's meta).

The records here are what one (method, seed) run returns (`MethodResult`, saved as the
run store's step result, so `--resume` reads it back) and what summary.json holds
(`DecoEvoSummary`); their field names are summary.json's keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER, SkillVersion
from coevo.audit.in_run import run_records
from coevo.eval.constraints import pass_rate_metrics
from coevo.eval.paired import PairedCI, RunCI, paired_difference, run_difference
from coevo.eval.stats import mean_of_known, mean_sd
from coevo.eval.metric_defs import estimate_text
from coevo.rundir.store import RunStore
from coevo.core.types import Record, Skill, Table

if TYPE_CHECKING:
    from coevo.algorithms.decoevo.config import DecoEvoConfig


# ====================================================================== one (method, seed) run
class StepCost(Record):
    """What one inner or outer step cost: completions asked (cache hits included) and time."""

    kind: Literal["inner", "outer"]
    step: int
    llm_calls: int
    cached_calls: int
    seconds: float


class TrajectoryPoint(Record):
    """The diagnostic set after `step` inner steps: proxy (generated rubrics) vs gold (0-1)."""

    step: int
    proxy: float | None
    gold: float | None


class ScoringModes(Record):
    """How each scoring role scored: `expected` (token probabilities) or `sampled` (written)."""

    judge: str
    auditor: str
    grader: str


class MethodResult(Record):
    """One method under one seed: gold-rubric test scores, final skills, trajectory, costs."""

    method: str
    seed: int
    test_scores: list[float | None]
    test_ids: list[str]
    test_mean: float | None
    test_scores_sampled: list[float | None]   # the grader's written grades, beside test_scores
    test_mean_sampled: float | None
    scoring: ScoringModes
    solver: Skill
    rubric_generator: Skill
    trajectory: list[TrajectoryPoint]
    costs: list[StepCost]
    invalid: dict[str, int]                  # unreadable role outputs, by role
    #: Per test answer whose prompt states constraints, each check's outcome (in the
    #: prompt's order); defaults empty so results saved before constraints existed still load.
    constraint_outcomes: list[list[bool]] = Field(default_factory=list)


# ====================================================================== summary.json
class PooledCI(PairedCI):
    """The paired bootstrap CI over every (seed, test question) pair graded for both methods:
    narrower than the paper's interval over runs, since it treats the seeds' questions as
    independent items; kept beside it as a finer-grained view."""

    level: Literal["pooled"]
    unit: str


class MethodSummary(Record):
    """One method over the seeds: test mean +- sd, skill decisions, gate ties, invalid outputs."""

    test_mean: float | None
    test_sd: float | None
    per_seed: list[float | None]
    test_mean_sampled: float | None
    solver_accepted: int
    solver_candidates: int
    generator_accepted: int
    generator_candidates: int
    gate_comparisons: int
    gate_ties: int
    gate_ties_sampled: int
    invalid_outputs: dict[str, int]
    #: Share of test answers meeting every constraint their prompt states, pooled over the
    #: seeds' answers (`constraint_count` = n), with its Wilson 95 % interval [lo, hi];
    #: `constraint_check_rate`: share of single checks met. None where no test prompt has any.
    constraint_pass_rate: float | None = None
    constraint_pass_rate_ci: list[float] | None = None
    constraint_count: int = 0
    constraint_check_rate: float | None = None
    #: Rubric-generator candidates their rule accepted and the audit gate refused
    #: (`audit.gate`; details.audit_gate == "rejected" in skill_versions), over the seeds.
    audit_gate_rejected: int = 0
    #: Candidates refused because they were no longer skills (rules.skill_form), per skill
    #: name ("solver", "rubric_generator"), over the seeds; details.skill_form says why.
    skill_form_refused: dict[str, int] = Field(default_factory=dict)


class StepCostSummary(Record):
    """Mean cost of one kind of step (inner or outer) over every method and seed."""

    steps: int
    llm_calls_per_step: float
    cached_share: float
    seconds_per_step: float


class DecoEvoSummary(Record):
    """summary.json of `algorithm: decoevo` (the runner adds `algorithm`, `llm_cache`, `report`)."""

    methods: dict[str, MethodSummary]
    scoring: ScoringModes | None
    #: Per skill name, each version's (method, seed, version, parent, decision, why, step).
    skill_versions: dict[str, list[dict[str, Any]]]
    #: The paper's interval: over matched runs (one mean difference per seed), n = runs.
    decoevo_minus_skillopt_run_ci: RunCI | None
    #: Over pooled (seed, test question) pairs (`level: pooled`).
    decoevo_minus_skillopt_ci: PooledCI | None
    partitions: dict[str, int]
    #: The paper's cost per inner / outer step (`cost` is the whole run's, coevo/plan/cost.py).
    step_cost: dict[str, StepCostSummary] = Field(default_factory=dict)
    trajectory: dict[str, list[TrajectoryPoint]] = Field(default_factory=dict)
    table: Table
    #: The judge audits (`audit:`; audit.py), one record per audited grading and round:
    #: {"round": "<method>/seed<k>/round<t>", "judge_role": "grader" | "grader_candidate", the
    #: `coevo audit judge --json` object, and the drift estimates `agreement_with_round0`,
    #: `agreement_with_gold`}.
    audit: list[dict[str, Any]] = Field(default_factory=list)


_TABLE_COLUMNS = ["method", "test_mean", "test_sd", "constraint_pass_rate", "seeds", "solver_acc",
                  "gate_ties", "generator_acc", "invalid"]
_VERSION_KEYS = ("method", "seed", "version", "parent", "decision", "why", "step")


def summarise(config: DecoEvoConfig, results: dict[str, MethodResult], records: list[SkillVersion],
              store: RunStore | None, sizes: dict[str, int]) -> DecoEvoSummary:
    """summary.json: per-method mean +- sd over seeds, the paired CI, skill versions, costs.

    `results` is keyed "<method>/seed<k>"; `records` is every skill version of the run.
    """
    methods = {method: method_summary([results[f"{method}/seed{seed}"] for seed in config.seeds],
                                      [r for r in records if r.method == method])
               for method in config.methods}
    names = list(dict.fromkeys([SOLVER, GENERATOR, *(r.name for r in records)]))
    summary = DecoEvoSummary(
        methods=methods,
        scoring=next((r.scoring for r in results.values()), None),
        skill_versions={name: [{k: getattr(r, k) for k in _VERSION_KEYS} for r in records if r.name == name]
                        for name in names},
        decoevo_minus_skillopt_run_ci=run_ci(results, config.seeds, "decoevo", "skillopt"),
        decoevo_minus_skillopt_ci=paired_ci(results, config.seeds, "decoevo", "skillopt"),
        partitions=sizes,
        step_cost=cost_summary(results),
        trajectory=trajectory_means(results, config),
        table=Table(columns=list(_TABLE_COLUMNS),
                    rows=[table_row(method, entry, len(config.seeds)) for method, entry in methods.items()]),
        audit=run_records(store) if store is not None else [],
    )
    if store is not None:
        tables = {"DecoEvo: gold-rubric test score (0-1), mean ± sd over seeds": summary.table.model_dump()}
        if summary.decoevo_minus_skillopt_run_ci is not None:
            tables["DecoEvo − SkillOpt, 95% CI (over matched runs: the paper's; pooled: finer-grained)"] = \
                ci_table(summary.decoevo_minus_skillopt_run_ci, summary.decoevo_minus_skillopt_ci).model_dump()
        store.set_meta("tables", tables)
        figure = trajectory_figure({method: [p.model_dump() for p in points]
                                    for method, points in summary.trajectory.items()})
        if figure:
            store.set_meta("figures", {"Diagnostic trajectory: proxy under generated rubrics (dashed) vs "
                                       "gold-rubric score (solid), mean over seeds": figure})
        series = trajectory_series(summary.trajectory)
        if series:  # the run page draws it (plotly), beside the per-round metrics
            store.set_meta("plots", {**(store.get_meta("plots", {}) or {}), TRAJECTORY_PLOT: series})
    return summary


def method_summary(runs: list[MethodResult], mine: list[SkillVersion]) -> MethodSummary:
    """One method's entry in summary.json from its per-seed results and its skill versions."""
    means = [r.test_mean for r in runs if r.test_mean is not None]
    mean, sd = mean_sd(means) if means else (None, None)
    solver = [r for r in mine if r.name == SOLVER and r.is_candidate]
    generator = [r for r in mine if r.name == GENERATOR and r.is_candidate]
    found = pass_rate_metrics([o for r in runs for o in r.constraint_outcomes])
    constraints = {"constraint_pass_rate": found["constraint_pass_rate"],
                   "constraint_count": int(found["constraint_count"]),
                   "constraint_check_rate": found.get("constraint_check_rate"),
                   "constraint_pass_rate_ci": ([found["constraint_pass_rate_lo"], found["constraint_pass_rate_hi"]]
                                               if "constraint_pass_rate_lo" in found else None)}
    return MethodSummary(
        test_mean=mean, test_sd=sd, per_seed=[r.test_mean for r in runs],
        test_mean_sampled=mean_of_known([r.test_mean_sampled for r in runs]),
        solver_accepted=sum(r.accepted for r in solver), solver_candidates=len(solver),
        generator_accepted=sum(r.accepted for r in generator), generator_candidates=len(generator),
        **gate_ties(solver),
        invalid_outputs=_sum_dicts([r.invalid for r in runs]), **constraints,
        audit_gate_rejected=sum(r.details.get("audit_gate") == "rejected" for r in generator),
        skill_form_refused={name: sum(r.details.get("skill_form") is not None for r in found)
                            for name, found in ((SOLVER, solver), (GENERATOR, generator))})


def table_row(method: str, entry: MethodSummary, seeds: int) -> dict[str, Any]:
    """The report table's row of one method (acceptances and ties as 'k/n')."""
    rate = entry.constraint_pass_rate
    low, high = entry.constraint_pass_rate_ci or (None, None)
    constraint = None if rate is None else estimate_text(rate, low, high, entry.constraint_count)
    return {"method": method, "test_mean": entry.test_mean, "test_sd": entry.test_sd,
            "constraint_pass_rate": constraint, "seeds": seeds,
            "solver_acc": f"{entry.solver_accepted}/{entry.solver_candidates}",
            "gate_ties": f"{entry.gate_ties}/{entry.gate_comparisons}",
            "generator_acc": f"{entry.generator_accepted}/{entry.generator_candidates}",
            "invalid": sum(entry.invalid_outputs.values())}


def gate_ties(candidates: list[SkillVersion]) -> dict[str, int]:
    """Solver-gate comparisons and their exact ties (candidate score == incumbent score),
    by the scores the gate used and by the verdicts as written (`_sampled`), from the
    solver candidates' records. A candidate whose gate question was unreadable for either
    skill was compared on nothing and is not counted."""
    compared = [r.details for r in candidates if r.details.get("gate_tie") is not None]
    return {"gate_comparisons": len(compared), "gate_ties": sum(bool(d["gate_tie"]) for d in compared),
            "gate_ties_sampled": sum(bool(d.get("gate_tie_sampled")) for d in compared)}


def paired_ci(results: dict[str, MethodResult], seeds: list[int], a: str, b: str) -> PooledCI | None:
    """Paired bootstrap 95% CI of a - b over (seed, test question) items graded for both."""
    if f"{a}/seed{seeds[0]}" not in results or f"{b}/seed{seeds[0]}" not in results:
        return None
    pairs = [pair for seed in seeds for pair in _graded_pairs(results, seed, a, b)]
    pooled = paired_difference([x for x, _ in pairs], [y for _, y in pairs])
    return PooledCI(**pooled.model_dump(), level="pooled",
                    unit="(seed, test question) pairs graded under both methods, bootstrap over pairs")


def run_ci(results: dict[str, MethodResult], seeds: list[int], a: str, b: str) -> RunCI | None:
    """The paper's 95% CI of a - b over matched runs: per seed, the mean difference over the
    test questions graded for both (same questions, same seed); a t-interval over the seeds
    (`RUN_CI_METHOD`: the paper does not name its interval, and a bootstrap over five values
    has too few distinct resamples). One seed: no interval, said in `note`."""
    if f"{a}/seed{seeds[0]}" not in results or f"{b}/seed{seeds[0]}" not in results:
        return None
    per_run = {}
    for seed in seeds:
        pairs = _graded_pairs(results, seed, a, b)
        if pairs:  # a run with nothing graded for both says nothing about the difference
            per_run[f"seed{seed}"] = sum(x - y for x, y in pairs) / len(pairs)
    return run_difference(per_run)


def _graded_pairs(results: dict[str, MethodResult], seed: int, a: str, b: str) -> list[tuple[float, float]]:
    """(a, b) test scores of one seed's questions graded under both methods."""
    ra, rb = results[f"{a}/seed{seed}"], results[f"{b}/seed{seed}"]
    return [(x, y) for x, y in zip(ra.test_scores, rb.test_scores) if x is not None and y is not None]


def ci_table(run: RunCI, pooled: PooledCI | None) -> Table:
    """The two intervals of a - b side by side, each with its n and how it was computed."""
    rows = [{"level": "run", "mean_diff": run.mean_diff, "low": run.low, "high": run.high,
             "n": f"{run.n_runs} runs", "how": f"{run.method}; {run.note}"}]
    if pooled is not None:
        rows.append({"level": "pooled", "mean_diff": pooled.mean_diff, "low": pooled.low, "high": pooled.high,
                     "n": f"{pooled.n_pairs} pairs", "how": pooled.unit})
    return Table(columns=["level", "mean_diff", "low", "high", "n", "how"], rows=rows)


def cost_summary(results: dict[str, MethodResult]) -> dict[str, StepCostSummary]:
    """LLM calls (completions, cache hits included) and wall seconds per inner / outer step."""
    out = {}
    for kind in ("inner", "outer"):
        costs = [c for r in results.values() for c in r.costs if c.kind == kind]
        if costs:
            n, calls = len(costs), sum(c.llm_calls for c in costs)
            out[kind] = StepCostSummary(steps=n, llm_calls_per_step=calls / n,
                                        cached_share=sum(c.cached_calls for c in costs) / max(1, calls),
                                        seconds_per_step=sum(c.seconds for c in costs) / n)
    return out


def trajectory_means(results: dict[str, MethodResult], config: DecoEvoConfig) -> dict[str, list[TrajectoryPoint]]:
    """Per method, the diagnostic trajectory averaged over seeds step by step."""
    out = {}
    for method in config.methods:
        by_step: dict[int, list[TrajectoryPoint]] = {}
        for seed in config.seeds:
            for point in results[f"{method}/seed{seed}"].trajectory:
                by_step.setdefault(point.step, []).append(point)
        out[method] = [TrajectoryPoint(step=step, proxy=mean_of_known([p.proxy for p in pts]),
                                       gold=mean_of_known([p.gold for p in pts]))
                       for step, pts in sorted(by_step.items())]
    return out


#: The run page's plot of the paper's divergence: per method, the proxy the skills are accepted
#: on (the diagnostic answers under the current generated rubrics) and the gold, by inner step.
TRAJECTORY_PLOT = "Proxy vs gold by inner step: diagnostic answers, mean over seeds"


def trajectory_series(trajectory: dict[str, list[TrajectoryPoint]]) -> dict[str, Any]:
    """Meta "plots" series: "<method> proxy" and "<method> gold" lines of (step, score)."""
    series: dict[str, Any] = {f"{method} {kind}": [(p.step, getattr(p, kind)) for p in points
                                                   if getattr(p, kind) is not None]
                              for method, points in trajectory.items() for kind in ("proxy", "gold")}
    series = {name: line for name, line in series.items() if line}
    return {**series, "_xlabel": "inner step", "_metric": "diag_proxy"} if series else {}


def _sum_dicts(dicts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            total[k] = total.get(k, 0) + v
    return total


def trajectory_figure(trajectory: dict[str, list[dict[str, Any]]]) -> str | None:
    """PNG (data URI) of proxy vs gold on the diagnostic set by inner step, one colour per method."""
    import base64
    import io

    import matplotlib

    matplotlib.use("Agg")  # no display on servers; must precede pyplot
    import matplotlib.pyplot as plt

    lines = [(method, name, [(p["step"], p[name]) for p in points if p[name] is not None])
             for method, points in trajectory.items() for name in ("proxy", "gold")]
    if not any(points for *_, points in lines):
        return None
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    colours = {method: f"C{i}" for i, method in enumerate(trajectory)}
    for method, name, points in lines:
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, color=colours[method], linestyle="--" if name == "proxy" else "-",
                    marker="x" if name == "proxy" else "o", label=f"{method} {name}")
    ax.set_xlabel("inner step")
    ax.set_ylabel("score (0-1)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
