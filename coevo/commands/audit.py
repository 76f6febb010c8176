"""The `coevo audit` group, declared here: `coevo audit judge` probes a judge for gaming,
position bias and noise (the audit itself: coevo/audit/command.py) and prints its figures
with their flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from coevo.commands.console import HELP_SETTINGS, out, print_table

app = typer.Typer(help="Check a judge for gaming, position bias and noise.\n\nProbe a judge with "
                  "content-free answers, padding, injected instructions, both orders and two seeds.", **HELP_SETTINGS)


@app.command("judge")
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
    print_judge_audit(judge, kind, data=data, probes=probes, n=n, other=other, writer=model,
                      max_tokens=max_tokens, seed=seed, as_json=as_json, out_dir=out_dir)


def print_judge_audit(judge_spec: str, kind: str, *, data: str, probes: Path | None, n: int, other: str | None,
                      writer: str | None, max_tokens: int | None, seed: int, as_json: bool,
                      out_dir: Path | None) -> None:
    """Audit the judge, write DIR/audit.json with `out_dir`, and print the figures or the JSON."""
    from coevo.audit.command import audit_json, audit_rows, run_judge_audit, write_audit

    found = run_judge_audit(judge_spec, kind, data=data, probes_file=probes, n=n, seed=seed, other=other,
                            writer=writer, max_tokens=max_tokens)
    path = write_audit(found, out_dir) if out_dir else None
    if as_json:
        print(json.dumps(audit_json(found), ensure_ascii=False))
        return
    print_table({"columns": ["measure", "value", "95% CI", "n", "flag", "note"], "rows": audit_rows(found)},
                title=f"audit of the {found.kind} judge {found.judge} on {found.n_items} prompts")
    for line in found.warnings():
        out.print(f"[yellow]warning:[/] {escape(line)}", highlight=False, markup=True)
    if not found.flags:
        out.print("no flags: no figure's 95% CI is past its threshold", highlight=False)
    if path:
        out.print(f"wrote {path}", highlight=False)
