"""Hostile programs against the sandbox: each attack must fail, and coevo must live on."""

import subprocess
import secrets
import socket
import time
from pathlib import Path

import pytest

from coevo.validators.sandbox import KINDS, Limits, Sandbox, detect_isolation


@pytest.fixture(scope="module", params=KINDS)
def sandbox(request):
    """Every attack runs against each isolation this machine offers (bwrap; unshare as root)."""
    kind, why = detect_isolation(None, (request.param,))
    if kind is None:
        pytest.skip(f"{request.param} isolation unavailable here: {why}")
    return Sandbox(Limits(wall_s=5), isolation=request.param)


def _host_processes_with(marker: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            pids.append(int(entry.name))
    return pids


def test_plain_program_runs_with_stdin(sandbox):
    res = sandbox.run("print(input()[::-1])", stdin="abc\n")
    assert res.status == "ok" and res.stdout == "cba\n" and res.isolation in KINDS


def test_endless_loop_ends_at_the_wall_clock(sandbox):
    start = time.monotonic()
    res = sandbox.run("while True:\n    pass\n", limits=Limits(wall_s=1.5))
    assert res.status in ("timeout", "killed")
    assert time.monotonic() - start < 6


def test_cpu_limit_kills_a_busy_loop_before_the_wall(sandbox):
    res = sandbox.run("while True:\n    pass\n", limits=Limits(wall_s=8, cpu_s=1))
    assert res.status == "killed" and res.seconds < 6


def test_fork_bomb_is_bounded(sandbox):
    bomb = (
        "import os\n"
        "n = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            import time; time.sleep(30)\n"
        "        n += 1\n"
        "    except OSError:\n"
        "        break\n"
        "print('forked', n, flush=True)\n"
    )
    start = time.monotonic()
    res = sandbox.run(bomb, limits=Limits(wall_s=3, nproc=12))
    assert time.monotonic() - start < 10
    counts = [int(line.split()[1]) for line in res.stdout.splitlines() if line.startswith("forked")]
    assert counts and max(counts) < 12, res


def test_memory_bomb_fails_inside(sandbox):
    res = sandbox.run("x = bytearray(4 * 1024**3)\nprint('allocated')", limits=Limits(memory_mb=256))
    assert res.status != "ok" and "allocated" not in res.stdout
    assert "MemoryError" in res.stderr


def test_big_file_and_output_flood_are_capped(sandbox):
    res = sandbox.run("open('big', 'wb').write(b'x' * 64 * 1024**2)", limits=Limits(fsize_mb=4))
    assert res.status != "ok"
    res = sandbox.run("while True:\n    print('y' * 1000)\n", limits=Limits(wall_s=3, fsize_mb=2,
                                                                      output_bytes=10_000))
    assert res.status != "ok" and len(res.stdout) < 20_000


def test_no_writes_outside_its_temp_dir(sandbox, tmp_path):
    target = tmp_path / "escaped.txt"
    home = Path.home() / f"coevo-escape-{secrets.token_hex(4)}"
    program = (
        "import os\n"
        f"for path in [{str(target)!r}, {str(home)!r}, '/usr/escaped', '/etc/escaped', "
        f"{str(Path.cwd() / 'escaped.txt')!r}]:\n"
        "    try:\n"
        "        open(path, 'w').write('pwned')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, type(exc).__name__)\n"
        "open('own.txt', 'w').write('fine'); print('own', open('own.txt').read())\n"
    )
    res = sandbox.run(program)
    assert res.status == "ok", res
    assert "own fine" in res.stdout
    for path in (target, home, Path("/usr/escaped"), Path("/etc/escaped"), Path.cwd() / "escaped.txt"):
        assert not path.exists(), f"sandbox wrote {path}"


def test_no_network_even_to_localhost(sandbox):
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    program = (
        "import socket\n"
        "s = socket.socket()\n"
        "s.settimeout(2)\n"
        f"try:\n    s.connect(('127.0.0.1', {port}))\n    print('CONNECTED')\n"
        "except OSError as exc:\n    print('blocked', type(exc).__name__)\n"
        "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); print('INTERNET')\n"
        "except OSError as exc:\n    print('blocked', type(exc).__name__)\n"
    )
    try:
        res = sandbox.run(program)
        with pytest.raises(OSError):  # nobody knocked
            server.accept()
    finally:
        server.close()
    assert "CONNECTED" not in res.stdout and "INTERNET" not in res.stdout
    assert res.stdout.count("blocked") == 2, res


def test_caller_environment_is_invisible(sandbox, monkeypatch):
    secret = "sk-" + secrets.token_hex(16)
    monkeypatch.setenv("COEVO_TEST_SECRET_KEY", secret)
    program = (
        "import os, glob\n"
        "print(dict(os.environ))\n"
        "for path in glob.glob('/proc/*/environ'):\n"
        "    try:\n        print(open(path, 'rb').read())\n"
        "    except OSError:\n        pass\n"
    )
    res = sandbox.run(program)
    assert res.status == "ok"
    assert secret not in res.stdout and "COEVO_TEST_SECRET_KEY" not in res.stdout


def _orphan_program(marker_seconds: str, main_sleep: float) -> str:
    # The grandchild leaves the session (setsid) and becomes `sleep <marker>`, a process
    # the test can find in the host's /proc afterwards.
    return (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/usr/bin/sleep', ['sleep', {marker_seconds!r}])\n"
        "    os._exit(0)\n"
        f"time.sleep({main_sleep})\n"
        "print('parent done')\n"
    )


ORPHAN_CASES = pytest.mark.parametrize("main_sleep, wall", [(0.5, 5.0), (60.0, 1.5)],
                                       ids=["parent-exits", "wall-timeout"])


@ORPHAN_CASES
def test_setsid_grandchildren_die_with_the_sandbox(sandbox, main_sleep, wall):
    _orphans_die(sandbox, main_sleep, wall)


@ORPHAN_CASES
def test_unsafe_mode_still_ends_setsid_grandchildren(main_sleep, wall):
    # No PID namespace here: the supervisor is a child subreaper and ends every process
    # the candidate left behind, when it exits or at the wall clock.
    _orphans_die(Sandbox(Limits(wall_s=5), isolation="none", unsafe_exec=True), main_sleep, wall)


def _orphans_die(sandbox, main_sleep, wall):
    marker = f"{600 + secrets.randbelow(300)}.{secrets.randbelow(10**6):06d}"
    res = sandbox.run(_orphan_program(marker, main_sleep), limits=Limits(wall_s=wall))
    assert res.status == ("ok" if main_sleep < wall else "timeout")
    deadline = time.monotonic() + 3
    while _host_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _host_processes_with(marker) == []


@pytest.mark.parametrize("attack", [
    "os.kill(os.getppid(), signal.SIGKILL)",
    "os.killpg(os.getpgrp(), signal.SIGKILL)",
    "os.kill(-1, signal.SIGKILL)",
    "os.kill(1, signal.SIGKILL)",
])
def test_killing_parents_never_reaches_coevo(sandbox, attack):
    # A bystander in coevo's own process group: a signal that escaped the sandbox to our
    # group (killpg) or to every process we may signal (kill -1) would kill it too.
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        res = sandbox.run(f"import os, signal\n{attack}\nprint('still here')")
        assert res.status in ("ok", "killed", "error")
        assert bystander.poll() is None, "the attack reached a process outside the sandbox"
    finally:
        bystander.kill()
        bystander.wait()
    # and the sandbox still works afterwards
    assert sandbox.run("print(7)").stdout == "7\n"


def test_cannot_raise_its_own_limits(sandbox):
    program = (
        "import resource\n"
        "try:\n"
        "    resource.setrlimit(resource.RLIMIT_NPROC, (10000, 10000))\n"
        "    print('RAISED')\n"
        "except (ValueError, OSError):\n"
        "    print('refused')\n"
    )
    assert sandbox.run(program).stdout.strip() == "refused"



def test_no_nested_namespaces(sandbox):
    program = (
        "import ctypes\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "print('user', libc.unshare(0x10000000))\n"   # CLONE_NEWUSER
        "print('net', libc.unshare(0x40000000))\n"    # CLONE_NEWNET
    )
    res = sandbox.run(program)
    assert res.status == "ok" and res.stdout.split() == ["user", "-1", "net", "-1"], res
