"""Verdicts a candidate cannot fake: the trusted harness that runs tests in the sandbox.

A pass was once "the program of candidate + tests exited 0", which `os._exit(0)` at the top
of a solution, or an `atexit` / `sys.excepthook` handler that exits 0, satisfies without a
test running; an object whose `__eq__` always answers True passes any `assert f(x) == y`.
Here the candidate and the tests never share a process:

    harness (trusted)                                  candidate process (forked first)
    ------------------------------------------        ---------------------------------
    made undumpable (no ptrace, no /proc/PID/mem)      stdin replaced by /dev/null
    fork the candidate's process                       exec the solution's source
    read the marker from stdin (a pipe from coevo:     report the names it defines
      never a file, never argv, never the env;         answer calls: plain values in,
      the candidate's process never had it)              plain values out (tagged JSON)
    run the problem's tests; each call of a
      solution function goes to the candidate
    all passed: kill the candidate, print the marker

coevo counts a pass only when stdout holds this execution's marker (random, per run). A
candidate that exits, crashes or hangs leaves no marker; one that returns something other
than a plain value (number, string, bytes, None, and lists / tuples / sets / dicts of them)
fails the call; values are rebuilt as plain Python objects in the harness, so no
candidate-made object ever reaches a test's comparison.

For a CALL test (the RLAC critic's), the candidate's process evaluates the expression and
sends back its canonical JSON (coevo compares the reference's and the output's); the harness
prints it after the marker.
"""

from __future__ import annotations

import json
import secrets

#: Before the marker: so it starts a line whatever the candidate printed last.
PREFIX = "\n@@coevo-verdict "

_SOURCE = r'''
import builtins as _builtins, json as _json, math as _math, os as _os, re as _re, sys as _sys

_MAX_MESSAGE = 64 * 2**20


def _undumpable():
    """No process of the same user (the candidate's) may ptrace this one or read its memory."""
    if not _sys.platform.startswith("linux"):
        return
    import ctypes
    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:  # PR_SET_DUMPABLE 0
        _sys.stderr.write("harness: cannot protect the harness (prctl failed)\n")
        _os._exit(70)


def _enc(x, depth=0):
    if depth > 200:
        raise TypeError("the value is nested too deeply")
    # Rebuilt as the plain type whatever subclass the candidate made: no candidate-made
    # object, and so no candidate-made __eq__, ever reaches the harness.
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        x = float.__float__(x)
        return x if _math.isfinite(x) else {"$float": repr(x)}
    if isinstance(x, list):
        return [_enc(v, depth + 1) for v in x]
    if isinstance(x, tuple):
        return {"$tuple": [_enc(v, depth + 1) for v in x]}
    if isinstance(x, (set, frozenset)):
        return {"$set": [_enc(v, depth + 1) for v in x], "frozen": isinstance(x, frozenset)}
    if isinstance(x, dict):
        return {"$dict": [[_enc(k, depth + 1), _enc(v, depth + 1)] for k, v in x.items()]}
    if isinstance(x, (bytes, bytearray)):
        return {"$bytes": bytes(x).hex()}
    if isinstance(x, complex):
        return {"$complex": [complex.__complex__(x).real, complex.__complex__(x).imag]}
    raise TypeError("a %s is not a plain value (numbers, strings, None, and lists, tuples, "
                    "sets and dicts of them)" % type(x).__name__)


def _dec(x):
    if isinstance(x, list):
        return [_dec(v) for v in x]
    if not isinstance(x, dict):
        return x
    if "$tuple" in x:
        return tuple(_dec(v) for v in x["$tuple"])
    if "$set" in x:
        items = [_dec(v) for v in x["$set"]]
        return frozenset(items) if x.get("frozen") else set(items)
    if "$dict" in x:
        return {_dec(k): _dec(v) for k, v in x["$dict"]}
    if "$float" in x:
        return float(x["$float"])
    if "$bytes" in x:
        return bytes.fromhex(x["$bytes"])
    if "$complex" in x:
        return complex(*x["$complex"])
    raise ValueError("not a value: %r" % (x,))


def _canonical(x, depth=0):
    """A CALL result as comparable JSON (coevo's values_equal reads it); any object at all."""
    if depth > 50:
        return {"__repr__": repr(x)[:1000]}
    if x is None or type(x) in (bool, int, str):
        return x
    if type(x) is float:
        return x if _math.isfinite(x) else {"__float__": repr(x)}
    if type(x) is list:
        return [_canonical(v, depth + 1) for v in x]
    if type(x) is tuple:
        return {"__tuple__": [_canonical(v, depth + 1) for v in x]}
    if type(x) in (set, frozenset):
        return {"__set__": sorted((_canonical(v, depth + 1) for v in x), key=lambda v: _json.dumps(v, sort_keys=True))}
    if type(x) is dict:
        return {"__dict__": sorted(([_canonical(k, depth + 1), _canonical(v, depth + 1)] for k, v in x.items()),
                                   key=lambda kv: _json.dumps(kv[0], sort_keys=True))}
    if hasattr(x, "__next__"):
        out = []
        for i, v in enumerate(x):
            if i >= 100000:
                break
            out.append(_canonical(v, depth + 1))
        return {"__iter__": out}
    return {"__repr__": _re.sub(r" at 0x[0-9a-fA-F]+", "", repr(x))[:1000]}  # no addresses


def _send(fd, obj):
    data = _json.dumps(obj).encode()
    data = len(data).to_bytes(8, "big") + data
    while data:
        data = data[_os.write(fd, data):]


def _read_exactly(fd, n):
    chunks = []
    while n:
        chunk = _os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _recv(fd):
    head = _read_exactly(fd, 8)
    if head is None:
        return None
    size = int.from_bytes(head, "big")
    if size > _MAX_MESSAGE:
        raise ValueError("message too large")
    body = _read_exactly(fd, size)
    return None if body is None else _json.loads(body)


def _candidate(requests, replies):
    """The candidate's process. Nothing secret is in its memory; its stdin is /dev/null."""
    null = _os.open(_os.devnull, _os.O_RDONLY)
    _os.dup2(null, 0)
    _os.close(null)
    space = {"__name__": "solution", "__builtins__": _builtins}
    try:
        exec(compile(CONFIG["solution"], "solution.py", "exec"), space)
    except BaseException as exc:
        _send(replies, {"error": "%s: %s" % (type(exc).__name__, str(exc)[:300])})
        _os._exit(0)
    _send(replies, {"defined": sorted(k for k, v in space.items() if callable(v) and not k.startswith("__"))})
    while True:
        request = _recv(requests)
        if request is None:
            _os._exit(0)
        try:
            if "expr" in request:
                reply = {"value": _canonical(eval(compile(request["expr"], "<testcase>", "eval"), space))}
            else:
                value = space[request["name"]](*_dec(request["args"]), **_dec(request["kwargs"]))
                reply = {"value": _enc(value)}
        except BaseException as exc:
            reply = {"raise": type(exc).__name__, "message": str(exc)[:300]}
        _sys.stdout.flush()
        _send(replies, reply)


class _Remote:
    def __init__(self, requests, replies):
        self.requests, self.replies = requests, replies

    def ask(self, request):
        _send(self.requests, request)
        reply = _recv(self.replies)
        if reply is None:
            raise RuntimeError("the solution's process ended before answering")
        if "raise" in reply:
            kind = getattr(_builtins, str(reply["raise"]), None)
            if not (isinstance(kind, type) and issubclass(kind, Exception)):
                kind = RuntimeError
            raise kind(reply.get("message", ""))
        return reply["value"]

    def function(self, name):
        def call(*args, **kwargs):
            return _dec(self.ask({"name": name, "args": _enc(list(args)), "kwargs": _enc(kwargs)}))
        call.__name__ = name
        return call


def _fail(message):
    _sys.stdout.flush()
    _sys.stderr.write(message + "\n")
    _os._exit(1)


def _main():
    _undumpable()
    requests_r, requests_w = _os.pipe()
    replies_r, replies_w = _os.pipe()
    pid = _os.fork()
    if pid == 0:
        _os.close(requests_w)
        _os.close(replies_r)
        _candidate(requests_r, replies_w)
        _os._exit(0)
    _os.close(requests_r)
    _os.close(replies_w)
    marker = _sys.stdin.readline().strip()  # after the fork: the candidate never holds it
    if not marker:
        _fail("harness: no marker on stdin")
    remote = _Remote(requests_w, replies_r)
    hello = _recv(replies_r)
    if hello is None:
        _fail("the solution's process ended before the tests ran")
    if "error" in hello:
        _fail("the solution raised while being defined: " + hello["error"])
    if CONFIG["mode"] == "call":
        result = remote.ask({"expr": CONFIG["expr"]})
    else:
        space = {"__name__": "tests", "__builtins__": _builtins}
        exec(compile(CONFIG["header"], "header.py", "exec"), space)
        for name in hello["defined"]:
            space[name] = remote.function(name)
        try:
            exec(compile(CONFIG["tests"], "tests.py", "exec"), space)
            if CONFIG.get("check_entry"):
                if CONFIG["entry"] not in space or CONFIG["entry"] not in hello["defined"]:
                    raise NameError("the solution defines no %s" % CONFIG["entry"])
                space["check"](space[CONFIG["entry"]])
        except BaseException as exc:
            _fail("%s: %s" % (type(exc).__name__, str(exc)[:300]))
        result = "passed"
    try:
        _os.kill(pid, 9)
    except OSError:
        pass
    _sys.stdout.flush()
    _sys.stdout.write(PREFIX + marker + " " + _json.dumps(result) + "\n")
    _sys.stdout.flush()
    _os._exit(0)


_main()
'''


def new_marker() -> str:
    """A fresh per-execution marker (what the harness prints only after the last test)."""
    return secrets.token_hex(16)


def tests_program(solution: str, tests: str, *, entry: str | None, check_entry: bool, header: str = "") -> str:
    """The sandbox program that runs `tests` (trusted: the problem's) against `solution`
    (untrusted) in two processes. `check_entry`: the tests define `check(candidate)`, which
    is called on the solution's `entry` function; `header`: trusted import lines the tests
    may rely on (a HumanEval prompt's `from typing import List`)."""
    config = {"mode": "tests", "solution": solution, "tests": tests, "entry": entry,
              "check_entry": check_entry, "header": header}
    return _program(config)


def call_program(solution: str, expr: str) -> str:
    """The sandbox program for a CALL test: the candidate's process defines `solution` and
    evaluates `expr`; the harness prints its canonical JSON after the marker."""
    return _program({"mode": "call", "solution": solution, "expr": expr})


def _program(config: dict) -> str:
    return (f"import json as _config_json\nCONFIG = _config_json.loads({json.dumps(config)!r})\n"
            f"PREFIX = {PREFIX!r}\n{_SOURCE}")


def marked_result(stdout: str, marker: str) -> tuple[bool, object]:
    """(True, result) when the harness printed this execution's marker, else (False, None).
    Only the harness knows the marker, and prints it last, after the tests all passed."""
    tag = PREFIX + marker + " "
    at = stdout.rfind(tag)
    if at < 0:
        return False, None
    line = stdout[at + len(tag):].split("\n", 1)[0]
    try:
        return True, json.loads(line)
    except (ValueError, RecursionError):
        return False, None
