"""benchmarks/gpu_scaling.py: the H200 runs' JSON -> BENCHMARKS.md's GPU section and the
calibration `coevo plan --calibration` reads. The kept calibration must be what the script
makes of the kept runs (it cannot drift from them), and the extrapolation's rules hold."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
RUNS = sorted(RESULTS.glob("gpu_round_h200_run*.json"))


def _script():
    spec = importlib.util.spec_from_file_location("gpu_scaling", ROOT / "benchmarks" / "gpu_scaling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kept_calibration_is_what_the_script_makes_of_the_kept_runs(tmp_path, capsys):
    assert RUNS, "no H200 run is kept in benchmarks/results"
    out = tmp_path / "calibration.json"
    assert _script().main([*map(str, RUNS), "--calibration", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads((RESULTS / "gpu_round_h200_calibration.json").read_text())
    printed = capsys.readouterr().out
    assert "| llama3.2-3b (3.21B) | full | GRPO |" in printed and "Extrapolated to Qwen3-8B" in printed


def test_decoding_is_a_time_a_layer_plus_reading_the_weights_and_training_scales_with_weights():
    scaling = _script()
    shape = scaling.random_llama.SHAPES["llama3.2-3b"]
    n = scaling.weights(shape)
    # One size decoding 28 layers at 3 ms each plus its bf16 weights at the bandwidth.
    step = 28 * 0.003 + 2 * n / scaling.BANDWIDTH
    row = {"size": "llama3.2-3b", "parameters": n, "shape": shape,
           "generation": {"completion_tokens_per_s": 1 / step, "batched_completion_tokens_per_s": {}},
           "full": {"dpo": {"train_tokens_per_s": 1000.0}}}
    at_8b, _ = scaling.decode_8b([row], 1)
    assert at_8b == pytest.approx(36 * 0.003 + 2 * scaling.weights(scaling.TARGET) / scaling.BANDWIDTH)
    rate, _ = scaling.training_8b([row], "full", "dpo")
    assert rate < 1000.0 * n / scaling.weights(scaling.TARGET)  # fewer tokens/s, and longer sequences cost more
    # A GRPO step's update is what is left of it after the reward and the sampling.
    assert scaling.update_rate({"train_tokens_per_s": 100.0, "reward_time_share": 0.3,
                                "generation_time_share": 0.2}, "grpo") == pytest.approx(200.0)
