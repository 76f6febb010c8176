"""From GPU runs of benchmarks/gpu_round.py to BENCHMARKS.md's "GPU" section and the
calibration `coevo plan --calibration` reads (issue 41).

Reads the runs' JSON files (their sizes together) and prints, in Markdown: the table per size
and mode, transformers' generation rates, and the extrapolation to the papers' 8B models
(Qwen3-8B, 8.19B weights) per step, under these rules, each checked against the sizes measured:

- training is compute-bound: the FLOP/s the largest measured size reached is what 8B reaches
  (tokens/s scale as 1/weights), less the attention the papers' longer sequences add. A GRPO
  step's update is its time less the shares spent in the reward and in sampling (TRL's stage
  shares, `reward_time_share` and `generation_time_share`);
- transformers' decoding is launch-bound at these sizes (one token's step takes about as long at
  135M as at 3.2B): a step costs a fixed time per layer, fitted per batch, plus reading the
  weights once at the copy bandwidth measured on the H200 (4.3 TB/s, device KINDS.md);
- reading a prompt (prefill) is compute-bound, as training;
- peak GPU memory is c + d x weights, fitted per mode and stage.

--calibration writes each measured size's rates under `random:SIZE`, and `hf:Qwen/Qwen3-8B`
on transformers with the extrapolated rates (their `note` says so): what `coevo plan
examples/taiscore_full.yaml --calibration FILE` times the paper's run with.

    python benchmarks/gpu_scaling.py benchmarks/results/gpu_round_h200_run*.json \
        --calibration benchmarks/results/gpu_round_h200_calibration.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import random_llama  # noqa: E402  (scripts/ is no package)

#: The papers' actor and critic (TAIScore §5.1), as coevo's full configs name it.
TARGET_SPEC = "hf:Qwen/Qwen3-8B"
TARGET = random_llama.SHAPES["qwen3-8b"]
#: examples/taiscore_full.yaml (TAIScore Table 12): a GRPO step is 8 prompts x 4 critiques; the
#: critic's prompt is held within 2,048 tokens (a y0 is up to 4,096: the prompt is at its cap); a
#: completion fills 0.7 of its 4,096 tokens (coevo.plan.estimate.FILL); DPO pairs of 2 a step.
PAPER = dict(grpo_completions=32, prompt=2048, completion=round(0.7 * 4096), dpo_batch=2, revision_batch=8)
#: The measured round's sequences (benchmarks/gpu_round.py): the critic's prompt ~400 tokens
#: (template, x, a 64-token y0) with 64-token critiques; the actor's pairs ~200 + 64.
ROUND_SEQUENCE = {"grpo": 400 + 64, "dpo": 200 + 64}
#: Copy bandwidth of the H200 measured here (device KINDS.md: 8.6 GB in 2.0 ms, read + write).
BANDWIDTH = 4.3e12
MODES = ("full", "lora", "full_bf16")
#: What a stage's GPU memory holds, per weight, in each mode.
HELD = {"full": "both roles' float32 weights 8, gradients 4, AdamW 8, the bf16 reference 2, activations",
        "lora": "both roles' bf16 weights 4, the adapters and their optimizer, activations"}


def weights(shape: dict) -> int:
    return random_llama.parameter_count(**shape)


def attention_share(shape: dict, sequence: float) -> float:
    """Attention's FLOPs beside the weights' for a sequence of `sequence` tokens: a token at
    context c costs 4 x layers x c x hidden against 2 x weights; the mean c is half the sequence."""
    return 2 * shape["layers"] * (sequence / 2) * shape["hidden"] / weights(shape)


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares y = a + b x (two points or more)."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def update_rate(stage: dict, kind: str) -> float | None:
    """Training tokens/s of a stage's updates alone: DPO's steps are all update; a GRPO step
    also samples and scores, whose shares of the stage come out."""
    rate = stage.get("train_tokens_per_s")
    if rate is None:
        return None
    if kind == "dpo":
        return rate
    share = 1 - (stage.get("reward_time_share") or 0) - (stage.get("generation_time_share") or 0)
    return rate / share if share > 0 else None


def training_8b(rows: list[dict], mode: str, kind: str) -> tuple[float, str] | None:
    """Update tokens/s at 8B from the largest size measured in `mode`."""
    found = [(row["parameters"], row, update_rate(row[mode][kind], kind)) for row in rows
             if kind in row.get(mode, {}) and update_rate(row[mode][kind], kind)]
    if not found:
        return None
    n, row, rate = max(found, key=lambda item: item[0])
    paper = 1 + attention_share(TARGET, PAPER["prompt"] + PAPER["completion"])
    measured = 1 + attention_share(row["shape"], ROUND_SEQUENCE[kind])
    flops = rate * 10 * n  # ~10 x weights FLOPs a token: forward, backward, recomputed forward, reference
    return (rate * n / weights(TARGET) * measured / paper,
            f"{row['size']}'s {rate:,.0f} tokens/s (~{flops / 1e12:.0f} TFLOP/s), /{paper / measured:.2f} for "
            "attention at the papers' lengths")


def decode_8b(rows: list[dict], batch: int) -> tuple[float, str] | None:
    """Seconds of one decoding step of `batch` sequences at 8B, and the per-layer time fitted."""
    per_layer = []
    for row in rows:
        g = row.get("generation", {})
        rate = g.get("completion_tokens_per_s") if batch == 1 else g.get("batched_completion_tokens_per_s", {}).get(str(batch))
        if rate:
            step = batch / rate - 2 * row["parameters"] / BANDWIDTH
            per_layer.append(step / row["shape"]["layers"])
    if not per_layer:
        return None
    layer = sum(per_layer) / len(per_layer)
    spread = f"{min(per_layer) * 1000:.2f}-{max(per_layer) * 1000:.2f}" if len(per_layer) > 1 else f"{layer * 1000:.2f}"
    return TARGET["layers"] * layer + 2 * weights(TARGET) / BANDWIDTH, f"{spread} ms a layer"


def prefill_8b(rows: list[dict]) -> float | None:
    """Prompt tokens/s at 8B: the largest size's, scaled by weights (compute-bound)."""
    found = [(row["parameters"], row["generation"]["prompt_tokens_per_s"]) for row in rows
             if row.get("generation", {}).get("prompt_tokens_per_s")]
    if not found:
        return None
    n, rate = max(found)
    return rate * n / weights(TARGET)


def memory_8b(rows: list[dict], mode: str, kind: str) -> tuple[float, float] | None:
    """Peak GPU memory (GiB) at 8B and the fitted bytes per weight, over the sizes measured."""
    found = [(row["parameters"], row[mode][kind]["peak_gpu_mb"] * 2**20) for row in rows
             if row.get(mode, {}).get(kind, {}).get("peak_gpu_mb")]
    if len(found) < 2:
        return None
    a, b = fit_line([n for n, _ in found], [m for _, m in found])
    return (a + b * weights(TARGET)) / 2**30, b


def table(rows: list[dict]) -> list[str]:
    lines = ["| size (weights) | mode | stage | first step s | later step s | tokens/s (update) | peak GPU GiB | "
             "weights changed | round s |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for mode in MODES:
            result = row.get(mode)
            if not result:
                continue
            for kind in ("grpo", "dpo"):
                s = result[kind]
                share = "adapter" if s.get("changed_share") is None else f"{s['changed_share']:.1%}"
                update = update_rate(s, kind)
                lines.append(f"| {row['size']} ({row['parameters'] / 1e9:.2f}B) | {mode} | {kind.upper()} | "
                             f"{s['first_step_s']:.2f} | {s['later_step_s']:.2f} | {s['train_tokens_per_s']:,.0f} "
                             f"({update:,.0f}) | {s['peak_gpu_mb'] / 1024:.1f} | {share} | {result['wall_s']:.0f} |")
    return lines


def generation_table(rows: list[dict]) -> list[str]:
    lines = ["| size | prompt tokens/s | completion tokens/s, 1 prompt | 8 prompts | 32 prompts |", "|---|---|---|---|---|"]
    for row in rows:
        g = row["generation"]
        batched = g["batched_completion_tokens_per_s"]
        lines.append(f"| {row['size']} | {g['prompt_tokens_per_s']:,.0f} | {g['completion_tokens_per_s']:.1f} | "
                     f"{batched['8']:,.1f} | {batched['32']:,.1f} |")
    return lines


def extrapolation(rows: list[dict]) -> tuple[list[str], dict]:
    """The 8B lines, and the rates the calibration keeps for TARGET_SPEC."""
    p, lines, rates = PAPER, [], {}
    grpo_tokens = p["grpo_completions"] * (p["prompt"] + p["completion"])
    dpo_tokens = p["dpo_batch"] * 2 * (p["prompt"] + p["completion"])
    for mode in ("full", "lora"):
        grpo, dpo = training_8b(rows, mode, "grpo"), training_8b(rows, mode, "dpo")
        if grpo is None or dpo is None:
            continue
        rates[mode] = dpo[0]
        lines.append(f"- **{mode}**: GRPO update {grpo[0]:,.0f} tokens/s ({grpo[1]}); DPO {dpo[0]:,.0f} tokens/s "
                     f"({dpo[1]}). A GRPO step's update (32 x (2,048 + 2,867) = {grpo_tokens:,} tokens) "
                     f"{grpo_tokens / grpo[0]:,.0f} s; a DPO step (2 pairs, {dpo_tokens:,} tokens) {dpo_tokens / dpo[0]:,.1f} s.")
        for kind in ("grpo", "dpo"):
            memory = memory_8b(rows, mode, kind)
            if memory is not None:
                held = HELD[mode]
                lines.append(f"  - {kind.upper()} stage's peak GPU memory at 8B: {memory[0]:,.0f} GiB ({memory[1]:.1f} "
                             f"bytes a weight over the sizes: {held})")
    for batch in (1, 8, 32):
        step = decode_8b(rows, batch)
        if step is not None:
            rates[f"batch{batch}"] = batch / step[0]
            lines.append(f"- transformers decoding at 8B, {batch} prompt(s) a call: {step[0] * 1000:.0f} ms a step "
                         f"({step[1]} measured, x 36 layers, + the weights read once), {batch / step[0]:,.1f} tokens/s")
    if (prefill := prefill_8b(rows)) is not None:
        rates["prefill"] = prefill
    if {"batch8", "batch32", "full"} <= set(rates) and (grpo := training_8b(rows, "full", "grpo")) is not None:
        sample = p["completion"] * p["grpo_completions"] / rates["batch32"]
        revise = p["completion"] * p["grpo_completions"] / rates["batch8"]
        update = grpo_tokens / grpo[0]
        lines.append(f"- a full GRPO step at 8B with transformers generating: sampling its 32 critiques {sample:,.0f} s, "
                     f"the actor's 32 revisions (8 a call) {revise:,.0f} s, the update {update:,.0f} s; the judge's "
                     f"calls (a server) not counted: {sample + revise + update:,.0f} s, and "
                     f"{250 * (sample + revise + update) / 3600:,.0f} h for a round's 250 steps")
    return lines, rates


def calibration(reports: list[dict], rows: list[dict], rates: dict) -> dict:
    """The calibration: measured sizes as `random:SIZE`, TARGET_SPEC extrapolated."""
    from coevo.plan.calibration import Calibration, EngineRate, TrainingRate

    machine = reports[0]["machine"]
    found = Calibration(machine=machine, measured=", ".join(r.get("measured", "?") for r in reports))
    if {"prefill", "batch1", "full"} <= set(rates):
        note = ("extrapolated from random-initialised Llamas of 0.13 and 3.2B weights on one H200 "
                "(benchmarks/gpu_scaling.py: training and prompts at the largest size's FLOP/s, decoding at the "
                "measured time a layer)")
        found.engines.append(EngineRate(
            engine="transformers", spec=TARGET_SPEC, note=note, prompt_tokens_per_s=round(rates["prefill"], 1),
            completion_tokens_per_s=round(rates["batch1"], 1),
            batched_completion_tokens_per_s={b: round(rates[f"batch{b}"], 1) for b in (8, 32) if f"batch{b}" in rates}))
        found.training.append(TrainingRate(spec=TARGET_SPEC, tokens_per_s=round(rates["full"], 1), note=note))
    for row in rows:
        spec, g = f"random:{row['size']}", row.get("generation", {})
        if "completion_tokens_per_s" in g:
            found.engines.append(EngineRate(
                engine="transformers", spec=spec, prompt_tokens_per_s=g["prompt_tokens_per_s"],
                completion_tokens_per_s=g["completion_tokens_per_s"],
                batched_completion_tokens_per_s={int(k): v for k, v in g["batched_completion_tokens_per_s"].items()}))
        if (rate := row.get("full", {}).get("dpo", {}).get("train_tokens_per_s")) is not None:
            found.training.append(TrainingRate(spec=spec, tokens_per_s=rate))
    return found.model_dump()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", type=Path, nargs="+", help="benchmarks/gpu_round.py's JSON files")
    parser.add_argument("--calibration", type=Path, help="write the calibration here")
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text()) for path in args.reports]
    rows = sorted((row for report in reports for row in report["sizes"]), key=lambda row: row["parameters"])
    if not rows:
        sys.exit(f"{', '.join(map(str, args.reports))}: no size was measured")
    failed = {size: _error_line(why) for report in reports for size, why in report["failed"].items()
              if size not in {row["size"] for row in rows}}
    more, rates = extrapolation(rows)
    lines = [f"Machine: {reports[0]['machine']}; {len(reports)} run(s), n = 1 stage of 3 steps per cell (later step: "
             "the mean of steps 2-3).", "", *table(rows), "", *generation_table(rows), "",
             *(f"- {size}: not measured ({why})" for size, why in sorted(failed.items())), "",
             "Extrapolated to Qwen3-8B (8.19B weights) on one such GPU:", *more]
    print("\n".join(lines))
    if args.calibration:
        args.calibration.write_text(json.dumps(calibration(reports, rows, rates), indent=1) + "\n")
        print(f"\ncalibration written: {args.calibration}", file=sys.stderr)
    return 0


def _error_line(why: str) -> str:
    """The line of a failure that names the error (a traceback's `...Error: ...`), else its last."""
    lines = [line.strip() for line in why.strip().splitlines() if line.strip()]
    named = [line for line in lines if "Error:" in line]
    return (named[-1] if named else lines[-1] if lines else "?")[:200]


if __name__ == "__main__":
    sys.exit(main())
