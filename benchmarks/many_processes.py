"""The tiny configs as they ship, under `torchrun --nproc_per_node N` vs one process.

Each config runs twice in one session, back to back (so both see the same machine load):
once launched with torchrun (gloo on CPU; rank 0 runs the run, every rank trains), once as
a plain process. Reported per config: wall seconds of each and their ratio, the world size
each run recorded in summary.json, the seconds per training step they recorded, and the rows
per table of each store (they must be equal: one writer). Runs go to a temporary folder.

    .venv/bin/python benchmarks/many_processes.py [--configs taiscore_tiny rlac_code_tiny]
        [--processes 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)
from whole_runs import step_seconds

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["taiscore_tiny", "rlac_code_tiny"]
TABLES = ("meta", "rollouts", "judgments", "metrics", "records", "steps")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launcher(processes: int) -> list[str]:
    if processes == 1:
        return [sys.executable]
    return [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
            "--master_addr", "127.0.0.1", "--master_port", str(_free_port())]


def rows(store: Path) -> dict[str, int]:
    with sqlite3.connect(store) as db:
        return {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLES}


def one_run(config: str, processes: int, folder: Path) -> dict:
    out = folder / f"{config}-{processes}"
    command = [*launcher(processes), "-m", "coevo.cli", "run", str(ROOT / "examples" / f"{config}.yaml"),
               "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "COEVO_QUIET": "1"}, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{config} ({processes} processes) failed with exit {done.returncode}:\n{done.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    steps = {key: round(sum(v) / len(v), 2) for key, v in step_seconds(summary).items()}
    return {"seconds": round(seconds, 1), "world_size": summary.get("world_size"), "seconds_per_step": steps,
            "rows": rows(out / "run.sqlite")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--processes", type=int, default=2, help="processes of the torchrun launch")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="coevo-many-processes-") as tmp:
        for config in args.configs:
            many = one_run(config, args.processes, Path(tmp))
            one = one_run(config, 1, Path(tmp))
            results[config] = {f"{args.processes}_processes": many, "1_process": one,
                               "ratio": round(many["seconds"] / one["seconds"], 2),
                               "same_rows": many["rows"] == one["rows"]}
            print(json.dumps({config: results[config]}), flush=True)
    report({"configs": results, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}, args.json)


if __name__ == "__main__":
    main()
