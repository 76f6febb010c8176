"""Each paper's central comparison in miniature, on tasks whose gold Python checks.

    .venv/bin/python benchmarks/miniature.py --paper rlac|taiscore|decoevo [--seeds 3]
        [--heldout FILE] [--json FILE] [--work-dir DIR] [--set KEY=VALUE ...] [--arms A,B]

- `rlac`: RLAC on code. Arms `co_trained` (critic and generator both DPO, Algorithm 1),
  `static_critic` (the critic never trains) and `enumerative` (every hidden test runs);
  gold: the generator's held-out pass@1; also errors found per verification call.
  `--heldout`: code problems in the `bundled:code_easy` row format (default: a seeded draw
  of `python -m coevo.tasks.code_families`, the set the settings were tuned on).
- `taiscore`: critics trained by GRPO on a checkable TAIScore analogue, on outcome gain
  only and on critique quality only, against the frozen critic, each scored by the frozen
  actor's held-out refinement gain (Table 3a) and, directly, by the share of its critiques
  that name a constraint the held-out y0 breaks (`measures`); and co-evolution (critic +
  actor DPO over rounds, at least 32 pairs a round) against the static trained critic
  (Table 1). `--heldout`: prompts with `meta.constraints` like the bundled writing prompts.
- `decoevo`: DecoEvo against SkillOpt, SC-CoEvo and the zero-shot skill, test score under
  the constraint grader. `--heldout`: prompts with `meta.constraints`.

Every arm is scored per (held-out item, seed) before and after it trains; `gain_ci` is a
paired bootstrap 95 % interval over those keys, and a comparison `A_minus_B` pairs the two
arms' gains over the keys both scored; beside each, `mde`, the effect that n and the
differences' spread would detect with 80 % power (a null is printed with it). The JSON
(`--json`) holds `arms: {name: {before, after, gain, gain_ci, n, sd, mde, ...}}`,
`comparisons: {A_minus_B: {value, ci, n, sd, mde}}`, `measures` (the arms scored another
way), `seeds`, `seconds` (RLAC: the time its runs spent running, summed over seeds and
resumptions), `settings` and `notes`. Runs are kept in `--work-dir` (default: a
temporary folder) and resumed from there: a killed miniature continues where it stopped.
Results: BENCHMARKS.md, "Miniatures"; README, "Does it work?", whose tables are printed from
the JSON by `benchmarks/miniature.py --table FILE.json` (so they cannot drift from it).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

#: The tables' minimum-detectable-effect column (benchmarks/learning/miniature.py, `minimum_detectable_effect`).
MDE_HEADER = "detectable at 80 % power"
PAPERS = {"rlac": "learning.mini_rlac", "taiscore": "learning.mini_taiscore",
          "decoevo": "learning.mini_decoevo"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--paper", choices=sorted(PAPERS))
    parser.add_argument("--table", metavar="JSON", help="print the markdown tables of a result JSON and stop")
    parser.add_argument("--seeds", type=int, default=3, help="how many seeds (0, 1, ...); at least 1, 3 for the issue")
    parser.add_argument("--heldout", help="held-out items in the task's own format (see above)")
    parser.add_argument("--json", help="write the result here")
    parser.add_argument("--work-dir", help="where the runs go and are resumed from (default: a temporary folder)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="rlac / decoevo: a config override for every arm's run (repeatable)")
    parser.add_argument("--arms", help="rlac: only these arms, comma-separated (a sweep of one arm; a later run "
                                       "with every arm in the same --work-dir resumes them)")
    args = parser.parse_args(argv)
    if args.table:
        return print_tables(Path(args.table), parser)
    if args.paper is None:
        parser.error("--paper is required (or --table JSON)")
    if args.seeds < 1:
        parser.error(f"--seeds must be at least 1, got {args.seeds}")
    if args.heldout and not Path(args.heldout).is_file():
        parser.error(f"--heldout: no such file: {args.heldout}")
    if args.overrides and args.paper == "taiscore":
        parser.error("--set applies to rlac and decoevo (their runs read a config); taiscore has none")
    if args.arms and args.paper != "rlac":
        parser.error("--arms applies to rlac (co_trained, static_critic, enumerative)")
    bad = [o for o in args.overrides if "=" not in o]
    if bad:
        parser.error(f"--set takes KEY=VALUE, got {bad[0]!r}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    import importlib

    from coevo.llm.base import ModelError

    measure = importlib.import_module(PAPERS[args.paper]).measure
    options = {"overrides": args.overrides} if args.paper != "taiscore" else {}
    if args.arms:
        options["arms"] = [a.strip() for a in args.arms.split(",") if a.strip()]
    with tempfile.TemporaryDirectory(prefix=f"coevo-miniature-{args.paper}-") as scratch:
        try:
            result = measure(seeds=list(range(args.seeds)), work_dir=Path(args.work_dir or scratch),
                             heldout_file=args.heldout, **options)
        except (ModelError, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    print(f"{result.paper}: {result.target}; seeds {result.seeds}, {result.seconds / 60:.1f} min")
    print_summary(result.arms, result.comparisons)
    for measure in result.measures.values():
        print(f"{result.paper}, also: {measure.target}")
        print_summary(measure.arms, measure.comparisons)
    if args.json:
        Path(args.json).write_text(result.model_dump_json(indent=1) + "\n")
    return 0


def print_summary(arms: dict, found: dict) -> None:
    """The run's closing lines: each arm's gold before and after and its gain, then each
    comparison; a null with the effect it could have detected."""
    from learning.miniature import shown_of

    for name, arm in arms.items():
        before = "—" if arm.before is None else f"{arm.before:.3f}"
        after = "—" if arm.after is None else f"{arm.after:.3f}"
        print(f"  {name:18s} {before} -> {after}  gain {shown_of(arm)}")
    for name, comparison in found.items():
        print(f"  {name:34s} {shown_of(comparison)}")


def print_tables(path: Path, parser: argparse.ArgumentParser) -> int:
    """The README's tables of one miniature: its arms, then its comparisons, then the same
    for each further measure of its arms (TAIScore's critiques)."""
    from learning.miniature import Miniature

    try:
        result = Miniature.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        parser.error(f"--table: {path} is not a miniature's JSON: {exc}")
    print_table(result.arms, result.comparisons, len(result.seeds), f"{result.seconds / 60:.0f} min")
    for measure in result.measures.values():
        print(f"\n{measure.target}:\n")
        print_table(measure.arms, measure.comparisons, len(result.seeds), f"{result.seconds / 60:.0f} min")
    return 0


def print_table(arms: dict, found: dict, seeds: int, minutes: str) -> None:
    """One measure's two markdown tables. The MDE column: the effect each n and spread would
    detect with 80 % power (two-sided α 0.05), so a null reads with what it rules out. Where
    no item moved in any arm, one line says so: rows of identical zeros would say no more."""
    from learning.miniature import mde_cell, shown

    if _nothing_moved(arms):
        arm = next(iter(arms.values()))
        print(f"Every arm ({', '.join(f'`{a}`' for a in arms)}): {arm.before:.3f} -> {arm.after:.3f} on every "
              f"item, gain +0.000 (n={arm.n}, no spread), {seeds} seeds, {minutes}; so every comparison "
              f"({', '.join(f'`{c}`' for c in found)}) is +0.000.")
        return
    print(f"| arm | before | after | gain [95 % CI] (n) | {MDE_HEADER} | seeds | whole run |\n"
          "|---|---|---|---|---|---|---|")
    for name, arm in arms.items():
        cells = ["—" if v is None else f"{v:.3f}" for v in (arm.before, arm.after)]
        print(f"| `{name}` | {cells[0]} | {cells[1]} | {shown(arm.gain, arm.gain_ci, arm.n)} | {mde_cell(arm)} | "
              f"{seeds} | {minutes} |")
    print(f"\n| comparison | value [95 % CI] (n) | {MDE_HEADER} |\n|---|---|---|")
    for name, comparison in found.items():
        print(f"| `{name}` | {shown(comparison.value, comparison.ci, comparison.n)} | {mde_cell(comparison)} |")


def _nothing_moved(arms: dict) -> bool:
    """Every arm scored the same items as the first, each item after as before: so every gain
    and every comparison (paired over those gains) is 0 with no spread."""
    first = next(iter(arms.values())).scores_before if arms else {}
    return bool(first) and all(a.scores_before == first and a.scores_after == first for a in arms.values())


if __name__ == "__main__":
    sys.exit(main())
