"""Real runs shared by several slow tests (their fixtures: tests/conftest.py).

A one-process run of a test-sized example config is what the end-to-end tests check (it
trained, it is quiet, the viewer shows it) and also the baseline whose store the
two-process runs must equal row for row (tests/test_many_processes.py). Running each once
per session instead of once per test keeps `make test` within its time (BENCHMARKS.md,
"Test suite").

The runs are session-scoped and read-only for the tests that use them: a test that changes
a run folder makes its own.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
# Deterministic Python judges with spread (reward, pairwise, gold): what a random-initialised
# model's runs are judged by (benchmarks/gpu_round.py's round uses them too).
PYTHON_JUDGES = ROOT / "benchmarks" / "gpu_round_judges.py"

# examples/taiscore_tiny.yaml at test size: one round, a few prompts, one GRPO and one DPO
# step, short generations: the loop's every stage runs for real, in minutes.
TAISCORE_TEST_SIZE = [
    "rounds=1", "data.limit=5", "evaluation.prompts=1", "critic_queries=1", "pairs_per_round=2",
    "grpo.max_steps=1", "grpo.num_generations=2", "dpo.max_steps=1",
    "roles.actor.sampling.response.max_tokens=24", "roles.critic.sampling.max_tokens=24",
    "roles.actor.sampling.revision.max_tokens=24", "evaluation.win_rate=false",
    # The real judges audited once, before round 1: the audits were half of this run's time, and
    # that they run again after each round is checked on replay (algorithms/test_taiscore_audit.py).
    "audit.after_rounds=false",
]
# examples/rlac_code_tiny.yaml at test size, on the HumanEval problems its estimate was read off. Seeded noisy labels (validator=random) so that
# both models surely get pairs to train on (on two problems the real validator may find no
# failing test at all); a checkpoint every step so that a killed stage has one to resume from.
RLAC_CODE_TEST_SIZE = [
    "iterations=1", "k=2", "n=2", "validator=random", "seed=0", "kl=false",
    "data.source=humaneval", "data.train_ids=[HumanEval/45, HumanEval/2]",
    "data.heldout_ids=[HumanEval/53]",
    "roles.generator.sampling.train.max_tokens=32", "roles.critic.sampling.max_tokens=40",
    "roles.generator.sampling.eval.max_tokens=32",
    "dpo.max_steps=2", "dpo.save_steps=1", "dpo.max_length=512", "dpo.max_prompt_length=384",
]



def build_tiny_llama(out: Path) -> Path:
    """A random-initialised Llama of 2 layers x 64 wide (~0.3 M weights) with a 2,048-token BPE
    learned from this repository (scripts/random_llama.py): it loads as `hf:FOLDER`, generates
    and takes real TRL steps in a fraction of a second. What the tests of the training glue,
    of resuming and of many processes run on; they check the machinery, which does not depend
    on what the weights say. What a real model does is checked by one end-to-end test per
    loop and per engine on the embedded model (tests/conftest.py's shared runs)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("random_llama", ROOT / "scripts" / "random_llama.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(out, layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2, vocab_size=2048)


def taiscore_on_tiny_llama(folder: Path) -> list[str]:
    """TAISCORE_TEST_SIZE with the tiny random model as actor and critic (generating in
    transformers: a GGUF copy needs the embedded model's shape) and Python judges: every stage
    runs, in seconds. No judge audit (a Python judge has no prompts to game). The revisions may
    run twice as long as y0: the Python pairwise judge prefers the longer answer, and with equal
    caps all 4 revisions lost to their y0 in about 1 run of 16 (random tokens), leaving the
    actor untrained and the tests that kill or split its stage without one."""
    return [*TAISCORE_TEST_SIZE, f"roles.actor.model=hf:{folder}", f"roles.critic.model=hf:{folder}",
            f"roles.judge.model=python:{PYTHON_JUDGES}", "actor_engine=transformers", "critic_engine=transformers",
            "audit.enabled=false", "roles.actor.sampling.revision.max_tokens=48"]


def rlac_code_on_tiny_llama(folder: Path) -> list[str]:
    """RLAC_CODE_TEST_SIZE with the tiny random model as generator and critic, in transformers.
    4 DPO steps, not 2: a tiny step takes a fraction of a second, and a test that kills a
    stage after its first checkpoint needs the stage still running when it looks."""
    return [*RLAC_CODE_TEST_SIZE, f"roles.generator.model=hf:{folder}", f"roles.critic.model=hf:{folder}",
            "generator_engine=transformers", "critic_engine=transformers", "dpo.max_steps=4"]


def decoevo_test_size(source: str, backbone_options: dict | None = None) -> dict:
    """examples/decoevo_tiny.yaml's shape at test size, on `source`: one seed, DecoEvo only,
    two inner steps with one outer step between them, one or two questions per partition,
    short answers (tests/algorithms/test_decoevo_e2e.py runs it; test_decoevo_estimate.py
    counts its calls)."""
    short = {"temperature": 0.7, "top_p": 0.95, "max_tokens": 24}
    json_answer = {"temperature": 0.0, "max_tokens": 64}
    return {
        "algorithm": "decoevo", "data": {"source": source},
        "roles": {
            "backbone": {"model": "smollm2", "options": backbone_options or {}},
            "solver": {"sampling": {"answer": short, "rollout": short}},
            "rubric_generator": {"sampling": {"temperature": 0.3, "max_tokens": 72}},
            "judge": {"sampling": json_answer}, "auditor": {"sampling": json_answer},
            "rewriter": {"sampling": {"temperature": 0.7, "max_tokens": 96}},
            "grader": {"sampling": {"temperature": 0.0, "max_tokens": 160}}},
        "methods": ["decoevo"], "seeds": [0],
        # No diagnostic set: the trajectory is pinned by the replay tests; here it would cost
        # four real calls per solver change.
        "partitions": {"sizes": {"train": 2, "probe": 1, "solver_gate": 1, "generator_gate": 1,
                                 "diagnostic": 0, "test": 1}},
        "inner_steps": 2, "batch_size": 2, "max_failures": 2, "k": 1, "s": 1, "m": 2,
        "epsilon": 1.0, "max_pairs": 1, "min_criteria": 2, "max_criteria": 2,
        "max_skill_words": 30, "max_text_chars": 60,
        # The judge audit on its one held-out (test) question: ~15 judge calls per audit.
        "audit": {"prompts": 1},
    }

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def coevo_run_command(config: str, out: Path, settings: list[str], *extra: str, processes: int = 1) -> list[str]:
    """`coevo run EXAMPLE --out OUT --set ...`, under torchrun when processes > 1."""
    overrides = [arg for item in settings for arg in ("--set", item)]
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                 "--master_addr", "127.0.0.1", "--master_port", str(free_port())] if processes > 1 else [sys.executable])
    return [*launcher, "-m", "coevo.cli", "run", str(EXAMPLES / config), "--out", str(out), *overrides, *extra]


@dataclass(frozen=True)
class CliRun:
    """A finished `coevo run`: its folder, what it printed, and its summary.json."""

    out: Path
    terminal: str
    summary: dict[str, Any]


def run_coevo(config: str, out: Path, settings: list[str], *extra: str, processes: int = 1,
              env: dict[str, str] | None = None) -> CliRun:
    proc = subprocess.run(coevo_run_command(config, out, settings, *extra, processes=processes),
                          capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "COEVO_QUIET": "1", **(env or {})})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return CliRun(out, proc.stdout + proc.stderr, json.loads((out / "summary.json").read_text()))
