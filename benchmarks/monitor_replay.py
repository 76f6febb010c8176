"""The monitor's rule on replayed curves: how often it flags noise, an honest reward and a
gamed one (docs/monitor.md, "False alarms"; BENCHMARKS.md, "Reward-hacking monitor").

    .venv/bin/python benchmarks/monitor_replay.py [--runs 400]

Each replayed run (coevo/monitor/simulate.py): 10 steps of 16 completions' rewards, an anchor
of 16 held-out items checked every step, noise sd 0.3 on both, item offsets sd 0.5. Cases:
`noise` (neither moves), `honest` (both rise 0.1 a step), `flat` (the reward rises 0.1 a step,
the anchor stays), `falling` (the reward rises, the anchor falls 0.05 a step). Prints each
case's flag rate with its Wilson 95 % interval and, where flagged, the mean step of the flag.
"""

from __future__ import annotations

import argparse
import logging
import sys

CASES = {"noise": (lambda s: 0.5, lambda s: 0.5), "honest": (lambda s: 0.1 * s, lambda s: 0.1 * s),
         "flat": (lambda s: 0.1 * s, lambda s: 0.0), "falling": (lambda s: 0.1 * s, lambda s: -0.05 * s)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="replayed runs per case (default 400)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    logging.disable(logging.WARNING)  # a flag's warning per replayed run would drown the table

    from coevo.eval.stats import wilson_interval
    from coevo.monitor.simulate import replayed

    print(f"| case | flagged [95 % CI] (n={args.runs}) | mean flag step |\n|---|---|---|")
    for name, (reward_at, anchor_at) in CASES.items():
        flags = [replayed(reward_at, anchor_at, seed=seed).flags for seed in range(args.runs)]
        hit = [f[0].step for f in flags if f]
        rate, lo, hi = wilson_interval(len(hit), args.runs)
        step = f"{sum(hit) / len(hit):.1f}" if hit else "—"
        print(f"| {name} | {rate:.3f} [{lo:.3f}, {hi:.3f}] | {step} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
