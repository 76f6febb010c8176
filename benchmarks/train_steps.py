"""Training-step cost on the embedded model: DPO and GRPO, full fine-tuning vs LoRA.

For each of four configurations (dpo/grpo x full/lora), in a fresh subprocess so that peak
resident memory belongs to that configuration alone:
  * load SmolLM2-135M-Instruct trainable (transformers), warm up with one step (discarded),
  * then time `--steps` optimizer steps through coevo.train (no checkpoint inside the timing),
  * report seconds per step and the peak RSS sampled during the timed stage.
GRPO's reward is the real TAIScore reward shape: the frozen embedded model (llama.cpp)
revises y0 under each sampled critique (actor) and scores the rollout (TaiScoreJudge), so
the share of a step spent in the reward is the share a real critic-adaptation step has.

    .venv/bin/python benchmarks/train_steps.py [--steps 2] [--only dpo-full,...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIGS = ("dpo-full", "dpo-lora", "grpo-full", "grpo-lora")

PAIRS = [
    ("Write a haiku about the sea.", "Grey waves fold and break,\nsalt wind carries gull voices,\nthe tide keeps its time.",
     "sea is big"),
    ("Give one tip for better sleep.", "Keep a fixed wake-up time, even on weekends; it anchors your body clock.",
     "sleep more"),
    ("Explain what a prime number is.", "A prime is a whole number above 1 whose only divisors are 1 and itself.",
     "a number"),
    ("Name a healthy breakfast.", "Oatmeal with berries and a spoon of nuts: fibre, vitamins and protein.",
     "cake"),
]


def run_one(name: str, steps: int, prompts: int, max_tokens: int) -> dict:
    """One configuration, in this process: warm-up stage, then the timed stage."""
    from coevo.llm.specs import load_model
    from coevo.train import DPOSettings, GRPOSettings, LoRASettings, train_dpo, train_grpo
    from coevo.core.types import PreferencePair

    kind, mode = name.split("-")
    lora = LoRASettings(r=16, alpha=32) if mode == "lora" else None
    policy = load_model("smollm2", trainable=True)
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    if kind == "dpo":
        pairs = [PreferencePair(prompt=p, chosen=c, rejected=r) for p, c, r in PAIRS]

        def stage(tag: str, n: int):
            settings = DPOSettings(learning_rate=1e-6, max_steps=n, batch_size=2, max_length=256,
                                   max_prompt_length=128, save_steps=10_000, lora=lora)
            return train_dpo(policy, pairs, settings, work / tag)
    else:
        reward, columns, critic_prompts, timer = _taiscore_reward(prompts, max_tokens)

        def stage(tag: str, n: int):
            settings = GRPOSettings(num_generations=2, batch_size=prompts, max_steps=n, learning_rate=1e-6,
                                    max_completion_length=max_tokens, save_steps=10_000, lora=lora)
            return train_grpo(policy, critic_prompts, reward, settings, work / tag, extra_columns=columns)

    stage("warmup", 1)
    result = stage("timed", steps)
    out = {"config": name, "steps": result.steps, "seconds_per_step": round(result.seconds_per_step, 2),
           "peak_rss_mb": round(result.peak_rss_mb)}
    if kind == "grpo":
        out["reward_time_share"] = round(result.metrics["reward_time_share"], 3)
        out["generation_time_share"] = round(result.metrics.get("generation_time_share", float("nan")), 3)
        out["update_time_share"] = round(1 - out["reward_time_share"] - out["generation_time_share"], 3)
        out["reward_calls"] = timer["calls"]
    return out


def _taiscore_reward(prompts: int, max_tokens: int):
    """The critic-adaptation reward: frozen actor revises under each critique, judge scores it."""
    from coevo.llm.specs import load_model
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic
    from coevo.roles.judges import TaiScoreJudge
    from coevo.tasks.loaders import load_samples
    from coevo.core.types import Rollout, Sampling

    frozen = load_model("smollm2")  # llama.cpp: actor and judge share one copy
    actor = Actor(frozen, Sampling(temperature=0.8, top_p=0.95, max_tokens=max_tokens),
                  revise_sampling=Sampling(temperature=0.2, top_p=0.95, max_tokens=max_tokens))
    judge = TaiScoreJudge(frozen, Sampling(temperature=0.2, max_tokens=2 * max_tokens))
    samples = load_samples("bundled:writing", limit=prompts)
    y0 = actor.respond(samples)
    critic_prompts = [Critic(frozen, actor.sampling).critique_prompt(s.prompt, y) for s, y in zip(samples, y0)]
    timer = {"calls": 0}

    def taiscore_reward(prompts, completions, x, y0, sample_id, **_):
        critiques = [c[-1]["content"] for c in completions]
        y1 = actor.revise(x, y0, critiques)
        rollouts = [Rollout(sample_id=s, x=a, y0=b, c=c, y1=d)
                    for s, a, b, c, d in zip(sample_id, x, y0, critiques, y1)]
        timer["calls"] += 1
        # Raw 1-10 scores; an unreadable judgment is None (TRL leaves it out of the group).
        return [j.score if j.valid else None for j in judge.judge(rollouts)]

    columns = {"x": [s.prompt for s in samples], "y0": y0, "sample_id": [s.id for s in samples]}
    return taiscore_reward, columns, critic_prompts, timer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=2, help="GRPO prompts per step (2 critiques each)")
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--only", default=",".join(CONFIGS))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/train_steps.json"))
    args = parser.parse_args()

    if args.child:
        print(json.dumps(run_one(args.only, args.steps, args.prompts, args.max_tokens)))
        return
    rows = []
    started = time.perf_counter()
    for name in args.only.split(","):
        cmd = [sys.executable, __file__, "--child", "--only", name, "--steps", str(args.steps),
               "--prompts", str(args.prompts), "--max-tokens", str(args.max_tokens)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COEVO_QUIET": "1"})
        if proc.returncode:
            print(f"{name} failed:\n{proc.stderr[-3000:]}", file=sys.stderr, flush=True)
            continue
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), flush=True)
    by = {r["config"]: r for r in rows}
    ratios = {}
    for kind in ("dpo", "grpo"):
        full, lora = by.get(f"{kind}-full"), by.get(f"{kind}-lora")
        if full and lora:
            ratios[f"{kind}_lora_over_full_seconds"] = round(lora["seconds_per_step"] / full["seconds_per_step"], 2)
            ratios[f"{kind}_lora_over_full_rss"] = round(lora["peak_rss_mb"] / full["peak_rss_mb"], 2)
    if "dpo-full" in by and "grpo-full" in by:
        ratios["grpo_over_dpo_seconds_full"] = round(by["grpo-full"]["seconds_per_step"]
                                                     / by["dpo-full"]["seconds_per_step"], 2)
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
              "load_average_at_end": os.getloadavg(), "wall_s": round(time.perf_counter() - started, 1),
              "args": vars(args) | {"json": str(args.json)}, "rows": rows, "ratios": ratios}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(ratios))


if __name__ == "__main__":
    main()
