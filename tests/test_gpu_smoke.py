"""scripts/gpu_smoke.sh: the GPU check must run on the GPU machine's bare image (no network,
packages carried as wheels in build/smoke-wheels). It rotted once, unseen: it installed from
the network and imported a function coevo no longer had. The fast tests read the script;
the slow one rehearses it on CPU in a fresh venv that sees only the image's packages."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_smoke.sh"


def _code_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith("#")]


def test_every_pip_install_in_the_smoke_script_stays_off_the_network():
    installs = [line for line in _code_lines(SCRIPT.read_text()) if re.search(r"\bpip3?\b.*\binstall\b", line)]
    assert installs, "gpu_smoke.sh installs nothing: where do trl and coevo come from on the GPU machine?"
    for line in installs:
        assert "--no-index" in line, f"gpu_smoke.sh: a pip install without --no-index (no network there): {line.strip()}"
    assert not any(re.search(r"\bpip3?\b.*\bdownload\b", line) for line in _code_lines(SCRIPT.read_text()))


def test_every_coevo_name_the_smoke_script_imports_exists():
    # The script and the GPU benchmark it runs (both import the installed wheel there).
    text = SCRIPT.read_text() + (ROOT / "benchmarks" / "gpu_round.py").read_text()
    imports = re.findall(r"from (coevo[\w.]*) import ([\w, ]+)", text)
    assert len(imports) >= 5
    for module, names in imports:
        loaded = importlib.import_module(module)
        for name in (n.strip() for n in names.split(",")):
            assert hasattr(loaded, name), f"gpu_smoke.sh imports {name} from {module}, which has no such name"


@pytest.mark.slow  # not tiny_model: it launches two training processes itself, and beside other tests it crawls
def test_the_smoke_script_passes_on_cpu_in_an_image_like_venv(tmp_path):
    # Builds build/smoke-wheels (PyPI, or pip's cache), then no network: PIP_NO_INDEX, and the
    # script itself runs pip with no index and no config, and the hub offline.
    built = subprocess.run(["bash", "scripts/smoke_wheels.sh"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    # The device's time budget (SIZES_BUDGET, 270 s there) is no limit for the rehearsal, which
    # shares the CPU with the other tests of make test's parallel session: a mode skipped "out
    # of time" would fail it for the machine's load, not for the script.
    env = {**os.environ, "PIP_NO_INDEX": "1", "OUT": str(tmp_path), "SIZES_BUDGET": "1500"}
    env.pop("PY", None)
    env.pop("SKIP_INSTALL", None)
    run = subprocess.run(["bash", str(SCRIPT), "--cpu"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    # The TAIScore round (benchmarks/gpu_round.py) in each mode, its JSON where $OUT says.
    report = json.loads((tmp_path / "gpu_round.json").read_text())
    [size] = report["sizes"]
    assert not report["failed"]
    for mode in ("full", "lora", "full_bf16"):
        for kind in ("grpo", "dpo"):
            stage = size[mode][kind]
            assert stage["steps"] == 3 and stage["later_step_s"] > 0 and stage["train_tokens_per_s"] > 0, (mode, stage)
            assert stage["weight_delta"] > 0, (mode, stage)
    # At the papers' learning rate, float32 weights take every update and bf16 weights lose most
    # (why trained models load in float32: coevo/llm/specs.py, TRAINABLE_DTYPE).
    assert size["full"]["dpo"]["changed_share"] == 1.0
    assert size["full_bf16"]["dpo"]["changed_share"] < 0.1
    assert size["lora"]["dpo"]["changed_share"] is None  # an adapter folder
    assert size["generation"]["batched_completion_tokens_per_s"]["32"] > 0
    rows = [json.loads(line) for line in run.stdout.splitlines() if line.startswith('{"stage"')]
    [many] = [row for row in rows if row["stage"].startswith("rlac_code_tiny")]
    assert many["processes"] == 2
    assert "GPU smoke OK" in run.stdout
