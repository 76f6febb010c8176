"""`coevo annotate FILE.jsonl`: any two systems' outputs labelled blind in the viewer's
annotation pages, without a coevo run. The rows go into an annotation folder
(coevo.view.annotate_file), which is then served as `coevo view` serves a run (the same host,
port and Host checks) at its Annotate page; `coevo eval annotations` exports its labels."""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import quote

import typer

from coevo.commands.console import out


def annotate_file(file: Path, *, out_dir: Path | None, a_name: str | None, b_name: str | None, fresh: bool,
                  host: str, port: int, allow_hosts: list[str], open_browser: bool) -> None:
    """Import FILE's rows into their annotation folder (made, or reused with its labels), say
    what it holds and how to export the labels, then serve its Annotate page until Ctrl-C."""
    from coevo.view.annotate_file import import_file
    from coevo.view.app import serve
    from coevo.view.context import RunIndex
    from coevo.view.security import check_allow_host, exposure_warning

    try:
        allow_hosts = [check_allow_host(name) for name in allow_hosts]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allow-host") from None
    folder = import_file(file, out_dir, a_name, b_name, fresh=fresh)
    first, second = folder.names
    state = "made now" if folder.created else f"made earlier from the same rows, its {folder.labels} labels kept"
    labels = folder.path.with_name(folder.path.name.removesuffix(".annotate") + ".labels")
    for line in (f"{folder.path}: {folder.rows} prompts, {first} vs {second} (wins counted for {first}); {state}",
                 f"export the labels: coevo eval annotations {shlex.quote(str(folder.path))} "
                 f"--out {shlex.quote(str(labels))}"):
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    warning = exposure_warning(host)
    if warning:
        out.print(warning, highlight=False, markup=False)
    [ref] = RunIndex([folder.path]).runs()

    def announce(url: str) -> None:
        page = f"{url}runs/{quote(ref.id)}/annotate"
        out.print(f"coevo annotate: {page}  (Ctrl-C stops it)", highlight=False, markup=False, soft_wrap=True)
        if open_browser:
            import webbrowser

            webbrowser.open(page)

    serve([folder.path], host=host, port=port, allow_hosts=allow_hosts, announce=announce)
