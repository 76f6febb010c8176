"""The `coevo validate` group, declared here: `coevo validate code` and `coevo validate fact`
run the RLAC validators on one case by hand (the checks themselves: coevo/validators/by_hand.py)."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from coevo.commands.console import HELP_SETTINGS, out

app = typer.Typer(help="The RLAC validators by hand: code tests, facts.\n\nRun a critic's test case "
                  "on code, or check a claimed wrong fact against a knowledge corpus.", **HELP_SETTINGS)


@app.command("code")
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
    check_code_by_hand(problem, solution, test=test, problems=problems, timeout=timeout, unsafe_exec=unsafe_exec,
                       as_json=as_json)


@app.command("fact")
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
    check_fact_by_hand(entity, sentence, fact, corpus=corpus, judge=judge, mode=mode, as_json=as_json)


def check_code_by_hand(problem: str, solution: Path, *, test: str | None, problems: str, timeout: float,
                       unsafe_exec: bool, as_json: bool) -> None:
    """The critic's `test` (or the problem's own tests) run on `solution`, its verdict printed."""
    from coevo.validators.by_hand import check_code
    from coevo.validators.code import parse_testcase

    parsed, why = parse_testcase(test) if test is not None else (None, "")
    if test is not None and parsed is None:
        raise typer.BadParameter(f"{why}; write the test as \"CALL: f(1, 2)\" or \"STDIN: input lines\"",
                                 param_hint="--test")
    print_fields(check_code(problem, solution, test=test, problems=problems, timeout_s=timeout,
                            unsafe_exec=unsafe_exec), as_json)


def check_fact_by_hand(entity: str, sentence: str, claimed: str, *, corpus: str, judge: str, mode: str,
                       as_json: bool) -> None:
    """The critic's `claimed` wrong fact checked in `sentence`, then against `corpus`, printed."""
    from coevo.validators.by_hand import check_fact

    if mode not in ("llm", "lexical", "hybrid"):
        raise typer.BadParameter(f"--mode must be llm, lexical or hybrid, got {mode!r}")
    print_fields(check_fact(entity, sentence, claimed, corpus=corpus, judge=judge, mode=mode), as_json)


def print_fields(result: dict, as_json: bool) -> None:
    """A flat result: one JSON object, or a `key: value` line per field."""
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key, value in result.items():
        out.print(f"[bold]{escape(str(key))}[/]: {escape(str(value))}", soft_wrap=True, highlight=False, markup=True)
