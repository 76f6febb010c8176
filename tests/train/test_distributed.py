"""Many processes, one run (coevo/train/distributed.py, coevo/run/ranks.py), on two real gloo
processes: rank 0 loads a trainable model through `load_trainable` and rank 1 loads the same,
then restores and trains exactly what rank 0 tells it, with rank 0's data, and its GRPO
rewards are computed on rank 0. Model loading and the training functions are recorders here;
the real thing under torchrun is test_many_processes.py (slow)."""

import json
import os
import socket
import subprocess
import sys

SCRIPT = r'''
import json, sys
from types import SimpleNamespace
from coevo.run import ranks
from coevo.train import distributed, trainable
import coevo.llm.specs as specs, coevo.train.dpo as dpo, coevo.train.grpo as grpo, coevo.train.stages as stages

log = []
if distributed.is_main():
    distributed.init()
    specs.load_model = lambda spec, store, trainable, **options: SimpleNamespace()
    policy = trainable.load_trainable("smollm2", batch_size=2)
    distributed.tell("restore", key=distributed.key_of(policy), checkpoint="/ckpt/final", lora=None)
    distributed.tell("dpo", key=distributed.key_of(policy), pairs=["p1", "p2"], settings="S", output_dir="/out",
                     resume=True, reference_key=None)
    distributed.tell("grpo", key=distributed.key_of(policy), prompts=["a", "b"], settings="G", output_dir="/g",
                     resume=True, extra_columns=None)
    # What TRL does on each rank: score this rank's completions (rank 0: two of them).
    judge_saw = []
    def judge(prompts, completions, x, trainer_state):
        judge_saw.append({"completions": completions, "x": x, "state": trainer_state})
        return [float(len(c)) for c in completions]
    rewards = distributed.shared_reward(judge)(prompts=["a", "b"], completions=["aa", "bbb"], x=["xa", "xb"],
                                               trainer_state="rank0-state")
    distributed.end()
    log = {"key": policy.dist_key, "rewards": rewards, "judge_saw": judge_saw}
else:
    specs.load_model = lambda spec, store, trainable, **options: log.append(["load", spec, trainable, options]) or SimpleNamespace(spec=spec)
    stages.restore_checkpoint = lambda policy, checkpoint, lora: log.append(["restore", policy.spec, checkpoint])
    dpo.train_dpo = lambda policy, reference=None, **kw: log.append(["dpo", policy.spec, kw["pairs"], str(kw["output_dir"])])
    def fake_grpo(policy, reward_fn, **kw):
        log.append(["grpo", kw["prompts"], reward_fn(prompts=["c"], completions=["cccccc"], x=["xc"], trainer_state="rank1-state")])
    grpo.train_grpo = fake_grpo
    ranks.follow()
json.dump(log, open(sys.argv[1], "w"))
'''


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_rank_1_does_what_rank_0_says_and_rank_0_scores_every_rank(tmp_path):
    port = _free_port()
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank),
               "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}
        procs.append(subprocess.Popen([sys.executable, "-c", SCRIPT, str(tmp_path / f"rank{rank}.json")], env=env,
                                      stderr=subprocess.PIPE, text=True))
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    rank0 = json.loads((tmp_path / "rank0.json").read_text())
    rank1 = json.loads((tmp_path / "rank1.json").read_text())
    assert rank1 == [
        ["load", "smollm2", True, {"batch_size": 2}],
        ["restore", "smollm2", "/ckpt/final"],
        ["dpo", "smollm2", ["p1", "p2"], "/out"],
        ["grpo", ["a", "b"], [6.0]],  # its one completion, scored on rank 0
    ]
    assert rank0["key"] == "m0" and rank0["rewards"] == [2.0, 3.0]
    # One judge call for both ranks' completions, rank 0's own objects passed as they are.
    [seen] = rank0["judge_saw"]
    assert seen == {"completions": ["aa", "bbb", "cccccc"], "x": ["xa", "xb", "xc"], "state": "rank0-state"}
