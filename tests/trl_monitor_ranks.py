"""A user's TRL GRPO script with coevo's monitor, run by tests/test_trl_user_path.py under
`torchrun --nproc_per_node 2` (gloo): each rank writes OUT/rank<N>.json with how often its
anchor ran, the monitor's reward curve and TRL's logged reward per step, so the test can check
that anchors run on the main process only and the curve is TRL's mean over both ranks.

    torchrun --nproc_per_node 2 tests/trl_monitor_ranks.py MODEL OUT
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from coevo.monitor import HackingMonitor
from coevo.rewards import judge


def main(model_path: str, out: Path) -> None:
    rank = int(os.environ.get("RANK", "0"))
    calls = {"anchor": 0}

    def anchor() -> dict[str, float]:
        calls["anchor"] += 1
        return {"q1": 1.0, "q2": 2.0}

    def length(prompt: str, completion: str) -> float:
        return float(len(completion))

    model = AutoModelForCausalLM.from_pretrained(model_path)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    train = Dataset.from_list([{"prompt": f"Describe thing {i}."} for i in range(8)])
    monitor = HackingMonitor({"held_out": anchor}, every=1)
    args = GRPOConfig(output_dir=str(out / "trainer"), max_steps=3, per_device_train_batch_size=2, num_generations=2,
                      max_completion_length=8, logging_steps=1, report_to="none", use_cpu=True, seed=0)
    trainer = GRPOTrainer(model=model, reward_funcs=monitor.wrap_reward(judge(length)), args=args,
                          train_dataset=train, processing_class=tokenizer, callbacks=[monitor])
    trainer.train()
    report = monitor.report()
    logged = {row["step"]: row["reward"] for row in trainer.state.log_history if "reward" in row}
    (out / f"rank{rank}.json").write_text(json.dumps({
        "anchor_calls": calls["anchor"], "reward_curve": report["reward_curve"], "trl_reward": logged,
        "world_size": args.world_size}))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
