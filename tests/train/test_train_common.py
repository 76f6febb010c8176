"""Shared training glue: trainer arguments, LoRA settings, checkpoint bookkeeping, timers."""

from __future__ import annotations

import json
import time

import pytest

from coevo.train import LoRASettings, machine_training_args
from coevo.train.checkpoints import global_step, last_checkpoint
from coevo.train.grpo import _Timed
from coevo.train.measuring import PeakRSS


def test_machine_training_args_without_cuda():
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    args = machine_training_args()
    # No report_to: every training block sets it itself (its `report_to` field, "none" by default).
    assert args == {"use_cpu": True, "bf16": False, "gradient_checkpointing": True,
                    "gradient_checkpointing_kwargs": {"use_reentrant": False}}


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
    # Killed while saving: checkpoint-20 has its weights but its state is missing or cut short.
    (tmp_path / "checkpoint-20").mkdir()
    (tmp_path / "checkpoint-20" / "model.safetensors").write_bytes(b"partial")
    assert last_checkpoint(tmp_path).endswith("checkpoint-12")
    (tmp_path / "checkpoint-20" / "trainer_state.json").write_text('{"global_step": 2')
    assert last_checkpoint(tmp_path).endswith("checkpoint-12")
    (tmp_path / "checkpoint-x").mkdir()  # not TRL's
    assert last_checkpoint(tmp_path).endswith("checkpoint-12")


def test_timed_reward_keeps_its_name_and_counts():
    def taiscore_reward(prompts, completions, **_):
        time.sleep(0.02)
        return [1.0] * len(completions)

    timed = _Timed(taiscore_reward)
    assert timed.__name__ == "taiscore_reward"  # TRL logs rewards/<name>/mean
    assert timed(prompts=["p"], completions=["c", "d"]) == [1.0, 1.0]
    assert timed.calls == 1 and timed.seconds >= 0.02  # the reward's own time, counted


def _touched_block(mb: int) -> bytearray:
    block = bytearray(mb * 2**20)
    block[::4096] = b"x" * len(block[::4096])  # one write a page, so every page is resident
    return block


def test_peak_rss_sees_an_allocation():
    # The pytest process alone is over any fixed threshold, so measure the rise over the block's
    # start. The block is freed before the `with` ends: only the sampler, not the readings at
    # enter and exit, can see it. An earlier, larger block freed before the `with` must not count
    # (the process-life ru_maxrss would): the peak is the block's own.
    from coevo.train.measuring import current_rss_mb

    earlier = _touched_block(400)
    del earlier
    before = current_rss_mb()
    with PeakRSS(interval=0.01) as rss:
        block = _touched_block(200)
        time.sleep(0.3)  # many sampling intervals with the block resident
        del block
    after = current_rss_mb()
    assert after < before + 100, (before, after)  # freed: the exit reading cannot see it
    assert before + 160 < rss.peak_mb < before + 350, (before, rss.peak_mb)


def test_trl_block_passes_any_trl_option_and_refuses_clashes_and_unknown_keys(tmp_path):
    from trl import DPOConfig, GRPOConfig

    from coevo.train import TrainError
    from coevo.train.settings import trl_config

    own = {"output_dir": str(tmp_path), "learning_rate": 1e-6}
    args = trl_config(GRPOConfig, "grpo", own, {"warmup_steps": 3, "max_grad_norm": 0.5})
    assert (args.warmup_steps, args.max_grad_norm, args.learning_rate) == (3, 0.5, 1e-6)
    with pytest.raises(TrainError, match=r"grpo.trl sets learning_rate, which coevo sets itself"):
        trl_config(GRPOConfig, "grpo", own, {"learning_rate": 1e-3})
    with pytest.raises(TrainError, match=r"dpo.trl: .*warmup_stepz"):
        trl_config(DPOConfig, "dpo", own, {"warmup_stepz": 1})


def test_a_run_configs_trl_mappings_reach_trls_configs(tmp_path):
    # Catches a training block that drops its `trl:` mapping between a run config (docs/taiscore.md:
    # `dpo: {trl: {loss_type: [ipo]}}`) and TRL's GRPOConfig / DPOConfig: a config field
    # that is read and validated but never handed on, in TAIScore's blocks or RLAC's.
    from coevo.settings.config import apply_overrides
    from coevo.run.runner import resolve_config
    from coevo.train.dpo import dpo_config
    from coevo.train.grpo import grpo_config

    trl = ["grpo.trl.warmup_steps=3", "dpo.trl.loss_type=[ipo]"]
    _, taiscore = resolve_config(apply_overrides({"algorithm": "taiscore"}, trl), "taiscore config")
    assert grpo_config(taiscore.grpo, tmp_path / "grpo").warmup_steps == 3
    assert dpo_config(taiscore.dpo, tmp_path / "dpo").loss_type == ["ipo"]
    _, rlac = resolve_config(apply_overrides({"algorithm": "rlac"}, trl[1:]), "rlac config")
    assert dpo_config(rlac.dpo, tmp_path / "rlac").loss_type == ["ipo"]


def test_trl_block_may_change_the_machine_defaults(tmp_path):
    from trl import DPOConfig

    from coevo.train.settings import trl_config

    args = trl_config(DPOConfig, "dpo", {"output_dir": str(tmp_path)}, {"report_to": "tensorboard"})
    assert args.report_to == ["tensorboard"] and args.use_cpu == machine_training_args().get("use_cpu", False)


class _FakeTrainer:
    """Moves one weight by `step` (or fails), with TRL's forward patch on its model."""

    def __init__(self, step=None):
        import torch

        self.model = torch.nn.Linear(2, 2)
        self.model.forward = lambda *a, **k: None  # an instance attribute, as TRL's patch
        self.step, self.resumed_from = step, "unset"

    def train(self, resume_from_checkpoint=None):
        import torch

        self.resumed_from = resume_from_checkpoint
        if self.step is None:
            raise RuntimeError("out of memory")
        with torch.no_grad():
            self.model.weight[0, 0] += self.step


def test_measured_train_reports_the_weight_change_and_always_unpatches():
    from coevo.train.measuring import measured_train

    trainer = _FakeTrainer(step=0.25)
    run = measured_train(trainer, trainer.model, "ckpt-3")
    assert trainer.resumed_from == "ckpt-3" and abs(run.weight_delta - 0.25) < 1e-6
    assert run.seconds > 0 and run.peak_rss_mb > 0
    assert "forward" not in vars(trainer.model)
    failing, reference = _FakeTrainer(), _FakeTrainer().model
    with pytest.raises(RuntimeError, match="out of memory"):
        measured_train(failing, failing.model, None, reference=reference)
    assert "forward" not in vars(failing.model) and "forward" not in vars(reference)


def test_the_weight_probe_compares_with_the_entry_model_instead_of_copying_it():
    import copy

    import torch

    from coevo.train.measuring import weight_probe

    model = torch.nn.Linear(3, 2)
    entry = copy.deepcopy(model).requires_grad_(False)  # a KL reference: the policy at entry
    with weight_probe(model, entry) as moved:
        assert all(before is dict(entry.named_parameters())[name] for name, before in moved._before.items())
        with torch.no_grad():
            model.weight[0, 1] += 0.25
    assert moved.max_abs_delta == pytest.approx(0.25)
    other = torch.nn.Linear(3, 4)  # another shape: no stand-in, the probe copies
    with weight_probe(model, other) as moved:
        assert all(before is not p for before, p in zip(moved._before.values(), model.parameters()))
        with torch.no_grad():
            model.bias[1] -= 0.5
    assert moved.max_abs_delta == pytest.approx(0.5)

