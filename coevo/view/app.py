"""`coevo view`: a local web app over run folders (FastAPI + Jinja2); it writes only annotation labels.

URLs: `/` the runs list; `/runs/{run_id}` a run's page (the same page report.html holds);
`/runs/{run_id}/report.html` that page as the self-contained file; `/static/...` the
stylesheet, the plot script and plotly.js (from the `plotly` package: no CDN, works
offline). The samples, annotation, RLAC proposals and DecoEvo skills pages come from their
own modules (`coevo.view.samples`, `annotate`, `rlac`, `decoevo`), each a `router`.

Responses go out gzip-compressed to a browser that accepts it: pages and the small assets
through Starlette's GZipMiddleware, plotly.js (megabytes, the bulk of a cold page load)
compressed once and kept, since compressing it on every request would cost more time than
sending it saves on a local link (benchmarks/view_cold_load.py measures the load).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware

from coevo.view.context import STATIC, RunIndex, plotly_js, reading, render, run_ref

if TYPE_CHECKING:
    from coevo.view.annotate_conditions import ComparisonSpec

#: Responses smaller than this go out as they are: a gzip header and checksum would outweigh
#: what compressing a few hundred bytes saves.
GZIP_MINIMUM_BYTES = 1024
#: zlib's level for pages, compressed on every request: 6 gives nearly all of 9's saving on
#: HTML at a fraction of its time. plotly.js, compressed once, gets the smallest (9).
GZIP_LEVEL = 6
#: Modules that add pages, each exposing `router` (an APIRouter); a missing one is skipped.
PAGE_MODULES = ("coevo.view.samples", "coevo.view.annotate", "coevo.view.rlac", "coevo.view.decoevo",
                "coevo.view.compare")


def create_app(paths: list[Path], comparisons: ComparisonSpec | None = None, *,
               allowed_hosts: Sequence[str] | None = None) -> FastAPI:
    """The viewer over `paths`: each a run folder or a folder of run folders (two levels deep).
    `comparisons`: the conditions its Annotate page offers to compare (default: the TAIScore
    paper's Table 2 rows a run has; coevo.view.annotate_pairs). `allowed_hosts`: the Host names
    it answers (coevo.view.security; `serve`, hence `coevo view`, always passes some); None: any
    Host (an app mounted elsewhere, a test client). Writes need the same origin or the token."""
    from coevo.version import __version__
    from coevo.view.security import Guard, GuardMiddleware

    missing = [str(p) for p in paths if not Path(p).is_dir()]
    if missing:
        raise FileNotFoundError(f"no such folder: {', '.join(missing)}")
    app = FastAPI(title="coevo view", version=__version__,
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.runs = RunIndex([Path(p) for p in paths])
    app.state.comparisons = comparisons

    @app.get("/", response_class=HTMLResponse)
    def runs_list(request: Request) -> HTMLResponse:
        from coevo.eval.metric_defs import describe
        from coevo.view.runinfo import format_duration, run_info

        index: RunIndex = request.app.state.runs
        rows = [(ref, run_info(ref.path)) for ref in index.scan()]
        rows.sort(key=lambda row: row[1].started or "", reverse=True)  # newest first; never started last
        columns: list[str] = []
        for _, info in rows:
            columns.extend(k for k in info.headline if k not in columns)
        return render(request, "runs.html", rows=rows, headline_columns=columns, roots=index.paths,
                      format_duration=format_duration, describe=describe, needs_plotly=False)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str) -> HTMLResponse:
        from coevo.view.run_page import run_page_context

        ref = run_ref(request, run_id)
        with reading(request, run_id) as store:
            context = run_page_context(store, ref)
        return render(request, "run.html", run=ref, run_id=run_id, active="overview", **context)

    @app.get("/runs/{run_id}/report.html", response_class=HTMLResponse)
    def run_report(request: Request, run_id: str) -> HTMLResponse:
        from coevo.view.export import export_html

        return HTMLResponse(export_html(run_ref(request, run_id).path))

    app.get("/static/plotly.min.js")(plotly_script)
    app.state.guard = Guard(allowed_hosts)
    # Added before the guard, so it runs inside it: a refused request is never compressed.
    app.add_middleware(GZipMiddleware, minimum_size=GZIP_MINIMUM_BYTES, compresslevel=GZIP_LEVEL)
    app.add_middleware(GuardMiddleware, guard=app.state.guard)
    _error_pages(app)
    for name in PAGE_MODULES:
        if importlib.util.find_spec(name) is not None:
            app.include_router(importlib.import_module(name).router)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


#: A page's heading per HTTP status (others: "Something went wrong").
HEADINGS = {400: "Bad request", 404: "Not found", 405: "Not allowed", 409: "Conflict", 500: "The run cannot be read"}


def _error_pages(app: FastAPI) -> None:
    """Errors as pages a person reads (the problem in words and a way back) for a browser;
    JSON, as FastAPI gives it, for a script (one that does not ask for text/html)."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException as StarletteHTTPException

    def page(request: Request, status: int, message: str, detail: object) -> Response:
        if "text/html" not in request.headers.get("accept", ""):
            return JSONResponse({"detail": detail}, status_code=status)
        # Inside the base layout, with the run's nav where the address names a run the viewer serves.
        parts = request.url.path.split("/")
        named = request.path_params.get("run_id") or (parts[2] if len(parts) > 2 and parts[1] == "runs" else None)
        run = request.app.state.runs.get(named) if named else None
        response = render(request, "error.html", status=status, message=message, run=run,
                          heading=HEADINGS.get(status, "Something went wrong"), needs_plotly=False)
        response.status_code = status
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"There is no page at {request.url.path}."
        return page(request, exc.status_code, message, exc.detail)

    @app.exception_handler(RequestValidationError)
    async def bad_value(request: Request, exc: RequestValidationError) -> Response:
        # "/samples/abc": name the part of the address and what it must be, not pydantic's dump.
        parts = []
        for error in exc.errors():
            where = " ".join(str(p) for p in error.get("loc", ())[1:]) or "the request"
            parts.append(f"{where} must be {_expected(error)}, not {error.get('input')!r}")
        return page(request, 400, f"{request.url.path}: " + "; ".join(parts) + ".", exc.errors())


def _expected(error: dict) -> str:
    kind = str(error.get("type", ""))
    if kind.startswith("int"):
        return "a whole number"
    if kind.startswith("float"):
        return "a number"
    return error.get("msg", "valid").lower()


_PLOTLY: str | None = None
_PLOTLY_GZ: bytes | None = None


def _plotly_cached() -> str:
    global _PLOTLY
    if _PLOTLY is None:
        _PLOTLY = plotly_js()
    return _PLOTLY


def _plotly_gzipped() -> bytes:
    """plotly.js gzip-compressed, once per process (mtime 0: the same bytes every time)."""
    import gzip

    global _PLOTLY_GZ
    if _PLOTLY_GZ is None:
        _PLOTLY_GZ = gzip.compress(_plotly_cached().encode("utf-8"), compresslevel=9, mtime=0)
    return _PLOTLY_GZ


def plotly_script(request: Request) -> Response:
    """plotly.js, gzip-compressed for a client that accepts it (compressed once, kept)."""
    headers = {"Cache-Control": "max-age=86400", "Vary": "Accept-Encoding"}
    if accepts_gzip(request.headers.get("accept-encoding", "")):
        # Marked as encoded, GZipMiddleware passes it through untouched.
        return Response(_plotly_gzipped(), media_type="application/javascript",
                        headers={**headers, "Content-Encoding": "gzip"})
    return Response(_plotly_cached(), media_type="application/javascript", headers=headers)


def accepts_gzip(accept_encoding: str) -> bool:
    """Whether a client's Accept-Encoding asks for gzip, read as GZipMiddleware reads it (the
    word present), so that plotly.js and the pages are compressed for the same clients."""
    return "gzip" in accept_encoding


def serve(paths: list[Path], host: str = "127.0.0.1", port: int = 8000,
          announce=print, comparisons: ComparisonSpec | None = None, allow_hosts: Sequence[str] = ()) -> None:
    """Serve the viewer until Ctrl-C. The socket is bound first, so a port in use is a clear
    error and `port=0` picks a free one; `announce(url)` is called once it is listening.
    `comparisons`: as create_app's. It answers only requests addressed to host:port, the
    loopback names with its port and `allow_hosts` (coevo.view.security.served_hosts)."""
    import socket

    import uvicorn

    from coevo.view.security import served_hosts

    sock = _bind(host, port)
    try:
        bound = sock.getsockname()[1]
        app = create_app(paths, comparisons, allowed_hosts=served_hosts(host, bound, allow_hosts))
        shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        announce(f"http://{shown}:{bound}/")
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down cleanly, then passes Ctrl-C on: that is the way out
        pass
    finally:
        sock.close()


def _bind(host: str, port: int):
    """A socket bound to host:port; a port in use or an address that cannot be bound is a
    ConfigError naming --port / --host."""
    import errno
    import socket

    from coevo.core.strict import ConfigError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is in use; pass another --port (or --port 0 for any free one)"
                              ) from None
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror}); pass another --host or --port") from None
    return sock
