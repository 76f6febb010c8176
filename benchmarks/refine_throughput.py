"""Refinement throughput on the embedded model, three ways, measured in one run.

The same batch of refinement rollouts (y0 -> critique -> y1 -> TAIScore judge) goes through
SmolLM2-135M-Instruct by
  * transformers, one conversation per call   (what a naive loop does)
  * transformers, the whole batch per call     (what coevo's pipeline does)
  * llama.cpp in process                       (what frozen roles use)
For each: completion tokens per second of model time, wall time, and the pipeline's wall
time divided by the time spent inside the model (orchestration overhead; goal <= 1.10).
Greedy decoding and fixed y0 make the three backends do comparable work.

    .venv/bin/python benchmarks/refine_throughput.py [--prompts 8] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from coevo.roles.judging import rollout_judge
from coevo.roles.refinement import refine
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.tasks.loaders import load_samples
from coevo.core.types import Sampling


class TimedModel:
    """Wraps a ChatModel; accumulates seconds spent inside it and tokens it wrote."""

    def __init__(self, inner):
        self.inner, self.model_id = inner, inner.model_id
        self.seconds, self.tokens, self.calls = 0.0, 0, 0

    def generate(self, conversations, sampling, n=1):
        start = time.perf_counter()
        out = self.inner.generate(conversations, sampling, n)
        self.seconds += time.perf_counter() - start
        self.tokens += sum(c.completion_tokens for group in out for c in group)
        self.calls += 1
        return out


class OneAtATime:
    """Hands the backend one conversation per call: the naive loop, for comparison."""

    def __init__(self, inner):
        self.inner, self.model_id = inner, inner.model_id

    def generate(self, conversations, sampling, n=1):
        return [self.inner.generate([c], sampling, n)[0] for c in conversations]


def run_pipeline(model, samples, max_tokens: int) -> dict:
    timed = TimedModel(model)
    greedy = Sampling(temperature=0.0, max_tokens=max_tokens)
    actor, critic = Actor(timed, greedy), Critic(timed, greedy)
    judges = {"taiscore": rollout_judge("taiscore", timed, greedy.model_copy(update={"max_tokens": 2 * max_tokens}))}
    start = time.perf_counter()
    rollouts = refine(samples, actor, critic, judges, batch_size=len(samples))
    wall = time.perf_counter() - start
    return {"wall_s": round(wall, 2), "model_s": round(timed.seconds, 2), "tokens": timed.tokens,
            "tokens_per_s": round(timed.tokens / timed.seconds, 1),
            "overhead_ratio": round(wall / timed.seconds, 3), "model_calls": timed.calls,
            "valid_judgments": sum(r.judgments["taiscore"].valid for r in rollouts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/refine_throughput.json"))
    args = parser.parse_args()

    from coevo.llm.embedded import gguf_path, hf_dir
    from coevo.llm.llamacpp import LlamaCppModel
    from coevo.llm.local import LocalModel

    samples = load_samples("bundled:writing", limit=args.prompts)
    local = LocalModel(hf_dir(), batch_size=args.prompts)
    llama = LlamaCppModel(gguf_path())
    # Warm-up: the first calls on a fresh process pay for allocations and kernel selection.
    run_pipeline(local, samples[:2], 8)
    run_pipeline(llama, samples[:2], 8)
    results = {
        "transformers_one_at_a_time": run_pipeline(OneAtATime(local), samples, args.max_tokens),
        "transformers_batched": run_pipeline(local, samples, args.max_tokens),
        "llama_cpp": run_pipeline(llama, samples, args.max_tokens),
    }
    base = results["transformers_one_at_a_time"]["tokens_per_s"]
    for row in results.values():
        row["tokens_per_s_vs_one_at_a_time"] = round(row["tokens_per_s"] / base, 2)
    record = {"command": f"benchmarks/refine_throughput.py --prompts {args.prompts} --max-tokens {args.max_tokens}",
              "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}, "
                         f"{__import__('os').cpu_count()} cores", "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2))
    print(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
