"""`coevo report RUN`: the run's report.html, a static export of its `coevo view` page.

One self-contained file (stylesheet, scripts and plotly.js inlined), readable offline and
identical in content to the page the viewer serves: see `coevo.view.export`.
"""

from __future__ import annotations

from pathlib import Path

from coevo.view.export import REPORT_FILE, export_html, write_report

__all__ = ["REPORT_FILE", "build_report", "export_html"]


def build_report(run_dir: str | Path) -> Path:
    """Write `report.html` into the run folder and return its path (the runner calls this
    when a run finishes; `coevo report` calls it on demand)."""
    return write_report(run_dir)
