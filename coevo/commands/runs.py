"""`coevo runs`, `coevo show`, `coevo view` and `coevo report`: run folders listed, compared,
printed, served and exported. The text comes from coevo/view/runs_display.py; it is printed here."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from coevo.commands.console import (heading, out, print_plain, print_rows, print_run_warnings, print_table,
                                    print_warnings_of)
from coevo.commands.errors import require_run

#: Where run folders go when no folder is named: quickstart's --out, `coevo runs`, `coevo view`.
DEFAULT_RUNS = Path("runs")


def list_runs(paths: list[Path] | None, *, compare: bool, all_settings: bool, as_json: bool,
              estimates: bool) -> None:
    """`coevo runs`: the runs under a folder as a table (or JSON, or their estimates), or
    with `compare` the runs named side by side."""
    from coevo.view.runinfo import runs_under
    from coevo.view.runs_display import estimate_rows, run_rows

    if compare:
        compare_runs(paths or [], all_settings=all_settings, as_json=as_json)
        return
    root = _runs_root(paths, all_settings)
    infos = runs_under(root)
    if as_json:
        for info in infos:
            print(json.dumps(info.model_dump(), ensure_ascii=False))
    elif not infos:
        out.print(f"no run folders under {root} (start one: `coevo quickstart` or `coevo run CONFIG --out DIR`)",
                  highlight=False)
    elif estimates:
        print_rows(estimate_rows(infos), title=f"runs under {root}: estimated → counted (counted / estimated)")
    else:
        print_rows(run_rows(infos), title=f"runs under {root}")


def _runs_root(paths: list[Path] | None, all_settings: bool) -> Path:
    """The one folder `coevo runs` lists (runs/ when none is given); a mistyped one is refused."""
    if paths and len(paths) > 1:
        raise typer.BadParameter("give one folder of runs (or compare runs: `coevo runs --compare RUN RUN ...`)",
                                 param_hint="RUNS_DIR")
    if all_settings:
        raise typer.BadParameter("--all shows every setting of compared runs: add --compare RUN RUN ...",
                                 param_hint="--all")
    root = paths[0] if paths else DEFAULT_RUNS
    if paths and not root.is_dir():  # a typo'd folder is an error; no runs/ yet is not
        raise FileNotFoundError(f"{root} is not a folder; give a folder of run folders or a run folder "
                                "(`coevo runs` alone lists runs/)")
    return root


def compare_runs(names: list[Path], all_settings: bool, as_json: bool) -> None:
    """`coevo runs --compare`: the compare page's two tables (coevo.view.comparison)."""
    from coevo.view.runs_display import ConsoleTable, comparison_blocks, resolve_runs
    from coevo.view.comparison import compare_runs as compared

    chosen = resolve_runs(names, DEFAULT_RUNS)
    if len(chosen) < 2:
        raise typer.BadParameter("give at least two runs to compare (run folders, or names `coevo runs` lists)",
                                 param_hint="RUN")
    comparison = compared(chosen)
    if as_json:
        print(json.dumps(comparison.model_dump(), ensure_ascii=False))
        return
    for block in comparison_blocks(comparison, all_settings):
        if isinstance(block, ConsoleTable):
            print_table({"columns": block.columns, "rows": block.rows}, title=block.title)
        else:
            out.print(block, highlight=False, markup=False)


def show_run(run_dir: Path, *, stage: str | None, round_: int | None, condition: str | None, limit: int,
         config: bool, skills: bool) -> None:
    """`coevo show`: the run's config, its skill history, or its header, warnings and rollouts."""
    from coevo.rundir.store import RunStore

    require_run(run_dir)
    store = RunStore(run_dir, read_only=True)  # a look, never a write: the run may be going on
    try:
        if config:
            out.print_json(data=store.get_meta("config"))
        elif skills:
            print_skills(store)
        else:
            stages = store.rollout_stages()
            if stage is not None and stage not in dict(stages):
                raise typer.BadParameter(f"no stage {stage!r} in {run_dir}; its stages: " + (", ".join(
                    f"{name} ({n} rollouts)" for name, n in stages) or "none yet"), param_hint="--stage")
            print_run_header(run_dir)
            print_run_warnings(store)
            print_rollouts(store, stages, stage=stage, round_=round_, condition=condition, limit=limit)
    finally:
        store.close()


def print_run_header(run_dir: Path) -> None:
    """Algorithm, status (with the error and how to go on), start, duration, results."""
    from coevo.view.runs_display import run_header_lines

    for line in run_header_lines(run_dir):
        out.print(line, highlight=False, markup=True)  # runs_display escapes the run's own text


def print_rollouts(store, stages: list[tuple[str, int]], **filters) -> None:
    """The rollouts that pass the filters (`shown_rollouts`'s), each under a heading."""
    from coevo.view.runs_display import shown_rollouts

    shown = shown_rollouts(store, stages, **filters)
    out.print(shown.summary, highlight=False, markup=False)
    for rollout in shown.rollouts:
        heading(rollout.heading)
        for judge, line in rollout.judgments:
            out.print(f"[bold]{escape(judge)}[/]: {escape(line)}", highlight=False, markup=True)
        for label, text in rollout.texts:
            out.print(f"[bold]{escape(label)}[/]: ", end="", markup=True)
            out.print(text, markup=False, highlight=False)


def print_skills(store) -> None:
    """A DecoEvo run's skill versions, a line each, then each version's diff under its heading."""
    from coevo.view.runs_display import skill_history

    history = skill_history(store)
    if not history.lines:
        out.print("no skill versions in this run yet")
        return
    out.rule("skill history")
    print_plain(history.lines)
    for title, diff in history.diffs:
        heading(title)
        out.print(diff, markup=False, highlight=False)


def serve_runs(run_or_runs_dir: Path, *, host: str, port: int, conditions: list[str] | None = None,
               against: Path | None = None, prompts: int | None = None, allow_hosts: list[str] | None = None) -> None:
    """`coevo view`: serve the runs in a local web page until Ctrl-C; `conditions`, `against`
    and `prompts` set the conditions its Annotate page compares (checked first); `allow_hosts`:
    Host names it answers besides its address and the loopback names (coevo.view.security)."""
    from coevo.view.runinfo import find_runs
    from coevo.view.annotate_conditions import PAPER_PROMPTS, comparison_spec
    from coevo.view.security import check_allow_host, exposure_warning

    try:
        allow_hosts = [check_allow_host(name) for name in allow_hosts or []]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allow-host") from None

    if not run_or_runs_dir.is_dir():
        raise FileNotFoundError(f"{run_or_runs_dir} is not a folder; give a run folder or a folder of run folders "
                                "(see `coevo runs`)")
    if not find_runs(run_or_runs_dir):
        raise FileNotFoundError(f"no run folders in {run_or_runs_dir} (a run folder holds run.sqlite, here or up to two "
                                "levels down); start one with `coevo run CONFIG --out DIR`, or point at another folder")
    spec = None
    if conditions or against is not None or prompts is not None:
        spec, found = comparison_spec(run_or_runs_dir, conditions or [], against, prompts or PAPER_PROMPTS)
        sizes = sorted({len(pairs) for _, pairs in found.values()})
        out.print(f"Annotate: {len(found)} comparison{'s' if len(found) != 1 else ''} of conditions, on the same "
                  f"{sizes[-1] if sizes else 0} prompts (`coevo eval annotations` names which is which)",
                  highlight=False)
    from coevo.view.app import serve

    warning = exposure_warning(host)
    if warning:
        out.print(warning, highlight=False, markup=False)
    serve([run_or_runs_dir], host=host, port=port, comparisons=spec, allow_hosts=allow_hosts,
          announce=lambda url: out.print(f"coevo view: {url}  (serving {run_or_runs_dir}; Ctrl-C stops it)",
                                         highlight=False))


def write_report(run_dir: Path) -> None:
    """`coevo report`: write the run's report.html, then say where and what its warnings are."""
    from coevo.view.report import build_report

    require_run(run_dir)
    out.print(f"wrote {build_report(run_dir)}")
    print_warnings_of(run_dir)
