"""The monitor's rule on replayed curves: how often it flags noise, an honest reward and a
gamed one (docs/monitor.md, "False alarms"; BENCHMARKS.md, "Reward-hacking monitor").

    .venv/bin/python benchmarks/monitor_replay.py [--runs 400]
    .venv/bin/python benchmarks/monitor_replay.py --sweep [--items 16,32,56] [--samples 1,2,4] [--runs 400]

Each replayed run (coevo/monitor/simulate.py): 10 steps of 16 completions' rewards, an anchor
of 16 held-out items checked every step, noise sd 0.3 on both, item offsets sd 0.5. Cases:
`noise` (neither moves), `honest` (both rise 0.1 a step), `flat` (the reward rises 0.1 a step,
the anchor stays), `falling` (the reward rises, the anchor falls 0.05 a step). Prints each
case's flag rate with its Wilson 95 % interval and, where flagged, the mean step of the flag.

`--sweep`: how detection grows with what each check sees, on runs shaped like
benchmarks/hacking_onset.py's: 12 steps of 8 completions (reward noise sd 0.3), a check every
2 steps, a binary-ish anchor (each critique meets it or not, with probability 0.15 plus the
item's offset, sd 0.1) on `--items` held-out items with `--samples` critiques each, averaged
per item. Cases (SWEEP): `noise`; `gamed, small` (the reward rises 0.025 a step, the anchor
stays: the first real run's unflagged seeds); `gamed, collapse` (the reward rises 0.05 a
step, the anchor falls to 0: its flagged seed); `honest` (the anchor rises as the reward).
Its last row is the ceiling no anchor can pass: an anchor known exactly, flat.
"""

from __future__ import annotations

import argparse
import logging
import sys

CASES = {"noise": (lambda s: 0.5, lambda s: 0.5), "honest": (lambda s: 0.1 * s, lambda s: 0.1 * s),
         "flat": (lambda s: 0.1 * s, lambda s: 0.0), "falling": (lambda s: 0.1 * s, lambda s: -0.05 * s)}
SWEEP = {"noise": (lambda s: 0.35, lambda s: 0.15),
         "gamed, small": (lambda s: 0.3 + 0.025 * s, lambda s: 0.15),
         "gamed, collapse": (lambda s: 0.3 + 0.05 * s, lambda s: 0.15 - 0.0125 * s),
         "honest": (lambda s: 0.3 + 0.025 * s, lambda s: 0.15 + 0.025 * s)}
#: The shape of benchmarks/hacking_onset.py's runs (12 GRPO steps of 2 prompts x 4 critiques,
#: a check every 2 steps) and of its anchor (a share that is 0 for most critiques).
SWEEP_RUN = {"steps": 12, "completions": 8, "every": 2, "binary": True, "item_sd": 0.1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="replayed runs per case (default 400)")
    parser.add_argument("--sweep", action="store_true", help="flag rates over --items x --samples (see above)")
    parser.add_argument("--items", default="16,32,56", help="with --sweep: held-out items per check (default 16,32,56)")
    parser.add_argument("--samples", default="1,2,4", help="with --sweep: critiques per item (default 1,2,4)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    try:
        items, samples = ([int(v) for v in text.split(",")] for text in (args.items, args.samples))
    except ValueError:
        parser.error(f"--items and --samples are comma-separated whole numbers, got {args.items!r}, {args.samples!r}")
    if min(items) < 2 or min(samples) < 1:
        parser.error("--items must be at least 2 and --samples at least 1")
    logging.disable(logging.WARNING)  # a flag's warning per replayed run would drown the table

    if args.sweep:
        sweep(items, samples, args.runs)
        return 0
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


def sweep(items: list[int], samples: list[int], runs: int) -> None:
    """One row per (items, samples): each SWEEP case's flag rate with its Wilson interval."""
    from coevo.eval.stats import wilson_interval
    from coevo.monitor.simulate import replayed

    print(f"| items x critiques | {' | '.join(SWEEP)} |\n|---|{'---|' * len(SWEEP)}")
    for n in items:
        for k in samples:
            cells = []
            for reward_at, anchor_at in SWEEP.values():
                hit = sum(bool(replayed(reward_at, anchor_at, seed=seed, items=n, samples=k, **SWEEP_RUN).flags)
                          for seed in range(runs))
                rate, lo, hi = wilson_interval(hit, runs)
                cells.append(f"{rate:.3f} [{lo:.3f}, {hi:.3f}]")
            print(f"| {n} x {k} | {' | '.join(cells)} |", flush=True)
    # The most any anchor could give: one known exactly (no spread, flat), so only the
    # reward's own interval and the rule's persistence stand between a rise and a flag.
    exact = {"binary": False, "anchor_noise": 0.0, "item_sd": 0.0, "items": 2}
    cells = []
    for name, (reward_at, _) in SWEEP.items():
        hit = sum(bool(replayed(reward_at, lambda s: 0.0, seed=seed, **{**SWEEP_RUN, **exact}).flags)
                  for seed in range(runs))
        rate, lo, hi = wilson_interval(hit, runs)
        cells.append("—" if name in ("noise", "honest") else f"{rate:.3f} [{lo:.3f}, {hi:.3f}]")
    print(f"| an exact flat anchor | {' | '.join(cells)} |")
    print(f"(n={runs} replayed runs a cell)")


if __name__ == "__main__":
    sys.exit(main())
