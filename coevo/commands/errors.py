"""How a command ends when something is wrong: bad input in one clear line and exit code 2
(never a traceback), Ctrl-C or SIGTERM with the line that continues the run, and the checks
of input that only the command line can get wrong."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import typer
from rich.markup import escape

from coevo.commands.console import err


def user_errors() -> tuple[type[BaseException], ...]:
    """The library's errors that mean bad input (a config, a model spec, data, a file), not a bug."""
    from coevo.core.strict import ConfigError
    from coevo.llm.base import ModelError
    from coevo.prompts import TemplateError
    from coevo.tasks.loaders import DataError
    from coevo.validators.sandbox import SandboxUnavailable

    from coevo.run.runner import DiskFull
    from coevo.rundir.store import StoreError
    from coevo.train.errors import TrainError

    return (ConfigError, ModelError, TemplateError, DataError, FileNotFoundError, SandboxUnavailable, StoreError,
            DiskFull, TrainError)


def run_app(app: typer.Typer) -> NoReturn:
    """Run the typer `app` on sys.argv and exit with its code; bad input ends in one line."""
    click = click_exceptions()
    try:
        code = app(standalone_mode=False)
    except click.NoArgsIsHelpError as exc:  # `coevo eval`: its help, as before
        exc.show()
        sys.exit(exc.exit_code)
    except click.UsageError as exc:  # a bad option, a missing argument, a value out of range
        command = exc.ctx.command_path if exc.ctx is not None else "coevo"
        err.print(f"[bold red]error:[/] {escape(exc.format_message())} (see `{escape(command)} --help`)",
                  soft_wrap=True, highlight=False, markup=True)
        sys.exit(2)
    except click.ClickException as exc:  # a missing or unreadable file given as an option
        err.print(f"[bold red]error:[/] {escape(exc.format_message())}", soft_wrap=True, highlight=False, markup=True)
        sys.exit(exc.exit_code)
    except user_errors() as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True, highlight=False, markup=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)


def click_exceptions():
    """Click's exception classes as typer raises them (recent typer vendors its own click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # older typer: click itself
        import click.exceptions as exceptions
    return exceptions


def interrupted(cause: BaseException) -> NoReturn:
    """Ctrl-C (exit 130) or SIGTERM (exit 143): say what was kept and how to go on."""
    from coevo.run.runner import Terminated

    stopped = isinstance(cause, Terminated)
    err.print(f"[yellow]{'stopped (SIGTERM)' if stopped else 'interrupted'}[/]: the run folder keeps "
              f"everything finished so far; continue with:\n  {escape(resume_command(sys.argv))}",
              soft_wrap=True, highlight=False, markup=True)
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


def require_run(run_dir: Path) -> None:
    """A FileNotFoundError unless `run_dir` is a run folder."""
    from coevo.rundir.store import STORE_FILE

    if not (run_dir / STORE_FILE).exists():
        raise FileNotFoundError(f"{run_dir} is not a run folder (no {STORE_FILE}); see `coevo runs`")


def file_in_the_way(folder: Path) -> Path | None:
    """The file at `folder` or above it, where a folder must be made (mkdir's traceback, else)."""
    return next((path for path in (folder, *folder.parents) if path.exists() and not path.is_dir()), None)
