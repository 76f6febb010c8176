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
