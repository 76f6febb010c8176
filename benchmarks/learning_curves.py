"""Does each loop change what its model DOES the way its reward asks? (issue 22)

Trains one loop on the embedded model with a reward whose answer Python can check, and
measures the loop's target on held-out items before training, at intermediate steps and
after (benchmarks/learning/ has one module per loop):

    taiscore-critic   GRPO on TAIScore's critic; target: the held-out reward of its critiques
                      (default reward: concise_critique, Table 6's "concise feedback";
                      names_broken_constraint asks it to name the constraints y0 breaks)
    taiscore-actor    DPO on the revisions a Python pairwise judge prefers; target: held-out
                      constraint_pass_rate (default judge: fewer_broken_constraints)
    rlac-code         examples/rlac_code_easy.yaml; target: held-out pass@1
    decoevo           DecoEvo with a Python grader; target: the test score (default grader:
                      the share of a prompt's constraints met)

    .venv/bin/python benchmarks/learning_curves.py --loop taiscore-critic \\
        [--reward python:FILE.py:FUNCTION] [--steps N] [--seeds 0,1] --json FILE

`--reward` is the loop's Python reward / judge / grader, with the signature of its kind
(`coevo models` lists them): taiscore-critic `reward(x, y0, critique, y1) -> float | None`
(y1 is None unless `--reward-kind taiscore`), taiscore-actor `pairwise(x, a, b) -> "a" | "b" |
"tie"`, decoevo `grader(question, answer, rubric) -> float in [0, 1]`; rlac-code's reward is
the code validator. The JSON has `before`, `after`, `gain`, `gain_ci` ([lo, hi], a paired
bootstrap 95 % over held-out items x seeds), `n`, `curve` ([step, value] pairs), `steps`,
`seconds`, the settings and notes. Results: BENCHMARKS.md, "Learning curves".
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
import tempfile
from pathlib import Path

#: Loop name -> the learning module whose `measure` runs it.
LOOPS = {"taiscore-critic": "learning.critic", "taiscore-actor": "learning.actor",
         "rlac-code": "learning.rlac_code", "decoevo": "learning.decoevo"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--loop", required=True, choices=sorted(LOOPS))
    parser.add_argument("--reward", help="python:FILE.py:FUNCTION (or python:package.module:function); "
                                         "default: the loop's checkable reward")
    parser.add_argument("--reward-kind", choices=["critique_quality", "taiscore"], default="critique_quality",
                        help="taiscore-critic only: taiscore has the actor revise first and passes y1")
    parser.add_argument("--steps", type=int, help="optimizer steps (rlac-code: iterations); default per loop")
    parser.add_argument("--learning-rate", type=float,
                        help="the TAIScore loops only: the optimizer's learning rate (default per loop; "
                             "rlac-code reads its config's, decoevo trains no weights)")
    parser.add_argument("--seeds", help="comma-separated seeds (default: 0,1 for the TAIScore loops, whose seeds "
                                        "are sampling seeds of the measurement; 0 for rlac-code and decoevo, "
                                        "where each seed is a whole run)")
    parser.add_argument("--work-dir", help="where checkpoints and cached responses go (default: a temporary folder)")
    parser.add_argument("--json", help="write the result here")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()] if args.seeds else None
    except ValueError:
        parser.error(f"--seeds must be comma-separated integers, got {args.seeds!r}")
    if args.steps is not None and args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    if args.learning_rate is not None and not args.loop.startswith("taiscore-"):
        parser.error(f"--learning-rate applies to the TAIScore loops only; {args.loop} sets its own")
    if args.learning_rate is not None and args.learning_rate <= 0:
        parser.error(f"--learning-rate must be positive, got {args.learning_rate}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    from coevo.llm.base import ModelError

    measure = importlib.import_module(LOOPS[args.loop]).measure
    options = {"reward_kind": args.reward_kind} if args.loop == "taiscore-critic" else {}
    if args.learning_rate is not None:
        options["learning_rate"] = args.learning_rate
    with tempfile.TemporaryDirectory(prefix=f"coevo-{args.loop}-") as scratch:
        try:
            result = measure(reward=args.reward, steps=args.steps, seeds=seeds,
                             work_dir=Path(args.work_dir or scratch), **options)
        except (ModelError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    lo, hi = result.gain_ci
    interval = f"[{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else "(no interval)"
    print(f"{result.loop}: {result.target}: {result.before:.3f} -> {result.after:.3f}, gain {result.gain:+.3f} "
          f"{interval} (n={result.n}), {result.steps} steps, {result.seconds:.0f} s"
          + ("" if result.learned else "  [gain_ci does not lie above 0]"))
    for note in result.notes:
        print(f"  {note}")
    if args.json:
        Path(args.json).write_text(result.model_dump_json(indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
