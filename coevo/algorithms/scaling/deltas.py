"""The numbers of the controlled analysis: per-example scores of each cell, Table 5's deltas
(larger minus smaller, paired per example, each with its n and paired bootstrap 95 % CI),
Figure 1's bars and the per-cell means.

Every score is on the judges' 1-10 scale (critique quality and adherence: the mean of their
dimensions; S: the gold-rubric judge's weighted criteria, or what a `python:` gold scorer
returns). An example enters a delta only where both cells' scores of that metric were
readable; the n says how many did.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from coevo.algorithms.scaling.cells import Cell, Comparison, short_name
from coevo.eval.paired import paired_difference
from coevo.eval.stats import mean_metrics
from coevo.rundir.store import RunStore
from coevo.core.types import Judgment, Rollout, Sample, Table

#: The metrics of a comparison, in Table 5's order, and their column titles.
METRICS = {"critique_quality": "Δ critique quality", "adherence": "Δ critique adherence", "gain": "Δ gain"}
#: Per-cell means: the metrics above and the two scores the gain is made of.
CELL_METRICS = ("critique_quality", "adherence", "S_y0", "S_y1", "gain")
BLOCKS = {"critic": "critic scaling (same y0, same self-refiner)",
          "refiner": "refiner scaling (same y0, same critique)"}
FIGURE_FILE = "figure1.html"
CI_METHOD = ("mean of the per-example differences larger − smaller, percentile paired bootstrap 95 % CI "
             "(5,000 resamples of examples); no interval under 2 pairs")

Scores = dict[str, dict[str, float | None]]  # sample id -> metric -> score (None: unreadable)


class ScalingSummary(BaseModel):
    """`summary.json` of a scaling run."""

    n_samples: int
    #: Table 5: one row per comparison; `delta_<metric>` with `_lo`, `_hi` (95 % CI) and `_n`.
    table: Table
    #: Figure 1: per kind of scaling and metric, the mean delta over every pair of its comparisons.
    figure: Table
    #: Every cell's mean scores, with `_lo`/`_hi` (Student-t 95 %) and `_n`.
    cells: Table
    figure_file: str
    ci_method: str = CI_METHOD


def _readable(judgment: Judgment | None) -> float | None:
    return judgment.score if judgment is not None and judgment.valid and judgment.score is not None else None


def cell_scores(samples: list[Sample], y0: dict[str, Rollout], critiques: dict[str, Rollout],
                revisions: dict[str, Rollout]) -> Scores:
    """Each example's critique quality, adherence, S(y0), S(y1) and gain S(y1) − S(y0) in one cell."""
    out: Scores = {}
    for sample in samples:
        s0 = _readable(y0[sample.id].judgments.get("gold_y0"))
        s1 = _readable(revisions[sample.id].judgments.get("gold_y1"))
        out[sample.id] = {
            "critique_quality": _readable(critiques[sample.id].judgments.get("critique_quality")),
            "adherence": _readable(revisions[sample.id].judgments.get("adherence")),
            "S_y0": s0, "S_y1": s1, "gain": None if s0 is None or s1 is None else s1 - s0,
        }
    return out


def paired(larger: Scores, smaller: Scores, metric: str) -> tuple[list[float], list[float]]:
    """(larger, smaller) scores of `metric` over the examples both cells scored readably."""
    both = [i for i in larger if larger[i][metric] is not None and (smaller.get(i) or {}).get(metric) is not None]
    return [larger[i][metric] for i in both], [smaller[i][metric] for i in both]  # type: ignore[misc]


def delta_row(comparison: Comparison, scores: dict[Cell, Scores]) -> dict[str, object]:
    """A row of Table 5: the comparison's three deltas, each with its 95 % CI and n."""
    row: dict[str, object] = {"block": BLOCKS[comparison.kind], "setting": comparison.setting,
                              "scaling": comparison.scaling}
    for metric in METRICS:
        if comparison.kind == "refiner" and metric == "critique_quality":
            # The one critique both refiners revise under: nothing to compare (Table 5's "fixed").
            row |= {f"delta_{metric}": "fixed", f"delta_{metric}_lo": None, f"delta_{metric}_hi": None,
                    f"delta_{metric}_n": None}
            continue
        found = paired_difference(*paired(scores[comparison.larger], scores[comparison.smaller], metric))
        row |= {f"delta_{metric}": found.mean_diff, f"delta_{metric}_lo": found.low,
                f"delta_{metric}_hi": found.high, f"delta_{metric}_n": found.n_pairs}
    return row


def figure_rows(found: list[Comparison], scores: dict[Cell, Scores]) -> list[dict[str, object]]:
    """Figure 1's bars: per kind of scaling and metric, the paired difference over every
    (comparison, example) pair of that kind, so a bar rests on all its comparisons' examples."""
    rows = []
    for kind in ("critic", "refiner"):
        mine = [c for c in found if c.kind == kind]
        for metric, title in METRICS.items():
            if not mine or (kind == "refiner" and metric == "critique_quality"):
                continue
            larger: list[float] = []
            smaller: list[float] = []
            for comparison in mine:
                a, b = paired(scores[comparison.larger], scores[comparison.smaller], metric)
                larger, smaller = larger + a, smaller + b
            ci = paired_difference(larger, smaller)
            rows.append({"scaling": kind, "metric": title, "mean_diff": ci.mean_diff, "low": ci.low, "high": ci.high,
                         "n": ci.n_pairs, "comparisons": len(mine)})
    return rows


def cell_rows(cells: list[Cell], scores: dict[Cell, Scores]) -> list[dict[str, object]]:
    """Each cell's mean scores with n and a 95 % interval."""
    rows = []
    for cell in cells:
        row: dict[str, object] = {"y0": short_name(cell.y0), "critic": short_name(cell.critic),
                                  "refiner": short_name(cell.refiner)}
        for metric in CELL_METRICS:
            values = [v[metric] for v in scores[cell].values() if v[metric] is not None]
            found = mean_metrics(metric, values)  # type: ignore[arg-type]
            row |= {key: found.get(key) for key in (metric, f"{metric}_lo", f"{metric}_hi", f"{metric}_n")}
        rows.append(row)
    return rows


def _columns(stem: str) -> list[str]:
    return [stem, f"{stem}_lo", f"{stem}_hi", f"{stem}_n"]


def summarise(found: list[Comparison], cells: list[Cell], scores: dict[Cell, Scores], store: RunStore, *,
              n_samples: int) -> ScalingSummary:
    """Table 5, Figure 1 (written to the run folder) and the per-cell means; the tables are
    kept in the store too, for the run page and report.html."""
    from coevo.algorithms.scaling.figure import write_figure

    table = Table(columns=["block", "setting", "scaling"] + [c for m in METRICS for c in _columns(f"delta_{m}")],
                  rows=[delta_row(c, scores) for c in found])
    bars = Table(columns=["scaling", "metric", "mean_diff", "low", "high", "n", "comparisons"],
                 rows=figure_rows(found, scores))
    means = Table(columns=["y0", "critic", "refiner"] + [c for m in CELL_METRICS for c in _columns(m)],
                  rows=cell_rows(cells, scores))
    store.set_meta("tables", {"Table 5: larger minus smaller (paired, 95 % CI)": table.model_dump(),
                              "Figure 1: mean delta per kind of scaling": bars.model_dump(),
                              "Per-cell means (95 % CI)": means.model_dump()})
    path = write_figure(bars.rows, Path(store.run_dir) / FIGURE_FILE)
    return ScalingSummary(n_samples=n_samples, table=table, figure=bars, cells=means, figure_file=path.name,
                          ci_method=CI_METHOD)
