"""The console never rewrites what it prints of the user's or a model's: rich would turn `:b:`
in `A:B:C` into an emoji, read `[bold]` in a model's answer as a style (and drop it), and
recolour numbers and paths. Every console of coevo's prints such text verbatim; markup is
read only where a line asks for it, around escaped text."""

from __future__ import annotations

import io
import json
import logging
import sys

import pytest
from typer.testing import CliRunner

from coevo.cli import app

#: What rich would rewrite, in one string: emoji codes, markup, a path and numbers.
TRICKY = "A:B:C [bold]loud[/bold] :smile: [red]x[/] /tmp/a_b.txt 0.5"


def _run_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """`coevo ARGS` in this process as `main()` runs it (bad input printed by run_app)."""
    from coevo.commands.errors import run_app

    monkeypatch.setattr(sys, "argv", ["coevo", *args])
    with pytest.raises(SystemExit) as stopped:
        run_app(app)
    captured = capsys.readouterr()
    return stopped.value.code, captured.out, captured.err


def test_view_conditions_error_prints_the_spec_as_typed(tmp_path, monkeypatch, capsys):
    from coevo.rundir.store import RunStore

    RunStore(tmp_path / "run").close()  # a run folder, so the --conditions spec is what is refused
    code, _, err = _run_main(monkeypatch, capsys, "view", str(tmp_path / "run"), "--conditions", "A:B:C",
                             "--port", "0")
    assert code == 2 and "not 'A:B:C'" in err and "🅱" not in err, err
    assert "error:" in err and "[bold red]" not in err  # the intended markup is still read


def test_a_models_output_prints_verbatim(tmp_path):
    replay = tmp_path / "replay.jsonl"
    replay.write_text(json.dumps({"completions": [TRICKY]}) + "\n")
    spec = f"replay:{replay}"
    result = CliRunner().invoke(app, ["refine", "--prompt", "Say A:B:C :smile:", "--actor", spec, "--critic", spec,
                                      "--judge", spec])
    assert result.exit_code == 0, result.output
    assert result.output.count(TRICKY) == 3  # y0, the critique and y1, each as the model wrote it
    assert "😄" not in result.output and "🅱" not in result.output


def test_tables_headings_progress_and_log_lines_print_verbatim(monkeypatch, capsys):
    from coevo.core import progress
    from coevo.run import logs
    from coevo.commands.console import heading, out, print_plain, print_rows

    monkeypatch.setenv("COLUMNS", "300")
    print_rows([{"name": TRICKY, "value": "1"}], title="models: A:B:C")
    heading(TRICKY)
    print_plain([TRICKY])
    out.print(TRICKY)  # a plain print, with no switch of its own
    printed = capsys.readouterr().out
    assert printed.count(TRICKY) == 4 and "models: A:B:C" in printed and "😄" not in printed

    stream = io.StringIO()
    # `_file`, not `file`: undoing a patch of `file` would pin the console to this test's
    # captured stderr (what `file` reads while no file is set), closed once the test ends.
    monkeypatch.setattr(progress.console, "_file", stream)
    monkeypatch.delenv("COEVO_QUIET", raising=False)
    with progress.progress_bar(TRICKY, total=1) as advance:
        advance(1)
    progress.announce(TRICKY)
    logs.TerminalHandler(everything=False).emit(logging.LogRecord("coevo.x", logging.WARNING, __file__, 1,
                                                                  TRICKY, None, None))
    shown = stream.getvalue()
    assert shown.count(TRICKY) == 3 and "😄" not in shown, shown
