#!/usr/bin/env bash
# GPU smoke check for coevo's training glue, under 8 minutes on one CUDA GPU, on the GPU
# machine's bare image: NO network there, and its python3 (/opt/torch/.venv, Python 3.12,
# torch 2.11+cu130, transformers 5.17, accelerate, peft; scripts/smoke_image_packages.txt)
# lacks trl, datasets, pydantic and more. So:
#   0. on a machine with network: `make smoke-wheels` builds build/smoke-wheels/ (coevo's own
#      wheel plus the missing wheels, pinned to .venv's versions; scripts/smoke_wheels.sh), and
#      the device run carries it: run(carry=["build/smoke-wheels"], command="bash scripts/gpu_smoke.sh").
#   1. install them with `pip install --no-index --no-deps` into $PY's own environment (the
#      image's, by default). That machine is thrown away after the session, and a venv with
#      --system-site-packages would buy nothing but a second interpreter to keep straight (and
#      could not be nested in the CPU rehearsal's image-like venv, whose packages come from a .pth).
#      The carried transformers 5.19 and peft replace the image's, as coevo pins them. (Were that
#      environment read-only, a venv over it takes the wheels instead; see below.)
#   2. pick the model: the embedded SmolLM2-135M when its weights are on disk, else a randomly
#      initialised Llama of the same shape built from a config (scripts/random_llama.py) —
#      speed and memory depend on the shape, not the weights,
#   3. run the equivalent of tests/train on the GPU in bf16: DPO full + LoRA, GRPO full + LoRA,
#      each checking the weights changed and `final/` loads; print seconds per step and peak GPU
#      memory for each, then generation tokens/s (transformers' generate),
#   4. run the many-process path: a test-sized examples/rlac_code_tiny.yaml under
#      `accelerate launch` with one process per GPU found, checking summary.json's world_size.
# Every result is a JSON line (for BENCHMARKS.md); the last lines are "GPU smoke OK" and the time.
# The Python steps run from a scratch folder, so they import the INSTALLED coevo wheel, not this tree.
#
#   bash scripts/gpu_smoke.sh                    # on the GPU machine, from the repository root
#   SKIP_INSTALL=1 bash scripts/gpu_smoke.sh     # the wheels are already installed in $PY's environment
#   PY=/path/to/python bash scripts/gpu_smoke.sh # another interpreter than python3
# CPU rehearsal of exactly that path (tests/test_gpu_smoke.py), two processes for step 4:
#   SMOKE_ALLOW_CPU=1 SMOKE_TINY=1 bash scripts/gpu_smoke.sh
# With SMOKE_ALLOW_CPU=1 and no PY, $PY is a FRESH venv that sees only the image's packages
# (those of them in .venv; scripts/smoke_rehearsal_base.py), so a wheel missing from the folder
# fails here as it would there. Its versions are .venv's, not the image's (torch 2.13 CPU here,
# 2.11+cu130 there; Python 3.11 here, 3.12 there): it checks the set of packages, not the versions.
# SMOKE_TINY=1: a 2-layer random Llama with a small vocabulary instead (a fast rehearsal).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

# What the coevo wheel was built from: smoke_wheels.sh records it, a stale wheel is refused.
fingerprint() {
  LC_ALL=C find coevo pyproject.toml -type f ! -name '*.pyc' ! -path '*/__pycache__/*' -print0 \
    | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16
}
if [[ "${1:-}" == --fingerprint ]]; then fingerprint; exit 0; fi

START=$(date +%s)
WHEELS=build/smoke-wheels
# The GPU machine has no network: nothing may try the hub or an index (a lookup would hang
# until it timed out), and the rehearsal must not use the network it has either.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_NO_INDEX=1
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore

if [[ ! -f "$WHEELS/requirements.txt" ]]; then
  echo "no $WHEELS here: run 'make smoke-wheels' on a machine with network, then carry it to this one" \
       "(device run with carry=[\"build/smoke-wheels\"])" >&2
  exit 2
fi
if [[ "$(cat "$WHEELS/SOURCE" 2>/dev/null)" != "$(fingerprint)" ]]; then
  echo "$WHEELS holds a coevo wheel built from other sources than this tree: rerun 'make smoke-wheels' (and carry it again)" >&2
  exit 2
fi

WORK=$(mktemp -d /tmp/coevo-smoke-XXXX)
if [[ -z "${SMOKE_ALLOW_CPU:-}" ]]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || {
    echo "no NVIDIA GPU visible: this script checks the GPU path; the CPU rehearsal is SMOKE_ALLOW_CPU=1" >&2; exit 2; }
  PY=${PY:-python3}
elif [[ -z "${PY:-}" ]]; then
  "${HOST_PY:-.venv/bin/python}" scripts/smoke_rehearsal_base.py "$WORK/image-venv" --wheels "$WHEELS"
  PY=$WORK/image-venv/bin/python
fi
# Absolute (the Python steps run from $WORK), without resolving a venv's symlinked python.
if [[ "$PY" == */* ]]; then PY="$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")"; else PY=$(command -v "$PY"); fi
echo "python: $PY ($("$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'))"

# Should $PY's environment be read-only, a venv over it instead, seeing it through a .pth line
# (not --system-site-packages, which would see the BASE interpreter's packages, not this venv's torch).
if [[ -z "${SKIP_INSTALL:-}" ]] && ! "$PY" -c "import os, sys, sysconfig
sys.exit(not os.access(sysconfig.get_paths()['purelib'], os.W_OK))"; then
  echo "note: $PY's packages are read-only: installing into a venv over them ($WORK/venv)"
  "$PY" -m venv "$WORK/venv"
  "$PY" -c "import sysconfig; print(f'import site; site.addsitedir({sysconfig.get_paths()[\"purelib\"]!r})')" \
    >"$("$WORK/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")/zz-image.pth"
  PY=$WORK/venv/bin/python
fi
if [[ -z "${SKIP_INSTALL:-}" ]]; then
  # --no-index: the wheels folder is the only source; --no-deps: the rest is the image's. No
  # pip config either: a configured find-links folder (this CPU machine has one) would
  # supply a wheel the folder lacks, and the rehearsal would pass where the GPU run fails.
  PIPI=(env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL -u PIP_CONSTRAINT PIP_CONFIG_FILE=/dev/null
        "$PY" -m pip install -q --no-index --no-deps)
  "${PIPI[@]}" --find-links "$WHEELS" -r "$WHEELS/requirements.txt"
  # By file and forced: the version never changes (0.1.0), the sources do.
  "${PIPI[@]}" --force-reinstall "$WHEELS"/coevo-*.whl
fi
echo "install done after $(( $(date +%s) - START )) s"
cd "$WORK"

if [[ -n "${SMOKE_TINY:-}" ]]; then
  "$PY" "$ROOT/scripts/random_llama.py" "$WORK/random-llama" --layers 2 --hidden 64 --intermediate 128 \
    --heads 4 --kv-heads 2 --vocab 1000 >/dev/null
  export SMOKE_MODEL="hf:$WORK/random-llama"
elif "$PY" -c "from coevo.llm.embedded import hf_dir; hf_dir()" 2>/dev/null; then
  export SMOKE_MODEL=smollm2
else
  echo "no embedded weights here: building a random-initialised Llama (SmolLM2-135M's shape) from a config"
  "$PY" "$ROOT/scripts/random_llama.py" "$WORK/random-llama" >/dev/null
  export SMOKE_MODEL="hf:$WORK/random-llama"
fi
echo "model: $SMOKE_MODEL"

timeout 420 "$PY" - <<'EOF'
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch

# SMOKE_ALLOW_CPU=1 runs the same checks on CPU (to test this script without a GPU).
GPU = not os.environ.get("SMOKE_ALLOW_CPU")
assert torch.cuda.is_available() or not GPU, "torch cannot see the GPU (a CPU-only torch build?)"
from coevo.llm.specs import load_model
from coevo.train import DPOSettings, GRPOSettings, LoRASettings, machine_training_args, train_dpo, train_grpo
from coevo.types import PreferencePair

args = machine_training_args()
assert not GPU or (args.get("bf16") and not args.get("use_cpu")), args
pairs = [PreferencePair(prompt="Say hello.", chosen="Hello there, friend!", rejected="No."),
         PreferencePair(prompt="Name a color.", chosen="Blue, like a clear sky.", rejected="I will not.")]


def reward(prompts, completions, **_):
    # Length-based with a positional tie-break: every group has a spread, so every step learns.
    return [len(c[-1]["content"]) + 0.25 * i for i, c in enumerate(completions)]


def train(kind, policy, settings, out):
    if kind == "dpo":
        return train_dpo(policy, pairs, DPOSettings(learning_rate=1e-4, max_steps=4, max_length=64,
                                                    max_prompt_length=32, lora=settings), out)
    # batch_size counts prompts now: 2 prompts x 4 generations = the 8 completions a step always had.
    return train_grpo(policy, ["Write one word.", "Name an animal."], reward,
                      GRPOSettings(num_generations=4, batch_size=2, max_steps=3, learning_rate=1e-4,
                                   max_completion_length=32, temperature=1.0, lora=settings), out)


def check(kind, lora):
    from transformers import AutoModelForCausalLM

    policy = load_model(os.environ["SMOKE_MODEL"], trainable=True)
    assert not GPU or (policy.model.device.type == "cuda" and policy.model.dtype == torch.bfloat16)
    before = {k: v.detach().clone() for k, v in policy.model.state_dict().items()}
    out = Path(tempfile.mkdtemp(prefix=f"smoke-{kind}-"))
    result = train(kind, policy, LoRASettings(r=8, alpha=16) if lora else None, out)
    after = policy.model.state_dict()
    changed = any(not torch.equal(v, after[k].to(v.device)) for k, v in before.items() if k in after) if not lora \
        else any(not torch.equal(p.detach(), torch.zeros_like(p)) for n, p in policy.model.named_parameters()
                 if "lora_B" in n)
    assert changed, f"{kind} {'lora' if lora else 'full'}: the weights did not change"
    if lora:
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(policy.model.peft_config["default"].base_model_name_or_path)
        PeftModel.from_pretrained(base, result.checkpoint)
    else:
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


def generation_speed(spec, batch=8, new_tokens=128):
    """Sampled tokens per second of transformers' generate: a batch of prompts, a fixed length."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from coevo.llm.embedded import hf_dir

    folder = str(hf_dir()) if spec == "smollm2" else spec.removeprefix("hf:")
    device = "cuda" if GPU else "cpu"
    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16 if GPU else torch.float32).to(device)
    inputs = tokenizer(["Write a short story about a robot who learns to paint."] * batch,
                       return_tensors="pt", padding=True).to(device)
    length = dict(max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=True, top_p=0.95,
                  pad_token_id=tokenizer.pad_token_id)
    model.generate(**inputs, **{**length, "max_new_tokens": 8, "min_new_tokens": 8})  # warm-up
    if GPU:
        torch.cuda.synchronize()
    start = time.perf_counter()
    out = model.generate(**inputs, **length)
    if GPU:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    made = (out.shape[1] - inputs["input_ids"].shape[1]) * batch
    print(json.dumps({"stage": "generate", "batch": batch, "new_tokens": new_tokens, "seconds": round(seconds, 3),
                      "tokens_per_s": round(made / seconds, 1)}), flush=True)


for kind in ("dpo", "grpo"):
    for lora in (False, True):
        check(kind, lora)
generation_speed(os.environ["SMOKE_MODEL"], new_tokens=128 if GPU else 16)
print("single-process checks OK")
EOF

# Many processes: one per GPU (two on CPU, gloo), one run; rank 0 runs the loop, all train.
if [[ -z "${SMOKE_ALLOW_CPU:-}" ]]; then
  PROCS=$(nvidia-smi -L | wc -l)
  LAUNCH=("$PY" -m accelerate.commands.launch --num_machines 1 --num_processes "$PROCS" --mixed_precision no
          --dynamo_backend no)
  [[ "$PROCS" -gt 1 ]] && LAUNCH+=(--multi_gpu)
else
  PROCS=2
  # A port of its own: another job on this machine may hold torchrun's default 29500.
  LAUNCH=("$PY" -m torch.distributed.run --nproc_per_node 2 --master_addr 127.0.0.1
          --master_port $(( 29600 + RANDOM % 2000 )))
fi
# The held-out pass@1 runs HumanEval code in coevo's sandbox (bwrap, or unshare as root). Where
# neither works on the GPU machine, the run would stop; that machine is thrown away after the
# session and reaches no network, so there the code runs unisolated instead, said out loud.
UNSAFE=()
if [[ -z "${SMOKE_ALLOW_CPU:-}" ]] && ! "$PY" -c "import sys
from coevo.validators.isolation import detect_isolation
sys.exit(detect_isolation()[0] is None)"; then
  echo "note: no sandbox works on this machine: the test-sized RLAC run executes code with --unsafe-exec"
  UNSAFE=(--unsafe-exec)
fi
RUN_START=$(date +%s)
timeout 300 "${LAUNCH[@]}" -m coevo.cli run "$ROOT/examples/rlac_code_tiny.yaml" --out "$WORK/rlac" ${UNSAFE[@]+"${UNSAFE[@]}"} \
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
cd "$ROOT"
rm -rf "$WORK"
echo "GPU smoke OK"
echo "total $(( $(date +%s) - START )) s"
