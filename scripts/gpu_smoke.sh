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
#   2. the TAIScore round with `python:` judges at three sizes (random-initialised Llamas of
#      Llama-3.2-3B's, Llama-3.2-1B's and SmolLM2-135M's shapes, built on the GPU: nothing
#      pretrained travels, and speed and memory depend on the shape, not the weights): full
#      fine-tuning (float32 master weights, bf16 compute), LoRA, and at 135M full fine-tuning of
#      bf16 weights; per stage step seconds, training tokens/s, peak GPU memory, weights moved
#      and changed (a stage that moved none fails); then transformers' generation rates
#      (benchmarks/gpu_round.py). One JSON, $OUT/gpu_round.json where $OUT is set (the device
#      run's folder that comes back), with a log per size, inside SIZES_BUDGET seconds (default
#      270; SIZES=a,b picks sizes). benchmarks/gpu_scaling.py makes BENCHMARKS.md's table of it,
#   3. build the many-process run's model (the embedded SmolLM2-135M when its weights are on
#      disk, else a random one of its shape),
#   4. run the many-process path (SKIP_MANY=1 leaves it out): a test-sized
#      examples/rlac_code_tiny.yaml under `accelerate launch` with one process per GPU found,
#      checking summary.json's world_size.
# Every result is a JSON line (for BENCHMARKS.md); the last lines are "GPU smoke OK" and the time.
# The Python steps run from a scratch folder, so they import the INSTALLED coevo wheel, not this tree.
#
#   bash scripts/gpu_smoke.sh                    # on the GPU machine, from the repository root
#   SKIP_INSTALL=1 bash scripts/gpu_smoke.sh     # the wheels are already installed in $PY's environment
#   PY=/path/to/python bash scripts/gpu_smoke.sh # another interpreter than python3
# CPU rehearsal of exactly that path (tests/test_gpu_smoke.py), two processes for step 4:
#   bash scripts/gpu_smoke.sh --cpu              # the same as SMOKE_ALLOW_CPU=1 SMOKE_TINY=1
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
if [[ "${1:-}" == --cpu ]]; then export SMOKE_ALLOW_CPU=1 SMOKE_TINY=1; fi

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

# The TAIScore round at three sizes (random-initialised Llama shapes: nothing pretrained travels),
# full fine-tuning and LoRA, bf16: step times, tokens/s, peak GPU memory, generation rates
# (benchmarks/gpu_round.py). One JSON, into $OUT on the device machine (it comes back from there).
# SMOKE_TINY=1 (the CPU rehearsal): one 2-layer float32 model instead.
RESULTS=${OUT:-$WORK}
ROUND=(--json "$RESULTS/gpu_round.json" --budget "${SIZES_BUDGET:-270}")
if [[ -n "${SIZES:-}" ]]; then ROUND+=(--sizes "$SIZES"); fi
if [[ -n "${SMOKE_TINY:-}" ]]; then ROUND+=(--cpu); fi
"$PY" "$ROOT/benchmarks/gpu_round.py" "${ROUND[@]}"
echo "TAIScore rounds done after $(( $(date +%s) - START )) s: $RESULTS/gpu_round.json"

if [[ -n "${SKIP_MANY:-}" ]]; then rm -rf "$WORK"; echo "GPU smoke OK (the many-process run skipped: SKIP_MANY)"; exit 0; fi

# The many-process run's model: SmolLM2-135M's shape, random (or the embedded weights where they are).
if [[ -n "${SMOKE_TINY:-}" ]]; then
  "$PY" "$ROOT/scripts/random_llama.py" "$WORK/random-llama" --layers 2 --hidden 64 --intermediate 128 \
    --heads 4 --kv-heads 2 --vocab 1000 >/dev/null
  export SMOKE_MODEL="hf:$WORK/random-llama"
elif "$PY" -c "from coevo.llm.embedded import hf_dir; hf_dir()" 2>/dev/null; then
  export SMOKE_MODEL=smollm2
else
  "$PY" "$ROOT/scripts/random_llama.py" "$WORK/random-llama" --dtype bfloat16 --device cuda >/dev/null
  export SMOKE_MODEL="hf:$WORK/random-llama"
fi
echo "many-process model: $SMOKE_MODEL"

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
timeout "${RLAC_TIMEOUT:-240}" "${LAUNCH[@]}" -m coevo.cli run "$ROOT/examples/rlac_code_tiny.yaml" --out "$WORK/rlac" ${UNSAFE[@]+"${UNSAFE[@]}"} \
  --set "roles.generator.model=$SMOKE_MODEL" --set "roles.critic.model=$SMOKE_MODEL" --set "roles.judge.model=$SMOKE_MODEL" \
  --set iterations=1 --set k=2 --set n=2 --set validator=random --set seed=0 --set kl=false \
  --set data.source=humaneval --set "data.train_ids=[HumanEval/45, HumanEval/2]" --set "data.heldout_ids=[HumanEval/53]" \
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
