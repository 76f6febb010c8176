"""Isolation detection, refusal without isolation, the --unsafe-exec fallback, run_many."""

import subprocess
import signal

import pytest

from coevo.validators import isolation
from coevo.validators import sandbox as sbx
from coevo.validators.sandbox import Job, Limits, Sandbox, SandboxUnavailable


def test_refuses_without_isolation_unless_unsafe(monkeypatch):
    monkeypatch.setattr(sbx, "detect_isolation", lambda python=None, kinds=(): (None, "bwrap is not installed"))
    with pytest.raises(SandboxUnavailable) as info:
        Sandbox()
    message = str(info.value)
    assert "bwrap is not installed" in message and "--unsafe-exec" in message
    assert "apt-get install -y bubblewrap" in message
    assert Sandbox(unsafe_exec=True).isolation == "unsafe"


def test_isolation_none_needs_unsafe_exec():
    with pytest.raises(SandboxUnavailable):
        Sandbox(isolation="none")
    with pytest.raises(ValueError):
        Sandbox(isolation="docker", unsafe_exec=True)


def test_detection_names_every_reason(monkeypatch):
    monkeypatch.setattr(isolation.shutil, "which", lambda name: None)
    isolation._detect.cache_clear()
    try:
        kind, why = isolation.detect_isolation("/usr/bin/python3")
    finally:
        isolation._detect.cache_clear()
    assert kind is None and "bwrap" in why and "unshare" in why


@pytest.fixture(scope="module")
def unsafe():
    return Sandbox(Limits(wall_s=5), isolation="none", unsafe_exec=True)


def test_unsafe_mode_still_scrubs_env_bounds_time_and_survives_parent_kill(unsafe, monkeypatch):
    monkeypatch.setenv("COEVO_TEST_SECRET_KEY", "sk-hidden")
    res = unsafe.run("import os; print(sorted(os.environ))")
    assert res.status == "ok" and "COEVO_TEST_SECRET_KEY" not in res.stdout
    res = unsafe.run("while True: pass", limits=Limits(wall_s=1))
    assert res.status in ("timeout", "killed")
    bystander = subprocess.Popen(["sleep", "60"])  # in coevo's process group
    try:
        res = unsafe.run("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint('x')")
        assert res.status == "killed" and bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
    res = unsafe.run("x = bytearray(4 * 1024**3)", limits=Limits(memory_mb=256))
    assert "MemoryError" in res.stderr


@pytest.mark.parametrize("mode", ["auto", "none"])
def test_run_many_keeps_order_and_counts(mode):
    if mode == "auto" and sbx.detect_isolation()[0] is None:
        pytest.skip("no isolation here")
    box = Sandbox(isolation=mode, unsafe_exec=mode == "none", workers=2)
    jobs = [Job(f"print({i} * {i})") for i in range(8)] + [Job("import sys; sys.exit(3)"),
                                                           Job("print(input())", stdin="hi\n")]
    seen = []
    results = box.run_many(jobs, on_done=lambda i, r: seen.append(i))
    assert [r.stdout.strip() for r in results[:8]] == [str(i * i) for i in range(8)]
    assert results[8].status == "error" and results[8].returncode == 3
    assert results[9].stdout == "hi\n"
    assert sorted(seen) == list(range(10)) and box.executions == 10


def test_a_signal_death_is_reported_as_killed(unsafe):
    res = unsafe.run(f"import os\nos.kill(os.getpid(), {int(signal.SIGSEGV)})")
    assert res.status == "killed"
