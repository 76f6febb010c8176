"""Frozen-role throughput: vLLM batched vs the llama.cpp path, measured in one run.

The same 32 TAIScore judge prompts (bundled writing prompts; y0, a critique and y1 written
once, greedily, by the embedded model on vLLM) are judged by `TaiScoreJudge` as a GRPO
reward asks it (its JSON Schema, expected scoring with top-k log-probabilities, T 0.2, one
seed) on each engine: vLLM gets the whole list in one call, llama.cpp decodes one sequence
at a time as it must. Reported: completion tokens per second of wall time in the judge,
and their ratio (target >= 5x).

    .venv/bin/python benchmarks/engine_throughput.py [--prompts 32] [--max-tokens 320] [--json FILE]

vLLM starts worker processes by spawn, hence the `__main__` guard.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)

from coevo.llm.base import user
from coevo.llm.specs import load_model
from coevo.roles.judges import TaiScoreJudge
from coevo.tasks.loaders import load_samples
from coevo.core.types import JudgeSampling, Rollout, Sampling

DATA = Path(__file__).resolve().parents[1] / "coevo" / "tasks" / "data" / "writing_prompts.jsonl"


class Counted:
    """Wraps a ChatModel; counts the completion tokens it wrote and the seconds it took."""

    def __init__(self, inner):
        self.inner, self.model_id = inner, inner.model_id
        self.supports_logprobs = getattr(inner, "supports_logprobs", False)
        self.seconds, self.tokens = 0.0, 0

    def generate(self, conversations, sampling, n=1):
        start = time.perf_counter()
        out = self.inner.generate(conversations, sampling, n)
        self.seconds += time.perf_counter() - start
        self.tokens += sum(c.completion_tokens for group in out for c in group)
        return out


def judge_inputs(model, prompts: int, max_tokens: int) -> list[Rollout]:
    """(x, y0, c, y1) for `prompts` bundled prompts, written greedily (the same every run)."""
    samples = load_samples(str(DATA))
    samples = (samples * (prompts // len(samples) + 1))[:prompts]
    greedy = Sampling(temperature=0.0, max_tokens=max_tokens)

    def ask(texts: list[str]) -> list[str]:
        return [group[0].text for group in model.generate([user(t) for t in texts], greedy)]

    xs = [s.prompt for s in samples]
    y0 = ask(xs)
    critiques = ask([f"Critique this response to the request.\nRequest: {x}\nResponse: {y}" for x, y in zip(xs, y0)])
    y1 = ask([f"Revise the response using the critique.\nRequest: {x}\nResponse: {y}\nCritique: {c}"
              for x, y, c in zip(xs, y0, critiques)])
    return [Rollout(sample_id=f"{s.id}#{i}", x=x, y0=a, c=c, y1=b)
            for i, (s, x, a, c, b) in enumerate(zip(samples, xs, y0, critiques, y1))]


def judge_throughput(model, rollouts: list[Rollout], max_tokens: int) -> dict:
    counted = Counted(model)
    sampling = JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=max_tokens, seed=0, scoring="expected")
    judgments = TaiScoreJudge(counted, sampling).score([r.model_copy() for r in rollouts])
    return {"tokens_per_s": counted.tokens / counted.seconds, "seconds": counted.seconds,
            "completion_tokens": counted.tokens, "valid": sum(j.valid for j in judgments),
            "judged": len(judgments)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=320, help="judge answer budget (taiscore_tiny's)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()

    started = time.perf_counter()
    vllm = load_model("smollm2:vllm")
    load_seconds = time.perf_counter() - started
    rollouts = judge_inputs(vllm, args.prompts, 160)
    judge_throughput(vllm, rollouts[:2], args.max_tokens)  # warm-up: grammar compilation, caches
    fast = judge_throughput(vllm, rollouts, args.max_tokens)
    llama = load_model("smollm2:llamacpp")
    judge_throughput(llama, rollouts[:1], args.max_tokens)
    slow = judge_throughput(llama, rollouts, args.max_tokens)
    result = {
        "vllm_tokens_per_s": round(fast["tokens_per_s"], 1),
        "llamacpp_tokens_per_s": round(slow["tokens_per_s"], 1),
        "ratio": round(fast["tokens_per_s"] / slow["tokens_per_s"], 2),
        "vllm": fast, "llamacpp": slow, "vllm_load_seconds": round(load_seconds, 1),
        "prompts": args.prompts, "max_tokens": args.max_tokens,
        "machine": f"{platform.machine()}, {platform.processor() or '?'}",
    }
    report(result, args.json)


if __name__ == "__main__":
    main()
