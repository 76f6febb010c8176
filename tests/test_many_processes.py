"""Two training processes on this CPU (torchrun, gloo): rank 0 runs the run, both train.

Proof that `torchrun --nproc_per_node 2 -m coevo.cli run CONFIG` is one run: it finishes,
summary.json says world_size 2, the trained checkpoints differ from the base, and its store
holds exactly the rows a one-process run of the same config writes (no table doubled by a
second writer). For RLAC, the two-process run's launcher is killed with `kill -9` during a training stage
(its workers must follow it) and the run resumed with the same launcher and --resume.
Test-sized settings of examples/taiscore_tiny.yaml and examples/rlac_code_tiny.yaml;
BENCHMARKS.md has the configs as they ship.
"""

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coevo.runlock import holder
from coevo.store import RunStore

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SMALL = ["data.limit=5", "rounds=1", "evaluation.prompts=1", "critic_queries=1", "pairs_per_round=2",
         "grpo.max_steps=1", "dpo.max_steps=1", "sampling.rollout.max_tokens=24", "sampling.revision.max_tokens=24",
         "evaluation.win_rate=false"]
# RLAC: seeded noisy labels (validator=random) so that both models surely get pairs to train on;
# a checkpoint every step so that the killed stage has one to resume from.
RLAC_SMALL = ["iterations=1", "k=2", "n=2", "validator=random", "seed=0", "kl=false",
              "data.train_ids=[HumanEval/45, HumanEval/2]", "data.heldout_ids=[HumanEval/53]",
              "sampling.generator.max_tokens=32", "sampling.critic.max_tokens=40", "sampling.eval.max_tokens=32",
              "dpo.max_steps=2", "dpo.save_steps=1", "dpo.max_length=512", "dpo.max_prompt_length=384"]
TABLES = ("meta", "rollouts", "judgments", "metrics", "records", "steps")


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _command(config, out, processes, settings, *extra):
    overrides = [arg for item in settings for arg in ("--set", item)]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                 "--master_addr", "127.0.0.1", "--master_port", str(_free_port())] if processes > 1 else [sys.executable])
    return [*launcher, "-m", "coevo.cli", "run", str(ROOT / "examples" / config), "--out", str(out), *overrides, *extra]


ENV = {**os.environ, "COEVO_QUIET": "1", "OMP_NUM_THREADS": "1"}


def _run(out, processes, config="taiscore_tiny.yaml", settings=SMALL, *extra):
    proc = subprocess.run(_command(config, out, processes, settings, *extra), capture_output=True, text=True,
                          timeout=1800, env=ENV)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((out / "summary.json").read_text())


def _saved(checkpoint):
    try:
        return bool(json.loads((checkpoint / "trainer_state.json").read_text()))
    except (OSError, ValueError):
        return False


def _kill_during(out, processes, config, settings, stage_folder):
    """Start the launch and `kill -9` the launcher (what a user does to the PID they started)
    as soon as the training stage writing `stage_folder` has saved its first checkpoint (a
    kill while one is being written: test_train_common's checkpoint bookkeeping). Its workers
    must follow it down (distributed.die_with_launcher) and free the run folder."""
    proc = subprocess.Popen(_command(config, out, processes, settings), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    deadline = time.monotonic() + 1200
    while not _saved(out / stage_folder / "checkpoints" / "checkpoint-1"):
        assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before the stage: {proc.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, "the training stage never started"
        time.sleep(0.2)
    proc.kill()
    proc.wait(timeout=60)
    proc.stderr.close()
    deadline = time.monotonic() + 60
    while holder(out) is not None:
        assert time.monotonic() < deadline, f"the workers outlived their launcher: {holder(out)}"
        time.sleep(0.2)


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
    for role in ("actor", "critic"):  # stored relative to the run folder
        assert not Path(rnd["checkpoints"][role]).is_absolute()
        assert (tmp_path / "two" / rnd["checkpoints"][role]).is_dir()
    assert _rows(tmp_path / "two") == _rows(tmp_path / "one")
    assert not (tmp_path / "two" / "run.lock").read_text()  # released, by the one process that held it


def test_two_process_rlac_killed_mid_stage_resumes_and_makes_one_run(tmp_path):
    two = tmp_path / "two"
    _kill_during(two, 2, "rlac_code_tiny.yaml", RLAC_SMALL, Path("round1") / "generator")
    assert not (two / "summary.json").exists()
    resumed = _run(two, 2, "rlac_code_tiny.yaml", RLAC_SMALL, "--resume")
    one = _run(tmp_path / "one", 1, "rlac_code_tiny.yaml", RLAC_SMALL)
    assert (resumed["world_size"], one["world_size"]) == (2, 1)
    [rnd] = resumed["rounds"]
    assert rnd["trained"]["generator"]  # (the critic's two calls to an output are often the same: no pair)
    for role in (role for role, trained in rnd["trained"].items() if trained):
        assert (two / rnd["checkpoints"][role]).is_dir()  # relative to the run folder
        assert rnd["training"][role]["weight_delta"] > 0
    assert RunStore(two).step_result("rlac/round1/generator")["resumed_from"].endswith("checkpoint-1")
    assert _rows(two) == _rows(tmp_path / "one")
