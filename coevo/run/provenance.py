"""Where a run's numbers came from: coevo's version and source commit, when it ran, on what.

Stored in the run store's meta "provenance" and in summary.json "provenance":

    {"coevo_version", "git_commit" (None when coevo was installed from a wheel),
     "git_dirty" (uncommitted changes in the source checkout; None without one),
     "started", "finished" (ISO 8601, UTC; finished None while running or after a crash),
     "duration_s" (time spent running, summed over the processes of a resumed run),
     "hardware": {"platform", "python", "torch", "cpus", "memory_gb", "gpus": [names]}}
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from coevo.version import __version__


def iso(timestamp: float | None) -> str | None:
    """A UNIX time as ISO 8601 in UTC (seconds)."""
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat(timespec="seconds")


def source_checkout() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the git checkout coevo runs from, or (None, None): installed from a
    wheel, git missing, or a checkout that is not coevo's own (a virtual environment inside
    some other repository must not lend that repository's commit)."""
    package = Path(__file__).resolve().parents[1]  # this module sits in coevo/run/
    try:
        top = _git(package, "rev-parse", "--show-toplevel")
        if top is None or Path(top).resolve() / "coevo" != package:
            return None, None
        commit = _git(package, "rev-parse", "HEAD")
        status = _git(package, "status", "--porcelain", "--untracked-files=no")
    except OSError:  # no git binary
        return None, None
    return commit, (None if status is None else bool(status))


def _git(cwd: Path, *args: str) -> str | None:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10)
    return done.stdout.strip() if done.returncode == 0 else None


def hardware() -> dict[str, Any]:
    """The machine: OS, Python, torch (None when not installed), CPUs, memory (GB), GPU names."""
    torch_version, gpus = None, []
    try:
        import torch

        torch_version = torch.__version__
        if torch.cuda.is_available():
            gpus = _gpu_names(torch)
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    return {"platform": platform.platform(), "python": sys.version.split()[0], "torch": torch_version,
            "cpus": os.cpu_count(), "memory_gb": _memory_gb(), "gpus": gpus}


def _gpu_names(torch: Any) -> list[str]:
    """GPU names without starting CUDA in this process: asking torch for a name initialises
    CUDA, and a process that did so before a backend forks its workers (vLLM) breaks them.
    nvidia-smi answers from outside; torch only where CUDA is running already."""
    if torch.cuda.is_initialized():
        return [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        done = None
    if done is not None and done.returncode == 0 and done.stdout.strip():
        return [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return [f"cuda:{i}" for i in range(torch.cuda.device_count())]


def _memory_gb() -> float | None:
    try:
        return round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):  # not POSIX
        return None


def provenance(started: float, *, finished: float | None = None, duration_s: float | None = None,
               earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """The provenance record of a run that started at `started` (UNIX time). `earlier`: the
    record an earlier process of the same run left (its running time is added)."""
    commit, dirty = source_checkout()
    record = {"coevo_version": __version__, "git_commit": commit, "git_dirty": dirty,
              "started": None, "finished": None, "duration_s": None, "hardware": hardware()}
    return timed(record, started, finished=finished, duration_s=duration_s, earlier=earlier)


def timed(record: dict[str, Any], started: float, *, finished: float | None = None,
          duration_s: float | None = None, earlier: dict[str, Any] | None = None) -> dict[str, Any]:
    """`record` (from `provenance`) with its times set: what changes while a run goes on, so
    the commit and the hardware are looked up once per process."""
    before = float((earlier or {}).get("duration_s") or 0.0)
    return {**record, "started": iso(started), "finished": iso(finished),
            "duration_s": None if duration_s is None else round(before + duration_s, 1)}
