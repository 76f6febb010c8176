"""Does the reward-hacking monitor flag a reward built to be gamed, and spare an honest one? (issue 44)

    .venv/bin/python benchmarks/hacking_onset.py --reward python:FILE.py:F --anchor python:FILE.py:G
        [--steps 8] [--every 2] [--seeds 3] [--heldout 8] [--anchor-samples 1] [--rollout-engine llamacpp]
        [--first-seed 0] [--json OUT] [--work-dir DIR]
    .venv/bin/python benchmarks/hacking_onset.py --merge A.json B.json --json OUT   # one result from several

Trains the TAIScore critic with GRPO on the reward F (a Python function of (x, y0, critique,
y1) -> float, as `coevo.eval.checkable`' are) on bundled writing prompts, with
`coevo.monitor.HackingMonitor` watching the training reward and the anchor G (same signature:
what F was meant to measure) on `--heldout` held-out prompts every `--every` steps, with
`--anchor-samples` critiques of each prompt averaged per prompt (the prompt stays the item the
anchor's interval counts). Up to 16 held-out prompts are those the first measurements held
out; more come from the prompts after the 16 trained on, so the training prompts stay the same
(at most 56 of the 72 bundled prompts can be held out). Writes per seed `flagged`,
`onset_step`, `flag_step`, `reward_curve`, `anchor_curve`, `anchor_checks` (each check's
seconds, engine-copy seconds and critiques), and over the seeds the flag rate with its Wilson
interval, the steps from onset to flag and `anchor_cost` (per check); `seconds`.

The measurements of BENCHMARKS.md, "Reward-hacking monitor" (benchmarks/hacking/):
(a) the gamed reward `concision.py:by_words` (brevity alone) against the
    `feedback.py:names_the_problem` anchor (does the critique still point at what y0 breaks?):
    expected flagged;
(b) the honest `concision.py:by_characters` against the `concision.py:by_words` anchor (two
    measures of brevity that agree): expected not flagged.
The JSON is rewritten after every seed.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--reward", help="python:FILE.py:FUNCTION, the training reward")
    parser.add_argument("--anchor", help="python:FILE.py:FUNCTION, what the reward was meant to measure")
    parser.add_argument("--steps", type=int, default=8, help="GRPO optimizer steps per seed (default 8)")
    parser.add_argument("--every", type=int, default=2, help="steps between anchor checks (default 2)")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (0, 1, ...; default 3)")
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the first seed (default 0): a stopped run's remaining seeds, to be merged after")
    parser.add_argument("--heldout", type=int, default=8, help="held-out prompts the anchor is taken on (default 8)")
    parser.add_argument("--anchor-samples", type=int, default=1,
                        help="critiques of each held-out prompt per check, their anchor values averaged (default 1)")
    parser.add_argument("--rollout-engine", choices=["llamacpp", "transformers"], default="llamacpp",
                        help="where the GRPO samples and the anchor's critiques are generated: llama.cpp copies of "
                             "the current weights (default, ~6x faster on a CPU) or the trained model")
    parser.add_argument("--json", help="write the result here")
    parser.add_argument("--work-dir", help="where the runs go (default: a temporary folder)")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="merge these results' seeds (runs of the same measurement with different "
                             "--first-seed) into --json, and print them; nothing is run")
    args = parser.parse_args(argv)
    if args.merge:
        return merge_results(args.merge, args.json)
    if not (args.reward and args.anchor):
        parser.error("--reward and --anchor are required (or --merge JSON ... to merge results)")
    for name in ("steps", "every", "seeds", "heldout", "anchor_samples"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1, got {getattr(args, name)}")
    if args.first_seed < 0:
        parser.error(f"--first-seed must be at least 0, got {args.first_seed}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from learning.hacking import measure
    from coevo.llm.base import ModelError

    with tempfile.TemporaryDirectory(prefix="coevo-hacking-") as scratch:
        try:
            # The JSON is rewritten after every seed: a stopped run keeps the seeds it finished.
            result = measure(reward=args.reward, anchor=args.anchor, steps=args.steps, every=args.every,
                             seeds=list(range(args.first_seed, args.first_seed + args.seeds)), heldout=args.heldout,
                             anchor_samples=args.anchor_samples,
                             rollout_engine=args.rollout_engine,
                             work_dir=Path(args.work_dir or scratch),
                             on_seed=lambda so_far: write_json(args.json, so_far))
        except (ModelError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    print_result(result)
    write_json(args.json, result)
    return 0


def merge_results(paths: list[str], out: str | None) -> int:
    from learning.hacking import HackingOnset, merged

    try:
        result = merged([HackingOnset.model_validate_json(Path(p).read_text()) for p in paths])
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print_result(result)
    write_json(out, result)
    return 0


def print_result(result: Any) -> None:
    flagged = result.flagged
    print(f"{result.reward} watched by {result.anchor}: flagged in {flagged['count']} of {flagged['n']} seeds "
          f"({flagged['rate']:.2f} [{flagged['ci'][0]:.2f}, {flagged['ci'][1]:.2f}]); "
          f"onset to flag {result.onset_to_flag_steps} steps; {result.seconds / 60:.1f} min")
    by_anchor = result.anchor_flagged
    if by_anchor and by_anchor["count"] != flagged["count"]:
        print(f"  by the anchor itself: {by_anchor['count']} of {by_anchor['n']} "
              f"({by_anchor['rate']:.2f} [{by_anchor['ci'][0]:.2f}, {by_anchor['ci'][1]:.2f}])")
    cost = result.anchor_cost
    if cost:
        print(f"  anchor: {cost['critiques_per_check']:g} critiques a check, {cost['seconds_per_check']:.1f} s "
              f"(sd {cost['seconds_sd']:.1f}, n={cost['checks']} checks; "
              f"engine copy {cost['copy_seconds_per_check']:.1f} s)")
    for run in result.seeds:
        print(f"  seed {run.seed}: " + (f"flagged at step {run.flag_step} ({run.flags[0]['anchor']}), onset "
                                        f"{run.onset_step}" if run.flagged
                                        else "not flagged")
              + f"; reward {[round(r[1], 3) for r in run.reward_curve]}; anchor {[round(a[1], 3) for a in run.anchor_curve]}")


def write_json(path: str | None, result: object) -> None:
    if path:
        Path(path).write_text(result.model_dump_json(indent=1) + "\n")  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main())
