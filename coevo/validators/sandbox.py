"""Run untrusted, model-written Python where it cannot hurt the machine or coevo.

Layers, outermost first (each one closes a hole the others leave; 2 and 3 are built in
`coevo.validators.isolation`):

1. **A separate process in its own session.** coevo never forks the candidate directly:
   it starts `bwrap` (the supervisor) with ``start_new_session=True``, so a candidate that
   signals its parent or its process group reaches the supervisor at most, never coevo.
2. **A private user id** (when coevo runs as root): a fresh uid per run, so the kernel's
   per-user process limit (RLIMIT_NPROC) bounds *this* sandbox, and root's exemption from
   that limit does not apply.
3. **bubblewrap namespaces**: new PID namespace (the candidate sees only its own tree; when
   its init dies the kernel kills every process in it, ``setsid`` grandchildren included),
   new network namespace (no interface but a down loopback: no network at all), a mount
   namespace with ``/usr`` read-only, a size-bounded tmpfs as the only writable place, no
   view of ``/root``, ``/home`` or the caller's files, and an empty environment.
4. **rlimits** set inside the sandbox before the candidate runs: CPU seconds, address space,
   file size, process count, open files, no core dumps.
5. **A wall clock** in coevo: past it the whole supervisor session is SIGKILLed, which takes
   the PID namespace, and so the whole tree, with it.

Where no isolation works, :class:`Sandbox` refuses with :class:`SandboxUnavailable` unless
``unsafe_exec=True`` (CLI ``--unsafe-exec`` or ``COEVO_UNSAFE_EXEC=1``; a config's
``unsafe_exec: true`` alone is refused), which keeps layers 1, 4 and 5 only, with a child
subreaper as the supervisor so that processes the candidate started die with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Literal

from coevo.validators.isolation import (
    KINDS,
    bwrap_argv,
    detect_isolation,
    private_uid,
    sandbox_python,
    unshare_argv,
)

Status = Literal["ok", "error", "timeout", "killed"]

INSTALL_HINT = (
    "install bubblewrap (`apt-get install -y bubblewrap`; `make install` does it), or pass "
    "--unsafe-exec (or set COEVO_UNSAFE_EXEC=1) to run model-written code WITHOUT isolation"
)


class SandboxUnavailable(RuntimeError):
    """No process isolation works on this machine and unsafe execution was not allowed."""


@dataclass(frozen=True)
class Limits:
    """Resource bounds of one sandboxed run. CPU defaults to the wall limit plus one second."""

    wall_s: float = 10.0
    cpu_s: int | None = None
    memory_mb: int = 512  # address space per process
    fsize_mb: int = 16  # largest file the program may write, stdout/stderr included
    nproc: int = 12  # processes + threads of the sandbox user
    nofile: int = 256
    tmp_mb: int = 64  # size of the writable tmpfs (bubblewrap only)
    output_bytes: int = 1_000_000  # how much of stdout/stderr comes back


@dataclass
class ExecResult:
    """What one sandboxed run did. `status`: ok (exit 0), error (non-zero exit),
    timeout (wall clock), killed (ended by a signal, e.g. CPU or file-size limit)."""

    status: Status
    stdout: str = ""
    stderr: str = ""
    returncode: int | None = None
    seconds: float = 0.0
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Job:
    """One program to run: Python source, bytes for stdin, optional per-job limits, and a
    `secret` (a verdict marker, coevo.validators.harness) given on stdin instead."""

    program: str
    stdin: str = ""
    limits: Limits | None = None
    argv: tuple[str, ...] = field(default_factory=tuple)
    secret: str = ""


__all__ = ["KINDS", "ExecResult", "Job", "Limits", "Sandbox", "SandboxUnavailable", "detect_isolation"]


# Runs inside the sandbox (trusted code): sets the rlimits, then runs the candidate as
# __main__. Limits are set here rather than in a preexec_fn because preexec_fn is not
# thread-safe and run_many starts sandboxes from several threads.
_HARNESS = r"""
import resource, sys, json
cfg = json.loads(sys.argv[1])
for name, value in cfg["rlimits"].items():
    try:
        hard = resource.getrlimit(getattr(resource, name))[1]
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)  # lowering a limit always works; raising it never would
        resource.setrlimit(getattr(resource, name), (value, value))
    except (ValueError, OSError) as exc:
        sys.stderr.write("sandbox: cannot set %s: %s\n" % (name, exc)); sys.exit(70)
if cfg.get("cwd"):
    import os; os.chdir(cfg["cwd"]); del os
path = cfg["program"]
sys.argv = [path] + cfg["argv"]
with open(path) as fh:
    source = fh.read()
del cfg, fh, json, resource
sys.path.insert(0, ".")
exec(compile(source, path, "exec"), {"__name__": "__main__", "__file__": path,
                                     "__builtins__": __builtins__})
"""


def _rlimits(lim: Limits) -> dict[str, int]:
    cpu = lim.cpu_s if lim.cpu_s is not None else int(lim.wall_s) + 1
    return {
        "RLIMIT_CPU": max(1, cpu),
        "RLIMIT_AS": lim.memory_mb * 2**20,
        "RLIMIT_FSIZE": lim.fsize_mb * 2**20,
        "RLIMIT_NPROC": lim.nproc,
        "RLIMIT_NOFILE": lim.nofile,
        "RLIMIT_CORE": 0,
    }


_UNSAFE_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}

#: What allows unsafe execution besides the library argument: `coevo run --unsafe-exec` sets
#: it, a shell may export it; a config file alone never can (coevo.algorithms.rlac).
UNSAFE_ENV_VAR = "COEVO_UNSAFE_EXEC"


def unsafe_allowed() -> bool:
    """Whether the command line (--unsafe-exec) or the environment allowed unsafe execution."""
    return os.environ.get(UNSAFE_ENV_VAR, "") == "1"


# Unsafe mode's supervisor, between coevo and the candidate (trusted code). A child
# subreaper: every process the candidate starts that loses its parent, `setsid` daemons
# included, becomes the supervisor's child; when the candidate ends, or coevo sends SIGTERM
# at the wall clock, it SIGKILLs every child it has until none is left. (A candidate that
# kills the supervisor itself can still leave orphans behind: bwrap's PID namespace cannot
# be escaped that way; this mode is unsafe.)
_SUPERVISOR = r"""
import ctypes, os, signal, sys, time
if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) != 0:  # PR_SET_CHILD_SUBREAPER
    sys.stderr.write("sandbox: cannot become a child subreaper\n"); os._exit(70)
class Stop(Exception):
    pass
def stop(*_):
    raise Stop
signal.signal(signal.SIGTERM, stop)
child = os.fork()
if child == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.execv(sys.argv[1], sys.argv[1:])
def children():
    me, found = str(os.getpid()), []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[1] == me:
                found.append(int(name))
    return found
def kill_all():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while True:
        pids = children()
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.005)
code = 128 + signal.SIGTERM
try:
    while True:
        pid, status = os.waitpid(-1, 0)  # reaps adopted orphans too
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            break
except (Stop, ChildProcessError):
    pass
kill_all()
os._exit(128 - code if code < 0 else code)
"""

def _wait_unreaped(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` s for `pid` to exit WITHOUT reaping it; True when it exited.
    A pidfd wakes us the moment it exits; older kernels fall back to polling waitid."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        fd = None
    if fd is not None:
        try:
            ready, _, _ = select.select([fd], [], [], max(0.0, timeout))
            return bool(ready)
        finally:
            os.close(fd)
    deadline, delay = time.monotonic() + timeout, 0.0005
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT | os.WNOHANG) is not None:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def _read_capped(path: Path, cap: int) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError:
        return ""
    text = data[:cap].decode("utf-8", errors="replace")
    return text + ("\n[... output truncated]" if len(data) > cap else "")


def _write_job(tmp: Path, program: str, stdin: str) -> Path:
    """Write the program and its stdin into `tmp`/job, readable by the sandbox's own uid."""
    jobdir = tmp / "job"
    jobdir.mkdir()
    (jobdir / "main.py").write_text(program)
    (jobdir / "stdin.txt").write_text(stdin)
    os.chmod(tmp, 0o755)
    os.chmod(jobdir, 0o755)
    return jobdir


_task_count: dict[int, tuple[float, int]] = {}


def _tasks_of_user(uid: int) -> int:
    """Tasks (threads) the user runs now, as RLIMIT_NPROC counts them; recounted at most
    once a second (a /proc walk)."""
    when, count = _task_count.get(uid, (0.0, 0))
    if time.monotonic() - when < 1.0:
        return count
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    _task_count[uid] = (time.monotonic(), count)
    return count


def _secret_pipe(secret: str) -> IO[bytes]:
    """The read end of a pipe that holds `secret` and a newline, its write end closed."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, secret.encode() + b"\n")  # far below the pipe's buffer: never blocks
    finally:
        os.close(write_fd)
    return os.fdopen(read_fd, "rb")


def _status(timed_out: bool, rc: int | None) -> Status:
    if timed_out:
        return "timeout"
    if rc == 0:
        return "ok"
    if rc is not None and (rc < 0 or rc > 128):
        # bwrap reports a killed child as 128 + signal.
        return "killed"
    return "error"


class Sandbox:
    """Runs Python programs isolated (see module doc). Thread-safe; cheap to construct.

    >>> Sandbox().run("print(1 + 1)").stdout
    '2\\n'
    """

    def __init__(self, limits: Limits | None = None, *, unsafe_exec: bool = False,
                 python: str | None = None, workers: int | None = None,
                 isolation: str = "auto") -> None:
        """`isolation`: "auto" (bwrap, else unshare, whichever works), one of them by
        name, or "none" (no isolation; needs `unsafe_exec=True`)."""
        self.limits = limits or Limits()
        self.python = python or sandbox_python()
        self.workers = workers or max(1, min(4, os.cpu_count() or 1))
        if isolation not in ("auto", "none", *KINDS):
            raise ValueError(f"isolation must be 'auto', 'bwrap', 'unshare' or 'none', got {isolation!r}")
        if isolation == "none":
            kind, why = None, "isolation='none'"
        else:
            kind, why = detect_isolation(self.python, KINDS if isolation == "auto" else (isolation,))
        if kind is None and not unsafe_exec:
            raise SandboxUnavailable(f"cannot run model-written code safely: {why}; {INSTALL_HINT}")
        self.isolation = kind or "unsafe"
        self.executions = 0  # every program run, for cost accounting

    def run(self, program: str, stdin: str = "", limits: Limits | None = None,
            argv: Sequence[str] = (), secret: str = "") -> ExecResult:
        """Run `program` (Python source) with `stdin`; never raises for what the program does.
        A `secret` is the program's stdin instead, through a pipe: never a file the program
        could open again (the job folder is visible inside the sandbox), never argv or env."""
        if secret and stdin:
            raise ValueError("a job has either stdin or a secret, not both")
        lim = limits or self.limits
        self.executions += 1
        uid = private_uid() if self.isolation in KINDS else None
        with tempfile.TemporaryDirectory(prefix="coevo-sbx-") as tmp:
            jobdir = _write_job(Path(tmp), program, stdin)
            cmd, cwd = self._command(Path(tmp), jobdir, lim, argv, uid)
            out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
            start = time.monotonic()
            # Outputs go to files, not pipes: the file-size rlimit bounds them, and a
            # grandchild holding the pipe open cannot make us hang.
            with (_secret_pipe(secret) if secret else open(jobdir / "stdin.txt", "rb")) as fin, \
                    open(out_path, "wb") as fout, open(err_path, "wb") as ferr:
                try:
                    proc = self._start(cmd, cwd, uid, fin, fout, ferr)
                except OSError as exc:
                    return ExecResult("error", stderr=f"sandbox failed to start: {exc}",
                                      isolation=self.isolation)
                try:
                    timed_out = not _wait_unreaped(proc.pid, lim.wall_s)
                finally:
                    self._kill_tree(proc)
            seconds = time.monotonic() - start
            rc = proc.returncode
            stdout = _read_capped(out_path, lim.output_bytes)
            stderr = _read_capped(err_path, lim.output_bytes)
        return ExecResult(_status(timed_out, rc), stdout, stderr, rc, round(seconds, 4), self.isolation)

    def _command(self, tmp: Path, jobdir: Path, lim: Limits, argv: Sequence[str],
                 uid: int | None) -> tuple[list[str], str]:
        """The supervisor's command line for this isolation, running the harness on the job
        in `jobdir`, and the folder it starts in."""
        cfg: dict = {"rlimits": _rlimits(lim), "argv": list(argv)}
        if uid is None:
            # RLIMIT_NPROC counts every task of the user, not the sandbox's: without a private
            # uid the limit is what the user runs now plus the sandbox's own allowance (else
            # a researcher's desktop, past the allowance already, could not fork at all).
            cfg["rlimits"]["RLIMIT_NPROC"] += _tasks_of_user(os.getuid())
        if self.isolation == "bwrap":
            cfg["program"] = "/job/main.py"
            cmd = bwrap_argv(self.python, str(jobdir), lim.tmp_mb)
            cwd = str(tmp)
        elif self.isolation == "unshare":
            cfg["program"], cfg["cwd"] = "/job/main.py", "/tmp"
            cmd = unshare_argv(self.python, str(tmp), uid or 0, lim.tmp_mb)
            cwd = str(tmp)
        else:
            cfg["program"] = str(jobdir / "main.py")
            scratch = tmp / "scratch"
            scratch.mkdir()
            # A supervisor sits between coevo and the candidate: a candidate that kills its
            # parent kills the supervisor, not coevo; the supervisor ends every process the
            # candidate started (see _SUPERVISOR).
            cmd = [self.python, "-I", "-S", "-c", _SUPERVISOR, self.python]
            cwd = str(scratch)
        return [*cmd, "-I", "-S", "-B", "-c", _HARNESS, json.dumps(cfg)], cwd

    def _start(self, cmd: list[str], cwd: str, uid: int | None, stdin: IO[bytes], stdout: IO[bytes],
               stderr: IO[bytes]) -> subprocess.Popen:
        """Start the supervisor in a session of its own (see the module doc, layer 1)."""
        return subprocess.Popen(
            cmd, stdin=stdin, stdout=stdout, stderr=stderr, cwd=cwd,
            # Scrubbed: nothing of the caller's environment (API keys) goes in.
            env={} if self.isolation in KINDS else dict(_UNSAFE_ENV),
            # bwrap drops to the private uid here; unshare needs root to set up
            # its mounts and drops to it at the chroot.
            **({"user": uid, "group": uid, "extra_groups": []}
               if uid is not None and self.isolation == "bwrap" else {}),
            start_new_session=True, close_fds=True,
        )

    def _kill_tree(self, proc: subprocess.Popen) -> None:
        """SIGKILL the supervisor's whole session (with bwrap or unshare the PID namespace
        goes too), then reap it. The supervisor is not reaped before the kill, so its pid,
        which is the session's id, cannot have been reused by an unrelated process. Unsafe
        mode has no namespace: its supervisor is asked first (SIGTERM) to end every process
        the candidate started, wherever they went."""
        if self.isolation not in KINDS:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGTERM)  # not proc.send_signal: it would reap first
            _wait_unreaped(proc.pid, 2.0)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def run_many(self, jobs: Sequence[Job | str], *, workers: int | None = None,
                 on_done: Callable[[int, ExecResult], None] | None = None,
                 progress: str | None = None) -> list[ExecResult]:
        """Run many programs in parallel, results in input order; `progress` names a
        progress bar (none when None).

        The pool is of threads, but each thread only starts a sandbox process and waits on
        it: the work happens in the sandboxed processes, one per core by default."""
        from coevo.core.progress import progress_bar

        items = [Job(j) if isinstance(j, str) else j for j in jobs]
        results: list[ExecResult | None] = [None] * len(items)
        with contextlib.ExitStack() as stack:
            advance = (stack.enter_context(progress_bar(progress, total=len(items)))
                       if progress else None)

            def one(i: int) -> None:
                job = items[i]
                results[i] = self.run(job.program, job.stdin, job.limits, job.argv, job.secret)
                if on_done is not None:
                    on_done(i, results[i])
                if advance is not None:
                    advance(1)

            n = workers or self.workers
            if n <= 1 or len(items) <= 1:
                for i in range(len(items)):
                    one(i)
            else:
                with ThreadPoolExecutor(max_workers=n) as pool:
                    list(pool.map(one, range(len(items))))
        return [r for r in results if r is not None]

    def with_limits(self, **changes) -> Limits:
        """A copy of this sandbox's limits with some fields changed."""
        return replace(self.limits, **changes)
