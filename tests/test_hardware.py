"""`coevo plan CONFIG --hardware SPEC`: the profiles, the placement of roles on GPUs, the rates
they give, and the paper-scale configs timed on them with no call left untimed."""

import json
from pathlib import Path

import pytest

from coevo.plan.hardware import (
    VLLM_7B_H100,
    Hardware,
    HardwareError,
    Placement,
    _engine_rate,
    model_billions,
    parse_hardware,
    placement,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_specs_name_nodes_gpus_and_the_gpu_and_an_unknown_one_is_refused_naming_the_known():
    assert parse_hardware("8xH100") == Hardware(1, 8, "H100")
    assert parse_hardware("2x8xh100") == Hardware(2, 8, "H100") and str(Hardware(2, 8, "H100")) == "2x8xH100"
    assert parse_hardware("1xH200") == Hardware(1, 1, "H200") and parse_hardware("cpu") is None
    for bad in ("8xB200", "H100", "0xH100", "eight"):
        with pytest.raises(HardwareError, match="known: cpu .* H100, H200, A100"):
            parse_hardware(bad)


def test_roles_are_placed_as_the_scaling_doc_splits_a_node():
    assert placement(Hardware(1, 8, "H100"), trains=True) == Placement(4, 1, 3, shared=False)
    assert placement(Hardware(2, 8, "H100"), trains=True) == Placement(7, 1, 8, shared=False)
    assert placement(Hardware(1, 1, "H200"), trains=True).shared
    assert placement(Hardware(1, 8, "H100"), trains=False) == Placement(0, 8, 8, shared=True)


def test_a_models_size_is_read_from_its_name_and_a_moe_counts_its_active_weights():
    assert model_billions("hf:Qwen/Qwen3-8B")[:2] == (8.0, 8.0)
    assert model_billions("openai:meta-llama/Llama-3.2-3B-Instruct@http://localhost:8001/v1")[:2] == (3.0, 3.0)
    assert model_billions("openai:openai/gpt-oss-120b@http://localhost:8000/v1")[:2] == (117.0, 5.1)
    assert model_billions("vllm:runs/x/checkpoints/critic/final")[3] is False  # assumed, and said so


def test_vllm_rates_follow_the_published_anchor_and_scale_with_the_gpus_given():
    one = _engine_rate(Hardware(1, 1, "H100"), Placement(1, 1, 1, True), "vllm", "vllm:org/Model-7B", {})
    assert one.completion_tokens_per_s == pytest.approx(VLLM_7B_H100)
    three = _engine_rate(Hardware(1, 8, "H100"), Placement(4, 1, 3, False), "server",
                         "openai:org/Model-7B@http://localhost:8000/v1", {})
    assert three.completion_tokens_per_s == pytest.approx(3 * VLLM_7B_H100)
    h200 = _engine_rate(Hardware(1, 1, "H200"), Placement(1, 1, 1, True), "vllm", "vllm:org/Model-7B", {})
    assert h200.completion_tokens_per_s > one.completion_tokens_per_s  # more bandwidth, faster decoding
    api = _engine_rate(Hardware(1, 8, "H100"), Placement(4, 1, 3, False), "server",
                       "openai:gpt-4.1-mini@https://api.openai.com/v1", {"concurrency": 4})
    assert api.completion_tokens_per_s == pytest.approx(4 * 80.0) and "outside the hardware" in api.note


def _plan(config: str, *extra: str) -> dict:
    from typer.testing import CliRunner

    from coevo.cli import app

    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / config), "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_paper_scale_taiscore_run_takes_under_a_week_on_8_h100s_every_call_timed():
    made = _plan("taiscore_full.yaml", "--hardware", "8xH100")
    total = made["estimate"]["total"]
    assert total["untimed_calls"] == 0 and 0 < total["seconds"] <= 7 * 86400
    assert all(role["engine"] == "vllm" for role in made["roles"] if role["trained"])
    assert any("hardware profile 8xH100" in note for note in made["estimate"]["notes"])


@pytest.mark.parametrize("config", sorted(p.name for p in EXAMPLES.glob("*_full.yaml")))
def test_every_full_config_plans_on_a_hardware_profile_with_no_call_untimed(config):
    assert _plan(config, "--hardware", "8xH100")["estimate"]["total"]["untimed_calls"] == 0


def test_hardware_and_a_calibration_file_together_are_refused():
    from typer.testing import CliRunner

    from coevo.cli import app

    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_full.yaml"), "--hardware", "8xH100",
                                      "--calibration", "x.json"])
    assert result.exit_code == 2 and "pass one" in result.output
