"""Verdicts a candidate cannot fake (coevo.validators.harness): every trick that made
"candidate + tests exited 0" count as a pass, and every way to reach the marker, fails;
the honest solution passes. Held-out pass@1, the enumerative baseline and AceCoder-Rule's
reward all go through ReferenceTests; the critic's CALL tests through CodeValidator."""

import pytest

from coevo.tasks.code import load_humaneval
from coevo.validators.code import CodeValidator, ReferenceTests, parse_proposal
from coevo.validators.harness import PREFIX
from coevo.validators.sandbox import Sandbox

HONEST = "def add(x: int, y: int):\n    return x + y\n"
FORGERIES = {
    "exit 0 before any test": "import os\nos._exit(0)\n",
    "sys.exit(0) before any test": "import sys\nsys.exit(0)\n",
    "atexit handler that exits 0": ("import atexit, os\natexit.register(lambda: os._exit(0))\n"
                                    "def add(x, y):\n    raise ValueError\n"),
    "excepthook that exits 0": ("import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n"
                                "def add(x, y):\n    return 0\n"),
    "an object equal to everything": ("class Any:\n    def __eq__(self, other):\n        return True\n"
                                      "def add(x, y):\n    return Any()\n"),
    "an int equal to everything": ("class Int(int):\n    def __eq__(self, other):\n        return True\n"
                                   "    __hash__ = int.__hash__\n"
                                   "def add(x, y):\n    return Int(0)\n"),
    "kill the harness": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "print a made-up marker": (f"print({PREFIX!r} + '0' * 32 + ' \"passed\"')\n"
                               "def add(x, y):\n    return 0\n"),
    # The marker is in the harness's stdin and memory only: the candidate's process never
    # had it, and the harness is undumpable (no /proc/PID/mem, fd or environ for its user).
    "steal the marker": """
import gc, os, sys
found = set()
for path in ("/proc/%d/fd/0" % os.getppid(), "/proc/%d/mem" % os.getppid(), "/proc/%d/environ" % os.getppid(),
             "/proc/%d/cmdline" % os.getppid(), "/job/stdin.txt", "/dev/stdin"):
    try:
        with open(path, "rb") as fh:
            found.add(fh.read(4096).decode(errors="ignore").strip())
    except OSError:
        pass
found.add(sys.stdin.read())
found.update(o for o in gc.get_objects() if isinstance(o, str) and len(o) == 32)
for guess in found:
    print(PREFIX + guess + ' "passed"')
os._exit(0)
""".replace("PREFIX", repr(PREFIX)),
}


@pytest.fixture(scope="module")
def runner():
    # Isolated where this machine allows (it must, after `make install`).
    return ReferenceTests(Sandbox(unsafe_exec=True), timeout_s=10)


@pytest.fixture(scope="module")
def problem():
    return load_humaneval(ids=["HumanEval/53"])[0]


def test_the_honest_solution_passes(runner, problem):
    assert runner.run(problem, HONEST).passed


@pytest.mark.parametrize("trick", sorted(FORGERIES))
def test_a_forged_pass_fails(runner, problem, trick):
    outcome = runner.run(problem, FORGERIES[trick])
    assert not outcome.passed, trick
    assert outcome.error


def test_a_call_test_needs_the_harness_result(problem):
    validator = CodeValidator(Sandbox(unsafe_exec=True), timeout_s=10)
    assert validator.check(problem, HONEST, parse_proposal(problem.id, HONEST, "CALL: add(2, 3)")).verdict == "survived"
    for trick in ("exit 0 before any test", "print a made-up marker", "steal the marker"):
        test = parse_proposal(problem.id, FORGERIES[trick], "CALL: add(2, 3)")
        verdict = validator.check(problem, FORGERIES[trick], test)
        assert verdict.verdict == "caught", (trick, verdict)
