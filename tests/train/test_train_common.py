"""Shared training glue: trainer arguments, LoRA settings, checkpoint bookkeeping, timers."""

from __future__ import annotations

import json

import pytest

from coevo.train import LoRASettings, TrainResult, cpu_training_args
from coevo.train.common import PeakRSS, global_step, last_checkpoint
from coevo.train.grpo import _Timed


def test_cpu_training_args_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    args = cpu_training_args()
    assert args == {"use_cpu": True, "bf16": False, "gradient_checkpointing": False, "report_to": "none"}


def test_lora_settings_build_a_peft_config():
    config = LoRASettings(r=4, alpha=8, dropout=0.0).peft_config()
    assert (config.r, config.lora_alpha, config.lora_dropout) == (4, 8, 0.0)
    assert config.target_modules == "all-linear"
    assert set(LoRASettings(target_modules=["q_proj", "v_proj"]).peft_config().target_modules) == {"q_proj", "v_proj"}
    with pytest.raises(ValueError, match="empty"):
        LoRASettings(target_modules=[])


def test_checkpoint_bookkeeping(tmp_path):
    assert last_checkpoint(tmp_path / "missing") is None
    for step in (3, 12):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    newest = last_checkpoint(tmp_path)
    assert newest.endswith("checkpoint-12")
    assert global_step(newest) == 12 and global_step(None) == 0


def test_train_result_round_trips():
    result = TrainResult(checkpoint="/x/final", steps=2, seconds=4.0, seconds_per_step=2.0, peak_rss_mb=900.0,
                         metrics={"loss": 0.5})
    assert TrainResult.model_validate_json(result.model_dump_json()) == result


def test_timed_reward_keeps_its_name_and_counts():
    def taiscore_reward(prompts, completions, **_):
        return [1.0] * len(completions)

    timed = _Timed(taiscore_reward)
    assert timed.__name__ == "taiscore_reward"  # TRL logs rewards/<name>/mean
    assert timed(prompts=["p"], completions=["c", "d"]) == [1.0, 1.0]
    assert timed.calls == 1 and timed.seconds >= 0


def test_peak_rss_sees_an_allocation():
    with PeakRSS(interval=0.01) as rss:
        block = bytearray(64 * 2**20)
        block[::4096] = b"x" * len(block[::4096])
    assert rss.peak_mb > 64
