"""The TAIScore round on a GPU at three model sizes, bf16, full fine-tuning and LoRA (issue 41).

For each size, a random-initialised Llama of a published shape (scripts/random_llama.py: no
pretrained weights travel to a machine with no network; time and memory depend on the shape,
not on what the weights say), in a process of its own (each size's memory is its own; a size
that fails or runs out of time loses no other):
  1. the model, initialised on the device in bf16 and written to a scratch folder;
  2. one TAIScore round through `coevo run` (examples/taiscore_tiny.yaml, its judges `python:`
     functions, benchmarks/gpu_round_judges.py): the actor's y0, the critic's GRPO on the
     TAIScore reward (the actor revises under each critique), the actor's DPO on the revisions
     the pairwise function prefers, held-out scoring, at the papers' learning rate; in each of
     MODES (full fine-tuning over float32 master weights, LoRA, full fine-tuning of bf16
     weights). Per stage: steps, first and later step seconds, training tokens/s, peak GPU
     memory, how far the weights moved (a stage that moved none fails the size) and the share
     of sampled weights that changed;
  3. transformers' generation rates on the model: one call at a time (prompt and completion
     tokens/s, as `coevo plan --calibrate` measures them) and batches of 8 and 32 prompts.
The JSON (--json) is rewritten after each size, so a run stopped at its time limit still
returns what it measured, and each size's whole log lands beside it (OUT_SIZE.log).
benchmarks/gpu_scaling.py turns the JSON into BENCHMARKS.md's table, the extrapolation to the
papers' 8B models and the calibration `coevo plan --calibration FILE` reads.

    python benchmarks/gpu_round.py --json OUT.json [--sizes a,b] [--budget 300]
    python benchmarks/gpu_round.py --cpu --json OUT.json    # the CPU rehearsal: a 2-layer model
The GPU run goes through scripts/gpu_smoke.sh (it installs the carried wheels first).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Largest first: should the budget run out, the size lost is the one least like the papers' 8B.
SIZES = ("llama3.2-3b", "llama3.2-1b", "smollm2-135m")
#: The CPU rehearsal's model: the path is the GPU run's, the model 2 layers wide enough to train.
TINY = dict(layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, vocab_size=1000, tied=True)
#: Batches the batched generation rate is measured at: LocalModel's own (8, the roles' calls)
#: and the paper's GRPO step (8 prompts x 4 critiques = 32 completions in one call).
BATCHES = (8, 32)
#: Tokens of every generated text in the round (y0, critiques, revisions, GRPO's samples).
TOKENS = 64
#: Seconds a size is not started without. On the H200 a size took 190-290 s (3.2B: build 17 s,
#: full round 155 s, LoRA round 63 s; BENCHMARKS.md, "GPU"): a size started with less is cut
#: short, but its first round may still come back.
LEAST_PER_SIZE = 30


#: How the round trains, each a set of overrides: `full`, coevo's default (float32 master
#: weights, bf16 compute: specs.TRAINABLE_DTYPE); `lora` (r 16 adapters over bf16 weights);
#: `full_bf16`, full fine-tuning of weights held in bf16 (coevo's default before this
#: benchmark found that it loses most of the papers' updates: `changed_share`).
BF16_WEIGHTS = ["roles.actor.options.dtype=bfloat16", "roles.critic.options.dtype=bfloat16"]
MODES = {
    "full": [],
    "lora": ["grpo.lora={r: 16, alpha: 32}", "dpo.lora={r: 16, alpha: 32}", *BF16_WEIGHTS],
    "full_bf16": BF16_WEIGHTS,
}
#: The modes a size runs (default: full and lora). full_bf16's finding (the share of weights
#: an update changes) is a property of the number type, not of the size: one size shows it.
SIZE_MODES = {"smollm2-135m": ("full", "lora", "full_bf16"), "tiny": tuple(MODES)}
#: The papers' learning rate (TAIScore Table 12: GRPO and DPO 1e-6).
LEARNING_RATE = 1e-6


def round_overrides(folder: Path, *, mode: str, tokens: int) -> list[str]:
    """The `--set`s of `coevo run examples/taiscore_tiny.yaml` as one measured round: a pool of 12 queries,
    GRPO 3 steps of 4 prompts x 4 critiques, DPO 3 steps of 4 pairs, 2 held-out prompts, the papers'
    learning rate."""
    judges = ROOT / "benchmarks" / "gpu_round_judges.py"
    sets = [f"roles.actor.model=hf:{folder}", f"roles.critic.model=hf:{folder}", f"roles.judge.model=python:{judges}",
            "actor_engine=transformers", "critic_engine=transformers", "rounds=1",
            "data.limit=14", "data.pool_total=12", "data.pool_size=12", "evaluation.prompts=2",
            "critic_queries=12", "pairs_per_round=8", "audit.enabled=false",
            "evaluation.win_rate=false", "evaluation.refinement=false",
            f"roles.actor.sampling.response.max_tokens={tokens}", f"roles.actor.sampling.revision.max_tokens={tokens}",
            f"roles.critic.sampling.max_tokens={tokens}",
            "grpo.num_generations=4", "grpo.batch_size=4", "grpo.max_steps=3", "grpo.save_steps=1000",
            "dpo.batch_size=4", "dpo.max_steps=3", "dpo.save_steps=1000", "dpo.max_length=1024",
            "dpo.max_prompt_length=768", f"grpo.learning_rate={LEARNING_RATE}", f"dpo.learning_rate={LEARNING_RATE}"]
    return sets + MODES[mode]


#: Weights `changed_share` compares: the first and last layers' attention and MLP projections.
SAMPLED = ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight",
           "model.layers.{last}.self_attn.o_proj.weight", "model.layers.{last}.mlp.up_proj.weight")


def changed_share(initial: Path, final: Path) -> float | None:
    """The share of the sampled weights a full fine-tuning stage changed (the saved `final/`
    against the model it started from, cast to the type the stage held them in); None for an
    adapter folder."""
    files = sorted(final.glob("*.safetensors"))
    if not files or (final / "adapter_config.json").exists():
        return None
    last = json.loads((initial / "config.json").read_text())["num_hidden_layers"] - 1
    starts = sorted(initial.glob("*.safetensors"))
    changed = total = 0
    for name in (name.format(last=last) for name in SAMPLED):
        before, after = _tensor(starts, name), _tensor(files, name)
        if before is None or after is None:
            continue
        # In the type the stage held them in: a bf16 stage's start is the initial weights cast to bf16.
        changed += int((before.to(after.dtype) != after).sum())
        total += before.numel()
    return round(changed / total, 4) if total else None


def _tensor(files: list[Path], name: str):
    from safetensors import safe_open

    for file in files:
        with safe_open(str(file), framework="pt") as handle:
            if name in handle.keys():
                return handle.get_tensor(name)
    return None


def stage_rows(run: Path, initial: Path) -> dict[str, dict]:
    """The round's GRPO and DPO stages as the run store recorded them."""
    from coevo.rundir.store import RunStore

    store = RunStore(run, read_only=True)
    try:
        results = {name: store.step_result(name) for name in store.finished_steps()}
    finally:
        store.close()
    rows = {}
    for name, result in results.items():
        if not isinstance(result, dict) or result.get("kind") not in ("grpo", "dpo"):
            continue
        m = result["metrics"]
        rows[result["kind"]] = {
            "stage": name, "steps": result["steps"], "seconds": round(result["seconds"], 2),
            "first_step_s": _rounded(m.get("first_step_seconds")), "later_step_s": _rounded(m.get("steady_step_seconds")),
            "train_tokens_per_s": _rounded(m.get("steady_tokens_per_s"), 1), "peak_gpu_mb": _rounded(m.get("peak_gpu_mb"), 0),
            "peak_rss_mb": round(result["peak_rss_mb"]), "weight_delta": m.get("weight_delta"),
            "changed_share": changed_share(initial, _resolved(run, result["checkpoint"])),
            **({"reward_time_share": _rounded(m.get("reward_time_share")),
                "generation_time_share": _rounded(m.get("generation_time_share"))} if result["kind"] == "grpo" else {}),
        }
    return rows


def _resolved(run: Path, checkpoint: str) -> Path:
    return Path(checkpoint) if Path(checkpoint).is_absolute() else run / checkpoint


def _rounded(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits) if digits else round(float(value))


def one_round(folder: Path, work: Path, *, mode: str, tokens: int) -> dict:
    """One TAIScore round on the model in `folder`; its stages, wall time and peak GPU memory."""
    import gc

    import torch

    from coevo.run.runner import run_experiment

    out = work / f"run-{mode}"
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    run_experiment(ROOT / "examples" / "taiscore_tiny.yaml", out, overrides=round_overrides(folder, mode=mode,
                                                                                             tokens=tokens))
    row = {"wall_s": round(time.perf_counter() - started, 1), **stage_rows(out, folder)}
    gc.collect()  # the round's models, before the next round's peak is measured
    if torch.cuda.is_available():
        row["round_peak_gpu_mb"] = round(torch.cuda.max_memory_allocated() / 2**20)
        torch.cuda.empty_cache()
    for kind in ("grpo", "dpo"):
        moved = row.get(kind, {}).get("weight_delta")
        if not moved:
            raise SystemExit(f"{mode} {kind}: the weights did not move (weight_delta {moved})")
    return row


def generation_rates(folder: Path, device: str) -> dict:
    """transformers' rates on the model: one call at a time, then batches of BATCHES prompts."""
    import torch

    from coevo.plan.calibration import batched_completion_rate, engine_rate
    from coevo.llm.specs import load_model

    model = load_model(f"hf:{folder}")
    rate = engine_rate(model, "transformers", f"hf:{folder}")
    batched = {batch: batched_completion_rate(model, batch) for batch in BATCHES}
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return {"prompt_tokens_per_s": rate.prompt_tokens_per_s, "completion_tokens_per_s": rate.completion_tokens_per_s,
            "batched_completion_tokens_per_s": batched}


def measure_size(size: str, work: Path, *, cpu: bool, deadline: float, tokens: int) -> dict:
    """Everything of one size, in this process: build, a round in each of MODES, generation rates."""
    import torch

    sys.path.insert(0, str(ROOT / "scripts"))
    import random_llama

    device = "cpu" if cpu else "cuda"
    if not cpu:
        assert torch.cuda.is_available(), "torch sees no GPU here (a CPU-only torch build?); the rehearsal is --cpu"
    shape, dtype = (TINY, "float32") if cpu else (random_llama.SHAPES[size], "bfloat16")
    started = time.perf_counter()
    folder = random_llama.build(work / "model", **shape, dtype=dtype, device=device)
    row: dict = {"size": size, "shape": shape, "parameters": random_llama.parameter_count(**shape),
                 "dtype": dtype, "build_s": round(time.perf_counter() - started, 1)}
    for mode in SIZE_MODES.get(size, ("full", "lora")):
        if time.time() > deadline:
            row[mode] = {"skipped": "out of time"}
            continue
        row[mode] = one_round(folder, work, mode=mode, tokens=tokens)
    row["generation"] = generation_rates(folder, device) if time.time() < deadline else {"skipped": "out of time"}
    return row


def machine_line() -> str:
    import platform

    import torch

    gpu = f", {torch.cuda.get_device_name(0)} ({torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)" \
        if torch.cuda.is_available() else ", no GPU"
    return (f"{platform.machine()}, {os.cpu_count()} CPUs{gpu}; Python {platform.python_version()}, "
            f"torch {torch.__version__}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="where the results go (rewritten after each size)")
    parser.add_argument("--sizes", default=",".join(SIZES), help="shapes of scripts/random_llama.py, in the order run")
    parser.add_argument("--budget", type=float, default=300, help="seconds for all sizes; a size is not started "
                        f"with under {LEAST_PER_SIZE} s left, and a started one skips what would begin past it")
    parser.add_argument("--tokens", type=int, default=TOKENS, help="tokens of every generated text")
    parser.add_argument("--cpu", action="store_true", help="the CPU rehearsal: a 2-layer float32 model, one size")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        with tempfile.TemporaryDirectory(prefix=f"gpu-round-{args.child}-") as work:
            row = measure_size(args.child, Path(work), cpu=args.cpu, deadline=args.deadline, tokens=args.tokens)
        print("ROW " + json.dumps(row), flush=True)
        return 0

    if args.json is None:
        parser.error("--json FILE is required: where the results go")
    started = time.time()
    sizes = ["tiny"] if args.cpu else args.sizes.split(",")
    measured_at = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    report: dict = {"machine": machine_line(), "measured": measured_at, "settings": {"sizes": sizes, "tokens": args.tokens,
                    "budget_s": args.budget, "round": round_overrides(Path("MODEL"), mode="full", tokens=args.tokens),
                    "modes": MODES, "batches": list(BATCHES)}, "sizes": [], "failed": {}}
    args.json.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:
        report["wall_s"] = round(time.time() - started, 1)
        args.json.write_text(json.dumps(report, indent=1))

    for size in sizes:
        left = started + args.budget - time.time()
        if left < LEAST_PER_SIZE:
            report["failed"][size] = f"not started: {left:.0f} s of the budget left"
            continue
        command = [sys.executable, __file__, "--child", size, "--deadline", str(started + args.budget - 10),
                   "--tokens", str(args.tokens), *(["--cpu"] if args.cpu else [])]
        print(f"== {size} ({left:.0f} s of the budget left)", flush=True)
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=left + 30,
                                  env={**os.environ, "COEVO_QUIET": "1"})
        except subprocess.TimeoutExpired:
            report["failed"][size] = "killed at the budget's end"
            continue
        found = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
        # The whole log beside the JSON: a CUDA assert's own message comes first, far above the
        # traceback's end (the H200 run lost it to a cut tail).
        args.json.with_name(f"{args.json.stem}_{size}.log").write_text(done.stdout + done.stderr)
        if done.returncode or not found:
            report["failed"][size] = (done.stderr or done.stdout)[-1500:]
            print(f"{size} failed:\n{report['failed'][size]}", file=sys.stderr, flush=True)
            continue
        report["sizes"].append(json.loads(found[-1]))
        print(json.dumps(report["sizes"][-1]), flush=True)
        save()
    save()
    return 0 if report["sizes"] and not report["failed"] else 1


if __name__ == "__main__":
    sys.exit(main())
