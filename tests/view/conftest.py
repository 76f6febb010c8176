"""Fixtures for the viewer's browser tests: real run folders, `coevo view` as a user starts
it, and headless Chromium (Debian's `chromium` + `chromium-driver`, through Selenium).

- `run_folders`: controls, RLAC and DecoEvo runs from replay models (see replay_runs.py),
  built once per session under one folder of runs;
- `viewer`: `coevo view RUNS --port P` in a subprocess on 127.0.0.1, waited for until it
  answers, stopped by its PID at the end (see view_harness.py);
- `browser`: a headless Chromium; the tests skip, naming `make browser`, where it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from replay_runs import build_all
from view_harness import Viewer, browser_missing, start_browser


@pytest.fixture(scope="session")
def run_folders(tmp_path_factory) -> dict[str, Path]:
    """{"controls" | "rlac" | "decoevo": run folder}, all in one folder of runs."""
    return build_all(tmp_path_factory.mktemp("viewer_runs"))


@pytest.fixture(scope="session")
def runs_root(run_folders) -> Path:
    """The folder of runs `coevo view` is pointed at."""
    roots = {path.parent for path in run_folders.values()}
    assert len(roots) == 1, roots
    return roots.pop()


@pytest.fixture(scope="session")
def viewer(runs_root, tmp_path_factory):
    """`coevo view RUNS --port P`, running for the whole session."""
    server = Viewer(runs_root, tmp_path_factory.mktemp("viewer_log") / "view.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (skips, naming `make browser`, where it is not installed; fails
    instead under CI, where `make test` installs it: a skip there would hide a broken install)."""
    why = browser_missing()
    if why:
        if os.environ.get("CI"):
            pytest.fail(f"CI: {why}")
        pytest.skip(why)
    driver = start_browser()
    yield driver
    driver.quit()
