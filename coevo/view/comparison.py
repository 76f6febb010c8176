"""Runs side by side: their configs key by key, their last metrics, their curves over rounds.

One function (`compare_runs`) makes the tables, and both `coevo view`'s compare page
(`coevo.view.compare`) and `coevo runs --compare` print them, so the two never disagree.
Server-free on purpose (no FastAPI import, as view/audit.py and view/warnings.py): the CLI
imports it and starts fast.

Which metrics: those logged by at least two of the runs (for two runs: both), keyed by stage
and name, bookkeeping counts, the judge audit's metrics and interval parts (`x_lo`, `x_hi`,
`x_n`, `x_ci_low`, `x_ci_high`) left out: the parts are read into their metric's cell instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from coevo.metric_defs import describe, estimate_of, values_by_stage_round
from coevo.view.plots import AUDIT_PREFIX, GROUPS, group_of, is_bookkeeping

#: Older interval names (controls' paired-difference bootstrap) that are parts, not metrics.
_OLD_BOUNDS = ("_ci_low", "_ci_high")


class ComparedRun(BaseModel):
    """One run in a comparison: its label (a viewer id or the name `coevo runs` lists)."""

    label: str
    path: str
    algorithm: str = "?"


class ConfigRow(BaseModel):
    """One dotted config key across the runs; a value is None where the run has no such key."""

    key: str
    values: list[str | None]
    differs: bool


class MetricCell(BaseModel):
    """A run's last logged value of a metric, with its interval and n when known."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    round: int | None = None
    text: str = Field(description="as metric_defs.estimate_text writes it")


class MetricRow(BaseModel):
    """One metric of one stage across the runs (None: that run did not log it)."""

    stage: str
    name: str
    title: str
    definition: str
    unit: str = ""
    cells: list[MetricCell | None]


class Curve(BaseModel):
    """A metric logged over two or more rounds in two or more runs: per stage, per run label,
    the points (round, value, low, high, n)."""

    name: str
    title: str
    definition: str
    stages: dict[str, dict[str, list[tuple[int, float, float | None, float | None, int | None]]]]


class Comparison(BaseModel):
    runs: list[ComparedRun]
    config: list[ConfigRow]
    metrics: list[MetricRow]
    curves: list[Curve]

    @property
    def differing(self) -> list[ConfigRow]:
        return [row for row in self.config if row.differs]


def compare_runs(runs: list[tuple[str, Path]]) -> Comparison:
    """The comparison of `runs` ((label, run folder) pairs, in the order to show them)."""
    from coevo.store import RunStore

    compared, configs, metrics = [], [], []
    for label, path in runs:
        store = RunStore(path, read_only=True)  # a look, never a write: a run may be going on
        try:
            compared.append(ComparedRun(label=label, path=str(path), algorithm=str(store.get_meta("algorithm") or "?")))
            configs.append(flatten(store.get_meta("config", {}) or {}))
            metrics.append(store.metrics())
        finally:
            store.close()
    labels = [run.label for run in compared]
    return Comparison(runs=compared, config=config_rows(configs), metrics=metric_rows(metrics),
                      curves=curves(labels, metrics))


# -- configs -------------------------------------------------------------------------------

def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """A nested config as {dotted.key: value}; lists stay whole (a list of conditions is one
    setting), an empty mapping is kept as {} so a key present in one run only still shows."""
    if not isinstance(config, dict) or (not config and prefix):
        return {prefix: config}
    out: dict[str, Any] = {}
    for key, value in config.items():
        out.update(flatten(value, f"{prefix}.{key}" if prefix else str(key)))
    return out


def config_text(value: Any) -> str:
    """A config value as a cell shows it: strings bare, everything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def config_rows(configs: list[dict[str, Any]]) -> list[ConfigRow]:
    """One row per key any run has, sorted; `differs` when the runs' values are not all equal
    (a key one run lacks differs too)."""
    keys = sorted({key for config in configs for key in config})
    rows = []
    for key in keys:
        values = [config_text(config[key]) if key in config else None for config in configs]
        rows.append(ConfigRow(key=key, values=values, differs=len(set(values)) > 1))
    return rows


# -- metrics -------------------------------------------------------------------------------

def _shown(name: str, names: set[str]) -> bool:
    """A metric worth a row: not a count of how much was measured, not the audit's, and not a
    part of another metric's interval (those are read into its cell)."""
    if is_bookkeeping(name) or name.startswith(AUDIT_PREFIX):
        return False
    for end in ("_lo", "_hi", "_n") + _OLD_BOUNDS:
        if name.endswith(end) and name[: -len(end)] in names:
            return False
    return True


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _rank(round_: int | None) -> int:
    return -1 if round_ is None else round_


def _last_cells(metrics: list[dict[str, Any]]) -> dict[tuple[str, str], MetricCell]:
    """{(stage, name): its cell at the last round it was logged (unrounded counts as before
    round 0, as the runs list reads them)}."""
    grouped = values_by_stage_round(metrics)
    latest: dict[tuple[str, str], int | None] = {}
    for (stage, r), values in grouped.items():
        for name, value in values.items():
            key = (stage, name)
            if _numeric(value) and (key not in latest or _rank(r) >= _rank(latest[key])):
                latest[key] = r
    cells = {}
    for (stage, name), r in latest.items():
        values = grouped[(stage, r)]
        if not _shown(name, set(values)):
            continue
        estimate = estimate_of(values, name)
        cells[(stage, name)] = MetricCell(value=estimate.value, low=estimate.low, high=estimate.high,
                                          n=estimate.n, round=r, text=estimate.text())
    return cells


def _order(key: tuple[str, str]) -> tuple[int, int, str, str]:
    from coevo.runinfo import HEADLINE_METRICS

    stage, name = key
    groups = [title for title, _ in GROUPS] + ["Other"]
    first = HEADLINE_METRICS.index(name) if name in HEADLINE_METRICS else len(HEADLINE_METRICS)
    group = groups.index(group_of(name)) if group_of(name) in groups else len(groups)
    return (first, group, name, stage)


def metric_rows(metrics: list[list[dict[str, Any]]]) -> list[MetricRow]:
    """The last value of every metric logged by two or more of the runs, headline metrics
    first (as the runs list orders them), then by group as the run page's plots are."""
    per_run = [_last_cells(m) for m in metrics]
    keys = {key for cells in per_run for key in cells}
    shared = [key for key in keys if sum(key in cells for cells in per_run) >= min(2, len(per_run))]
    rows = []
    for stage, name in sorted(shared, key=_order):
        meaning = describe(name)
        rows.append(MetricRow(stage=stage, name=name, title=meaning.title, definition=meaning.definition,
                              unit=meaning.unit, cells=[cells.get((stage, name)) for cells in per_run]))
    return rows


def curves(labels: list[str], metrics: list[list[dict[str, Any]]]) -> list[Curve]:
    """Every metric logged over two or more rounds (of one stage) in two or more runs, with its
    interval at each round where known; in the metric rows' order."""
    found: dict[str, dict[str, dict[str, list]]] = {}
    for label, run_metrics in zip(labels, metrics):
        for (stage, r), values in values_by_stage_round(run_metrics).items():
            if r is None:
                continue
            for name, value in values.items():
                if _numeric(value) and _shown(name, set(values)):
                    e = estimate_of(values, name)
                    point = (int(r), float(value), e.low, e.high, e.n)
                    found.setdefault(name, {}).setdefault(stage, {}).setdefault(label, []).append(point)
    out = []
    for name in sorted(found, key=lambda n: _order(("", n))):
        stages = {stage: {label: sorted(points) for label, points in by_run.items() if len(points) > 1}
                  for stage, by_run in sorted(found[name].items())}
        stages = {stage: by_run for stage, by_run in stages.items() if len(by_run) > 1}
        if stages:
            meaning = describe(name)
            out.append(Curve(name=name, title=meaning.title, definition=meaning.definition, stages=stages))
    return out
