"""A disk that fills up (a small tmpfs) while a training stage writes its checkpoint, or
while the run store writes: the error is recognised as a full disk (one line at the command
line, coevo.run.runner.DiskFull), what was written before is intact, and after space is freed
the stage resumes from its last complete checkpoint and the store opens and takes writes."""

import subprocess

import pytest

from coevo.run.runner import _disk_full
from coevo.train import DPOSettings, LoRASettings, train_dpo
from coevo.train.checkpoints import last_checkpoint
from coevo.core.types import PreferencePair

PAIRS = [PreferencePair(prompt="Say hello.", chosen="Hello there, friend!", rejected="No."),
         PreferencePair(prompt="Name a color.", chosen="Blue, like a clear sky.", rejected="I will not.")]
# A LoRA stage's checkpoint holds ~23 MB (adapter, its frozen reference, Adam state,
# tokenizer): 35 MB hold the first and not the second.
SETTINGS = DPOSettings(max_steps=2, save_steps=1, batch_size=2, max_length=64, max_prompt_length=32,
                       lora=LoRASettings(r=4, alpha=8))


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=35m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_under_the_store_keeps_what_it_holds(small_disk):
    from coevo.rundir.store import RunStore

    store = RunStore(small_disk / "run")
    store.log_metrics("kept", {"x": 1.0})
    with pytest.raises(Exception) as failed:
        for i in range(100_000):  # ~35 MB of records: more than the disk holds
            store.put_record("filler", str(i), {"text": "x" * 4096})
    assert _disk_full(failed.value), repr(failed.value)
    store.close()
    subprocess.run(["mount", "-o", "remount,size=200m", str(small_disk)], check=True)  # space freed
    again = RunStore(small_disk / "run")  # passes its integrity check
    assert again.metrics("kept")[0]["value"] == 1.0
    again.log_metrics("after", {"y": 2.0})


@pytest.mark.slow
def test_a_full_disk_keeps_the_last_checkpoint_and_the_stage_resumes_once_space_is_freed(small_disk):
    from coevo.llm.specs import load_model

    stage = small_disk / "round1" / "actor"
    with pytest.raises(Exception) as failed:
        train_dpo(load_model("smollm2", trainable=True), PAIRS, SETTINGS, stage)
    assert _disk_full(failed.value), repr(failed.value)
    assert last_checkpoint(stage / "checkpoints").endswith("checkpoint-1")  # checkpoint-2 was cut short
    assert not (stage / "final").exists()

    subprocess.run(["mount", "-o", "remount,size=200m", str(small_disk)], check=True)  # space freed
    result = train_dpo(load_model("smollm2", trainable=True), PAIRS, SETTINGS, stage, resume=True)
    assert result.resumed_from.endswith("checkpoint-1") and result.steps == 2
    assert (stage / "final" / "adapter_model.safetensors").is_file()
