"""What every viewer page needs: which run an id names, a read-only store, and rendering.

Pages are Jinja2 templates that extend `base.html`. Rendering is a plain function of a
template name and a context (`render_page`), so the same run page can be served by the app
and written as the static `report.html` (`static=True`: no server-only links, assets inlined).

Run ids are the run folder's path relative to the folder given to `coevo view`, with `/`
turned into `~` and anything else outside `[A-Za-z0-9._-]` into `-` (URL-safe, readable);
a clash between two given roots gets `-2`, `-3`, ...
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fastapi import Request
    from fastapi.responses import HTMLResponse

    from coevo.rundir.store import RunStore

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class RunRef:
    """One run folder the viewer serves: its URL id, its path and its algorithm."""

    id: str
    path: Path
    algorithm: str = "?"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._~-]", "-", text.replace("/", "~")).strip("-") or "run"


class RunIndex:
    """The run folders under the paths given to the viewer, found again on every `scan`
    (a run started while the viewer is open shows up on the next look at the runs list)."""

    def __init__(self, paths: list[Path]):
        self.paths = [Path(p) for p in paths]
        self._runs: dict[str, RunRef] = {}
        self.scan()

    def scan(self) -> list[RunRef]:
        from coevo.view.runinfo import find_runs, read_algorithm

        runs: dict[str, RunRef] = {}
        for root in self.paths:
            for run_dir in find_runs(root):
                rel = run_dir.relative_to(root) if run_dir != root else Path(root.resolve().name)
                base = _slug(rel.as_posix())
                run_id, n = base, 1
                while run_id in runs:
                    if runs[run_id].path.resolve() == run_dir.resolve():
                        break
                    n += 1
                    run_id = f"{base}-{n}"
                runs[run_id] = RunRef(run_id, run_dir, read_algorithm(run_dir))
        self._runs = runs
        return list(runs.values())

    def get(self, run_id: str) -> RunRef | None:
        if run_id not in self._runs:
            self.scan()
        return self._runs.get(run_id)

    def runs(self) -> list[RunRef]:
        return list(self._runs.values())


def _index(request: Request) -> RunIndex:
    return request.app.state.runs


def run_ref(request: Request, run_id: str) -> RunRef:
    """The run an id names; 404 (naming the runs list) for an id the viewer does not serve."""
    from fastapi import HTTPException

    ref = _index(request).get(run_id)
    if ref is None:
        raise HTTPException(status_code=404, detail=f"no run {run_id!r} here; see the runs list at /")
    return ref


def run_path(request: Request, run_id: str) -> Path:
    """The run folder of `run_id` (404 for an unknown id)."""
    return run_ref(request, run_id).path


@contextmanager
def reading(request: Request, run_id: str) -> Iterator[RunStore]:
    """`with reading(request, run_id) as store:` a read-only store of the run, closed after."""
    from fastapi import HTTPException

    from coevo.rundir.store import RunStore, StoreError

    path = run_path(request, run_id)
    try:
        store = RunStore(path, read_only=True)
    except (StoreError, FileNotFoundError) as exc:
        raise HTTPException(status_code=500, detail=str(exc)) from None
    try:
        yield store
    finally:
        store.close()


_ENV = None


def environment():
    """The Jinja2 environment of the viewer's templates (autoescaped HTML)."""
    global _ENV
    if _ENV is None:
        import jinja2

        _ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                                  autoescape=jinja2.select_autoescape(["html"]),
                                  trim_blocks=True, lstrip_blocks=True)
        _ENV.filters["num"] = format_number
    return _ENV


def format_number(value: Any, digits: int = 3) -> str:
    """Numbers for tables: integers as integers, floats to `digits` significant places."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:  # NaN
            return "—"
        if value == int(value) and abs(value) < 1e9:
            return str(int(value))
        return f"{value:.{digits}g}" if abs(value) < 1e-3 or abs(value) >= 1e4 else f"{value:.{digits}f}"
    return str(value)


def render_page(template: str, *, static: bool = False, **context: Any) -> str:
    """A page's HTML. `static`: for a file opened without the server (report.html): the
    stylesheet and scripts are inlined and links to server-only pages are left out."""
    assets = {}
    if static:
        # "</script" inside an inlined script would end it early: written as "<\/script" (same JS).
        assets = {"inline_css": (STATIC / "style.css").read_text(encoding="utf-8"),
                  "inline_js": _script((STATIC / "view.js").read_text(encoding="utf-8"))}
        if context.get("needs_plotly", True):
            assets["inline_plotly"] = _script(plotly_js())
    return environment().get_template(template).render(static=static, **assets, **context)


def _script(js: str) -> str:
    return js.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The page as a response. Pass `run_id=...` for a run's page: base.html then shows the
    run's nav (Overview, Samples, Annotate, + Proposals for rlac, + Skills for decoevo)."""
    from fastapi.responses import HTMLResponse

    if "run_id" in context and "run" not in context:
        context["run"] = run_ref(request, context["run_id"])
    return HTMLResponse(render_page(template, **context), status_code=status_code)


def plotly_js() -> str:
    """plotly.js as the `plotly` package bundles it (offline: no CDN)."""
    import plotly

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
