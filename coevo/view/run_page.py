"""What a run's page shows, read from its store: one context dict for `run.html`.

Served by `coevo view` at /runs/{run_id} and written as report.html by `coevo.view.export`,
from this same function, so the two never disagree.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from coevo.rundir.store import RunStore, stage_round
from coevo.view import plots
from coevo.view.answers import dpo_pairs, round_answers
from coevo.view.audit import audit_section
from coevo.view.context import RunRef
from coevo.view.monitor import monitor_section
from coevo.view.story import run_story
from coevo.view.targets import target_section

#: What the store's round column counts, where it is not a round.
ROUND_LABEL = {"decoevo": "inner step"}
#: Example rollouts shown per stage kind on the run page (the samples page has them all).
EXAMPLES = 3


def run_page_context(store: RunStore, ref: RunRef) -> dict[str, Any]:
    """Everything `run.html` renders for the run in `store`."""
    from coevo.view.runinfo import format_duration, read_summary, run_info
    from coevo.view.warnings import run_warnings, training_results

    info = run_info(ref.path)
    metrics = store.metrics()
    rows = store.rollout_rows()  # read once: the examples, the answers and the length check all look at them
    logs = store.training_logs()
    results = training_results(store, logs)
    kinds = {stage: r.get("kind") for stage, r in results.items() if isinstance(r, dict) and r.get("kind")}
    figures = run_figures(store, metrics, logs, kinds, ROUND_LABEL.get(info.algorithm, "round"))
    summary = read_summary(ref.path)
    task = (store.get_meta("config", {}) or {}).get("task")
    targets = target_section(info.algorithm, task, metrics, logs, kinds, summary)
    audit = audit_section(metrics, _audit_records(store, summary))
    monitor = monitor_section(store)
    warnings = run_warnings(store, stage_results=results, logs=logs, rollouts=[row["rollout"] for row in rows])
    pairs = dpo_pairs(store, [stage for stage, kind in kinds.items() if kind == "dpo"], rows)
    story = run_story(store, summary, warnings=warnings, results=results, rollouts=len(rows),
                      pairs=pairs["total"] if pairs else None, round_label=ROUND_LABEL.get(info.algorithm, "round"))
    return {
        "title": f"{info.algorithm} run {ref.id}",
        "info": info,
        "duration": format_duration(info.duration_s),
        "path": str(Path(ref.path).resolve()),
        "provenance": store.get_meta("provenance") or summary.get("provenance"),
        "config_json": json.dumps(store.get_meta("config", {}), indent=2, ensure_ascii=False),
        "story": story,
        "warnings": warnings,
        # None: a run made before departures were kept (unknown), [] : the paper's settings.
        "departures": store.get_meta("departures", summary.get("departures")),
        "tables": _meta_tables(store, metrics),
        "intervals": _intervals(summary),
        "costs": _step_costs(summary),
        "run_cost": run_cost_rows(summary, store.get_meta("estimate")),
        "round_tables": round_tables(metrics),
        "headline": headline_rows(info, metrics),
        "round_label": ROUND_LABEL.get(info.algorithm, "round"),
        "figures": figures,
        "targets": targets,
        "audit": audit,
        "monitor": monitor,
        "pairs": pairs,
        "answers": round_answers(rows),
        "images": {title: image for title, image in (store.get_meta("figures", {}) or {}).items()
                   if str(image).startswith("data:image/png;base64,")},
        "judgments": _judgment_rows(store),
        "training_stages": _stage_rows(results, summary.get("cost")),
        "examples": examples(store, rows=rows),
        "skills": skill_history(store),
        "needs_plotly": any(figures.values()) or bool(targets and targets["figure"])
        or bool(audit and audit["figure"]) or bool(monitor and (monitor["figure"] or monitor["outputs_figure"])),
    }


def run_figures(store: RunStore, metrics: list[dict[str, Any]], logs: list[dict[str, Any]], kinds: dict[str, str],
                round_label: str) -> dict[str, list[dict[str, Any]]]:
    """The page's figure groups (metrics by round, per-step training curves, the experiment's
    own plots, kept distributions), each figure with its `json` for the page's script."""
    figures = {
        "metrics": plots.metric_figures(metrics, round_label),
        "training": plots.training_figures(logs, kinds),
        "experiment": [f for title, series in (store.get_meta("plots", {}) or {}).items()
                       if (f := plots.series_figure(title, series)) is not None],
        "distributions": plots.distribution_figures(store.get_meta("distributions", {}) or {}),
    }
    for group in figures.values():
        for figure in group:
            figure["json"] = plots.figure_json(figure["figure"])
    return figures


def _audit_records(store: RunStore, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The run's judge audit records (meta "audit", else summary.json's `audit`)."""
    from coevo.audit.in_run import run_records

    records = run_records(store)
    if not records and isinstance(summary.get("audit"), list):
        records = [r for r in summary["audit"] if isinstance(r, dict)]
    return records


def _meta_tables(store: RunStore, metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The experiment's comparison tables (meta "tables": {title: {columns, rows}}), each
    with `definitions`: every metric name in its header or its "metric" column that
    metric_defs.py defines, {name: MetricDef} (the page gives each a hover and a list). A
    table of metric × round gets a row for each judge-audit measure that failed and is not
    among its rows (`added`): a table that lists the audit's passing measures must not leave
    out the one that failed."""
    out = []
    for i, (title, table) in enumerate((store.get_meta("tables", {}) or {}).items()):
        if isinstance(table, dict) and table.get("columns"):
            rows = [*table.get("rows", []), *_failed_audit_rows(table, metrics)]
            names = [*table["columns"], *(row.get("metric") for row in rows if isinstance(row, dict))]
            out.append({"id": f"table-result-{i}", "title": title, "columns": table["columns"], "rows": rows,
                        "definitions": metric_definitions(names)})
    return out


def _failed_audit_rows(table: dict[str, Any], metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows for `table` (metric × "round N" columns) of the failed audit measures it lacks,
    each cell the measure's estimate in that round (its n and interval), marked `added`."""
    from coevo.eval.metric_defs import estimate_of, values_by_stage_round
    from coevo.view.changes import failed_audit_metrics

    columns = table["columns"]
    rounds = {c: int(c.split()[1]) for c in columns if isinstance(c, str) and re.fullmatch(r"round \d+", c)}
    listed = {row.get("metric") for row in table.get("rows", []) if isinstance(row, dict)}
    if not columns or columns[0] != "metric" or not rounds:
        return []
    grouped = values_by_stage_round(metrics)
    out = []
    for stage, name, _, _ in failed_audit_metrics(metrics):
        if name in listed:
            continue
        listed.add(name)
        row: dict[str, Any] = {"metric": name, "added": True}
        for column, r in rounds.items():
            values = grouped.get((stage, r), {})
            row[column] = estimate_of(values, name).text() if values.get(name) is not None else None
        out.append(row)
    return out


def metric_definitions(names: list[Any]) -> dict[str, Any]:
    """{name: its MetricDef} for the names metric_defs.py defines, in the order given."""
    from coevo.eval.metric_defs import describe, is_defined

    return {name: describe(name) for name in dict.fromkeys(n for n in names if isinstance(n, str) and is_defined(n))}


def _intervals(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Paired confidence intervals summary.json carries (keys ending in `_ci`): one interval
    ({mean_diff, low, high, n_pairs}: DecoEvo's), or one per condition (TAIScore's gold gain).
    From fewer than MIN_ITEMS pairs the ends are dropped (`too_few`): the page says "too few to
    tell" instead of an interval that spans little more than the two pairs' own spread."""
    from coevo.eval.metric_defs import MIN_ITEMS

    out = []
    for key, value in summary.items():
        if not (key.endswith("_ci") and isinstance(value, dict)):
            continue
        name = key[:-3].replace("_minus_", " − ").replace("_", " ")
        if "low" in value:
            found = [{"name": name, **value}]
        else:
            found = [{"name": f"{name}: {condition}", **ci} for condition, ci in value.items()
                     if isinstance(ci, dict) and "low" in ci]
        for ci in found:
            n = ci.get("n_pairs")
            ci["too_few"] = isinstance(n, (int, float)) and n < MIN_ITEMS
            if ci["too_few"]:
                ci["low"] = ci["high"] = None
        out += found
    return out


def run_cost_rows(summary: dict[str, Any], estimate: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """summary.json → cost (coevo/plan/cost.py) as the run page shows it, with the run's wall
    time and, where the run kept one, its estimate beside each total; None for a run made
    before costs were counted. (Its training stages are the Training table's columns.)"""
    from coevo.plan.estimate import RunEstimate
    from coevo.plan.estimate_check import compare_totals, ratio_text

    cost = summary.get("cost")
    if not (isinstance(cost, dict) and isinstance(cost.get("total"), dict)):
        return None
    wall = (summary.get("provenance") or {}).get("duration_s")
    forecast = None
    if isinstance(estimate, dict):
        sides = compare_totals(RunEstimate.model_validate(estimate), cost, wall)
        forecast = [{"what": key.replace("_", " "), "text": ratio_text(side)} for key, side in sides.items()]
    return {"calls": cost.get("calls") or [], "total": cost["total"], "wall_s": wall, "estimate": forecast}


def _step_costs(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """DecoEvo's cost per inner / outer step (summary.json → step_cost; `cost` in runs made
    before the run-wide cost took that name, told apart by their step-kind keys)."""
    cost = summary.get("step_cost")
    if cost is None and isinstance(summary.get("cost"), dict) and "total" not in summary["cost"]:
        cost = summary["cost"]
    if not isinstance(cost, dict):
        return []
    return [{"step": kind, **values} for kind, values in cost.items() if isinstance(values, dict)]


def round_tables(metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per stage, a table of metric × round: results first (in plot-group order), then the
    bookkeeping counts (how much was measured) as a separate table."""
    from coevo.eval.metric_defs import describe, is_defined, is_interval_part, values_by_stage_round

    by_stage: dict[str, dict[str, dict[Any, float | None]]] = defaultdict(lambda: defaultdict(dict))
    for m in metrics:
        by_stage[m["stage"]][m["name"]][m["round"]] = m["value"]
    logged = values_by_stage_round(metrics)
    order = {title: i for i, (title, _) in enumerate(plots.GROUPS)}
    order |= {"Other": len(order), plots.AUDIT_GROUP: len(order) + 1}  # the audit's rows last
    out = []
    for i, (stage, names) in enumerate(by_stage.items()):
        rounds = sorted({r for values in names.values() for r in values}, key=lambda r: -1 if r is None else r)
        # An interval's ends are shown in their metric's cell, not as rows of their own.
        results = [n for n in names if not plots.is_bookkeeping(n)
                   and not (is_interval_part(n) and n.rsplit("_", 1)[0] in names)]
        results.sort(key=lambda n: (order.get(plots.group_of(n), len(order)), plots._metric_order(n)))
        counts = sorted(n for n in names if plots.is_bookkeeping(n))
        out.append({
            "id": f"table-rounds-{i}", "stage": stage,
            "rounds": ["—" if r is None else r for r in rounds],
            "results": [{"name": n, "group": plots.group_of(n), "title": describe(n).title,
                         "definition": describe(n).definition, "values": [names[n].get(r) for r in rounds],
                         "cells": [_cell_text(logged.get((stage, r), {}), n) for r in rounds]}
                        for n in results],
            "counts": [{"name": n, "values": [names[n].get(r) for r in rounds],
                        "definition": describe(n).definition if is_defined(n) else ""} for n in counts],
        })
    return out


def _cell_text(values: dict[str, float | None], name: str) -> dict[str, Any]:
    """One rounds-table cell: the value as the metric registry writes it (with n and interval
    where logged, "too few to tell" under 5 items) and whether it is too few to tell."""
    from coevo.eval.metric_defs import estimate_of

    if values.get(name) is None:
        return {"text": None, "too_few": False}
    estimate = estimate_of(values, name)
    if estimate.n is None and estimate.low is None:
        from coevo.view.context import format_number

        return {"text": format_number(estimate.value), "too_few": False}
    return {"text": estimate.text(), "too_few": estimate.too_few}


def headline_rows(info: Any, metrics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's headline numbers for the page: title in words, definition, and the text with
    its n and interval (or "too few to tell")."""
    from coevo.eval.metric_defs import MIN_ITEMS, describe

    rows = []
    for name in info.headline:
        definition = describe(name)
        text = info.headline_text.get(name) or str(info.headline[name])
        rows.append({"name": name, "title": definition.title, "definition": definition.definition,
                     "text": text, "too_few": "too few to tell" in text or "n not logged" in text,
                     "min_items": MIN_ITEMS})
    return rows


def _judgment_rows(store: RunStore) -> list[dict[str, Any]]:
    rows = []
    for judge, counts in sorted(store.judgment_counts().items()):
        total = counts["valid"] + counts["invalid"]
        rows.append({"judge": judge, "valid": counts["valid"], "invalid": counts["invalid"],
                     "invalid_rate": counts["invalid"] / total if total else None})
    return rows


def _stage_rows(results: dict[str, Any], cost: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per finished training stage: kind, round, steps, the final loss (the last
    step's) and the mean loss over its steps, the largest absolute weight change, seconds,
    peak memory, the tokens TRL counted (summary.json → cost → training), checkpoint."""
    counted = {row["stage"]: row for row in (cost or {}).get("training") or [] if isinstance(row, dict)}
    rows = []
    for stage, r in results.items():
        if not isinstance(r, dict):
            continue
        m = r.get("metrics") or {}
        rows.append({"stage": stage, "kind": r.get("kind") or "—", "round": stage_round(stage, r.get("round")),
                     "steps": r.get("steps"), **stage_losses(r),
                     "weight_delta": m.get("weight_delta"), "seconds": r.get("seconds"),
                     "peak_rss_mb": r.get("peak_rss_mb"), "tokens": (counted.get(stage) or {}).get("tokens"),
                     "checkpoint": r.get("checkpoint")})
    return rows


def stage_losses(result: dict[str, Any]) -> dict[str, float | None]:
    """{"final_loss": the last step's loss, "mean_loss": the mean over the stage's steps}.
    TRL's `train_loss` is the mean, and the stage's `loss` metric is the last logged step's
    (coevo.train.measuring.final_metrics); where a stage kept only one of them its history gives
    the other, and neither is taken for the other."""
    from coevo.view.plots import logged_steps

    metrics = result.get("metrics") or {}
    losses = [e["loss"] for e in logged_steps(result.get("history") or [])
              if isinstance(e.get("loss"), (int, float)) and not isinstance(e.get("loss"), bool)]
    final = losses[-1] if losses else metrics.get("loss")
    mean = metrics.get("train_loss", metrics.get("step_loss"))
    if mean is None and losses:
        mean = sum(losses) / len(losses)
    return {"final_loss": final, "mean_loss": mean}


def examples(store: RunStore, per_kind: int = EXAMPLES, rows: list[dict[str, Any]] | None = None
             ) -> list[dict[str, Any]]:
    """A few rollouts per kind of stage (the round number taken out: `taiscore/round1/eval`
    and `.../round2/eval` are one kind), latest rounds first, with their round, judges'
    scores and reasons and per-criterion scores. `rows`: `store.rollout_rows()`, when the
    caller read them already."""
    shown: dict[str, int] = defaultdict(int)
    out = []
    for row in reversed(store.rollout_rows() if rows is None else rows):
        kind = _stage_kind(row["stage"])
        if shown[kind] >= per_kind:
            continue
        shown[kind] += 1
        rollout = row["rollout"]
        judges = [{"name": name, "score": j.score, "valid": j.valid, "scores": j.scores, "reasons": j.reasons,
                   "error": j.error} for name, j in rollout.judgments.items()]
        out.append({"id": row["id"], "stage": row["stage"], "round": row["round"], "sample_id": rollout.sample_id,
                    "condition": rollout.condition, "x": rollout.x, "y0": rollout.y0, "c": rollout.c,
                    "y1": rollout.y1, "judges": judges})
    out.sort(key=lambda e: e["id"])
    return out


def skill_history(store: RunStore) -> list[dict[str, Any]]:
    """DecoEvo's skill versions (decision, reason, diff), for the run page and report.html
    (the viewer's Skills page has them with the trajectory; the static report has only this)."""
    from coevo.algorithms.decoevo.skills import versions

    return [{**v.model_dump(include={"method", "seed", "name", "version", "parent", "step", "decision", "why",
                                     "diff"})} for v in versions(store)]


def _stage_kind(stage: str) -> str:
    return re.sub(r"round\d+", "round*", stage)
