"""Each phase's tokens/s against the engine's own limit for the embedded model on this machine.

The engine's limit is llama-bench's pair of figures, taken through llama-cpp-python on the two
GGUFs a run loads: the embedded judge's (Q4_1) and a trained role's copy (F16, written from the
transformers weights as `actor_engine: llamacpp` writes it). `pp` evaluates a prompt of
`--pp` tokens from an empty cache in one call (prompt processing); `tg` decodes `--tg` tokens
one at a time (text generation), each repeated `--repeats` times: no sampling, no grammar, no
Python between tokens but the call itself.

Against them, each stage and role of a profiled run (`benchmarks/stage_profile.py`'s JSON,
its `cost` rows): the seconds its calls took, and the seconds the engine's limit would need
for the same tokens (prompt tokens / pp + completion tokens / tg). Their ratio, `limit / took`,
is the share of the engine's speed the phase gets; 1.0 is the engine's limit. Prefix reuse can
take a judge past 1.0 (a shared prompt prefix is evaluated once, not once per call).

    .venv/bin/python benchmarks/engine_limits.py [--profile benchmarks/results/stage_profile.json]
        [--pp 512] [--tg 128] [--repeats 3] [--json FILE]

Run it straight after the profile on the same machine: the figures are ratios of one session.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)

from coevo.llm.embedded import gguf_path
from coevo.llm.llamacpp import PREFIX_BLOCK, LlamaCppModel, _cpus

ROOT = Path(__file__).resolve().parents[1]


def trained_copy(folder: Path) -> Path:
    """An F16 GGUF of the trainable embedded model, written as a run writes a trained role's."""
    from coevo.algorithms.backend import default_backend
    from coevo.llm.gguf_export import export_gguf

    policy = default_backend().load_trainable("smollm2")
    return export_gguf(getattr(policy, "model", policy), folder / "trained_f16.gguf")


def bench(path: Path, pp: int, tg: int, repeats: int, block: int = PREFIX_BLOCK) -> dict:
    """llama-bench's pp and tg on one GGUF, the prompt evaluated in batches of `block` tokens
    (coevo's engines use PREFIX_BLOCK): mean and sd of tokens/s over `repeats`."""
    engine = LlamaCppModel(path, reuse_prefix=False, prefix_block=block)
    llama = engine.llama
    prompt = (llama.tokenize(b"The quick brown fox jumps over the lazy dog. ", add_bos=False) * pp)[:pp]
    pp_rates, tg_rates = [], []
    for _ in range(repeats + 1):  # the first round warms up and is dropped
        llama.reset()
        started = time.perf_counter()
        llama.eval(prompt)
        pp_rates.append(pp / (time.perf_counter() - started))
        llama.reset()
        llama.eval(prompt[:1])
        started = time.perf_counter()
        for token in prompt[1:tg + 1]:
            llama.eval([token])
        tg_rates.append(tg / (time.perf_counter() - started))
    pp_rates, tg_rates = pp_rates[1:], tg_rates[1:]
    return {"gguf": path.name, "threads": _cpus(), "batch": block,
            "pp_tokens_per_s": statistics.mean(pp_rates), "pp_sd": statistics.stdev(pp_rates),
            "tg_tokens_per_s": statistics.mean(tg_rates), "tg_sd": statistics.stdev(tg_rates), "n": repeats}


def phases(profile: dict, limits: dict[str, dict]) -> list[dict]:
    """Each role's calls in the profiled run (all its stages together) against the engine's limit."""
    totals: dict[str, dict] = defaultdict(lambda: {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                                   "seconds": 0.0})
    for row in profile["cost"]["calls"]:
        stage = row["stage"].split("/")[-1]
        stage = "eval" if stage.startswith("eval") else "pool" if stage.startswith("pool") else stage
        total = totals[f"{stage} · {row['role']}"]
        for key in ("calls", "prompt_tokens", "completion_tokens", "seconds"):
            total[key] += row[key]
    rows = []
    for phase, total in sorted(totals.items()):
        limit = limits["judge" if ":" in phase.split(" · ")[1] else "trained"]
        limit_s = (total["prompt_tokens"] / limit["pp_tokens_per_s"]
                   + total["completion_tokens"] / limit["tg_tokens_per_s"])
        rows.append({"phase": phase, **total, "seconds": round(total["seconds"], 1),
                     "prompt_tokens_per_s": round(total["prompt_tokens"] / total["seconds"], 1),
                     "completion_tokens_per_s": round(total["completion_tokens"] / total["seconds"], 1),
                     "limit_seconds": round(limit_s, 1), "share_of_limit": round(limit_s / total["seconds"], 2)})
    return rows


def table(result: dict) -> str:
    """The markdown table BENCHMARKS.md shows."""
    lines = ["| stage · role | calls | prompt tok | completion tok | took s | prompt tok/s | completion tok/s "
             "| engine limit s | share of limit |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result["phases"]:
        lines.append(f"| {r['phase']} | {r['calls']} | {r['prompt_tokens']} | {r['completion_tokens']} "
                     f"| {r['seconds']} | {r['prompt_tokens_per_s']} | {r['completion_tokens_per_s']} "
                     f"| {r['limit_seconds']} | {r['share_of_limit']} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", type=Path, default=ROOT / "benchmarks/results/stage_profile.json",
                        help="a stage_profile.py JSON whose cost rows are set against the limits")
    parser.add_argument("--pp", type=int, default=512, help="prompt tokens evaluated in one call")
    parser.add_argument("--tg", type=int, default=128, help="tokens decoded one at a time")
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats after one warm-up")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if not args.profile.is_file():
        parser.error(f"{args.profile} does not exist: run benchmarks/stage_profile.py --json {args.profile} first")
    profile = json.loads(args.profile.read_text())
    with tempfile.TemporaryDirectory() as folder:
        limits = {"judge": bench(gguf_path(), args.pp, args.tg, args.repeats),
                  "trained": bench(trained_copy(Path(folder)), args.pp, args.tg, args.repeats)}
        # llama-bench's own batch (512): what coevo's 64-token blocks (prefix reuse's grain) cost.
        limits["judge_batch_512"] = bench(gguf_path(), args.pp, args.tg, args.repeats, block=512)
    result = {"machine": f"{platform.machine()}, {_cpus()} CPUs, {platform.platform()}",
              "profile": str(args.profile), "profile_machine": profile.get("machine"),
              "limits": limits, "phases": phases(profile, limits)}
    report(result, args.json)
    print(table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
