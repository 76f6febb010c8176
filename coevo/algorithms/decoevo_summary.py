"""DecoEvo's summary.json: per-method test score over seeds, the paired CI of DecoEvo -
SkillOpt, skill versions, solver-gate ties, cost per inner / outer step, the diagnostic
trajectory, and the report's table and plot (set in the run store's meta)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coevo.algorithms.skills import GENERATOR, SOLVER
from coevo.eval.stats import mean_of_known, mean_sd, paired_bootstrap_ci
from coevo.store import RunStore

if TYPE_CHECKING:  # the config's type only: decoevo.py imports this module
    from coevo.algorithms.decoevo import DecoEvoConfig


def summarise(config: DecoEvoConfig, results: dict[str, dict[str, Any]], records: list[dict[str, Any]],
              store: RunStore | None, sizes: dict[str, int]) -> dict[str, Any]:
    """summary.json: per-method mean +- sd over seeds, the paired CI, skill versions, costs."""
    methods: dict[str, Any] = {}
    rows = []
    for method in config.methods:
        runs = [results[f"{method}/seed{seed}"] for seed in config.seeds]
        means = [r["test_mean"] for r in runs if r["test_mean"] is not None]
        mean, sd = mean_sd(means) if means else (None, None)
        mine = [r for r in records if r["method"] == method]
        sampled_means = [r.get("test_mean_sampled") for r in runs]
        entry = {"test_mean": mean, "test_sd": sd, "per_seed": [r["test_mean"] for r in runs],
                 "test_mean_sampled": mean_of_known(sampled_means),
                 "solver_accepted": sum(r["accepted"] and r["version"] > 0 for r in mine if r["name"] == SOLVER),
                 "solver_candidates": sum(r["version"] > 0 for r in mine if r["name"] == SOLVER),
                 "generator_accepted": sum(r["accepted"] and r["version"] > 0 for r in mine if r["name"] == GENERATOR),
                 "generator_candidates": sum(r["version"] > 0 for r in mine if r["name"] == GENERATOR),
                 **gate_ties([r for r in mine if r["name"] == SOLVER and r["version"] > 0]),
                 "invalid_outputs": _sum_dicts([r["invalid"] for r in runs])}
        methods[method] = entry
        rows.append({"method": method, "test_mean": mean, "test_sd": sd, "seeds": len(runs),
                     "solver_acc": f"{entry['solver_accepted']}/{entry['solver_candidates']}",
                     "gate_ties": f"{entry['gate_ties']}/{entry['gate_comparisons']}",
                     "generator_acc": f"{entry['generator_accepted']}/{entry['generator_candidates']}",
                     "invalid": sum(entry["invalid_outputs"].values())})
    summary: dict[str, Any] = {
        "methods": methods,
        "scoring": next((r["scoring"] for r in results.values() if "scoring" in r), None),
        "skill_versions": {name: [{k: r[k] for k in ("method", "seed", "version", "parent", "decision",
                                                     "why", "step")} for r in records if r["name"] == name]
                           for name in (SOLVER, GENERATOR)},
        "decoevo_minus_skillopt_ci": paired_ci(results, config.seeds, "decoevo", "skillopt"),
        "partitions": sizes,
        "cost": cost_summary(results),
        "trajectory": trajectory_means(results, config),
        "table": {"columns": ["method", "test_mean", "test_sd", "seeds", "solver_acc", "gate_ties",
                              "generator_acc", "invalid"], "rows": rows},
    }
    if store is not None:
        store.set_meta("tables", {"DecoEvo: gold-rubric test score (0-1), mean ± sd over seeds": summary["table"]})
        figure = trajectory_figure(summary["trajectory"])
        if figure:
            store.set_meta("figures", {"Diagnostic trajectory: proxy under generated rubrics (dashed) vs "
                                       "gold-rubric score (solid), mean over seeds": figure})
    return summary


def gate_ties(candidates: list[dict[str, Any]]) -> dict[str, int]:
    """Solver-gate comparisons and their exact ties (candidate score == incumbent score),
    by the scores the gate used and by the verdicts as written (`_sampled`), from the
    solver candidates' records. A candidate whose gate question was unreadable for either
    skill was compared on nothing and is not counted."""
    compared = [r for r in candidates if r.get("gate_tie") is not None]
    return {"gate_comparisons": len(compared), "gate_ties": sum(bool(r["gate_tie"]) for r in compared),
            "gate_ties_sampled": sum(bool(r.get("gate_tie_sampled")) for r in compared)}


def paired_ci(results: dict[str, dict[str, Any]], seeds: list[int], a: str, b: str) -> dict[str, Any] | None:
    """Paired bootstrap 95% CI of a - b over (seed, test question) items graded for both."""
    if f"{a}/seed{seeds[0]}" not in results or f"{b}/seed{seeds[0]}" not in results:
        return None
    xs, ys = [], []
    for seed in seeds:
        ra, rb = results[f"{a}/seed{seed}"], results[f"{b}/seed{seed}"]
        for x, y in zip(ra["test_scores"], rb["test_scores"]):
            if x is not None and y is not None:
                xs.append(x)
                ys.append(y)
    if not xs:
        return {"mean_diff": None, "low": None, "high": None, "n_pairs": 0}
    diff, low, high = paired_bootstrap_ci(xs, ys, n_resamples=5000)
    return {"mean_diff": diff, "low": low, "high": high, "n_pairs": len(xs)}


def cost_summary(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """LLM calls (completions, cache hits included) and wall seconds per inner / outer step."""
    out = {}
    for kind in ("inner", "outer"):
        costs = [c for r in results.values() for c in r["costs"] if c["kind"] == kind]
        if costs:
            n = len(costs)
            out[kind] = {"steps": n, "llm_calls_per_step": sum(c["llm_calls"] for c in costs) / n,
                         "cached_share": sum(c["cached_calls"] for c in costs) / max(1, sum(c["llm_calls"] for c in costs)),
                         "seconds_per_step": sum(c["seconds"] for c in costs) / n}
    return out


def trajectory_means(results: dict[str, dict[str, Any]], config: DecoEvoConfig) -> dict[str, list[dict[str, Any]]]:
    out = {}
    for method in config.methods:
        by_step: dict[int, list[dict[str, Any]]] = {}
        for seed in config.seeds:
            for point in results[f"{method}/seed{seed}"]["trajectory"]:
                by_step.setdefault(point["step"], []).append(point)
        out[method] = [{"step": step, "proxy": mean_of_known([p["proxy"] for p in pts]),
                        "gold": mean_of_known([p["gold"] for p in pts])} for step, pts in sorted(by_step.items())]
    return out


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
