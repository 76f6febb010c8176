"""`coevo plan`'s estimate against what a finished run counted (issue 25: within 2x).

    python benchmarks/estimate_vs_actual.py RUN_FOLDER [RUN_FOLDER ...] [--json OUT]

For each run: the estimate it kept when it started (run store meta `estimate`), or, for a run
made before runs kept one (or with --recompute), the estimate made now from its stored config (with this
machine's calibration, `coevo plan CONFIG --calibrate`); per (stage, role) calls and tokens
estimated → counted; the totals with their ratio (counted / estimated), seconds against
the run's wall time. BENCHMARKS.md, "What a run costs, estimated", has the results.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def estimate_of(run: Path, recompute: bool = False) -> Any:
    from coevo.plan.calibration import load_calibration
    from coevo.plan.estimate import RunEstimate
    from coevo.run.runner import plan_of, resolve_config
    from coevo.rundir.store import RunStore

    store = RunStore(run, read_only=True)
    try:
        kept, config = store.get_meta("estimate"), store.get_meta("config")
    finally:
        store.close()
    if kept is not None and not recompute:
        return RunEstimate.model_validate(kept), "kept by the run"
    algorithm, resolved = resolve_config(config, str(run))
    return plan_of(algorithm, resolved, load_calibration()).estimate, "made now from its config"


def compare(run: Path, recompute: bool = False) -> dict[str, Any]:
    from coevo.plan.estimate_check import compare_rows, compare_totals

    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    estimate, origin = estimate_of(run, recompute)
    totals = compare_totals(estimate, summary["cost"], (summary.get("provenance") or {}).get("duration_s"))
    return {"run": str(run), "estimate": origin, "rows": compare_rows(estimate, summary["cost"]),
            "totals": {key: {"estimate": side.estimate, "actual": side.actual, "ratio": side.ratio}
                       for key, side in totals.items()}}


def print_comparison(found: dict[str, Any]) -> None:
    def cell(est: Any, actual: Any) -> str:
        return f"{'-' if est is None else est} → {'-' if actual is None else actual}"

    print(f"\n{found['run']} (estimate {found['estimate']})")
    for row in found["rows"]:
        print(f"  {row['stage']:<44} {row['role']:<22} calls {cell(row['calls_est'], row['calls']):<14} "
              f"prompt {cell(row['prompt_tokens_est'], row['prompt_tokens']):<18} "
              f"completion {cell(row['completion_tokens_est'], row['completion_tokens'])}")
    for key, side in found["totals"].items():
        ratio = "" if side["ratio"] is None else f" ({side['ratio']:.2f}x)"
        print(f"  total {key}: {cell(side['estimate'], side['actual'])}{ratio}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, help="finished run folders")
    parser.add_argument("--json", type=Path, help="write the comparisons to this file")
    parser.add_argument("--recompute", action="store_true", help="estimate again from the run's config with "
                        "this machine's calibration, instead of the estimate the run kept")
    args = parser.parse_args(argv)
    found = []
    for run in args.runs:
        if not (run / "summary.json").is_file():
            print(f"{run}: no summary.json (not a finished run folder)", file=sys.stderr)
            return 2
        found.append(compare(run, args.recompute))
        print_comparison(found[-1])
    if args.json:
        args.json.write_text(json.dumps(found, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
