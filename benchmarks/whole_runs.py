"""Whole runs of the tiny configs with the frozen roles on vLLM vs forced onto llama.cpp.

Each config runs twice in one session, the two engines back to back (so both see the same
machine load): once as shipped (frozen `smollm2` roles on vLLM where it is installed) and
once with `--set models.options.default.engine=llamacpp` (quickstart: `--judge
smollm2:llamacpp`). Reported per config: wall seconds of each, their ratio (target <= 0.5),
and the GRPO / DPO seconds per step the runs recorded (a GRPO step's reward is the actor's
revisions plus the frozen judge's judgments, so its ratio is the issue's "GRPO step" target,
<= 0.4). Runs go to a temporary folder and are deleted.

    .venv/bin/python benchmarks/whole_runs.py [--configs quickstart taiscore_tiny ...] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ["quickstart", "taiscore_tiny", "rlac_code_tiny", "rlac_bio_tiny", "decoevo_tiny"]
COEVO = [sys.executable, "-m", "coevo.cli"]


def command(config: str, out: Path, engine: str | None) -> list[str]:
    """The `coevo` command line of one run; `engine` None: as shipped."""
    if config == "quickstart":
        return [*COEVO, "quickstart", "--out", str(out), "--fresh",
                *(["--judge", f"smollm2:{engine}"] if engine else [])]
    return [*COEVO, "run", str(ROOT / "examples" / f"{config}.yaml"), "--out", str(out),
            *(["--set", f"roles.default.options.engine={engine}"] if engine else [])]


def step_seconds(summary: object) -> dict[str, list[float]]:
    """Every `*_seconds_per_step` number anywhere in a summary, by key."""
    found: dict[str, list[float]] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key.endswith("_seconds_per_step") and isinstance(value, (int, float)) and value > 0:
                    found.setdefault(key, []).append(float(value))
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(summary)
    return found


def one_run(config: str, engine: str | None, folder: Path) -> dict:
    out = folder / f"{config}-{engine or 'shipped'}"
    env = {**os.environ, "COEVO_QUIET": "1"}
    started = time.perf_counter()
    done = subprocess.run(command(config, out, engine), cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{config} ({engine or 'shipped'}) failed with exit {done.returncode}:\n{done.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    steps = {key: round(sum(v) / len(v), 2) for key, v in step_seconds(summary).items()}
    return {"seconds": round(seconds, 1), "seconds_per_step": steps}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", nargs="+", default=CONFIGS, choices=CONFIGS)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="coevo-whole-runs-") as tmp:
        for config in args.configs:
            shipped = one_run(config, None, Path(tmp))
            llama = one_run(config, "llamacpp", Path(tmp))
            results[config] = {"shipped_vllm": shipped, "llamacpp": llama,
                               "ratio": round(shipped["seconds"] / llama["seconds"], 2)}
            print(json.dumps({config: results[config]}), flush=True)
    total = {"shipped_vllm": sum(r["shipped_vllm"]["seconds"] for r in results.values()),
             "llamacpp": sum(r["llamacpp"]["seconds"] for r in results.values())}
    summary = {"configs": results, "total_seconds": total,
              "total_ratio": round(total["shipped_vllm"] / total["llamacpp"], 2),
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    report(summary, args.json)


if __name__ == "__main__":
    main()
