"""`coevo refine` (one critique-guided refinement) and `coevo judge` (a JSONL file of rollouts
scored by one judge): the loops' steps by hand, on one prompt or one file."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from coevo.commands.console import out
from coevo.commands.errors import file_in_the_way


def refine_once(prompt: str, response: str | None, *, actor: str, critic: str, judge: str, max_tokens: int | None,
           as_json: bool) -> None:
    """y0 (the actor's, or `response`), the critique, y1 and the TAIScore, printed."""
    if not prompt.strip():  # the actor would answer nothing for minutes
        raise typer.BadParameter("the instruction is empty: give the text to answer, e.g. "
                                 "--prompt \"Write a two-line poem about rain.\"", param_hint="--prompt")
    if response is not None and not response.strip():  # a blank y0 would be critiqued and "revised"
        raise typer.BadParameter("the response is empty: give the y0 to refine, or leave --response out for the "
                                 "actor to write one", param_hint="--response")

    from coevo.algorithms.refine import refine_one, texts_capped
    from coevo.settings.role_specs import RefinementRoleSpecs

    roles = texts_capped(RefinementRoleSpecs(), max_tokens) if max_tokens else None
    result = refine_one(prompt, response, actor=actor, critic=critic, judge=judge, roles=roles)
    if as_json:
        print(json.dumps(result, ensure_ascii=False))
        return
    for key in ("y0", "critique", "y1"):
        out.rule(key)
        out.print(result[key], markup=False)
    out.rule("taiscore")
    out.print(result["taiscore"])


def judge_rollouts(kind: str, input_file: Path, out_file: Path, *, judge_model: str, scoring: str) -> None:
    """Score `input_file`'s rollouts with the judge `kind` into `out_file`, and say how many were valid."""
    from coevo.eval.judge_file import judge_file
    from coevo.roles.judging import judge_name

    kind = judge_name(kind)  # an unknown judge is named before any file is read
    if scoring not in ("expected", "sampled"):
        raise typer.BadParameter(f"--scoring must be expected or sampled, not {scoring!r}")
    # Refused now, not when the judgments are written after minutes of judging.
    if out_file.is_dir():
        raise typer.BadParameter(f"{out_file} is a folder: give the JSONL file to write", param_hint="--out")
    if (blocking := file_in_the_way(out_file.parent)) is not None:
        raise typer.BadParameter(f"{blocking} is a file, not a folder: give a file in a folder", param_hint="--out")
    counts = judge_file(kind, input_file, out_file, judge_model, scoring=scoring)
    out.print(f"wrote {out_file}: {counts['valid']} valid, {counts['invalid']} invalid judgments")
