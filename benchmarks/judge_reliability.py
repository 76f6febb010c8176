"""Test–retest reliability of the TAIScore judge on the embedded model: sampled vs expected.

The same rollouts (x, y0, c, y1: `--prompts` bundled writing prompts x `--critiques`
critiques each, written once by the embedded model) are judged twice with different seeds,
once per scoring mode, and compared:
  * Spearman rho between the two passes' scores of the same rollouts (higher: a judge that
    agrees with itself);
  * exact-tie rate: the share of within-group pairs (two critiques of the same y0, the pairs
    GRPO's advantages compare) whose scores are equal, per pass (lower: more to learn from);
  * time: seconds per pass, and the expected/sampled ratio (the cost of log-probabilities).

    .venv/bin/python benchmarks/judge_reliability.py [--prompts 6] [--critiques 4] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import time
from pathlib import Path

from coevo.llm.specs import load_model
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.roles.judges import TaiScoreJudge
from coevo.tasks.loaders import load_samples
from coevo.core.types import JudgeSampling, Rollout, Sampling


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rho with average ranks for ties (no scipy needed for 24 numbers)."""
    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=values.__getitem__)
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else float("nan")


def tie_rate(scores: list[float], group: int) -> float:
    pairs = [(a, b) for start in range(0, len(scores), group)
             for a, b in itertools.combinations(scores[start:start + group], 2)]
    return sum(a == b for a, b in pairs) / len(pairs)


def rollouts(model, prompts: int, critiques: int) -> list[Rollout]:
    samples = load_samples("bundled:writing")[:prompts]
    actor = Actor(model, Sampling(temperature=0.8, top_p=0.95, max_tokens=96, seed=0),
                  revise_sampling=Sampling(temperature=0.2, top_p=0.95, max_tokens=96, seed=0))
    critic = Critic(model, Sampling(temperature=0.8, top_p=0.95, max_tokens=128, seed=0), "critic_brief")
    y0 = actor.respond(samples)
    out = []
    for sample, response, cs in zip(samples, y0, critic.critique([s.prompt for s in samples], y0, n=critiques)):
        for k, c in enumerate(cs):
            out.append(Rollout(sample_id=f"{sample.id}#{k}", x=sample.prompt, y0=response, c=c))
    for rollout, y1 in zip(out, actor.revise([r.x for r in out], [r.y0 for r in out], [r.c or "" for r in out])):
        rollout.y1 = y1
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=6)
    parser.add_argument("--critiques", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=320)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    model = load_model("smollm2")
    data = rollouts(model, args.prompts, args.critiques)
    passes: dict[str, list[list[float]]] = {}
    seconds: dict[str, float] = {}
    invalid = 0
    for scoring in ("sampled", "expected"):
        for seed in (1, 2):
            judge = TaiScoreJudge(model, JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=args.max_tokens,
                                                        seed=seed, scoring=scoring))
            start = time.perf_counter()
            judgments = judge.judge(data)
            seconds[scoring] = seconds.get(scoring, 0.0) + time.perf_counter() - start
            invalid += sum(not j.valid for j in judgments)
            passes.setdefault(scoring, []).append([j.score if j.score is not None else 0.0 for j in judgments])
    result = {
        "rollouts": len(data), "group": args.critiques, "invalid_judgments": invalid,
        **{f"{mode}_spearman": round(spearman(*passes[mode]), 3) for mode in passes},
        **{f"{mode}_tie_rate": [round(tie_rate(p, args.critiques), 3) for p in passes[mode]] for mode in passes},
        **{f"{mode}_seconds": round(seconds[mode], 1) for mode in seconds},
        "expected_over_sampled_time": round(seconds["expected"] / seconds["sampled"], 3),
        "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
    }
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
