"""How a sandboxed process is confined: bubblewrap or unshare+chroot, and which one works here.

Layers 2 and 3 of `coevo.validators.sandbox` (private uid, namespaces, read-only `/usr`, a
size-bounded tmpfs, an empty environment) live here as argument vectors; the sandbox runs
them. Each is probed by running a real confined `python -c`, because a tool may be installed
yet unusable (no user namespaces in a container, no root for unshare).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

PROBE_TMP_MB = 64  # the probe's tmpfs; real runs pass their Limits.tmp_mb


def sandbox_python() -> str:
    """The interpreter that runs candidates: the system one, because it lives under /usr,
    which the sandbox can bind read-only without exposing anything private."""
    for cand in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(cand):
            return cand
    import sys

    return os.path.realpath(getattr(sys, "_base_executable", sys.executable))


_uid_lock = threading.Lock()
_uid_counter = [secrets.randbelow(20_000)]


def private_uid() -> int | None:
    """A uid no other live sandbox uses (root only), so NPROC counts this sandbox alone."""
    if os.geteuid() != 0:
        return None
    with _uid_lock:
        _uid_counter[0] = (_uid_counter[0] + 1) % 50_000
        return 200_000 + _uid_counter[0]


def bwrap_argv(python: str, jobdir: str, tmp_mb: int) -> list[str]:
    """The bubblewrap command up to `python`: every namespace new, `/usr` and `jobdir` (as
    `/job`) read-only, a `tmp_mb` tmpfs as `/tmp`, an environment of four fixed variables."""
    argv = [
        # --disable-userns: no nested user namespaces, so no capabilities to play with
        # inside (and less kernel surface).
        "bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
        "--new-session", "--clearenv",
        "--ro-bind", "/usr", "/usr",
    ]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = os.path.join("/", link)
        if os.path.islink(target):
            argv += ["--symlink", os.readlink(target), target]
        elif os.path.isdir(target):
            argv += ["--ro-bind", target, target]
    pydir = os.path.dirname(python)
    if not pydir.startswith(("/usr/", "/bin")):
        argv += ["--ro-bind", os.path.dirname(pydir), os.path.dirname(pydir)]
    argv += [
        "--proc", "/proc", "--dev", "/dev",
        "--size", str(tmp_mb * 2**20), "--tmpfs", "/tmp",
        "--ro-bind", jobdir, "/job",
        "--chdir", "/tmp",
        "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
        "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONHASHSEED", "0",
        "--", python,
    ]
    return argv


# The unshare fallback (root only): new PID, network, mount, IPC and UTS namespaces; in the
# private mount namespace a size-bounded tmpfs becomes the new root, with /usr (and the
# /bin, /lib links) read-only, the job folder read-only, a fresh /proc and a few devices;
# then chroot into it as a private uid, which has no capability to leave the chroot.
_UNSHARE_SETUP = r"""
set -e
T=$1; U=$2; SIZE=$3; shift 3
R=$T/root
mkdir -p "$R"
mount -t tmpfs -o size=$SIZE,mode=755 coevo-root "$R"
mkdir -p "$R/usr" "$R/proc" "$R/dev" "$R/tmp" "$R/job"
mount --bind /usr "$R/usr"; mount -o remount,bind,ro,nosuid,nodev "$R/usr"
for l in bin lib lib64 sbin; do
  if [ -L "/$l" ]; then ln -s "$(readlink "/$l")" "$R/$l"
  elif [ -d "/$l" ]; then mkdir "$R/$l"; mount --bind "/$l" "$R/$l"; mount -o remount,bind,ro "$R/$l"; fi
done
for d in null zero urandom random; do touch "$R/dev/$d"; mount --bind "/dev/$d" "$R/dev/$d"; done
mount --bind "$T/job" "$R/job"; mount -o remount,bind,ro,nosuid,nodev "$R/job"
chmod 1777 "$R/tmp"
mount -t proc proc "$R/proc"
# Not exec: this root shell stays PID 1 of the namespace (the candidate may not signal it),
# and reports a signal death as 128 + signal.
chroot --userspec="$U:$U" --groups="$U" "$R" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp \
  LANG=C.UTF-8 PYTHONHASHSEED=0 "$@" && exit 0
exit $?
"""


def unshare_argv(python: str, tmp: str, uid: int, tmp_mb: int) -> list[str]:
    """The unshare + chroot command up to `python` (root only), running as `uid`; `tmp`
    holds the job folder and becomes the mount point of the new root."""
    return ["unshare", "--fork", "--pid", "--net", "--mount", "--ipc", "--uts", "--kill-child",
            "--", "/bin/sh", "-c", _UNSHARE_SETUP, "coevo-sandbox", tmp, str(uid),
            str(tmp_mb * 2**20), python]


KINDS = ("bwrap", "unshare")


def detect_isolation(python: str | None = None, kinds: tuple[str, ...] = KINDS) -> tuple[str | None, str]:
    """Which isolation works here: ("bwrap" or "unshare", "") or (None, why not). Probed
    (once per process) by running a real sandboxed `python -c ...`, because a tool may be
    installed yet unusable (no user namespaces in a container, no root for unshare)."""
    return _detect(python or sandbox_python(), tuple(kinds))


@lru_cache(maxsize=8)
def _detect(python: str, kinds: tuple[str, ...]) -> tuple[str | None, str]:
    why: list[str] = []
    for kind in kinds:
        ok, reason = _probe(kind, python)
        if ok:
            return kind, ""
        why.append(reason)
    return None, "; ".join(why)


def _probe(kind: str, python: str) -> tuple[bool, str]:
    if kind == "bwrap" and shutil.which("bwrap") is None:
        return False, "bubblewrap (bwrap) is not installed"
    if kind == "unshare":
        if os.geteuid() != 0:
            return False, "the unshare fallback needs root"
        if not (shutil.which("unshare") and shutil.which("chroot")) or not python.startswith("/usr/"):
            return False, "unshare/chroot missing or python not under /usr"
    with tempfile.TemporaryDirectory(prefix="coevo-probe-") as tmp:
        jobdir = Path(tmp) / "job"
        jobdir.mkdir()
        os.chmod(tmp, 0o755)
        os.chmod(jobdir, 0o755)
        uid = private_uid()
        if kind == "bwrap":
            argv = bwrap_argv(python, str(jobdir), PROBE_TMP_MB)
        else:
            argv = unshare_argv(python, tmp, uid or 0, PROBE_TMP_MB)
        # The probe also checks that the candidate really runs as the private uid.
        argv += ["-I", "-S", "-c", f"import os; assert {uid} is None or os.getuid() == {uid}"]
        try:
            proc = subprocess.run(argv, capture_output=True, timeout=30, env={},
                                  user=uid if kind == "bwrap" else None, start_new_session=True)
        except (OSError, subprocess.SubprocessError) as exc:
            return False, f"{kind} failed to start: {exc}"
    if proc.returncode != 0:
        return False, f"{kind} does not work here: " + proc.stderr.decode(errors="replace").strip()[-300:]
    return True, ""
