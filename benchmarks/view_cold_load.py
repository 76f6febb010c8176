"""A run page's cold load in `coevo view`: bytes on the wire and time, as a browser with an
empty cache fetches it (the page, then its stylesheet and scripts, plotly.js among them).

    .venv/bin/python benchmarks/view_cold_load.py [--runs DIR] [--repeat 5] [--source DIR]
                                                   [--json]

`coevo view` runs in a subprocess on 127.0.0.1 (by default over the RLAC replay run of the
viewer's tests, tests/view/replay_runs.py, built in a temporary folder: its page has plots, so
it loads plotly.js; `--runs` points it at a folder of runs instead). Each repeat is a new client (no connection, no cache kept) asking as
Chromium does (`Accept-Encoding: gzip, deflate, br`), the page first, then every `<script
src>` and stylesheet it names, one after another. Bytes are what crossed the socket
(compressed where the server compressed), time is from the page's request to the last
asset's last byte; the median over the repeats is printed with n and the range.

`--source DIR`: run the viewer from another copy of coevo's source (e.g. an older commit,
`git archive COMMIT | tar -x -C DIR`), to measure before and after a change on one machine.
Loopback time mostly measures the server (compressing, reading); on a real network the bytes
dominate: the printed "at 20 Mbit/s" is those bytes' transfer time alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: What Chromium sends; the server picks gzip from it.
BROWSER_ENCODINGS = "gzip, deflate, br"
#: A modest network link for the bytes-only estimate.
LINK_MBIT = 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_viewer(folder: Path, source: Path | None) -> tuple[subprocess.Popen, str]:
    """`coevo view FOLDER` in a subprocess (from `source` when given); its process and url."""
    port = _free_port()
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COEVO_QUIET": "1"}
    if source is not None:  # ahead of the installed (editable) coevo
        env["PYTHONPATH"] = os.pathsep.join([str(source), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    process = subprocess.Popen([sys.executable, "-m", "coevo.cli", "view", str(folder), "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                               env=env, cwd=tempfile.gettempdir())
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"coevo view exited: {process.stderr.read().decode(errors='replace')}")
        try:
            with urllib.request.urlopen(url + "/", timeout=2):
                return process, url
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("coevo view did not answer within 60 s")


def assets(page: str) -> list[str]:
    """The scripts and stylesheets a page loads, in order."""
    found = re.findall(r'<script[^>]+src="([^"]+)"', page) + re.findall(r'<link[^>]+href="([^"]+\.css)"', page)
    return list(dict.fromkeys(found))


def cold_load(url: str, path: str) -> dict[str, float]:
    """One cold load of `path`: bytes on the wire, bytes decoded, seconds, requests."""
    import httpx

    wire = decoded = requests = 0
    start = time.perf_counter()
    with httpx.Client(base_url=url, headers={"accept-encoding": BROWSER_ENCODINGS, "accept": "text/html"},
                      timeout=60) as client:
        todo = [path]
        while todo:
            response = client.get(todo.pop(0))
            response.raise_for_status()
            wire += response.num_bytes_downloaded
            decoded += len(response.content)
            requests += 1
            if requests == 1:
                todo += assets(response.text)
    return {"seconds": time.perf_counter() - start, "wire_bytes": wire, "decoded_bytes": decoded,
            "requests": requests}


def measure(url: str, path: str, repeat: int) -> dict:
    """`repeat` cold loads (after one unmeasured warm-up that fills the server's own caches,
    e.g. plotly.js read from disk): their medians and ranges."""
    cold_load(url, path)
    loads = [cold_load(url, path) for _ in range(repeat)]
    ms = [1000 * load["seconds"] for load in loads]
    wire = [load["wire_bytes"] for load in loads]
    return {"path": path, "n": repeat, "requests": loads[0]["requests"],
            "wire_bytes_median": statistics.median(wire), "wire_bytes_range": [min(wire), max(wire)],
            "decoded_bytes": loads[0]["decoded_bytes"],
            "ms_median": statistics.median(ms), "ms_range": [min(ms), max(ms)],
            "link_ms": statistics.median(wire) * 8 / (LINK_MBIT * 1e6) * 1000}


def _runs_folder(given: Path | None) -> Path:
    if given is not None:
        return given
    import logging

    logging.getLogger("coevo").setLevel(logging.ERROR)  # the replay run's own warnings are not the benchmark's
    sys.path.insert(0, str(HERE.parent / "tests" / "view"))
    from replay_runs import build_rlac

    folder = Path(tempfile.mkdtemp(prefix="coevo-cold-load-"))
    build_rlac(folder / "runs" / "rlac", folder / "inputs")
    return folder / "runs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, help="a folder of runs (default: an RLAC replay run)")
    parser.add_argument("--repeat", type=int, default=5, help="cold loads to take the median of")
    parser.add_argument("--source", type=Path, help="run the viewer from this copy of coevo's source")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    os.environ["COEVO_QUIET"] = "1"
    folder = _runs_folder(args.runs)
    process, url = start_viewer(folder, args.source)
    try:
        with urllib.request.urlopen(url + "/", timeout=30) as reply:
            run = re.search(r'href="(/runs/[^"/]+)"', reply.read().decode()).group(1)
        result = measure(url, run, args.repeat)
    finally:
        os.killpg(process.pid, 15)
        process.wait(timeout=15)
    result["source"] = str(args.source or "this checkout")
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"cold load of {result['path']} ({result['requests']} requests, {result['source']}), n={result['n']}:")
    print(f"  on the wire: {result['wire_bytes_median'] / 1e6:.3f} MB median (range "
          f"{result['wire_bytes_range'][0] / 1e6:.3f}-{result['wire_bytes_range'][1] / 1e6:.3f}); "
          f"decoded {result['decoded_bytes'] / 1e6:.3f} MB")
    print(f"  loopback time: {result['ms_median']:.0f} ms median (range {result['ms_range'][0]:.0f}-"
          f"{result['ms_range'][1]:.0f}); those bytes alone at {LINK_MBIT} Mbit/s: {result['link_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
