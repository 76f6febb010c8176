"""`coevo quickstart`, `coevo plan` and `coevo run`: an experiment planned, run or resumed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer
from rich.markup import escape

from coevo.commands.console import err, heading, out, print_plain, print_table
from coevo.commands.errors import file_in_the_way, interrupted


def run_and_report_quickstart(out_dir: Path, *, prompts: int, model: str, judge: str, fresh: bool) -> None:
    """Run (or resume) the quickstart, then tell its story: what ran, what changed (with n and
    intervals), what to trust, what it showed and did not, and what to run next."""
    from coevo.run.quickstart import GRPO_STEPS, HELD_OUT, run_quickstart

    if prompts < HELD_OUT + GRPO_STEPS:
        raise typer.BadParameter(f"--prompts must be at least {HELD_OUT + GRPO_STEPS} ({HELD_OUT} held out, "
                                 f"{GRPO_STEPS} or more to train on), got {prompts}", param_hint="--prompts")
    if (blocking := file_in_the_way(out_dir)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give --out a folder for the run",
                                 param_hint="--out")
    try:
        summary = run_quickstart(out_dir, prompts=prompts, model=model, judge=judge, fresh=fresh)
    except KeyboardInterrupt as exc:
        interrupted(exc)
    print_story(out_dir, summary, title="TAIScore quickstart: what one round of co-evolution did")
    out.print(f"report: {summary['report']}", markup=False, highlight=False)


def print_story(run_dir: Path, summary: dict, *, title: str) -> None:
    """The run's story (coevo/view/story.py), the run page's card as text, with the quickstart's
    closing words where the run is one."""
    from coevo.run.quickstart import closing_lines
    from coevo.rundir.store import RunStore
    from coevo.view.story import run_story

    store = RunStore(run_dir, read_only=True)
    try:
        story = run_story(store, summary)
        quickstart = bool(store.get_meta("quickstart"))
    finally:
        store.close()
    heading(title)
    print_plain(story.lines())
    if quickstart:
        print_plain(closing_lines(story))


def print_plan(config: Path, overrides: list[str], *, as_json: bool, calibrate: bool,
               calibration_file: Path | None, allow_large: bool = False, hardware: str | None = None) -> None:
    """Print the plan of CONFIG (text, or one JSON object), measuring this machine first with
    `calibrate`, or with another machine's seconds from `calibration_file`, or with a
    `hardware` profile's (coevo/plan/hardware.py)."""
    from coevo.plan.calibration import load_calibration, read_calibration
    from coevo.plan.planning import plan_lines
    from coevo.run.runner import plan_experiment

    if sum([calibrate, calibration_file is not None, hardware is not None]) > 1:
        raise typer.BadParameter("--calibrate measures this machine, --calibration reads another's, --hardware "
                                 "times a hardware profile: pass one")
    try:
        named = None if calibration_file is None else read_calibration(calibration_file)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--calibration") from None
    made = plan_experiment(config, overrides, calibration=named, allow_large=allow_large)
    if hardware is not None:
        named = _hardware_rates(hardware, made, config, overrides)
        made = plan_experiment(config, overrides, calibration=named, allow_large=allow_large)
    if calibrate:
        _calibrate_for(made, config, overrides)
    if named is None and (calibration := load_calibration()) is not None:
        made = plan_experiment(config, overrides, calibration=calibration, allow_large=allow_large)
    if as_json:
        print(json.dumps(made.model_dump(mode="json")))
        return
    print_plain(plan_lines(made))


def _hardware_rates(hardware: str, made, config: Path, overrides: list[str]):
    """The hardware profile's rates for the plan `made` (its roles' models and options)."""
    from coevo.settings.config import apply_overrides, read_yaml
    from coevo.plan.hardware import HardwareError, hardware_calibration
    from coevo.run.runner import resolve_config

    _, resolved = resolve_config(apply_overrides(read_yaml(config), list(overrides)), str(config))
    options = {name: resolved.roles.options_for(name) for name in resolved.roles.role_names()}
    try:
        return hardware_calibration(hardware, made, options)
    except HardwareError as exc:
        raise typer.BadParameter(str(exc), param_hint="--hardware") from None


def _calibrate_for(made, config: Path, overrides: list[str]) -> None:
    """Measure the engines and the trained models of the plan `made` on this machine (kept
    under $COEVO_HOME), saying on stderr what is being measured."""
    from coevo.plan.calibration import calibrate as measure
    from coevo.plan.calibration import targets
    from coevo.settings.config import apply_overrides, read_yaml
    from coevo.run.runner import resolve_config

    _, resolved = resolve_config(apply_overrides(read_yaml(config), list(overrides)), str(config))
    engines, trained = targets(made, resolved.roles)
    measure(engines, trained, progress=lambda what: err.print(f"calibrating {what} ...", highlight=False))


def run_config(config: Path, out_dir: Path, *, resume: bool, fresh: bool, overrides: list[str],
               unsafe_exec: bool, allow_large: bool = False) -> None:
    """Run (or resume) CONFIG into `out_dir`, then print its table, summary and report paths."""
    from coevo.run.runner import run_experiment
    from coevo.validators.sandbox import UNSAFE_ENV_VAR

    if fresh and resume:
        raise typer.BadParameter("--fresh starts over and --resume continues: pass one of them")
    if (blocking := file_in_the_way(out_dir)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give --out a folder for the run "
                                 "(a new one, or a run folder to --resume)", param_hint="--out")
    if unsafe_exec:
        os.environ[UNSAFE_ENV_VAR] = "1"  # read where the sandbox is built (and by every rank of a launch)

    try:
        summary = run_experiment(config, out_dir, resume=resume, overrides=overrides, fresh=fresh,
                                 allow_large=allow_large)
    except KeyboardInterrupt as exc:  # here, not in main(): typer turns it into a silent exit 130
        interrupted(exc)
    if not summary:
        return  # a rank other than 0 of a many-process launch: rank 0 reports
    if "table" in summary:
        print_table(summary["table"], title=summary.get("algorithm", "results"))
    for warning in summary.get("warnings", []):  # what the run page will say, said here first
        out.print(f"[yellow]warning ({escape(warning['kind'])}):[/] {escape(warning['text'])}", markup=True)
    out.print(f"summary: {out_dir / 'summary.json'}\nreport: {summary['report']}")
