"""Session fixtures: the real one-process runs of tests/real_runs.py, each run once and
shared by the tests that look at it (end-to-end checks, and the two-process tests' baselines).
Read-only for those tests: a test that changes a run folder makes its own."""

from __future__ import annotations

import pytest
from real_runs import RLAC_CODE_TEST_SIZE, TAISCORE_TEST_SIZE, CliRun, run_coevo


@pytest.fixture(scope="session")
def taiscore_tiny_run(tmp_path_factory) -> CliRun:
    """examples/taiscore_tiny.yaml at test size, one process (`coevo run` as a user runs it)."""
    return run_coevo("taiscore_tiny.yaml", tmp_path_factory.mktemp("taiscore_tiny") / "run", TAISCORE_TEST_SIZE)


@pytest.fixture(scope="session")
def rlac_code_tiny_run(tmp_path_factory) -> CliRun:
    """examples/rlac_code_tiny.yaml at test size, one process."""
    return run_coevo("rlac_code_tiny.yaml", tmp_path_factory.mktemp("rlac_code_tiny") / "run", RLAC_CODE_TEST_SIZE)


#: Session fixtures too costly to build once per worker. `make test` runs the suite in two
#: processes (pytest-xdist, `--dist loadgroup`): every test that uses one of these lands on
#: the worker that builds it, once. Every other test goes with its module, so a module's
#: own fixtures are built once too.
SHARED_FIXTURES = {"taiscore_tiny_run": "real_runs", "rlac_code_tiny_run": "real_runs",
                   "run_folders": "viewer", "runs_root": "viewer", "viewer": "viewer", "browser": "viewer"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        shared = sorted({SHARED_FIXTURES[name] for name in item.fixturenames if name in SHARED_FIXTURES})
        item.add_marker(pytest.mark.xdist_group(shared[0] if shared else item.nodeid.split("::")[0]))
