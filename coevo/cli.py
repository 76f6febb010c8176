"""The `coevo` command line (typer + rich): it declares the commands, their options and help;
each command's work is a function in coevo/commands/ (one module per command or group, which
calls the library), and the `eval`, `validate` and `audit` groups are declared there too.

One vocabulary across commands (tests/test_cli_commands.py holds every command to it):
`--out` is the run folder or output file; `--fresh` starts over and `--resume` continues;
`--json` prints JSON; models are specs (`coevo models`) under `--model` (the generating
roles), `--actor` / `--critic` (one of them) and `--judge`; a run folder read is an
argument (RUN, RUNS_DIR); booleans are plain flags; judge kinds are spelled as in configs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from coevo.commands import audit, evaluate, validate
from coevo.commands.console import HELP_SETTINGS, out
from coevo.commands.errors import run_app
from coevo.commands.experiment import print_plan, run_and_report_quickstart, run_config
from coevo.run.quickstart import PROMPTS as QUICKSTART_PROMPTS
from coevo.commands.metrics_and_models import print_metric_definitions, print_model_specs
from coevo.commands.refine_and_judge import judge_rollouts, refine_once
from coevo.commands.runs import DEFAULT_RUNS, list_runs, serve_runs, show_run, write_report

app = typer.Typer(
    help="coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo).",
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    **HELP_SETTINGS,
)
app.add_typer(evaluate.app, name="eval")
app.add_typer(validate.app, name="validate")
app.add_typer(audit.app, name="audit")


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
        from coevo.run.logs import VERBOSE_ENV

        # Read by coevo/run/logs.py (library warnings and TRL's logs always go to RUN/coevo.log;
        # verbose, to the terminal too); an environment variable, so worker processes see it.
        os.environ[VERBOSE_ENV] = "1"


def main() -> None:
    """Entry point: bad input ends in one clear line and exit code 2, never a traceback."""
    run_app(app)


@app.command()
def quickstart(
    out_dir: Path = typer.Option(DEFAULT_RUNS / "quickstart", "--out", metavar="DIR", help="Run folder."),
    prompts: int = typer.Option(QUICKSTART_PROMPTS, metavar="N", help="How many bundled short writing prompts to use "
                                "(8 are held out for evaluation; the rest, at least 6, train)."),
    model: str = typer.Option("smollm2", metavar="SPEC",
                              help="Model of the actor and the critic (trainable: smollm2 or hf:PATH)."),
    judge: str = typer.Option("smollm2", metavar="SPEC", help="Model of the frozen judge."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete an earlier quickstart in --out and start over."),
) -> None:
    """TAIScore co-evolution at its smallest (about 5 minutes).

    The critic learns by GRPO from the TAIScore judge's rewards on the actor's revisions,
    then the actor learns by DPO from the revisions a critique-blind judge preferred, on short
    bundled writing prompts. It ends with the run's story: what ran, what changed (the
    critic's training reward and the monitor's Python-checked anchor over its steps, the
    held-out numbers before and after, each with its n and interval), what to trust (this
    run's settings apart from real findings, the judge audit's among them), and what to run
    next. Run it again and it resumes where it stopped (`--fresh` starts over).
    Model specs: see `coevo models`. Bigger runs: `coevo run examples/taiscore_tiny.yaml --out DIR`.
    """
    run_and_report_quickstart(out_dir, prompts=prompts, model=model, judge=judge, fresh=fresh)


#: Both `plan` and `run` refuse a config past coevo/settings/limits.py's soft limits without it.
ALLOW_LARGE_HELP = ("Plan or run a config past the soft size limits (e.g. more than 100 rounds or 100,000 "
                    "stages), which are refused by default as likely typos that would exhaust the machine.")


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
    hardware: str = typer.Option(None, "--hardware", metavar="PROFILE", help="Seconds on hardware this machine "
                                 "is not: 8xH100, 1xH200, 2x8xH100 (nodes x GPUs), cpu (this machine's "
                                 "calibration); published rates and a placement of the roles, in the notes."),
    allow_large: bool = typer.Option(False, "--allow-large", help=ALLOW_LARGE_HELP),
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
    print_plan(config, set_, as_json=as_json, calibrate=calibrate, calibration_file=calibration_file,
               allow_large=allow_large, hardware=hardware)


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
    allow_large: bool = typer.Option(False, "--allow-large", help=ALLOW_LARGE_HELP),
) -> None:
    """Run an experiment config (see examples/).

    The config's `algorithm` is refine, controls, taiscore, rlac or decoevo (examples/ has
    one config of each). Everything goes into the run folder --out: run.sqlite (the store),
    summary.json, report.html and coevo.log. Stopped (Ctrl-C, a crash, a killed job), it
    continues with the same command and --resume.
    """
    run_config(config, out_dir, resume=resume, fresh=fresh, overrides=set_, unsafe_exec=unsafe_exec,
               allow_large=allow_large)


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
    refine_once(prompt, response, actor=actor or model, critic=critic or model, judge=judge, max_tokens=max_tokens,
                as_json=as_json)


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
    judge_rollouts(kind, input, out_file, judge_model=judge_model, scoring=scoring)


@app.command()
def report(run_dir: Path = typer.Argument(..., metavar="RUN", help="Run folder.")) -> None:
    """Write the run's report.html (opens offline).

    The same page as `coevo view` shows for the run, as one self-contained file.
    """
    write_report(run_dir)


@app.command()
def view(
    run_or_runs_dir: Path = typer.Argument(DEFAULT_RUNS, metavar="RUN_OR_RUNS_DIR",
                                           help="A run folder, or a folder of run folders."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, metavar="PORT",
                             help="Port to serve on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="Address to bind; the default is reachable from "
                             "this machine only. The viewer shows everything in the runs, and anyone who reaches it "
                             "can add annotation labels to them."),
    allow_host: Optional[list[str]] = typer.Option(
        None, "--allow-host", metavar="NAME[:PORT]", help="Also answer requests addressed to this name (a proxy, a "
        "tunnel, the machine's name; without a port: any port); repeat for more. Other names are refused: a web "
        "page could otherwise reach the viewer through your browser (DNS rebinding)."),
    conditions: Optional[list[str]] = typer.Option(
        None, "--conditions", metavar="FIRST:SECOND", help="Two conditions of the RUN whose final held-out "
        "answers the Annotate page compares blind, wins counted for FIRST (repeat for more; TAG/roundR for a "
        "round). Default: the TAIScore paper's Table 2 rows the run has."),
    against: Optional[Path] = typer.Option(None, "--against", metavar="OTHER_RUN", help="Take each comparison's "
                                           "SECOND side from this run (default: each condition both runs have)."),
    prompts: Optional[int] = typer.Option(None, "--prompts", min=1, metavar="N", help="Prompts per comparison, "
                                          "a seeded sample all comparisons share [default: 50, as the paper]."),
) -> None:
    """Browse runs in a local web page.

    Results, plots, training curves, samples, proposals, skills and pairwise annotation.

    The viewer writes one thing: the human labels made on its Annotate page (and which
    text each pair showed on which side), into the run's run.sqlite. It changes nothing
    else; a run still going can be watched (reload the page). Ctrl-C stops the server.
    """
    serve_runs(run_or_runs_dir, host=host, port=port, conditions=conditions, against=against, prompts=prompts,
               allow_hosts=allow_host or [])


@app.command()
def annotate(
    file: Path = typer.Argument(..., metavar="FILE", help="JSONL, one prompt and two systems' outputs a line: "
                                '{"prompt": ..., "a": ..., "b": ...} or {"prompt": ..., "outputs": {NAME: ..., '
                                'NAME: ...}}; an optional "id" names the row.'),
    out_dir: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="The annotation folder (default: beside "
                                           "FILE, rows.jsonl -> rows.annotate); the same FILE again reuses it, "
                                           "labels kept."),
    a_name: Optional[str] = typer.Option(None, "--a-name", metavar="NAME", help="The first system's name, for "
                                         "whom wins are counted (rows of a and b: default a; rows of outputs: "
                                         "picks that key)."),
    b_name: Optional[str] = typer.Option(None, "--b-name", metavar="NAME", help="The second system's name (as "
                                         "--a-name; default b)."),
    fresh: bool = typer.Option(False, "--fresh", help="Start --out over from FILE's rows (its labels are "
                               "deleted; only ever an annotation folder)."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, metavar="PORT",
                             help="Port to serve on (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="Address to bind; the default is "
                             "reachable from this machine only. Anyone who reaches it can read the texts and add "
                             "labels."),
    allow_host: Optional[list[str]] = typer.Option(
        None, "--allow-host", metavar="NAME[:PORT]", help="Also answer requests addressed to this name (a proxy, "
        "a tunnel, the machine's name; without a port: any port); repeat for more. Others are refused."),
    open_browser: bool = typer.Option(False, "--open", help="Also open the page in this machine's web browser."),
) -> None:
    """Label two systems' outputs blind, in a local web page.

    Any two systems: two checkpoints' completions from a TRL run's logs, two models'
    answers. The rows go into an annotation folder (no coevo run needed), served at the
    same blind pairwise pages as a run's Annotate page: pairs in a random order, sides
    drawn at random, each label saved at once. `coevo eval annotations DIR --out LABELS`
    exports the labels (human.jsonl, a Table-2 table) for `coevo eval agreement`.
    Ctrl-C stops the server; run it again to go on labelling.
    """
    from coevo.commands.annotate_file import annotate_file

    annotate_file(file, out_dir=out_dir, a_name=a_name, b_name=b_name, fresh=fresh, host=host, port=port,
                  allow_hosts=allow_host or [], open_browser=open_browser)


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
    list_runs(paths, compare=compare, all_settings=all_settings, as_json=as_json, estimates=estimates)


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
    show_run(run_dir, stage=stage, round_=round_, condition=condition, limit=limit, config=config, skills=skills)


@app.command()
def metrics(names: Optional[list[str]] = typer.Argument(None, metavar="[NAME]...",
                                                       help="Metric names (as runs log them); none: every defined one.")
            ) -> None:
    """Define metrics: title, definition, unit and scale.

    Whether each is an estimate (shown with its n and a 95 % interval, or "too few to tell"
    under 5 items) is said too.

    The viewer's hover text, `coevo show` and the console tables read the same definitions.
    """
    print_metric_definitions(names)


@app.command()
def models(prepare: bool = typer.Option(False, "--prepare", help="Convert the embedded model for transformers "
                                         "now (else the first training run does).")) -> None:
    """List the model specs every --model / --judge / config accepts."""
    print_model_specs(prepare)


if __name__ == "__main__":
    main()
