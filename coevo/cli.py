"""The `coevo` command line (typer + rich). Each command is a thin shell over the library."""

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

app = typer.Typer(
    help="coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
eval_app = typer.Typer(help="Evaluation utilities: judge agreement, critique-content controls.",
                       no_args_is_help=True)
validate_app = typer.Typer(
    help="External validators (RLAC). `code` and `fact` come with the RLAC issue.",
    no_args_is_help=True,
)
app.add_typer(eval_app, name="eval")
app.add_typer(validate_app, name="validate")
out = Console(soft_wrap=True)  # long paths stay on one line (copyable, greppable)
err = Console(stderr=True, soft_wrap=True)

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
    if args[:1] == ["run"] and "--resume" not in args:
        args.append("--resume")
    return shlex.join(["coevo", *args])


@app.command()
def quickstart(
    out_dir: Path = typer.Option(DEFAULT_RUNS / "quickstart", "--out", help="Run folder."),
    prompts: int = typer.Option(6, help="How many bundled writing prompts to use (2 are held out)."),
    model: str = typer.Option("smollm2", help="Model spec for the actor and critic (trainable: smollm2 or hf:)."),
    judge: str = typer.Option("smollm2", help="Model spec for the frozen judge."),
    fresh: bool = typer.Option(False, help="Start over instead of resuming an earlier quickstart."),
) -> None:
    """TAIScore co-evolution at its smallest: one round on a few bundled prompts.

    The critic learns by GRPO from the TAIScore judge's rewards on the actor's revisions,
    then the actor learns by DPO from the revisions a critique-blind judge preferred. Prints
    the held-out metrics before and after the round and the report's path. ~10 minutes on a
    laptop CPU; run it again and it resumes (`--fresh` starts over). The critique-content
    controls that quickstart used to run: `coevo run examples/controls.yaml --out DIR`.
    """
    from coevo.runner import remove_run_folder, run_experiment

    if prompts < 4:
        raise typer.BadParameter("--prompts must be at least 4 (2 held out, 2 or more to train on)")
    if fresh:
        remove_run_folder(out_dir)
    # The budgets of examples/taiscore_tiny.yaml (see its comments): critiques that end
    # before their limit, and a judge scored by expectation, so GRPO has rewards to learn from.
    data = {
        "algorithm": "taiscore",
        "data": {"source": "bundled:writing", "limit": prompts},
        "models": {"actor": model, "critic": model, "judge": judge},
        "templates": {"critic": "critic_brief"},
        "sampling": {"rollout": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 320},
                     "revision": {"temperature": 0.2, "top_p": 0.95, "max_tokens": 128},
                     "judge": {"temperature": 0.2, "top_p": 1.0, "max_tokens": 320, "scoring": "expected",
                               "reason_limit": 160}},
        "rounds": 1,
        "critic_queries": 2,
        "pairs_per_round": 4,
        "grpo": {"num_generations": 2, "batch_size": 1, "learning_rate": 1e-5, "max_steps": 2,
                 "save_steps": 1},
        "dpo": {"learning_rate": 1e-5, "max_steps": 2, "max_length": 512, "max_prompt_length": 384,
                "save_steps": 1},
        "evaluation": {"prompts": 2},
    }
    from coevo.store import STORE_FILE

    # Run again, it resumes: --resume is implied when the folder already holds the quickstart.
    try:
        summary = run_experiment(None, out_dir, resume=(out_dir / STORE_FILE).is_file(), data=data)
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    _print_table(summary["table"], title="TAIScore quickstart: held-out metrics before and after one round")
    out.print(f"report: {summary['report']}")


@app.command()
def run(
    config: Path = typer.Argument(..., help="YAML config (see examples/)."),
    out_dir: Path = typer.Option(..., "--out", help="Run folder (created)."),
    resume: bool = typer.Option(False, help="Continue a killed or finished run in --out."),
    fresh: bool = typer.Option(False, help="Delete the run in --out first and start over (run folders only)."),
    set_: list[str] = typer.Option([], "--set", help="Override a config key: a.b=value."),
    unsafe_exec: bool = typer.Option(False, "--unsafe-exec", help="Allow model-written code (RLAC on code) to run "
                                     "WITHOUT isolation where none works; a config's code.unsafe_exec alone cannot."),
) -> None:
    """Run an experiment config: refine, controls, taiscore, rlac or decoevo (see examples/)."""
    from coevo.runner import run_experiment
    from coevo.validators.sandbox import UNSAFE_ENV_VAR

    if fresh and resume:
        raise typer.BadParameter("--fresh starts over and --resume continues: pass one of them")
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
    prompt: str = typer.Option(..., help="The instruction x."),
    response: Optional[str] = typer.Option(None, help="An initial response y0 (else the actor writes one)."),
    actor: str = typer.Option("smollm2", help="Actor model spec."),
    critic: str = typer.Option("smollm2", help="Critic model spec."),
    judge: str = typer.Option("smollm2", help="TAIScore judge model spec."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """One critique-guided refinement: y0 -> critique -> y1 -> TAIScore judge."""
    from coevo.algorithms.refine import refine_one

    result = refine_one(prompt, response, actor=actor, critic=critic, judge=judge)
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
    kind: str = typer.Argument(..., help="taiscore | critique-quality | adherence | outcome-gain | pairwise | gold-rubric"),
    input: Path = typer.Option(..., "--input", help="JSONL of rollouts: x (or prompt), y0, c, y1."),
    out_file: Path = typer.Option(..., "--out", help="JSONL written with a 'judgment' field per line."),
    judge_model: str = typer.Option("smollm2", "--judge", help="Judge model spec."),
    scoring: str = typer.Option("expected", help="expected: probability-weighted mean over the score's tokens "
                                "(where the backend returns log-probabilities); sampled: the integer written."),
) -> None:
    """Score a JSONL file of rollouts with one judge.

    Each output line gets `judgment`: `score` (null when unreadable), `valid`, `sampled` and
    `expected`, the diagnostics in `scores` / `reasons`, and for taiscore and critique-quality
    `reward`, the GRPO training reward (0.0 for an unreadable answer or an empty critique).
    """
    from coevo.judging import judge_file

    if scoring not in ("expected", "sampled"):
        raise typer.BadParameter(f"--scoring must be expected or sampled, not {scoring!r}")
    counts = judge_file(kind, input, out_file, judge_model, scoring=scoring)
    out.print(f"wrote {out_file}: {counts['valid']} valid, {counts['invalid']} invalid judgments")


@eval_app.command("agreement")
def eval_agreement(
    a: Path = typer.Option(..., "--a", help="JSONL of {group, candidate, score} from judge A."),
    b: Path = typer.Option(..., "--b", help="The same from judge B."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Top-1 overlap and pairwise agreement between two judges (TAIScore D.1)."""
    from coevo.eval.agreement import judge_agreement, read_scores_jsonl

    file_a, file_b = read_scores_jsonl(a), read_scores_jsonl(b)
    report = {**judge_agreement(file_a.scores, file_b.scores).model_dump(),
              "invalid_a": file_a.n_invalid, "invalid_b": file_b.n_invalid}
    if as_json:
        print(json.dumps(report))
    else:
        _print_table({"columns": list(report), "rows": [report]}, title="judge agreement")


@eval_app.command("skill")
def eval_skill(
    skill: Path = typer.Option(..., "--skill", help="A solver skill file (e.g. RUN/skills/decoevo/seed0/solver_v3.md)."),
    data: str = typer.Option(..., "--data", help="bundled:NAME, a JSONL/Parquet file or a datasets folder, with gold rubrics."),
    model: str = typer.Option("smollm2", "--model", help="Model spec of the solver (and of the grader unless --grader)."),
    grader: Optional[str] = typer.Option(None, "--grader", help="Model spec of the gold-rubric grader."),
    limit: Optional[int] = typer.Option(None, help="Use only the first LIMIT samples."),
    cache: Optional[Path] = typer.Option(None, "--cache", help="Run folder whose store caches the calls."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Apply a final DecoEvo solver skill to another dataset, no updates (transfer); gold-rubric score."""
    from coevo.algorithms.decoevo import evaluate_skill
    from coevo.algorithms.skills import read_skill_file
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
    problem: str = typer.Option(..., help="Problem id, e.g. HumanEval/12."),
    solution: Path = typer.Option(..., exists=True, dir_okay=False, readable=True,
                                  help="File with the candidate solution (code or a model answer)."),
    test: str | None = typer.Option(None, help="The critic's test: \"CALL: f(args)\", \"STDIN: input\" or a "
                                    "<testcase> answer. Without it, the problem's own tests run on the solution."),
    problems: str = typer.Option("humaneval", help="Where the problem lives: humaneval or a JSONL file."),
    timeout: float = typer.Option(5.0, min=0.1, max=3600, help="Wall-clock seconds per sandboxed run."),
    unsafe_exec: bool = typer.Option(False, "--unsafe-exec", help="Run WITHOUT isolation when none is available."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Run a critic's test case on the reference and on a candidate, both sandboxed (RLAC);
    without --test, run the problem's own tests on the candidate.

    With --test, the verdict is caught (outputs differ, or the candidate crashes / times
    out), survived (outputs match) or invalid (the test fails on the reference). Without it,
    passed (every test ran and held: the harness's marker, never an exit code alone) or
    failed. Exit code 0 for every verdict.
    """
    import time

    from coevo.tasks.code import count_test_cases, load_code_problems
    from coevo.tasks.loaders import DataError
    from coevo.validators.code import CodeValidator, ReferenceTests, parse_proposal, parse_testcase

    parsed, why = parse_testcase(test) if test is not None else (None, "")
    if test is not None and parsed is None:
        raise typer.BadParameter(f"{why}; write the test as \"CALL: f(1, 2)\" or \"STDIN: input lines\"",
                                 param_hint="--test")
    by_id = {s.id: s for s in load_code_problems(problems)}
    if problem not in by_id:
        raise DataError(f"no problem {problem!r} in {problems}; ids look like {next(iter(by_id), '?')!r}")
    sample = by_id[problem]
    code = solution.read_text(encoding="utf-8")
    start = time.monotonic()
    if test is None:
        runner = ReferenceTests(timeout_s=timeout, unsafe_exec=unsafe_exec)
        outcome = runner.run(sample, code)
        result = {"problem": problem, "verdict": "passed" if outcome.passed else "failed",
                  "reason": "every test passed" if outcome.passed else outcome.error,
                  "status": outcome.status, "tests": count_test_cases(sample),
                  "seconds": round(time.monotonic() - start, 4), "isolation": runner.sandbox.isolation}
    else:
        validator = CodeValidator(timeout_s=timeout, unsafe_exec=unsafe_exec)
        verdict = validator.check(sample, code, parse_proposal(problem, code, test))
        result = {"problem": problem, "verdict": verdict.verdict, "reason": verdict.reason,
                  "test": verdict.details.get("test"),
                  "reference_output": verdict.details.get("reference_output"),
                  "candidate_output": verdict.details.get("candidate_output"),
                  "reference_status": verdict.details.get("reference_status"),
                  "candidate_status": verdict.details.get("candidate_status"),
                  "seconds": round(time.monotonic() - start, 4), "isolation": validator.sandbox.isolation}
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key, value in result.items():
        out.print(f"[bold]{key}[/]: {escape(str(value))}", soft_wrap=True, highlight=False)


@validate_app.command("fact")
def validate_fact(
    entity: str = typer.Option(..., help="Who the text is about, e.g. \"Albert Einstein\"."),
    sentence: str = typer.Option(..., help="The biography sentence the critic named."),
    fact: str = typer.Option(..., help="The critic's claimed wrong fact (error_fact)."),
    corpus: str = typer.Option("bundled:bios", help="Knowledge source: bundled:bios or a JSONL of {title, text}."),
    judge: str = typer.Option("smollm2", help="Model spec of the entailment judge."),
    mode: str = typer.Option("llm", help="Entailment by the judge model (llm), by word overlap (lexical), "
                             "or the judge gated by overlap (hybrid)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
) -> None:
    """Check a critic's claimed wrong fact: authenticity (is it in the sentence?), then
    verification against the knowledge corpus (BM25 passages + entailment judge)."""
    import time

    from coevo.types import Proposal, Sample
    from coevo.validators.facts import build_fact_validator

    if mode not in ("llm", "lexical", "hybrid"):
        raise typer.BadParameter(f"--mode must be llm, lexical or hybrid, got {mode!r}")
    if mode != "lexical":
        from coevo.llm.specs import load_model

        model = load_model(judge)
    else:
        model = None
    validator = build_fact_validator(model, corpus=corpus, mode=mode)
    sample = Sample(id="cli", prompt="", meta={"entity": entity})
    start = time.monotonic()
    verdict = validator.check(sample, sentence, Proposal(
        sample_id="cli", output=sentence, text=f"sentence: 1\nerror_fact: {fact}"))
    result = {"entity": entity, "verdict": verdict.verdict, "reason": verdict.reason,
              "authenticity": verdict.details.get("authenticity"),
              "judge_answer": verdict.details.get("judge_answer"),
              "passages": verdict.details.get("passages", []),
              "in_corpus": validator.knowledge.resolve(entity) is not None,
              "validator_calls": validator.calls, "llm_calls": validator.llm_calls,
              "seconds": round(time.monotonic() - start, 4)}
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key, value in result.items():
        out.print(f"[bold]{key}[/]: {escape(str(value))}", soft_wrap=True, highlight=False)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="Run folder.")) -> None:
    """Write the run's self-contained report.html."""
    from coevo.report import build_report

    _require_run(run_dir)
    out.print(f"wrote {build_report(run_dir)}")


@app.command()
def runs(root: Path = typer.Option(DEFAULT_RUNS, help="Folder holding run folders.")) -> None:
    """List the run folders under ROOT."""
    from coevo.runner import list_runs

    rows = list_runs(root)
    if not rows:
        out.print(f"no runs under {root}")
        return
    _print_table({"columns": list(rows[0]), "rows": rows}, title=f"runs under {root}")


@app.command()
def show(
    run_dir: Path = typer.Argument(..., help="Run folder."),
    limit: int = typer.Option(5, min=0, help="How many rollouts to print."),
    config: bool = typer.Option(False, "--config", help="Print the run's config instead."),
    skills: bool = typer.Option(False, "--skills", help="Print the skill history (DecoEvo) instead."),
) -> None:
    """Print a run's rollouts (instruction, y0, critique, y1, scores)."""
    from coevo.store import RunStore

    _require_run(run_dir)
    store = RunStore(run_dir)
    if config:
        out.print_json(data=store.get_meta("config"))
        return
    if skills:
        _print_skills(store)
        return
    from coevo.runlock import run_status

    status = run_status(run_dir, store.get_meta("status"))
    out.print(f"[bold]{store.get_meta('algorithm', '?')}[/] run, {status}"
              + (f": {store.get_meta('error')}" if status in ("failed", "interrupted") else "")
              + (f" (continue with `coevo run CONFIG --out {run_dir} --resume`)"
                 if status in ("failed", "interrupted", "resumable") else ""), highlight=False)
    summary_file = run_dir / "summary.json"
    if summary_file.is_file():
        processes = json.loads(summary_file.read_text(encoding="utf-8")).get("world_size")
        if processes:
            out.print(f"trained by {processes} process{'es' if processes > 1 else ''} (world_size)")
    for rollout in store.rollouts()[:limit]:
        scores = {k: j.score for k, j in rollout.judgments.items()}
        out.rule(f"{rollout.sample_id} · {rollout.condition} · {scores}")
        for key, text in (("x", rollout.x), ("y0", rollout.y0), ("c", rollout.c), ("y1", rollout.y1)):
            if text:
                out.print(f"[bold]{key}[/]: ", end="")
                out.print(text, markup=False)


@app.command()
def models(prepare: bool = typer.Option(False, help="Convert the embedded model for transformers now.")) -> None:
    """List the accepted model specs and prepare the embedded model."""
    from coevo.llm.specs import describe_specs

    if prepare:
        from coevo.llm.embedded import hf_dir

        out.print(f"embedded model ready for transformers at {hf_dir()}")
    rows = describe_specs()
    _print_table({"columns": list(rows[0]), "rows": rows}, title="model specs")


def _print_skills(store) -> None:
    from coevo.algorithms.skills import versions

    records = versions(store)
    algorithm = store.get_meta("algorithm")
    if not records and algorithm not in (None, "decoevo"):
        from coevo.config import ConfigError

        raise ConfigError(f"{store.run_dir} is a {algorithm} run: skill versions come from `algorithm: decoevo` "
                          "runs; drop --skills to see its rollouts")
    if not records:
        out.print("no skill versions in this run yet")
        return
    out.rule("skill history")
    for r in records:  # one line per version: long reasons wrap instead of squeezing a table
        parent = "" if r.parent is None else f" <- v{r.parent}"
        out.print(f"{r.method} seed{r.seed} {r.name} v{r.version}{parent} (step {r.step}) "
                  f"{r.decision.upper()}: {r.why}", markup=False, highlight=False)
    for r in records:
        if r.diff:
            out.rule(f"{r.method} seed{r.seed} {r.name} v{r.parent} -> v{r.version} ({r.decision})")
            out.print(r.diff, markup=False, highlight=False)


def _require_run(run_dir: Path) -> None:
    from coevo.store import STORE_FILE

    if not (run_dir / STORE_FILE).exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {STORE_FILE}); see `coevo runs`")


def _print_table(table: dict, title: str) -> None:
    view = Table(title=title)
    for column in table["columns"]:
        view.add_column(str(column), overflow="fold")
    for row in table["rows"]:
        view.add_row(*[f"{row.get(c):.3f}" if isinstance(row.get(c), float) else str(row.get(c, ""))
                       for c in table["columns"]])
    out.print(view)


if __name__ == "__main__":
    main()
