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

# examples/taiscore_tiny.yaml at test size: one round, a few prompts, one GRPO and one DPO
# step, short generations: the loop's every stage runs for real, in minutes.
TAISCORE_TEST_SIZE = [
    "rounds=1", "data.limit=5", "evaluation.prompts=1", "critic_queries=1", "pairs_per_round=2",
    "grpo.max_steps=1", "grpo.num_generations=2", "dpo.max_steps=1",
    "roles.actor.sampling.response.max_tokens=24", "roles.critic.sampling.max_tokens=24",
    "roles.actor.sampling.revision.max_tokens=24", "evaluation.win_rate=false",
]
# examples/rlac_code_tiny.yaml at test size. Seeded noisy labels (validator=random) so that
# both models surely get pairs to train on (on two problems the real validator may find no
# failing test at all); a checkpoint every step so that a killed stage has one to resume from.
RLAC_CODE_TEST_SIZE = [
    "iterations=1", "k=2", "n=2", "validator=random", "seed=0", "kl=false",
    "data.train_ids=[HumanEval/45, HumanEval/2]", "data.heldout_ids=[HumanEval/53]",
    "roles.generator.sampling.train.max_tokens=32", "roles.critic.sampling.max_tokens=40",
    "roles.generator.sampling.eval.max_tokens=32",
    "dpo.max_steps=2", "dpo.save_steps=1", "dpo.max_length=512", "dpo.max_prompt_length=384",
]


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
