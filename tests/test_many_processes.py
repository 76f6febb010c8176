"""Two training processes on this CPU (torchrun, gloo): rank 0 runs the run, both train.

Proof that `torchrun --nproc_per_node 2 -m coevo.cli run CONFIG` is one run: it finishes,
summary.json says world_size 2, the trained checkpoints differ from the base, and its store
holds exactly the rows a one-process run of the same config writes (no table doubled by a
second writer). Test-sized settings of examples/taiscore_tiny.yaml; BENCHMARKS.md has the
configs as they ship.
"""

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SMALL = ["data.limit=5", "rounds=1", "evaluation.prompts=1", "critic_queries=1", "pairs_per_round=2",
         "grpo.max_steps=1", "dpo.max_steps=1", "sampling.rollout.max_tokens=24", "sampling.revision.max_tokens=24",
         "evaluation.win_rate=false"]
TABLES = ("meta", "rollouts", "judgments", "metrics", "records", "steps")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run(out, processes):
    overrides = [arg for item in SMALL for arg in ("--set", item)]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                 "--master_addr", "127.0.0.1", "--master_port", str(_free_port())] if processes > 1 else [sys.executable])
    proc = subprocess.run([*launcher, "-m", "coevo.cli", "run", str(ROOT / "examples" / "taiscore_tiny.yaml"),
                           "--out", str(out), *overrides], capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "COEVO_QUIET": "1", "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((out / "summary.json").read_text())


def _rows(out):
    with sqlite3.connect(out / "run.sqlite") as db:
        return {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLES}


def test_two_processes_make_one_run(tmp_path):
    two = _run(tmp_path / "two", 2)
    one = _run(tmp_path / "one", 1)
    assert (two["world_size"], one["world_size"]) == (2, 1)
    [rnd] = two["rounds"]
    metrics = rnd["metrics"]
    assert metrics["critic_weight_delta"] > 0 and metrics["actor_weight_delta"] > 0
    for role in ("actor", "critic"):
        assert Path(rnd["checkpoints"][role]).is_dir()
    assert _rows(tmp_path / "two") == _rows(tmp_path / "one")
    assert not (tmp_path / "two" / "run.lock").read_text()  # released, by the one process that held it
