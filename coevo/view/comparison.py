"""Runs side by side: their configs key by key, their last metrics (and each run's difference
from the first), their curves over rounds and their per-step training curves.

One function (`compare_runs`) makes the tables, and both `coevo view`'s compare page
(`coevo.view.compare`) and `coevo runs --compare` print them, so the two never disagree.
Server-free on purpose (no FastAPI import, as view/audit.py and view/warnings.py): the CLI
imports it and starts fast.

Which metrics: those logged by at least two of the runs (for two runs: both), keyed by stage
and name, bookkeeping counts, the judge audit's metrics and interval parts (`x_lo`, `x_hi`,
`x_n`, `x_ci_low`, `x_ci_high`) left out: the parts are read into their metric's cell instead.

A difference (B − A: a later run's last value minus the first run's) carries both runs' n and,
where both values are estimates from MIN_ITEMS items or more with intervals, a 95 % interval
from the two intervals (`difference`). Training curves are TRL's per-step history of the
training stages the runs share (`training_curves`), a line per run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from coevo.eval.metric_defs import MIN_ITEMS, describe, estimate_of, estimate_text, values_by_stage_round
from coevo.view.plot_axes import TRAINING
from coevo.view.plots import AUDIT_PREFIX, GROUPS, group_of, is_bookkeeping, logged_steps

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


class Difference(BaseModel):
    """A run's last value minus the first run's (B − A), with both n (A's, then B's) and a 95 %
    interval only where both are estimates from MIN_ITEMS items or more with intervals."""

    value: float
    low: float | None = None
    high: float | None = None
    n: tuple[int | None, int | None] = (None, None)
    text: str


class MetricRow(BaseModel):
    """One metric of one stage across the runs (None: that run did not log it); `differences`:
    each run after the first minus the first (None: one of the two did not log it)."""

    stage: str
    name: str
    title: str
    definition: str
    unit: str = ""
    cells: list[MetricCell | None]
    differences: list[Difference | None] = Field(default_factory=list)


class Curve(BaseModel):
    """A metric logged over two or more rounds in two or more runs: per stage, per run label,
    the points (round, value, low, high, n)."""

    name: str
    title: str
    definition: str
    stages: dict[str, dict[str, list[tuple[int, float, float | None, float | None, int | None]]]]


class TrainingCurve(BaseModel):
    """One quantity of TRL's per-step history (`key`, plot_axes.TRAINING's) of a training stage
    two or more runs share: per run label, the points (step, value)."""

    stage: str
    key: str
    runs: dict[str, list[tuple[float, float]]]


class Comparison(BaseModel):
    runs: list[ComparedRun]
    config: list[ConfigRow]
    metrics: list[MetricRow]
    curves: list[Curve]
    training: list[TrainingCurve] = Field(default_factory=list)

    @property
    def differing(self) -> list[ConfigRow]:
        return [row for row in self.config if row.differs]


def compare_runs(runs: list[tuple[str, Path]]) -> Comparison:
    """The comparison of `runs` ((label, run folder) pairs, in the order to show them)."""
    from coevo.rundir.store import RunStore

    compared, configs, metrics, logs = [], [], [], []
    for label, path in runs:
        store = RunStore(path, read_only=True)  # a look, never a write: a run may be going on
        try:
            compared.append(ComparedRun(label=label, path=str(path), algorithm=str(store.get_meta("algorithm") or "?")))
            configs.append(flatten(store.get_meta("config", {}) or {}))
            metrics.append(store.metrics())
            logs.append(store.training_logs())
        finally:
            store.close()
    labels = [run.label for run in compared]
    return Comparison(runs=compared, config=config_rows(configs), metrics=metric_rows(metrics),
                      curves=curves(labels, metrics), training=training_curves(labels, logs))


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
    from coevo.view.runinfo import HEADLINE_METRICS

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
        cells = [cells.get((stage, name)) for cells in per_run]
        rows.append(MetricRow(stage=stage, name=name, title=meaning.title, definition=meaning.definition,
                              unit=meaning.unit, cells=cells,
                              differences=[difference(cells[0], cell) for cell in cells[1:]]))
    return rows


def difference(a: MetricCell | None, b: MetricCell | None) -> Difference | None:
    """b − a, with both n; its 95 % interval only where both cells have one from MIN_ITEMS items
    or more. The interval combines the two (MOVER, Newcombe's method for two proportions
    generalised by Zou and Donner): low = d − √((b − b_low)² + (a_high − a)²), high likewise, so
    an asymmetric interval (a Wilson one near 0 or 1) keeps its shape. It treats the runs as
    independent samples; two runs scored on the same items would have a narrower paired one,
    which needs the items' scores the logged metrics no longer hold."""
    if a is None or b is None or a.value is None or b.value is None:
        return None
    d = b.value - a.value
    n = (a.n, b.n)
    known = all(x is not None for x in (a.low, a.high, b.low, b.high))
    enough = all(k is not None and k >= MIN_ITEMS for k in n)
    low = high = None
    if known and enough:
        low = d - math.hypot(b.value - b.low, a.high - a.value)  # type: ignore[operator]
        high = d + math.hypot(b.high - b.value, a.value - a.low)  # type: ignore[operator]
    return Difference(value=d, low=low, high=high, n=n, text=difference_text(d, low, high, n))


def difference_text(d: float, low: float | None, high: float | None, n: tuple[int | None, int | None]) -> str:
    """`+0.181 [+0.102, +0.263] (n=48 vs 50)`; "too few to tell" in place of the interval where
    either run's n is under MIN_ITEMS; no n where neither run logged one."""
    # Exactly equal values differ by an exact 0, not by "+0.000" (which reads as a rounded gap).
    shown = estimate_text(d, low, high, signed=True)
    if d == 0:
        shown = "0" + shown[len(estimate_text(d, signed=True)):]
    if n == (None, None):
        return shown
    counts = " vs ".join("?" if k is None else str(k) for k in n)
    few = any(k is not None and k < MIN_ITEMS for k in n)
    return f"{shown} (n={counts}{': too few to tell' if few else ''})"


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


def training_curves(labels: list[str], logs: list[list[dict[str, Any]]]) -> list[TrainingCurve]:
    """Per training stage two or more runs logged (`store.training_logs()`, one list per run),
    each TRAINING quantity two or more of them logged over two or more steps; a constant
    learning rate is a setting, not a curve, and is left out (as the run page leaves it)."""
    found: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = {}
    for label, run_logs in zip(labels, logs):
        for log in run_logs:
            for i, entry in enumerate(logged_steps(log["history"])):
                step = entry.get("step", i + 1)
                for key in TRAINING:
                    value = entry.get(key)
                    if _numeric(value) and _numeric(step):
                        points = found.setdefault(log["stage"], {}).setdefault(key, {}).setdefault(label, [])
                        points.append((float(step), float(value)))
    out = []
    for stage, by_key in found.items():
        for key in TRAINING:
            runs = {label: sorted(points) for label, points in by_key.get(key, {}).items() if len(points) > 1}
            constant = key == "learning_rate" and len({y for points in runs.values() for _, y in points}) <= 1
            if len(runs) > 1 and not constant:
                out.append(TrainingCurve(stage=stage, key=key, runs=runs))
    return out
