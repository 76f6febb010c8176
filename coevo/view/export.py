"""report.html: the run page of `coevo view`, written as one self-contained, offline file.

The same context (`run_page_context`) and template (`run.html`) as the served page, rendered
with `static=True`: the stylesheet, the plot script and plotly.js are inlined, and links to
pages only the server has (samples, annotation, the runs list) are left out.
"""

from __future__ import annotations

from pathlib import Path

REPORT_FILE = "report.html"


def export_html(run_dir: str | Path) -> str:
    """The run page of `run_dir` as one HTML document that needs no server and no network."""
    from coevo.view.runinfo import read_algorithm
    from coevo.rundir.store import RunStore
    from coevo.view.context import RunRef, render_page
    from coevo.view.run_page import run_page_context

    run_dir = Path(run_dir)
    ref = RunRef(id=run_dir.resolve().name, path=run_dir, algorithm=read_algorithm(run_dir))
    store = RunStore(run_dir, read_only=True)
    try:
        context = run_page_context(store, ref)
    finally:
        store.close()
    return render_page("run.html", static=True, run=ref, **context)


def write_report(run_dir: str | Path) -> Path:
    """Write `report.html` into the run folder and return its path."""
    path = Path(run_dir) / REPORT_FILE
    path.write_text(export_html(run_dir), encoding="utf-8")
    return path
