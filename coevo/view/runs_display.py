"""Runs as the console shows them: `coevo show` (a run's header, rollouts, skill history) and
`coevo runs` (the list, `--compare`'s tables).

The text is made here and printed by the command (coevo/commands/runs.py). Lines meant for
rich are rich markup, with every value from the run escaped; plain lines are printed as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.markup import escape


def cell_text(value: Any) -> str:
    """A value in a console table: floats to 3 decimals, a missing value as a dash."""
    if isinstance(value, float):
        return f"{value:.3f}"
    return "—" if value is None else str(value)


def headline_text(info) -> str:
    """`name value [lo, hi] (n=N)` per headline number, as the viewer writes them."""
    return ", ".join(f"{name} {info.headline_text.get(name) or cell_text(value)}"
                     for name, value in info.headline.items()) or "—"


# ─── coevo show ─────────────────────────────────────────────────────────────────────


def run_header_lines(run_dir: Path) -> list[str]:
    """Rich markup: algorithm, status (with the error and how to go on), start, duration, the
    headline results, and how many processes trained it."""
    from coevo.view.runinfo import format_duration, run_info

    info = run_info(run_dir)
    line = f"[bold]{escape(info.algorithm)}[/] run, {escape(info.status)}"
    if info.error:
        line += f": {escape(info.error)}"
    if info.status in ("failed", "interrupted", "resumable"):
        line += f" (continue with `coevo run CONFIG --out {escape(str(run_dir))} --resume`)"
    if info.started:
        line += f"; started {info.started}, ran {format_duration(info.duration_s)}"
    lines = [line]
    for mark in info.marks:  # what to distrust before reading the numbers (as the viewer's runs list)
        lines.append(f"[yellow]warning:[/] {escape(mark.text)}")
    if info.headline:
        lines.append(f"headline metrics: {escape(headline_text(info))}")
        lines.append("[dim]  (95 % intervals; `coevo metrics " + escape(" ".join(info.headline))
                     + "` says what each measures)[/]")
    summary_file = run_dir / "summary.json"
    if summary_file.is_file():
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        processes = summary.get("world_size")
        if processes:
            lines.append(f"trained by {processes} process{'es' if processes > 1 else ''} (world_size)")
        cost = cost_line(summary.get("cost"))
        if cost:
            lines.append(cost)
    return lines


def cost_line(cost: Any) -> str | None:
    """One line of what the run cost (summary.json → cost, coevo/plan/cost.py), or None for a
    run made before costs were counted."""
    total = cost.get("total") if isinstance(cost, dict) else None
    if not isinstance(total, dict):
        return None
    line = (f"cost: {total.get('calls', 0)} completions ({total.get('cache_hits', 0)} from the cache), "
            f"{total.get('prompt_tokens', 0)} + {total.get('completion_tokens', 0)} tokens, "
            f"{total.get('generation_seconds', 0)} s generating, {total.get('training_steps', 0)} training steps "
            f"in {total.get('training_seconds', 0)} s")
    if total.get("dollars") is not None:
        line += f", ${total['dollars']:.4f}"
    return escape(line) + " [dim](per stage and role: the run page)[/]"


@dataclass
class ShownRollout:
    """One rollout under its heading: each judge's line, then its texts (label, text)."""

    heading: str
    judgments: list[tuple[str, str]]
    texts: list[tuple[str, str]]


@dataclass
class ShownRollouts:
    """What `coevo show` prints of the rollouts: one plain line (how many of how many, or why
    none), then the rollouts picked."""

    summary: str
    rollouts: list[ShownRollout] = field(default_factory=list)


def shown_rollouts(store, stages: list[tuple[str, int]], *, stage: str | None, round_: int | None,
                   condition: str | None, limit: int) -> ShownRollouts:
    """The rollouts that pass the filters, the first `limit` of them."""
    if not stages:
        return ShownRollouts("no rollouts in this run yet")
    from coevo.rundir.store import stage_round

    every = store.rollout_rows(stage)
    for row in every:  # a training stage saves its rollouts without a round; its name has it
        row["round"] = stage_round(row["stage"], row["round"])
    rows = [row for row in every if (round_ is None or row["round"] == round_)
            and (condition is None or row["rollout"].condition == condition)]
    picked = ", ".join(f"{name} {value}" for name, value in
                       (("stage", stage), ("round", round_), ("condition", condition)) if value is not None)
    if not rows:
        rounds = sorted({row["round"] for row in every if row["round"] is not None}
                        | {r for name, _ in stages if (r := stage_round(name, None)) is not None})
        return ShownRollouts(f"no rollouts with {picked}; stages: {', '.join(name for name, _ in stages)}; "
                             f"rounds: {', '.join(map(str, rounds)) or 'none logged'}")
    summary = (f"{min(limit, len(rows))} of {len(rows)} rollouts" + (f" ({picked})" if picked else "")
               + (" (--limit N shows more)" if limit < len(rows) else "")
               + "; stages: " + ", ".join(f"{name} ({n})" for name, n in stages))
    return ShownRollouts(summary, [_shown(row) for row in rows[:limit]])


def _shown(row: dict[str, Any]) -> ShownRollout:
    rollout = row["rollout"]
    heading = " · ".join(part for part in (
        f"round {row['round']}" if row["round"] is not None else "",
        f"stage {row['stage']}", f"sample {rollout.sample_id}", f"condition {rollout.condition}") if part)
    texts = [(label, text) for label, text in (("x (instruction)", rollout.x), ("y0 (first answer)", rollout.y0),
                                               ("critique", rollout.c), ("y1 (revision)", rollout.y1)) if text]
    return ShownRollout(heading, [(judge, judgment_line(j)) for judge, j in rollout.judgments.items()], texts)


def judgment_line(judgment) -> str:
    """`7 (reward 7; critique_quality 6, quality_gain 6)`, or `invalid: why`."""
    def number(value: float) -> str:
        return f"{round(value, 3):g}"

    if not judgment.valid or judgment.score is None:
        return f"invalid: {judgment.error or 'unreadable answer'}"
    parts = [f"reward {number(judgment.reward)}" if judgment.reward is not None else "",
             ", ".join(f"{name} {number(value)}" for name, value in judgment.scores.items())]
    parts = [part for part in parts if part]
    return number(judgment.score) + (f" ({'; '.join(parts)})" if parts else "")


@dataclass
class SkillHistory:
    """A DecoEvo run's skill versions: one line each, then each diff under its heading."""

    lines: list[str]
    diffs: list[tuple[str, str]]


def skill_history(store) -> SkillHistory:
    """The run's skill versions (none yet: empty); a ConfigError for a run of another algorithm."""
    from coevo.algorithms.decoevo.skills import versions

    records = versions(store)
    algorithm = store.get_meta("algorithm")
    if not records and algorithm not in (None, "decoevo"):
        from coevo.core.strict import ConfigError

        raise ConfigError(f"{store.run_dir} is a {algorithm} run: skill versions come from `algorithm: decoevo` "
                          "runs; drop --skills to see its rollouts")
    # One line per version: long reasons wrap instead of squeezing a table.
    lines = [_version_line(r) for r in records]
    diffs = [(f"{r.method} seed{r.seed} {r.name} v{r.parent} -> v{r.version} ({r.decision})", r.diff)
             for r in records if r.diff]
    return SkillHistory(lines, diffs)


def _version_line(r) -> str:
    parent = "" if r.parent is None else f" <- v{r.parent}"
    return f"{r.method} seed{r.seed} {r.name} v{r.version}{parent} (step {r.step}) {r.decision.upper()}: {r.why}"


# ─── coevo runs ─────────────────────────────────────────────────────────────────────


def run_rows(infos) -> list[dict[str, Any]]:
    """One table row per run of `coevo runs`."""
    from coevo.view.runinfo import format_duration

    rows = []
    for info in infos:
        status, _, why = info.status.partition(": ")  # "unreadable: <why>"
        rows.append({"run": info.run, "algorithm": info.algorithm, "status": status,
                     "started": info.started or "?", "duration": format_duration(info.duration_s),
                     "rollouts": info.rollouts, "headline metrics": headline_text(info),
                     "warnings": ", ".join(mark.label for mark in info.marks) or "-",
                     "error": info.error or why})  # last: long, and most rows have none
    return rows


def estimate_rows(infos) -> list[dict[str, Any]]:
    """One row per run of `coevo runs --estimates`: each total estimated → counted."""
    from coevo.plan.estimate_check import TOTALS, ratio_text, run_comparison

    rows = []
    for info in infos:
        found = run_comparison(info.path) if not info.status.startswith("unreadable") else None
        row: dict[str, Any] = {"run": info.run, "algorithm": info.algorithm, "status": info.status.split(": ")[0]}
        for key, _ in TOTALS:
            row[key.replace("_", " ")] = ratio_text(found[key]) if found else "-"
        if found is None:  # an older run (kept none), another algorithm, or no cost counted yet
            row["calls"] = "no estimate kept" if info.status.startswith("finished") else "not finished"
        rows.append(row)
    return rows


def resolve_runs(names: list[Path], runs_root: Path) -> list[tuple[str, Path]]:
    """(label, run folder) of each name, repeats dropped: a run folder by its path, else a run
    under `runs_root` by the name `coevo runs` lists (its path there) or its `coevo view` id."""
    from coevo.view.runinfo import find_runs
    from coevo.rundir.store import STORE_FILE
    from coevo.view.context import RunIndex

    listed: dict[str, Path] | None = None
    chosen: dict[str, Path] = {}
    for name in names:
        if (name / STORE_FILE).is_file():
            chosen.setdefault(str(name), name)
            continue
        if listed is None:  # looked up once, and only when a name is not a run folder
            listed = {}
            if runs_root.is_dir():
                listed = {ref.id: ref.path for ref in RunIndex([runs_root]).runs()}
                listed.update({run_dir.relative_to(runs_root).as_posix(): run_dir
                               for run_dir in find_runs(runs_root)})
        key = name.as_posix()
        if key not in listed:
            raise FileNotFoundError(f"no run {key!r}: not a run folder (no {STORE_FILE}) and not a run `coevo runs` "
                                    f"lists under {runs_root}/")
        chosen.setdefault(key, listed[key])
    return list(chosen.items())


@dataclass
class ConsoleTable:
    """A table of `coevo runs --compare`: its columns, rows (dicts by column) and title."""

    columns: list[str]
    rows: list[dict[str, Any]]
    title: str


def comparison_blocks(comparison, all_settings: bool) -> list[str | ConsoleTable]:
    """`coevo runs --compare` in print order: plain lines and tables (the compare page's two)."""
    labels = [run.label for run in comparison.runs]
    blocks: list[str | ConsoleTable] = [f"{run.label}: {run.algorithm} run in {run.path}" for run in comparison.runs]
    differing = comparison.differing
    rows = [{"setting": ("≠ " if row.differs and all_settings else "") + row.key,
             **{label: "(not set)" if v is None else v for label, v in zip(labels, row.values)}}
            for row in (comparison.config if all_settings else differing)]
    title = f"config: {len(differing)} of {len(comparison.config)} settings differ"
    if rows:
        blocks.append(ConsoleTable(["setting", *labels], rows, title + (" (≠)" if all_settings else "")))
    else:
        blocks.append(f"{title}: the runs share one config")
    metrics = [{"metric": row.name, "stage": row.stage,
                **{label: cell.text if cell else "—" for label, cell in zip(labels, row.cells)}}
               for row in comparison.metrics]
    if metrics:
        blocks.append(ConsoleTable(["metric", "stage", *labels], metrics,
                                   "last value of each metric, 95% interval and n where known"))
    else:
        blocks.append("no metric logged by two or more of these runs")
    if comparison.curves:
        blocks.append(f"{len(comparison.curves)} metrics were logged over rounds in two or more of the runs: "
                      "`coevo view` draws them overlaid (tick the runs, then Compare selected)")
    return blocks
