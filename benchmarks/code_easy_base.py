"""Base pass@1 of an RLAC code config's generator on every problem of its data source.

What round 0 of `coevo run` measures on the held-out split (RlacRun.evaluate), on all the
problems instead: the generator loaded as RLAC loads it (transformers, the config's model),
asked through the config's generator template (CodeDomain.generator_prompt), greedy under
`sampling.eval`, reasoning stripped, every reference test run in the sandbox. Used to size
`bundled:code_easy` so the embedded generator passes some problems but not most.

    .venv/bin/python benchmarks/code_easy_base.py [examples/rlac_code_easy.yaml] [--json FILE]

Prints pass@1 with n and a 95 % Wilson interval, per difficulty too, and the seconds taken.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config", nargs="?", default="examples/rlac_code_easy.yaml")
    parser.add_argument("--json", help="also write the result (and each problem's pass) here")
    args = parser.parse_args(argv)

    from coevo.algorithms.rlac.domains import CodeDomain
    from coevo.algorithms.rlac.data import load_instructions
    from coevo.settings.config import read_yaml
    from coevo.eval.stats import wilson_interval
    from coevo.roles.parsing import strip_reasoning
    from coevo.run.runner import resolve_config

    _, config = resolve_config(read_yaml(args.config), args.config)
    if config.task != "code":
        print(f"{args.config}: task is {config.task!r}; this measures code configs", file=sys.stderr)
        return 2
    problems = load_instructions(config, config.data.source)
    domain = CodeDomain(config, store=None)  # the store is not read by the code domain
    started = time.perf_counter()
    generator = config.roles.load("generator", trainable=True)  # as RLAC's policy is loaded
    prompts = [domain.generator_prompt(p) for p in problems]
    outputs = [strip_reasoning(row[0].text.strip()) for row in generator.generate(prompts, config.roles.generator.sampling.eval)]
    generated = time.perf_counter() - started
    outcomes = domain.tests.run_many(list(zip(problems, outputs)))
    seconds = time.perf_counter() - started

    passed = [o.passed for o in outcomes]
    share, lo, hi = wilson_interval(sum(passed), len(passed))
    by_level: dict[str, list[bool]] = defaultdict(list)
    for problem, ok in zip(problems, passed):
        by_level[str(problem.meta.get("difficulty", "-"))].append(ok)
    result = {"config": args.config, "source": config.data.source, "n": len(passed), "passed": sum(passed),
              "pass_at_1": share, "ci95": [lo, hi],
              "by_difficulty": {k: {"n": len(v), "passed": sum(v)} for k, v in sorted(by_level.items())},
              "seconds": round(seconds, 1), "generation_seconds": round(generated, 1)}
    print(f"pass@1 {share:.3f} ({sum(passed)}/{len(passed)}), 95% Wilson CI [{lo:.3f}, {hi:.3f}]; "
          f"by difficulty {result['by_difficulty']}; {seconds:.0f} s ({generated:.0f} s generating)")
    if args.json:
        result["problems"] = [{"id": p.id, "passed": ok, "output": out}
                              for p, ok, out in zip(problems, passed, outputs)]
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
