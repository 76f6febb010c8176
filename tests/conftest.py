"""Session fixtures: the real one-process runs of tests/real_runs.py, each run once and
shared by the tests that look at it (end-to-end checks on the embedded model), and the tiny
random-initialised model with its own one-process runs (the two-process tests' row-for-row
baselines, the training glue's tests). Read-only for those tests: a test that changes a run
folder or the model makes its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from real_runs import (
    RLAC_CODE_TEST_SIZE,
    TAISCORE_TEST_SIZE,
    CliRun,
    build_tiny_llama,
    rlac_code_on_tiny_llama,
    run_coevo,
    taiscore_on_tiny_llama,
)


@pytest.fixture(scope="session")
def taiscore_tiny_run(tmp_path_factory) -> CliRun:
    """examples/taiscore_tiny.yaml at test size, one process (`coevo run` as a user runs it)."""
    return run_coevo("taiscore_tiny.yaml", tmp_path_factory.mktemp("taiscore_tiny") / "run", TAISCORE_TEST_SIZE)


@pytest.fixture(scope="session")
def rlac_code_tiny_run(tmp_path_factory) -> CliRun:
    """examples/rlac_code_tiny.yaml at test size, one process."""
    return run_coevo("rlac_code_tiny.yaml", tmp_path_factory.mktemp("rlac_code_tiny") / "run", RLAC_CODE_TEST_SIZE)


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory) -> Path:
    """The tiny random-initialised Llama (tests/real_runs.py): `hf:{tiny_llama}` loads it.
    Read-only: a test that trains it trains a loaded copy, and saves under its own tmp_path."""
    return build_tiny_llama(tmp_path_factory.mktemp("tiny_llama") / "model")


@pytest.fixture(scope="session")
def taiscore_tiny_llama_run(tmp_path_factory, tiny_llama) -> CliRun:
    """examples/taiscore_tiny.yaml at test size on the tiny random model, one process."""
    return run_coevo("taiscore_tiny.yaml", tmp_path_factory.mktemp("taiscore_tiny_llama") / "run",
                     taiscore_on_tiny_llama(tiny_llama))


@pytest.fixture(scope="session")
def rlac_code_tiny_llama_run(tmp_path_factory, tiny_llama) -> CliRun:
    """examples/rlac_code_tiny.yaml at test size on the tiny random model, one process."""
    return run_coevo("rlac_code_tiny.yaml", tmp_path_factory.mktemp("rlac_code_tiny_llama") / "run",
                     rlac_code_on_tiny_llama(tiny_llama))
