"""Session fixtures: the real one-process runs of tests/real_runs.py, each run once and
shared by the tests that look at it (end-to-end checks, and the two-process tests' baselines).
Read-only for those tests: a test that changes a run folder makes its own.

Also here: the disk a passing test used is given back as soon as it ends (see
`pytest_runtest_teardown`)."""

from __future__ import annotations

import shutil

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


# Why: the real-model tests write checkpoints (0.5 GB of weights, 1 GB of optimizer state
# each), and pytest keeps every test's tmp_path until the session ends: a whole run of the
# suite held over 13 GB at its end, and CI failed when its machine's disk filled up (ENOSPC
# while saving a checkpoint). A passing test's folder is no longer needed; a failing test's
# is kept for a look at what it left.
_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    # After the wrapped teardown every fixture that wrote into tmp_path (servers, runs) is done.
    result = yield
    folder = getattr(item, "funcargs", {}).get("tmp_path")
    if folder is not None and not item.stash.get(_FAILED, False):
        shutil.rmtree(folder, ignore_errors=True)
    return result
