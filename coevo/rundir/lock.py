"""One writer per run folder: an exclusive lock held for as long as a run lives.

The lock is `run.lock` in the run folder, held with `flock`, which the operating system
releases when the holding process dies (however it dies, `kill -9` included). So a lock
that can be taken is never stale, and one that cannot is held by a live process: the
file's content (PID, host, start time, command) names it. A lock left by a process that
died is taken over and said so in the log.

flock is advisory and local: it keeps two coevo processes on one machine (or one node of a
cluster) apart. Two hosts writing to one run folder on a network file system are not
guaranteed to see each other's lock; the holder's host in the message tells them apart.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from coevo.core.strict import ConfigError

LOCK_FILE = "run.lock"
log = logging.getLogger(__name__)


class RunFolderBusy(ConfigError):
    """Another live process holds the run folder (a user error: exit 2, one line)."""


class RunLock:
    """`with RunLock(folder):` — the folder is this process's until the block ends."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / LOCK_FILE
        self._file: Any = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read(handle)
            handle.close()
            raise RunFolderBusy(
                f"{self.path.parent} is in use by PID {holder.get('pid', '?')} on {holder.get('host', '?')} "
                f"(since {holder.get('since', '?')}: {holder.get('command', '?')}); wait for it to end, "
                "stop it, or choose another --out") from None
        previous = _read(handle)
        if previous:
            log.warning("took over the lock of %s: its holder, PID %s on %s, is no longer running",
                        self.path.parent, previous.get("pid", "?"), previous.get("host", "?"))
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "since": time.strftime("%Y-%m-%d %H:%M:%S"),
                                 "command": " ".join(sys.argv)[:300]}))
        handle.flush()
        self._file = handle

    def release(self) -> None:
        """Empty the file (a released lock names no holder) and let it go."""
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            self._file.flush()
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


def _read(handle: Any) -> dict[str, Any]:
    handle.seek(0)
    try:
        return json.loads(handle.read() or "{}")
    except json.JSONDecodeError:
        return {}


def holder(run_dir: str | Path) -> dict[str, Any] | None:
    """Who holds the folder's lock now (PID, host, ...), or None when no live process does."""
    path = Path(run_dir) / LOCK_FILE
    if not path.is_file():
        return None
    with path.open("r", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(handle) or {"pid": "?"}
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def run_status(run_dir: str | Path, stored: str | None) -> str:
    """A run's status for people: the stored one, except that a run marked `running` whose
    process is gone (killed, or its machine preempted) is `resumable`."""
    if stored == "running" and holder(run_dir) is None:
        return "resumable"
    return stored or "?"
