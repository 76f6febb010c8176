"""The terminal the commands print to: the two rich consoles, the help's style, tables,
headings and a run's warnings. Library modules make the text (coevo/view/runs_display.py and the
like); it is printed here."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

# Plain (click-style) help: flags read as flags (`--fresh`, with no `<bool>` after it), and
# help piped into a file or grep is text, not boxes. Subcommands inherit `-h` from the root.
HELP_SETTINGS = {"rich_markup_mode": None, "no_args_is_help": True}
#: What every console of coevo's is told: most of what it prints is the user's (names, specs,
#: paths, a model's output), and rich would rewrite it: `:b:` in `A:B:C` as an emoji, `[bold]`
#: in a model's answer as a style, a number or a path recoloured. So nothing is read in text
#: unless a call asks (`markup=True`, with the user's part passed through `escape`).
VERBATIM = {"emoji": False, "markup": False, "highlight": False}
out = Console(soft_wrap=True, **VERBATIM)  # long paths stay on one line (copyable, greppable)
err = Console(stderr=True, soft_wrap=True, **VERBATIM)


def print_table(table: dict, title: str, define: bool = True) -> None:
    """A rich table. On a terminal long cells fold to fit the window; piped into a file, grep
    or a CI log, the table takes the width its cells need, so no name or path breaks mid-word."""
    from rich.measure import Measurement

    from coevo.eval.metric_defs import definitions_note
    from coevo.view.runs_display import cell_text

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
    # What each metric in the table means (coevo/eval/metric_defs.py), as the viewer's hover says it.
    if define:
        view.caption = definitions_note([str(c) for c in columns] + [row[0] for row in cells]) or None
    view.caption_justify = "left"
    if not piped:
        out.print(view)
        return
    natural = Measurement.get(out, out.options.update(max_width=100_000), view).maximum
    # A console of that width (Console.print's own `width` cannot exceed the console's).
    Console(width=max(natural, out.width), soft_wrap=True, **VERBATIM).print(view)


def print_rows(rows: list[dict], title: str, define: bool = True) -> None:
    """`print_table` of rows that share the first row's columns."""
    print_table({"columns": list(rows[0]), "rows": rows}, title=title, define=define)


def print_plain(lines) -> None:
    """Lines as they are: no rich markup read in them, no highlighting."""
    for line in lines:
        out.print(line, highlight=False, markup=False)


def heading(text: str) -> None:
    """A rule with `text` in it; a heading too long for the width is printed whole instead
    (a rule would cut it short with an ellipsis)."""
    if len(text) + 6 <= out.width:
        out.rule(Text(text))  # a Text, not a str: a rule's title is never read as markup
    else:
        out.print(f"── {text}", markup=False, highlight=False)


def print_warnings_of(run_dir: Path) -> None:
    """`print_run_warnings` for a run folder, its store opened read-only for the look."""
    from coevo.rundir.store import RunStore

    store = RunStore(run_dir, read_only=True)
    try:
        print_run_warnings(store)
    finally:
        store.close()


def print_run_warnings(store) -> None:
    """The run page's warnings, a line each: the judge audit's, numbers from too few
    items, cut-off generations, Adam-first-step weight changes, and the rest."""
    from coevo.view.warnings import run_warnings

    for finding in run_warnings(store):
        out.print(f"[yellow]warning ({escape(finding.kind)}):[/] {escape(finding.text)}", markup=True)
