"""The embedded model's constraint pass rate on the bundled writing prompts (its y0).

Every bundled prompt states checkable constraints (`meta.constraints`, coevo/eval/constraints.py).
This asks the actor for one response per prompt (the embedded model on llama.cpp, T 0.8,
top-p 0.95, seed 0, at most 512 tokens: the rollout decoding of the configs) and reports
`constraint_pass_rate` (responses meeting all their constraints) with its Wilson 95 % CI and
n, the share of single checks met, and the pass count per constraint kind: the starting point
a TAIScore or DecoEvo loop on these prompts can move.

    .venv/bin/python benchmarks/constraint_baseline.py [--spec smollm2:llamacpp] [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import json
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="smollm2:llamacpp", help="the actor's model spec")
    parser.add_argument("--json", help="also write the result (and every response) here")
    args = parser.parse_args(argv)

    from coevo.eval import constraints as checks
    from coevo.llm.specs import load_model
    from coevo.roles.actor import Actor
    from coevo.tasks.loaders import load_samples
    from coevo.core.types import Sampling

    began = time.time()
    samples = load_samples("bundled:writing")
    actor = Actor(load_model(args.spec), Sampling(temperature=0.8, top_p=0.95, max_tokens=512, seed=0))
    responses = [y for i in range(0, len(samples), 8) for y in actor.respond(samples[i:i + 8])]
    outcomes, per_kind = [], collections.defaultdict(list)
    for sample, response in zip(samples, responses):
        wanted = checks.constraints_of(sample)
        passed = checks.passed(checks.constraint_judgment(response, wanted))
        outcomes.append(passed)
        for constraint, ok in zip(wanted, passed):
            per_kind[constraint["kind"]].append(ok)
    result = {**checks.pass_rate_metrics(outcomes), "seconds": round(time.time() - began, 1),
              "per_kind": {kind: f"{sum(oks)}/{len(oks)}" for kind, oks in sorted(per_kind.items())}}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({**result, "responses": [{"id": s.id, "y0": y} for s, y in zip(samples, responses)]}, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
