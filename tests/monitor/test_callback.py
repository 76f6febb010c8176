"""HackingMonitor as TRL drives it: the wrapped reward's values and texts at their step, the
anchors at each check, TRL's logged rewards where nothing is wrapped, and `stop: true`
putting back the weights of the last check before the onset."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from coevo.monitor import HackingMonitor


STATE = SimpleNamespace(global_step=0)


def drive(monitor, model, steps, reward_at):
    """What a Trainer does with a callback over `steps` optimizer steps: the reward of 16
    completions per step (reward_at(step) and a little spread), then a weight change of +1."""
    args = SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=4, world_size=1)
    state, control = STATE, SimpleNamespace(should_training_stop=False)
    state.global_step, state.max_steps = 0, steps
    reward = monitor.wrap_reward(lambda prompts, completions, **kw: [
        reward_at(state.global_step + 1) + 0.02 * (i % 2) for i in range(len(completions))])
    monitor.on_train_begin(args, state, control, model=model)
    for step in range(1, steps + 1):
        monitor.on_step_begin(args, state, control)
        reward(["p"] * 16, [[{"role": "assistant", "content": f"critique {i} at {step}"}] for i in range(16)])
        with torch.no_grad():
            model.weight.add_(1.0)
        state.global_step = step
        monitor.on_step_end(args, state, control)
        if control.should_training_stop:
            break
    return control


def anchor(level_at):
    """An anchor of 8 held-out items at level_at(the current step), each item its own offset."""
    return lambda: {f"i{k}": level_at(STATE.global_step) + 0.01 * k + 0.003 * (k % 3) for k in range(8)}


def test_a_flag_with_stop_ends_training_and_puts_back_the_weights_before_the_onset():
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.zero_()
    # Flat for 3 steps, then the reward climbs while the anchor falls.
    monitor = HackingMonitor({"meant": anchor(lambda s: 1.0 - 0.1 * max(0, s - 3))}, every=1, stop=True,
                             stage="critic")
    control = drive(monitor, model, 10, lambda step: 0.1 * max(0, step - 3))
    assert control.should_training_stop and monitor.flags
    report, flag = monitor.report(), monitor.flags[0]
    assert report["stopped_at"] == flag.step < 10
    assert report["restored_weights_of_step"] < flag.onset_step
    # The weights as they were at that check: one +1 per step before it.
    assert model.weight.flatten().tolist() == [float(report["restored_weights_of_step"])] * 2
    assert report["anchor_curves"]["meant"][0][0] == 0 and report["reward_curve"][0][0] == 1


def test_an_anchor_that_follows_the_reward_raises_nothing_and_training_runs_on():
    model = torch.nn.Linear(2, 1, bias=False)
    monitor = HackingMonitor({"meant": anchor(lambda s: 0.1 * s)}, every=2, stop=True)
    control = drive(monitor, model, 6, lambda step: 0.1 * step)
    assert not control.should_training_stop and monitor.flags == []
    assert [point[0] for point in monitor.report()["anchor_curves"]["meant"]] == [0, 2, 4, 6]


def test_without_a_wrapped_reward_it_reads_trl_logs():
    monitor = HackingMonitor({}, every=1)
    logs = lambda step: {"reward": 0.1 * step, "reward_std": 0.05, "completions/clipped_ratio": 0.9 if step > 3 else 0.1}
    args = SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=4)
    state = SimpleNamespace(global_step=0, max_steps=6)
    control = SimpleNamespace(should_training_stop=False)
    monitor.on_train_begin(args, state, control, model=None)
    for step in range(1, 7):
        state.global_step = step
        monitor.on_log(args, state, control, logs=logs(step))
        monitor.on_step_end(args, state, control)
    report = monitor.report()
    assert [p[2] for p in report["reward_curve"]] == [16] * 6
    assert [f["anchor"] for f in report["flags"]] == ["degeneracy:cut_share"]


def test_every_must_be_a_positive_step_count():
    with pytest.raises(ValueError, match="every must be at least 1"):
        HackingMonitor({}, every=0)
