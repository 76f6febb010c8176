"""The `coevo` command line (typer + rich). Each command is a thin shell over the library.

One vocabulary across commands (tests/test_cli_commands.py holds every command to it):
`--out` is the run folder or output file; `--fresh` starts over and `--resume` continues;
`--json` prints JSON; models are specs (`coevo models`) under `--model` (the generating
roles), `--actor` / `--critic` (one of them) and `--judge`; a run folder read is an
argument (RUN, RUNS_DIR); booleans are plain flags; judge kinds are spelled as in configs.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import NoReturn, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

# Plain (click-style) help: flags read as flags (`--fresh`, with no `<bool>` after it), and
# help piped into a file or grep is text, not boxes. Subcommands inherit `-h` from the root.
_HELP = {"rich_markup_mode": None, "no_args_is_help": True}
app = typer.Typer(
    help="coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo).",
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    **_HELP,
)
eval_app = typer.Typer(help="Judge agreement, human labels, skill transfer.\n\nAgreement between two judges' "
                       "scores (or a judge's and human labels), the labels made in `coevo view`, and a DecoEvo "
                       "solver skill on other data.", **_HELP)
validate_app = typer.Typer(help="The RLAC validators by hand: code tests, facts.\n\nRun a critic's test case "
                           "on code, or check a claimed wrong fact against a knowledge corpus.", **_HELP)
audit_app = typer.Typer(help="Check a judge for gaming, position bias and noise.\n\nProbe a judge with "
                        "content-free answers, padding, injected instructions, both orders and two seeds.", **_HELP)
app.add_typer(eval_app, name="eval")
app.add_typer(validate_app, name="validate")
app.add_typer(audit_app, name="audit")
out = Console(soft_wrap=True)  # long paths stay on one line (copyable, greppable)
err = Console(stderr=True, soft_wrap=True)


def _print_version(value: bool) -> None:
    if value:
        from coevo.version import __version__

        out.print(f"coevo {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Also show library warnings and TRL's "
                                 "training logs on the terminal (they always go to RUN/coevo.log)."),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print coevo's version and exit."),
) -> None:
    """coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo)."""
    if verbose:
        from coevo.logs import VERBOSE_ENV

        # Read by coevo/logs.py (library warnings and TRL's logs always go to RUN/coevo.log;
        # verbose, to the terminal too); an environment variable, so worker processes see it.
        os.environ[VERBOSE_ENV] = "1"


DEFAULT_RUNS = Path("runs")


def _user_errors() -> tuple[type[BaseException], ...]:
    from coevo.config import ConfigError
    from coevo.llm.base import ModelError
    from coevo.prompts import TemplateError
    from coevo.tasks.loaders import DataError
    from coevo.validators.sandbox import SandboxUnavailable

    from coevo.runner import DiskFull
    from coevo.store import StoreError
    from coevo.train.common import TrainError

    return (ConfigError, ModelError, TemplateError, DataError, FileNotFoundError, SandboxUnavailable, StoreError,
            DiskFull, TrainError)


def main() -> None:
    """Entry point: bad input ends in one clear line and exit code 2, never a traceback."""
    click = _click_exceptions()
    try:
        code = app(standalone_mode=False)
    except click.NoArgsIsHelpError as exc:  # `coevo eval`: its help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # a bad option, a missing argument, a value out of range
        command = exc.ctx.command_path if exc.ctx is not None else "coevo"
        err.print(f"[bold red]error:[/] {escape(exc.format_message())} (see `{command} --help`)",
                  soft_wrap=True, highlight=False)
        sys.exit(2)
    except click.ClickException as exc:  # a missing or unreadable file given as an option
        err.print(f"[bold red]error:[/] {escape(exc.format_message())}", soft_wrap=True, highlight=False)
        sys.exit(exc.exit_code)
    except _user_errors() as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def _click_exceptions():
    """Click's exception classes as typer raises them (recent typer vendors its own click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # older typer: click itself
        import click.exceptions as exceptions
    return exceptions


def _interrupted(cause: BaseException) -> NoReturn:
    """Ctrl-C (exit 130) or SIGTERM (exit 143): say what was kept and how to go on."""
    from coevo.runner import Terminated

    stopped = isinstance(cause, Terminated)
    err.print(f"[yellow]{'stopped (SIGTERM)' if stopped else 'interrupted'}[/]: the run folder keeps "
              f"everything finished so far; continue with:\n  {escape(resume_command(sys.argv))}",
              soft_wrap=True, highlight=False)
    sys.exit(143 if stopped else 130)


def resume_command(argv: list[str]) -> str:
    """The command line that continues the interrupted one: the same, with --resume (and
    without --fresh, which would delete what was kept). quickstart resumes by itself."""
    import shlex

    args = [arg for arg in argv[1:] if arg != "--fresh"]
    command = next((arg for arg in args if not arg.startswith("-")), None)  # after root flags such as -v
    if command == "run" and "--resume" not in args:
        args.append("--resume")
    return shlex.join(["coevo", *args])


@app.command()
def quickstart(
    out_dir: Path = typer.Option(DEFAULT_RUNS / "quickstart", "--out", metavar="DIR", help="Run folder."),
    prompts: int = typer.Option(6, metavar="N", help="How many bundled writing prompts to use (2 are held out)."),
    model: str = typer.Option("smollm2", metavar="SPEC",
                              help="Model of the actor and the critic (trainable: smollm2 or hf:PATH)."),
    judge: str = typer.Option("smollm2", metavar="SPEC", help="Model of the frozen judge."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete an earlier quickstart in --out and start over."),
) -> None:
    """TAIScore co-evolution at its smallest (one round, ~20 min).

    The critic learns by GRPO from the TAIScore judge's rewards on the actor's revisions,
    then the actor learns by DPO from the revisions a critique-blind judge preferred. Prints
    the held-out metrics before and after the round, what the judge audit found, and the
    report's path. About 20 minutes on a 2-core CPU; run it again and it resumes where it
    stopped (`--fresh` starts over).
    Model specs: see `coevo models`. Bigger runs: `coevo run examples/taiscore_tiny.yaml --out DIR`.
    """
    from coevo.quickstart import run_quickstart

    if prompts < 4:
        raise typer.BadParameter("--prompts must be at least 4 (2 held out, 2 or more to train on)")
    if (blocking := _file_in_the_way(out_dir)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give --out a folder for the run",
                                 param_hint="--out")
    try:
        summary = run_quickstart(out_dir, prompts=prompts, model=model, judge=judge, fresh=fresh)
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    _print_table(summary["table"], title="TAIScore quickstart: held-out metrics before and after one round")
    _print_warnings_of(out_dir)  # what the judge audit found, in plain words: can these numbers be trusted?
    out.print(f"report: {summary['report']}")


@app.command()
def plan(
    config: Path = typer.Argument(..., metavar="CONFIG", help="YAML config (see examples/)."),
    set_: list[str] = typer.Option([], "--set", metavar="KEY=VALUE",
                                   help="Override a config key, e.g. --set data.source=my.jsonl (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: data (pools, critic_queries, "
                                 "held_out: sample ids), stages, roles, departures, notes, estimate."),
    calibrate: bool = typer.Option(False, "--calibrate", help="First measure how fast this machine runs the "
                                   "config's models (tokens/s per engine, a training step per trained model; "
                                   "a minute or two), kept under $COEVO_HOME for every later plan and run."),
    calibration_file: Path = typer.Option(None, "--calibration", metavar="FILE", help="Seconds from a calibration "
                                          "measured elsewhere (a GPU node's: benchmarks/results/"
                                          "gpu_round_h200_calibration.json) instead of this machine's."),
) -> None:
    """What a run of CONFIG will do and cost; loads no model.

    The data after filtering and its splits (pools, shards, partitions, held-out prompts)
    with their sizes, the stages in order, each role's model and engine, every setting
    where the config departs from its paper (none for examples/*_full.yaml), and the
    estimate: model calls and tokens per stage and role, training steps, and seconds (from
    this machine's calibration, `--calibrate`) and dollars (from a role's `price` option).
    Data rows with a `quality` column (1-5) are pooled by it; without one the plan says how
    many grading calls the run makes first.
    """
    from coevo.calibration import calibrate as measure
    from coevo.calibration import load_calibration, read_calibration, targets
    from coevo.planning import plan_lines
    from coevo.runner import plan_experiment

    if calibrate and calibration_file is not None:
        raise typer.BadParameter("--calibrate measures this machine and --calibration reads another's: pass one")
    try:
        named = None if calibration_file is None else read_calibration(calibration_file)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--calibration") from None
    made = plan_experiment(config, set_, calibration=named)
    if calibrate:
        from coevo.config import apply_overrides, read_yaml
        from coevo.runner import resolve_config

        _, resolved = resolve_config(apply_overrides(read_yaml(config), list(set_)), str(config))
        engines, trained = targets(made, resolved.roles)
        measure(engines, trained, progress=lambda what: err.print(f"calibrating {what} ...", highlight=False))
    if named is None and (calibration := load_calibration()) is not None:
        made = plan_experiment(config, set_, calibration=calibration)
    if as_json:
        print(json.dumps(made.model_dump(mode="json")))
        return
    for line in plan_lines(made):
        out.print(line, highlight=False, markup=False)


@app.command()
def run(
    config: Path = typer.Argument(..., metavar="CONFIG", help="YAML config (see examples/)."),
    out_dir: Path = typer.Option(..., "--out", metavar="DIR", help="Run folder (created)."),
    resume: bool = typer.Option(False, "--resume", help="Continue a killed, failed or finished run in --out."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the run in --out first and start over "
                               "(only ever a coevo run folder)."),
    set_: list[str] = typer.Option([], "--set", metavar="KEY=VALUE",
                                   help="Override a config key, e.g. --set rounds=1 (repeatable)."),
    unsafe_exec: bool = typer.Option(False, "--unsafe-exec", help="Allow model-written code (RLAC on code) to run "
                                     "WITHOUT isolation where none works; a config's code.unsafe_exec alone cannot."),
) -> None:
    """Run an experiment config (see examples/).

    The config's `algorithm` is refine, controls, taiscore, rlac or decoevo (examples/ has
    one config of each). Everything goes into the run folder --out: run.sqlite (the store),
    summary.json, report.html and coevo.log. Stopped (Ctrl-C, a crash, a killed job), it
    continues with the same command and --resume.
    """
    from coevo.runner import run_experiment
    from coevo.validators.sandbox import UNSAFE_ENV_VAR

    if fresh and resume:
        raise typer.BadParameter("--fresh starts over and --resume continues: pass one of them")
    if (blocking := _file_in_the_way(out_dir)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give --out a folder for the run "
                                 "(a new one, or a run folder to --resume)", param_hint="--out")
    if unsafe_exec:
        os.environ[UNSAFE_ENV_VAR] = "1"  # read where the sandbox is built (and by every rank of a launch)

    try:
        summary = run_experiment(config, out_dir, resume=resume, overrides=set_, fresh=fresh)
    except KeyboardInterrupt as exc:  # here, not in main(): typer turns it into a silent exit 130
        _interrupted(exc)
    if not summary:
        return  # a rank other than 0 of a many-process launch: rank 0 reports
    if "table" in summary:
        _print_table(summary["table"], title=summary.get("algorithm", "results"))
    out.print(f"summary: {out_dir / 'summary.json'}\nreport: {summary['report']}")


@app.command()
def refine(
    prompt: str = typer.Option(..., metavar="TEXT", help="The instruction x."),
    response: Optional[str] = typer.Option(None, metavar="TEXT",
                                           help="An initial response y0 (else the actor writes one)."),
    model: str = typer.Option("smollm2", metavar="SPEC", help="Model of the actor and the critic."),
    actor: Optional[str] = typer.Option(None, metavar="SPEC", help="Model of the actor (default: --model)."),
    critic: Optional[str] = typer.Option(None, metavar="SPEC", help="Model of the critic (default: --model)."),
    judge: str = typer.Option("smollm2", metavar="SPEC", help="Model of the TAIScore judge."),
    max_tokens: Optional[int] = typer.Option(
        None, min=1, metavar="N", help="Cap y0, the critique and y1 at N tokens each (default: the papers' "
        "256 for y0 and the critique, 2048 for y1; a small model can fill all 2048 with repetition)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """One critique-guided refinement: y0, critique, y1, TAIScore.

    The actor answers the instruction (or --response is y0), the critic critiques y0, the
    actor revises it into y1, and the TAIScore judge scores the refinement. Model specs:
    see `coevo models`.
    """
    if not prompt.strip():  # the actor would answer nothing for minutes
        raise typer.BadParameter("the instruction is empty: give the text to answer, e.g. "
                                 "--prompt \"Write a two-line poem about rain.\"", param_hint="--prompt")
    if response is not None and not response.strip():  # a blank y0 would be critiqued and "revised"
        raise typer.BadParameter("the response is empty: give the y0 to refine, or leave --response out for the "
                                 "actor to write one", param_hint="--response")

    from coevo.algorithms.refine import refine_one, texts_capped
    from coevo.role_specs import RefinementRoleSpecs

    roles = texts_capped(RefinementRoleSpecs(), max_tokens) if max_tokens else None
    result = refine_one(prompt, response, actor=actor or model, critic=critic or model, judge=judge,
                        roles=roles)
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key in ("y0", "critique", "y1"):
        out.rule(key)
        out.print(result[key], markup=False)
    out.rule("taiscore")
    out.print(result["taiscore"])


@app.command()
def judge(
    kind: str = typer.Argument(..., metavar="KIND", help="The judge: taiscore, critique_quality, adherence, "
                               "outcome_gain or pairwise, spelled as in configs (a hyphen works too)."),
    input: Path = typer.Option(..., "--input", metavar="FILE", help="JSONL of rollouts: x (or prompt), y0, c, y1."),
    out_file: Path = typer.Option(..., "--out", metavar="FILE", help="JSONL written with a 'judgment' field per line."),
    judge_model: str = typer.Option("smollm2", "--judge", metavar="SPEC", help="Model of the judge."),
    scoring: str = typer.Option("expected", metavar="expected|sampled",
                                help="expected: the probability-weighted mean over the score's tokens (where the "
                                "backend returns log-probabilities); sampled: the integer the judge wrote."),
) -> None:
    """Score a JSONL file of rollouts with one judge.

    Each output line gets `judgment`: `score` (null when unreadable), `valid`, `sampled` and
    `expected`, the diagnostics in `scores` / `reasons`, and for taiscore and critique_quality
    `reward`, the GRPO training reward (0.0 for an unreadable answer or an empty critique).
    The gold_rubric judge needs rubrics: it runs inside `coevo run`.
    """
    from coevo.judging import judge_file, judge_name

    kind = judge_name(kind)  # an unknown judge is named before any file is read
    if scoring not in ("expected", "sampled"):
        raise typer.BadParameter(f"--scoring must be expected or sampled, not {scoring!r}")
    # Refused now, not when the judgments are written after minutes of judging.
    if out_file.is_dir():
        raise typer.BadParameter(f"{out_file} is a folder: give the JSONL file to write", param_hint="--out")
    if (blocking := _file_in_the_way(out_file.parent)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give a file in a folder", param_hint="--out")
    counts = judge_file(kind, input, out_file, judge_model, scoring=scoring)
    out.print(f"wrote {out_file}: {counts['valid']} valid, {counts['invalid']} invalid judgments")


@eval_app.command("agreement")
def eval_agreement(
    a: Path = typer.Option(..., "--a", metavar="FILE", help="JSONL of {group, candidate, score} from judge A."),
    b: Path = typer.Option(..., "--b", metavar="FILE", help="The same from judge B (or human labels)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Top-1 overlap and pairwise agreement between two judges.

    The measures of TAIScore's appendix D.1: per group, do the two judges' top-scored
    candidates overlap, and over candidate pairs, do they order them the same way (pairs
    either judge ties are left out). Pairwise agreement comes with its n, a Wilson 95%
    interval, the chance agreement of two independent raters with the same marginals and
    Cohen's kappa. Groups only one file holds are left out, counted and named
    (unmatched_a / unmatched_b); lines with an unreadable score are counted as invalid.
    """
    from coevo.eval.agreement import judge_agreement, left_out_lines, read_scores_jsonl, report_rows

    file_a, file_b = read_scores_jsonl(a), read_scores_jsonl(b)
    result = judge_agreement(file_a.scores, file_b.scores)
    report = {**result.model_dump(), "invalid_a": file_a.n_invalid, "invalid_b": file_b.n_invalid}
    if as_json:
        print(json.dumps(report))
        return
    _print_table({"columns": ["measure", "value", "95% interval", "n", "note"], "rows": report_rows(result)},
                 title="judge agreement")
    for line in left_out_lines(result, str(a), str(b)):
        out.print(line, highlight=False, markup=False)
    if file_a.n_invalid or file_b.n_invalid:
        out.print(f"unreadable scores left out: {file_a.n_invalid} in {a}, {file_b.n_invalid} in {b}",
                  highlight=False, markup=False)


@eval_app.command("annotations")
def eval_annotations(
    sources: list[Path] = typer.Argument(..., metavar="RUN|FILE", help="A run folder with labels made in "
                                         "`coevo view` (Annotate), or one JSONL file of labels per annotator "
                                         "(e.g. three human.jsonl) to merge by majority vote."),
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="Folder for human.jsonl, "
                                           "judge.jsonl and, with several annotators, majority.jsonl (a run "
                                           "needs it; files: optional). A run's export replaces the folder "
                                           "as a whole; a folder holding other files is refused."),
    stage: Optional[str] = typer.Option(None, "--stage", metavar="NAME", help="Only this stage's labels (default: every stage's)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Export human labels; merge several annotators'.

    From a RUN: writes DIR/human.jsonl (each label as scores: 1 for the preferred text, 0
    for the other, 0.5 each for a tie) and DIR/judge.jsonl (the judge that scored most of
    the labelled pairs; judge_NAME.jsonl for each when several did), the {group, candidate,
    score} lines `coevo eval agreement --a DIR/human.jsonl --b DIR/judge.jsonl` compares.

    Several annotators (one FILE each, or a run labelled under several names in the viewer)
    are merged as the TAIScore paper does: a pair's label is the one at least two of three
    chose; three different labels is "no majority" (counted, listed). Only pairs every
    annotator labelled are merged (the rest are counted). Prints the majority labels and
    Fleiss' kappa with its n and a bootstrap 95% CI over pairs; DIR/majority.jsonl holds
    each pair's votes, and DIR/human.jsonl becomes the majority labels.
    """
    from coevo.eval.annotators import vote_rows
    from coevo.view.annotate_labels import collect_labels, written_lines

    runs = [p for p in sources if p.is_dir()]
    if runs and len(sources) > 1:
        raise typer.BadParameter("give one run folder, or annotator files (one JSONL per annotator), not both "
                                 f"or several runs: {', '.join(map(str, sources))}")
    if runs and out_dir is None:
        raise typer.BadParameter("--out DIR is needed to export a run's labels (the folder for human.jsonl)")
    if not runs and stage is not None:
        raise typer.BadParameter("--stage picks a run's labels; annotator files are merged as they are")
    labels = collect_labels(sources, out_dir, stage)
    if as_json:
        print(json.dumps(labels.result))
        return
    if labels.merge is not None:
        _print_table({"columns": ["pair", *labels.merge.annotators, "majority"], "rows": vote_rows(labels.merge)},
                     title="majority vote")
    for line in written_lines(labels, out_dir):
        out.print(line, highlight=False, markup=False)


@eval_app.command("skill")
def eval_skill(
    skill: Path = typer.Option(..., "--skill", metavar="FILE",
                               help="A solver skill file (e.g. RUN/skills/decoevo/seed0/solver_v3.md)."),
    data: str = typer.Option(..., "--data", metavar="SOURCE",
                             help="bundled:NAME, a JSONL/Parquet file or a datasets folder, with gold rubrics."),
    model: str = typer.Option("smollm2", "--model", metavar="SPEC",
                              help="Model of the solver (and of the grader unless --judge)."),
    grader: Optional[str] = typer.Option(None, "--judge", metavar="SPEC",
                                         help="Model of the gold_rubric judge that grades the answers."),
    limit: Optional[int] = typer.Option(None, min=1, metavar="N", help="Use only the first N samples."),
    cache: Optional[Path] = typer.Option(None, "--cache", metavar="DIR",
                                         help="A run folder whose store caches the model calls."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """A DecoEvo solver skill on another dataset (transfer).

    Applies a final solver skill to other data with no updates, and scores the answers with
    the gold_rubric judge (0-1).
    """
    from coevo.algorithms.decoevo import evaluate_skill
    from coevo.algorithms.decoevo.skills import read_skill_file
    from coevo.llm.specs import load_model
    from coevo.store import RunStore
    from coevo.tasks.loaders import load_samples

    text = read_skill_file(skill)
    samples = load_samples(data, limit=limit)
    store = RunStore(cache) if cache else None
    solver = load_model(model, store=store)
    result = evaluate_skill(text, samples, solver, load_model(grader, store=store) if grader else None)
    result.update({"skill": str(skill), "data": data, "model": model})
    if as_json:
        print(json.dumps(result))
        return
    row = {k: result[k] for k in ("data", "n_samples", "n_valid", "n_invalid", "gold_mean")}
    _print_table({"columns": list(row), "rows": [row]}, title=f"solver skill {skill} (gold-rubric score, 0-1)")


@validate_app.command("code")
def validate_code(
    problem: str = typer.Option(..., metavar="ID", help="Problem id, e.g. HumanEval/12."),
    solution: Path = typer.Option(..., exists=True, dir_okay=False, readable=True, metavar="FILE",
                                  help="File with the candidate solution (code or a model answer)."),
    test: str | None = typer.Option(None, metavar="TEST", help="The critic's test: \"CALL: f(args)\", \"STDIN: "
                                    "input\" or a <testcase> answer. Without it, the problem's own tests run on "
                                    "the solution."),
    problems: str = typer.Option("humaneval", metavar="SOURCE",
                                 help="Where the problem lives: humaneval or a JSONL file."),
    timeout: float = typer.Option(5.0, min=0.1, max=3600, metavar="SECONDS",
                                  help="Wall-clock limit of each sandboxed run."),
    unsafe_exec: bool = typer.Option(False, "--unsafe-exec", help="Run WITHOUT isolation when none is available."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a critic's test case (or a problem's tests) on code.

    The critic's test runs on the reference solution and on the candidate, both sandboxed
    (RLAC); without --test, the problem's own tests run on the candidate.

    With --test, the verdict is caught (outputs differ, or the candidate crashes / times
    out), survived (outputs match) or invalid (the test fails on the reference). Without it,
    passed (every test ran and held: the harness's marker, never an exit code alone) or
    failed. Exit code 0 for every verdict.
    """
    from coevo.validators.by_hand import check_code
    from coevo.validators.code import parse_testcase

    parsed, why = parse_testcase(test) if test is not None else (None, "")
    if test is not None and parsed is None:
        raise typer.BadParameter(f"{why}; write the test as \"CALL: f(1, 2)\" or \"STDIN: input lines\"",
                                 param_hint="--test")
    _print_fields(check_code(problem, solution, test=test, problems=problems, timeout_s=timeout,
                             unsafe_exec=unsafe_exec), as_json)


@validate_app.command("fact")
def validate_fact(
    entity: str = typer.Option(..., metavar="NAME", help="Who the text is about, e.g. \"Albert Einstein\"."),
    sentence: str = typer.Option(..., metavar="TEXT", help="The biography sentence the critic named."),
    fact: str = typer.Option(..., metavar="TEXT", help="The critic's claimed wrong fact (error_fact)."),
    corpus: str = typer.Option("bundled:bios", metavar="SOURCE",
                               help="Knowledge source: bundled:bios or a JSONL of {title, text}."),
    judge: str = typer.Option("smollm2", metavar="SPEC", help="Model of the entailment judge."),
    mode: str = typer.Option("llm", metavar="llm|lexical|hybrid", help="Entailment by the judge model (llm), by "
                             "word overlap (lexical), or the judge gated by overlap (hybrid)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check a critic's claimed wrong fact against a knowledge corpus.

    First authenticity (is the fact in the sentence?), then verification against the
    corpus (BM25 passages and an entailment judge), as RLAC's fact validator does.
    """
    from coevo.validators.by_hand import check_fact

    if mode not in ("llm", "lexical", "hybrid"):
        raise typer.BadParameter(f"--mode must be llm, lexical or hybrid, got {mode!r}")
    _print_fields(check_fact(entity, sentence, fact, corpus=corpus, judge=judge, mode=mode), as_json)


def _print_fields(result: dict, as_json: bool) -> None:
    """A flat result: one JSON object, or a `key: value` line per field."""
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key, value in result.items():
        out.print(f"[bold]{key}[/]: {escape(str(value))}", soft_wrap=True, highlight=False)


@audit_app.command("judge")
def audit_judge(
    judge: str = typer.Option(..., "--judge", metavar="SPEC",
                              help="Model of the judge audited (or python:FILE.py:FUNC)."),
    kind: str = typer.Option(..., "--kind", metavar="KIND", help="The judge: taiscore, pairwise, gold_rubric or "
                             "critique_quality, spelled as in configs."),
    data: str = typer.Option("bundled:writing", "--data", metavar="SOURCE",
                             help="Prompts: bundled:NAME, a JSONL / Parquet file or a datasets folder."),
    probes: Optional[Path] = typer.Option(None, "--probes", metavar="FILE", help='More master keys: JSONL, one '
                                          '{"name": ..., "text": ...} per line ({prompt} in text: the '
                                          "item's prompt)."),
    n: int = typer.Option(8, "--n", min=1, metavar="N", help="How many prompts to audit on."),
    other: Optional[str] = typer.Option(None, "--other", metavar="SPEC", help="A second model: self-preference "
                                        "compares its answers with those of the judge's own model."),
    model: Optional[str] = typer.Option(None, "--model", metavar="SPEC", help="Model that writes the real answers "
                                        "(default: the judge's model; smollm2 for a replay: or python: judge)."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, metavar="N", help="Cap the judge's answers "
                                             "and the written texts at N tokens (default: 2048 and 256)."),
    seed: int = typer.Option(0, "--seed", metavar="S", help="Seed of the written answers, the retest and the CIs."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object: flags, fooled_rate, "
                                 "position_consistency, retest_spearman, master_keys, ..., warnings."),
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="Also write DIR/audit.json."),
) -> None:
    """Probe a judge: master keys, both orders, two seeds.

    On the first N prompts of --data, real answers (and, for taiscore and critique_quality,
    real critiques and revisions) are judged against content-free answers (":", "Thought
    process:", an empty answer, a copy of the prompt, ...), the same answers padded with
    filler or carrying a note telling the judge what to score, and again under a second
    seed; a pairwise judge sees every pair in both orders. Each figure is printed with its n
    and 95% CI; a figure whose CI is past its threshold is flagged, in plain words. See
    docs/audit.md for the measures and thresholds.
    """
    from coevo.audit.command import audit_json, audit_rows, run_judge_audit, write_audit

    found = run_judge_audit(judge, kind, data=data, probes_file=probes, n=n, seed=seed, other=other, writer=model,
                            max_tokens=max_tokens)
    path = write_audit(found, out_dir) if out_dir else None
    if as_json:
        print(json.dumps(audit_json(found), ensure_ascii=False))
        return
    _print_table({"columns": ["measure", "value", "95% CI", "n", "flag", "note"], "rows": audit_rows(found)},
                 title=f"audit of the {found.kind} judge {found.judge} on {found.n_items} prompts")
    for line in found.warnings():
        out.print(f"[yellow]warning:[/] {escape(line)}", highlight=False)
    if not found.flags:
        out.print("no flags: no figure's 95% CI is past its threshold", highlight=False)
    if path:
        out.print(f"wrote {path}", highlight=False)


@app.command()
def report(run_dir: Path = typer.Argument(..., metavar="RUN", help="Run folder.")) -> None:
    """Write the run's report.html (opens offline).

    The same page as `coevo view` shows for the run, as one self-contained file.
    """
    from coevo.report import build_report

    _require_run(run_dir)
    out.print(f"wrote {build_report(run_dir)}")
    _print_warnings_of(run_dir)


def _print_warnings_of(run_dir: Path) -> None:
    """`_print_run_warnings` for a run folder, its store opened read-only for the look."""
    from coevo.store import RunStore

    store = RunStore(run_dir, read_only=True)
    try:
        _print_run_warnings(store)
    finally:
        store.close()


def _print_run_warnings(store) -> None:
    """The run page's warnings, a line each: the judge audit's (issue 23), numbers from too few
    items, cut-off generations, Adam-first-step weight changes (issue 26), and the rest."""
    from coevo.view.warnings import run_warnings

    for finding in run_warnings(store):
        out.print(f"[yellow]warning ({escape(finding.kind)}):[/] {escape(finding.text)}", highlight=False)


@app.command()
def view(
    run_or_runs_dir: Path = typer.Argument(DEFAULT_RUNS, metavar="RUN_OR_RUNS_DIR",
                                           help="A run folder, or a folder of run folders."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, metavar="PORT",
                             help="Port to serve on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="Address to bind; the default is reachable from "
                             "this machine only. The viewer shows everything in the runs, and anyone who reaches it "
                             "can add annotation labels to them."),
) -> None:
    """Browse runs in a local web page.

    Results, plots, training curves, samples, proposals, skills and pairwise annotation.

    The viewer writes one thing: the human labels made on its Annotate page (and which
    text each pair showed on which side), into the run's run.sqlite. It changes nothing
    else; a run still going can be watched (reload the page). Ctrl-C stops the server.
    """
    from coevo.runinfo import find_runs

    if not run_or_runs_dir.is_dir():
        raise FileNotFoundError(f"{run_or_runs_dir} is not a folder; give a run folder or a folder of run folders "
                                "(see `coevo runs`)")
    if not find_runs(run_or_runs_dir):
        raise FileNotFoundError(f"no run folders in {run_or_runs_dir} (a run folder holds run.sqlite, here or up to two "
                                "levels down); start one with `coevo run CONFIG --out DIR`, or point at another folder")
    from coevo.view.app import serve

    serve([run_or_runs_dir], host=host, port=port, announce=lambda url: out.print(
        f"coevo view: {url}  (serving {run_or_runs_dir}; Ctrl-C stops it)", highlight=False))


@app.command()
def runs(
    paths: Optional[list[Path]] = typer.Argument(
        None, metavar="RUNS_DIR | RUN", show_default=False,
        help="Folder of run folders (searched two levels deep), or one run folder [default: runs]. With "
             "--compare: the runs to compare, each a run folder or a run's name as `coevo runs` lists it under runs/."),
    compare: bool = typer.Option(False, "--compare", help="Compare two or more runs side by side: the settings "
                                 "their configs differ in, and their last metrics with intervals and n."),
    all_settings: bool = typer.Option(False, "--all", help="With --compare: every config setting, not only "
                                      "those that differ."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per run (with --compare: one "
                                 "object, the comparison)."),
    estimates: bool = typer.Option(False, "--estimates", help="Each run's cost as estimated when it started "
                                   "(`coevo plan`) beside what it did cost: calls, tokens, training steps, seconds."),
) -> None:
    """List runs: status, start, duration and headline metrics.

    Status is running, finished, failed (with its error), interrupted, or resumable (its
    process is gone without finishing: continue it with `coevo run CONFIG --out DIR --resume`).

    `coevo runs --compare A B` puts runs side by side, as `coevo view`'s compare page does;
    `coevo runs --estimates` sets each run's estimate (made when it started) beside its cost.
    """
    from coevo.runinfo import runs_under
    from coevo.runs_display import run_rows

    if compare:
        _compare_runs(paths or [], all_settings=all_settings, as_json=as_json)
        return
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
    infos = runs_under(root)
    if as_json:
        for info in infos:
            print(json.dumps(info.model_dump(), ensure_ascii=False))
        return
    if not infos:
        out.print(f"no run folders under {root} (start one: `coevo quickstart` or `coevo run CONFIG --out DIR`)",
                  highlight=False)
        return
    if estimates:
        from coevo.runs_display import estimate_rows

        rows = estimate_rows(infos)
        _print_table({"columns": list(rows[0]), "rows": rows},
                     title=f"runs under {root}: estimated → counted (counted / estimated)")
        return
    rows = run_rows(infos)
    _print_table({"columns": list(rows[0]), "rows": rows}, title=f"runs under {root}")


def _compare_runs(names: list[Path], all_settings: bool, as_json: bool) -> None:
    """`coevo runs --compare`: the compare page's two tables (coevo.view.comparison)."""
    from coevo.runs_display import ConsoleTable, comparison_blocks, resolve_runs
    from coevo.view.comparison import compare_runs

    chosen = resolve_runs(names, DEFAULT_RUNS)
    if len(chosen) < 2:
        raise typer.BadParameter("give at least two runs to compare (run folders, or names `coevo runs` lists)",
                                 param_hint="RUN")
    comparison = compare_runs(chosen)
    if as_json:
        print(json.dumps(comparison.model_dump(), ensure_ascii=False))
        return
    for block in comparison_blocks(comparison, all_settings):
        if isinstance(block, ConsoleTable):
            _print_table({"columns": block.columns, "rows": block.rows}, title=block.title)
        else:
            out.print(block, highlight=False, markup=False)


@app.command()
def show(
    run_dir: Path = typer.Argument(..., metavar="RUN", help="Run folder."),
    stage: Optional[str] = typer.Option(None, "--stage", metavar="NAME",
                                        help="Only the rollouts of this stage (the list of stages is printed)."),
    round_: Optional[int] = typer.Option(None, "--round", metavar="N", help="Only the rollouts of round N."),
    condition: Optional[str] = typer.Option(None, "--condition", metavar="NAME",
                                            help="Only the rollouts of this condition (e.g. matched, shuffled)."),
    limit: int = typer.Option(5, min=0, metavar="N", help="How many rollouts to print."),
    config: bool = typer.Option(False, "--config", help="Print the run's config instead."),
    skills: bool = typer.Option(False, "--skills", help="Print the skill history (DecoEvo) instead."),
) -> None:
    """Print a run's status and rollouts, with their scores.

    Each rollout is headed by its round, stage, sample and condition, then each judge's
    score. `coevo view RUN` shows the same in a browser, with every rollout and the plots.
    """
    from coevo.store import RunStore

    _require_run(run_dir)
    store = RunStore(run_dir, read_only=True)  # a look, never a write: the run may be going on
    try:
        if config:
            out.print_json(data=store.get_meta("config"))
        elif skills:
            _print_skills(store)
        else:
            stages = store.rollout_stages()
            if stage is not None and stage not in dict(stages):
                raise typer.BadParameter(f"no stage {stage!r} in {run_dir}; its stages: " + (", ".join(
                    f"{name} ({n} rollouts)" for name, n in stages) or "none yet"), param_hint="--stage")
            _print_run_header(run_dir)
            _print_run_warnings(store)
            _print_rollouts(store, stages, stage=stage, round_=round_, condition=condition, limit=limit)
    finally:
        store.close()


def _print_run_header(run_dir: Path) -> None:
    """Algorithm, status (with the error and how to go on), start, duration, results."""
    from coevo.runs_display import run_header_lines

    for line in run_header_lines(run_dir):
        out.print(line, highlight=False)


def _print_rollouts(store, stages: list[tuple[str, int]], **filters) -> None:
    """The rollouts that pass the filters (`shown_rollouts`'s), each under a heading."""
    from coevo.runs_display import shown_rollouts

    shown = shown_rollouts(store, stages, **filters)
    out.print(shown.summary, highlight=False, markup=False)
    for rollout in shown.rollouts:
        _heading(rollout.heading)
        for judge, line in rollout.judgments:
            out.print(f"[bold]{escape(judge)}[/]: {escape(line)}", highlight=False)
        for label, text in rollout.texts:
            out.print(f"[bold]{label}[/]: ", end="")
            out.print(text, markup=False, highlight=False)


def _heading(text: str) -> None:
    """A rule with `text` in it; a heading too long for the width is printed whole instead
    (a rule would cut it short with an ellipsis)."""
    if len(text) + 6 <= out.width:
        out.rule(escape(text))
    else:
        out.print(f"── {text}", markup=False, highlight=False)


@app.command()
def metrics(names: Optional[list[str]] = typer.Argument(None, metavar="[NAME]...",
                                                       help="Metric names (as runs log them); none: every defined one.")
            ) -> None:
    """Define metrics: title, definition, unit and scale.

    Whether each is an estimate (shown with its n and a 95 % interval, or "too few to tell"
    under 5 items) is said too.

    The viewer's hover text, `coevo show` and the console tables read the same definitions.
    """
    from coevo.metric_defs import DEFINITIONS, describe, is_defined

    wanted = names or [pattern for pattern, _ in DEFINITIONS]
    rows = []
    for name in wanted:
        definition = describe(name)
        rows.append({"metric": name, "title": definition.title, "unit": definition.axis_label if definition.unit else "",
                     "estimate": "yes" if definition.estimate else "", "definition": definition.definition
                     if names is None or is_defined(name) else "not a registered metric (no definition)"})
    _print_table({"columns": list(rows[0]), "rows": rows}, title="metric definitions", define=False)


@app.command()
def models(prepare: bool = typer.Option(False, "--prepare", help="Convert the embedded model for transformers "
                                         "now (else the first training run does).")) -> None:
    """List the model specs every --model / --judge / config accepts."""
    from coevo.llm.specs import describe_specs

    if prepare:
        from coevo.llm.embedded import hf_dir

        out.print(f"embedded model ready for transformers at {hf_dir()}")
    from coevo.llm.python_functions import SIGNATURES

    rows = describe_specs()
    _print_table({"columns": list(rows[0]), "rows": rows}, title="model specs")
    out.rule("python: scorers (a function where a judge goes), one signature per judge kind")
    for kind, signature in SIGNATURES.items():
        out.print(f"{kind:9} {signature}", markup=False, highlight=False)


def _print_skills(store) -> None:
    from coevo.runs_display import skill_history

    history = skill_history(store)
    if not history.lines:
        out.print("no skill versions in this run yet")
        return
    out.rule("skill history")
    for line in history.lines:
        out.print(line, markup=False, highlight=False)
    for heading, diff in history.diffs:
        _heading(heading)
        out.print(diff, markup=False, highlight=False)


def _require_run(run_dir: Path) -> None:
    from coevo.store import STORE_FILE

    if not (run_dir / STORE_FILE).exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {STORE_FILE}); see `coevo runs`")


def _file_in_the_way(folder: Path) -> Path | None:
    """The file at `folder` or above it, where a folder must be made (mkdir's traceback, else)."""
    return next((path for path in (folder, *folder.parents) if path.exists() and not path.is_dir()), None)


def _print_table(table: dict, title: str, define: bool = True) -> None:
    """A rich table. On a terminal long cells fold to fit the window; piped into a file, grep
    or a CI log, the table takes the width its cells need, so no name or path breaks mid-word."""
    from rich.measure import Measurement

    from coevo.metric_defs import definitions_note
    from coevo.runs_display import cell_text

    piped = not out.is_terminal
    view = Table(title=title)
    columns = [c for c in table["columns"] if any(row.get(c, "") != "" for row in table["rows"])
               or not table["rows"]]  # a column blank in every row (no errors, say) takes no room
    cells = [[cell_text(row.get(c)) for c in columns] for row in table["rows"]]
    for i, column in enumerate(columns):
        # On a terminal too, the first column (the row's name) and short values keep whole:
        # the long free-text columns wrap at spaces instead.
        whole = piped or i == 0 or max((len(row[i]) for row in cells), default=0) <= 20
        view.add_column(str(column), overflow="fold", no_wrap=whole)
    for row in cells:
        view.add_row(*row)
    # What each metric in the table means (coevo/metric_defs.py), as the viewer's hover says it.
    if define:
        view.caption = definitions_note([str(c) for c in columns] + [row[0] for row in cells]) or None
    view.caption_justify = "left"
    if not piped:
        out.print(view)
        return
    natural = Measurement.get(out, out.options.update(max_width=100_000), view).maximum
    # A console of that width (Console.print's own `width` cannot exceed the console's).
    Console(width=max(natural, out.width), soft_wrap=True).print(view)


if __name__ == "__main__":
    main()
