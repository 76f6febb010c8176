"""RLAC's trained roles generating on llama.cpp copies of their weights vs in transformers.

One RLAC example config (default examples/rlac_code_tiny.yaml) runs as shipped
(`generator_engine` / `critic_engine: llamacpp`) and with both set to `transformers`, the two
alternated in one session so that both see the same machine load. Reported per run: wall
seconds and peak RSS (`/usr/bin/time`'s maximum resident set), the seconds the trained roles
spent generating (summary.json -> cost, generator and critic rows: their outputs,
proposals and held-out answers), the DPO seconds, and per round the pairs each side got.
Generation seconds are the like-for-like figure: the engines sample different texts, so the
rounds can get different pairs and train different stages, and the wall clock follows.

    .venv/bin/python benchmarks/rlac_engines.py [--config rlac_code_tiny] [--repeats 1] [--json FILE]
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
ENGINES = ("llamacpp", "transformers")


def one_run(config: str, engine: str, out: Path) -> dict:
    """`coevo run` of the example with both trained roles on `engine`; its figures."""
    command = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "coevo.cli", "run",
               str(ROOT / "examples" / f"{config}.yaml"), "--out", str(out),
               "--set", f"generator_engine={engine}", "--set", f"critic_engine={engine}"]
    started = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "COEVO_QUIET": "1"})
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{engine} run failed:\n{proc.stderr[-3000:]}")
    summary = json.loads((out / "summary.json").read_text())
    calls = summary["cost"]["calls"]
    return {
        "engine": engine, "wall_s": round(wall, 1), "peak_rss_mb": round(int(proc.stderr.split()[-1]) / 1024),
        "generation_s": round(sum(c["seconds"] or 0 for c in calls if c["role"] in ("generator", "critic")), 1),
        "generated_tokens": sum(c["completion_tokens"] for c in calls if c["role"] in ("generator", "critic")),
        "dpo_s": round(sum(t["seconds"] for r in summary["rounds"] for t in r["training"].values()), 1),
        "rounds": [{"round": r["round"], "pairs": r["pairs"], "trained": r["trained"],
                    "detection_rate": r["critic"].get("detection_rate")} for r in summary["rounds"]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="rlac_code_tiny")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="rlac-engines-") as tmp:
        for repeat in range(args.repeats):
            for engine in ENGINES:
                runs.append(one_run(args.config, engine, Path(tmp) / f"{engine}-{repeat}"))
                print(json.dumps(runs[-1]), flush=True)
    mean = {e: {k: sum(r[k] for r in runs if r["engine"] == e) / args.repeats
                for k in ("wall_s", "peak_rss_mb", "generation_s", "dpo_s")} for e in ENGINES}
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
              "config": args.config, "repeats": args.repeats, "runs": runs, "mean": mean,
              "generation_ratio": round(mean["llamacpp"]["generation_s"] / mean["transformers"]["generation_s"], 2),
              "wall_ratio": round(mean["llamacpp"]["wall_s"] / mean["transformers"]["wall_s"], 2)}
    report(result, args.json)


if __name__ == "__main__":
    main()
