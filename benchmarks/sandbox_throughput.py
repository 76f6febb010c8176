"""Sandboxed executions per second, serial vs parallel, measured in one run.

Each execution is one full sandboxed run of a HumanEval canonical solution against its
reference tests (the unit of the enumerative baseline) or of one critic CALL test (the unit
of RLAC's validator): start bubblewrap, set rlimits, run, collect output, kill the tree.
The same jobs run with one worker and then with one worker per core; the ratio is the
parallel speed-up on this machine.

    .venv/bin/python benchmarks/sandbox_throughput.py [--problems 60] [--workers 2]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import time

from coevo.tasks.code import candidate_program, load_humaneval
from coevo.validators.code import program_with_tests
from coevo.validators.harness import marked_result, new_marker
from coevo.validators.code import CodeValidator, parse_proposal
from coevo.validators.sandbox import Job, Sandbox


def _rate(sandbox: Sandbox, jobs: list[Job], workers: int) -> tuple[float, float, int]:
    start = time.monotonic()
    results = sandbox.run_many(jobs, workers=workers)
    seconds = time.monotonic() - start
    return len(jobs) / seconds, seconds, sum(r.ok and marked_result(r.stdout, j.secret)[0] for j, r in zip(jobs, results))


def _first_call(problem) -> str:
    """The first `candidate(...)` call of the problem's tests, as a critic would write it."""
    for node in ast.walk(ast.parse(problem.meta["tests"])):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "candidate":
            node.func.id = problem.meta["entry_point"]
            return ast.unparse(node)
    return f"{problem.meta['entry_point']}()"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=60)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--unsafe-exec", action="store_true")
    args = parser.parse_args()

    sandbox = Sandbox(unsafe_exec=args.unsafe_exec)
    problems = load_humaneval(limit=args.problems)
    jobs = [Job(program_with_tests(p, candidate_program(p, p.reference)), limits=sandbox.limits,
                secret=new_marker()) for p in problems]
    _rate(sandbox, jobs[:4], 1)  # warm the page cache

    report: dict = {"machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
                    "isolation": sandbox.isolation, "jobs": len(jobs)}
    serial, serial_s, ok1 = _rate(sandbox, jobs, 1)
    parallel, parallel_s, ok2 = _rate(sandbox, jobs, args.workers)
    report["test_programs"] = {
        "serial_exec_per_s": round(serial, 2), "parallel_exec_per_s": round(parallel, 2),
        "workers": args.workers, "speedup": round(parallel / serial, 2),
        "serial_s": round(serial_s, 2), "parallel_s": round(parallel_s, 2), "passed": [ok1, ok2],
    }

    # RLAC's unit: one critic test on reference + candidate, through the validator.
    validator = CodeValidator(sandbox)
    items = [(p, p.reference, parse_proposal(p.id, p.reference, f"CALL: {_first_call(p)}"))
             for p in problems]
    start = time.monotonic()
    verdicts = validator.check_many(items)
    seconds = time.monotonic() - start
    report["validator"] = {"checks": len(items), "checks_per_s": round(len(items) / seconds, 2),
                           "executions": sandbox.executions, "verdicts": {
                               v: sum(x.verdict == v for x in verdicts)
                               for v in ("caught", "survived", "invalid")}}
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
