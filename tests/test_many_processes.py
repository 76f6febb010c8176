"""Two training processes on this CPU (torchrun, gloo): rank 0 runs the run, both train.

Proof that `torchrun --nproc_per_node 2 -m coevo.cli run CONFIG` is one run: it finishes,
summary.json says world_size 2, the trained checkpoints differ from the base, and its store
holds exactly the rows a one-process run of the same config writes (no table doubled by a
second writer; the one-process runs are the session's, tests/conftest.py). They run on the
tiny random-initialised model with Python judges: many processes change training's machinery,
which does not depend on what the weights say; the embedded model's runs are the end-to-end
tests'. For RLAC, the two-process run's launcher is killed with
`kill -9` during a training stage (its workers must follow it) and the run resumed with the
same launcher and --resume. Test-sized settings of examples/taiscore_tiny.yaml and
examples/rlac_code_tiny.yaml; BENCHMARKS.md has the configs as they ship.
"""

import json
import os
import re
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
from real_runs import (
    coevo_run_command,
    rlac_code_on_tiny_llama,
    run_coevo,
    taiscore_on_tiny_llama,
)

from coevo.algorithms.rlac.stages import BARE, STAGE, round_stage
from coevo.rundir.lock import holder
from coevo.rundir.store import RunStore

pytestmark = [pytest.mark.slow, pytest.mark.tiny_model]
TABLES = ("meta", "rollouts", "judgments", "metrics", "records", "steps")
# One thread per process: two processes share this machine's two cores.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


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
    proc = subprocess.Popen(coevo_run_command(config, out, settings, processes=processes),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COEVO_QUIET": "1", **ONE_THREAD})
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
    """Rows per table. The `warnings` meta key is left out: it is written only when a stage's
    sampled text trips a finding (e.g. critiques cut at the length limit), and two processes
    sample with other random streams than one, so whether it exists is not the run's shape.
    Nor is `cache_hits` (coevo/plan/cost.py): a resumed run has answers in its cache, a fresh one none."""
    skipped_meta = ("warnings", "cache_hits")
    with sqlite3.connect(out / "run.sqlite") as db:
        rows = {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for table in TABLES}
        rows["meta"] = db.execute(f"SELECT COUNT(*) FROM meta WHERE key NOT IN ({','.join('?' * len(skipped_meta))})",
                                  skipped_meta).fetchone()[0]
        return rows


def test_two_processes_make_one_run(tmp_path, tiny_llama, taiscore_tiny_llama_run):
    # On the tiny random model with Python judges (tests/real_runs.py): what two processes
    # change is training's machinery (the gradients' sum, rank 0's writes), not what the
    # weights say, and the embedded model's run of the same loop is test_taiscore_e2e's.
    two = run_coevo("taiscore_tiny.yaml", tmp_path / "two", taiscore_on_tiny_llama(tiny_llama), processes=2,
                    env=ONE_THREAD).summary
    one = taiscore_tiny_llama_run.summary
    assert (two["world_size"], one["world_size"]) == (2, 1)
    [rnd] = two["rounds"]
    metrics = rnd["metrics"]
    assert metrics["critic_weight_delta"] > 0 and metrics["actor_weight_delta"] > 0
    for role in ("actor", "critic"):  # stored relative to the run folder
        assert not Path(rnd["checkpoints"][role]).is_absolute()
        assert (tmp_path / "two" / rnd["checkpoints"][role]).is_dir()
    assert two["audit"] == [] and _rows(tmp_path / "two") == _rows(taiscore_tiny_llama_run.out)
    assert not (tmp_path / "two" / "run.lock").read_text()  # released, by the one process that held it


def test_two_process_rlac_killed_mid_stage_resumes_and_makes_one_run(tmp_path, tiny_llama, rlac_code_tiny_llama_run):
    two, settings = tmp_path / "two", rlac_code_on_tiny_llama(tiny_llama)
    _kill_during(two, 2, "rlac_code_tiny.yaml", settings, Path(round_stage(1, "generator", prefix=BARE)))
    assert not (two / "summary.json").exists()
    resumed = run_coevo("rlac_code_tiny.yaml", two, settings, "--resume", processes=2, env=ONE_THREAD).summary
    one = rlac_code_tiny_llama_run.summary
    assert (resumed["world_size"], one["world_size"]) == (2, 1)
    [rnd] = resumed["rounds"]
    assert rnd["trained"]["generator"]  # (the critic's two calls to an output are often the same: no pair)
    for role in (role for role, trained in rnd["trained"].items() if trained):
        assert (two / rnd["checkpoints"][role]).is_dir()  # relative to the run folder
        assert rnd["training"][role]["weight_delta"] > 0
    # Resumed from a checkpoint the killed stage saved (the first, or a later one: a tiny step
    # can be saved before the launcher's kill lands), and trained to its last step.
    generator = RunStore(two).step_result(round_stage(1, "generator", prefix=STAGE))
    assert re.search(r"/checkpoints/checkpoint-[1-3]$", generator["resumed_from"]) and generator["steps"] == 4
    assert _rows(two) == _rows(rlac_code_tiny_llama_run.out)
