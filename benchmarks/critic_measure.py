"""The critic learning curve's measurement: its critiques written by the trained model in
transformers, or by a llama.cpp copy of the same weights (issue 25: a trained role's
generations outside its own optimizer step run on an engine).

`learning.critic`'s measurement, on the embedded model's base weights, as the critic's
learning test takes it (4 training prompts, 2 seeds, 64-token critiques, the concise-critique
reward): one process, `--repeats` alternations of the two ways, each timed whole (the
llama.cpp way includes writing and loading its GGUF copy, as every measurement does). Both
rewards are printed: the two ways sample from the same weights (F16 in the copy), so their
means should agree within sampling noise.

    python benchmarks/critic_measure.py [--repeats 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from coevo.algorithms.backend import default_backend
    from coevo.algorithms.taiscore import make_reward_fn
    from learning import critic as learning
    from learning.common import split_prompts
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic
    from coevo.roles.judging import judge_for
    from coevo.core.types import Sampling

    backend = default_backend()
    work = Path(tempfile.mkdtemp(prefix="critic-measure-"))
    train, scored = split_prompts(1, 4, True)
    actor = Actor(backend.load_frozen("smollm2"), learning.Y0_SAMPLING)
    y0 = learning.initial_responses(actor, train, work / "y0.json")
    policy = backend.load_trainable("smollm2")
    critic = Critic(policy, Sampling(temperature=0.8, top_p=0.95, max_tokens=learning.CRITIQUE_TOKENS),
                    max_prompt_tokens=1024)
    reward_fn = make_reward_fn(actor, judge_for("critique_quality", backend.load_frozen(learning.DEFAULT_REWARD),
                                               Sampling()), "critique_quality", invalid_reward=0.0)
    ways = {
        "transformers": learning.scored_reward_fn(critic, reward_fn, scored, y0, [0, 1]),
        "llamacpp": learning.scored_reward_fn(critic, reward_fn, scored, y0, [0, 1],
                                              learning.engine_copy_fn(backend, policy, "llamacpp", work)),
    }
    rows: dict[str, dict[str, list[float]]] = {way: {"seconds": [], "reward": []} for way in ways}
    for _ in range(args.repeats):
        for way, measure in ways.items():
            started = time.perf_counter()
            scores = measure()
            rows[way]["seconds"].append(round(time.perf_counter() - started, 2))
            rows[way]["reward"].append(round(statistics.fmean(scores.values()), 3))
            print(way, rows[way]["seconds"][-1], "s, reward", rows[way]["reward"][-1], flush=True)
    ratio = statistics.median(rows["llamacpp"]["seconds"]) / statistics.median(rows["transformers"]["seconds"])
    result = {"repeats": args.repeats, "critiques_per_measurement": 2 * len(scored), "ways": rows,
              "llamacpp_over_transformers": round(ratio, 2)}
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
