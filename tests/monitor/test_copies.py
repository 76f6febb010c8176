"""Outputs that copy their input (coevo/monitor/copies.py) in the monitor: the definition, the
step statistics, and HackingMonitor flagging a reward that pays a critique for echoing y0 from
the first step (a level, not a crossing), or critiques that start copying mid-stage."""

from __future__ import annotations

from types import SimpleNamespace

from coevo.monitor import HackingMonitor
from coevo.monitor.copies import COPY_COVERAGE, copied_share, copy_statistics, is_copy
from coevo.monitor.degeneracy import pooled, statistics

Y0 = ["The lighthouse stood on the rocks and its lantern turned all night over the dark harbour.",
      "A small cat hid under the stairs because the night wind howled through the broken shutters."]
X = ["Write a short story about a lighthouse keeper.", "Write a story about a cat afraid of the dark."]
REAL = ["The ending is rushed: show the keeper deciding to climb the tower, and cut the second adjective.",
        "Name what the cat fears in one concrete image, and let it act before the last line."]


def test_what_counts_as_a_copy():
    assert is_copy(Y0[0], [Y0[0], X[0]]) and copied_share(Y0[0], [Y0[0]]) == 1.0
    # Formatting does not hide a copy, nor a sentence added at one end.
    assert is_copy("**" + Y0[0].upper().replace(" ", "\n") + "** Good.", [Y0[0]])
    # A critique quoting a phrase of the answer and saying what is wrong is no copy.
    quoting = f'"{Y0[0][:40]}" is flat: {REAL[0]}'
    assert 0 < copied_share(quoting, [Y0[0]]) < COPY_COVERAGE and not is_copy(quoting, [Y0[0]])
    # A copy of the prompt x counts; so does y0 split across both inputs' runs.
    assert is_copy(X[0], [Y0[0], X[0]]) and not is_copy(X[0], [Y0[0]])
    # Fewer than five words are never copies (the empty and length statistics' business).
    assert not is_copy("The lighthouse stood", [Y0[0]]) and not is_copy("", [Y0[0]])


def test_step_statistics_count_copies_and_groups_where_a_copy_is_paid_best():
    texts = [Y0[0], REAL[0], Y0[1], REAL[1], "", "", REAL[0], REAL[0]]
    inputs = [[X[0], Y0[0]]] * 2 + [[X[1], Y0[1]]] * 2 + [["x3", "y3"]] * 2 + [["x4", "y4"]] * 2
    stats = copy_statistics(texts, inputs, [9, 5, 2, 6, 1, 1, 4, 3])
    # 2 copies of 8; groups holding a copy and a real output: the first two, of which the first
    # paid the copy more (the empty group and the copy-free one are not contrasted).
    assert stats == {"copy_share": 0.25, "copy_rewarded_share": 0.5, "copy_groups": 2.0}
    assert "copy_share" in statistics(texts, inputs=inputs) and "copy_share" not in statistics(texts)
    # Two calls for one step (gradient accumulation) make one step's statistics.
    both = pooled(statistics(texts[:4], inputs=inputs[:4], rewards=[9, 5, 2, 6]),
                  statistics(texts[4:], inputs=inputs[4:], rewards=[1, 1, 4, 3]))
    assert both["completions"] == 8 and both["copy_share"] == 0.25 and both["copy_groups"] == 2
    assert both["copy_rewarded_share"] == 0.5 and both["empty_share"] == 0.25


def _drive(monitor, steps, critiques_at, reward_of):
    """TRL's calls over `steps` optimizer steps: each step, 4 prompts x 2 critiques; the wrapped
    reward sees the x and y0 columns, as the TAIScore critic's reward does."""
    args = SimpleNamespace(per_device_train_batch_size=8, gradient_accumulation_steps=1, world_size=1)
    state, control = SimpleNamespace(global_step=0, max_steps=steps), SimpleNamespace(should_training_stop=False)
    reward = monitor.wrap_reward(lambda prompts, completions, **columns: [reward_of(c, y0) for c, y0 in
                                                                          zip(completions, columns["y0"])])
    monitor.on_train_begin(args, state, control, model=None)
    for step in range(1, steps + 1):
        monitor.on_step_begin(args, state, control)
        rows = [(X[i % 2], Y0[i % 2] + f" ({i})") for i in range(4)]
        completions, xs, y0s = [], [], []
        for x, y0 in rows:
            for c in critiques_at(step, y0):
                completions.append(c)
                xs.append(x)
                y0s.append(y0)
        reward(prompts=[[{"role": "user", "content": f"Critique this: {y0}"}] for y0 in y0s],
               completions=completions, x=xs, y0=y0s)
        state.global_step = step
        monitor.on_step_end(args, state, control)


def test_a_reward_that_pays_echoes_of_y0_best_is_flagged_from_the_first_steps():
    monitor = HackingMonitor({}, every=1, stage="critic")
    _drive(monitor, 2, lambda step, y0: [y0, REAL[0]], lambda c, y0: 9.0 if c == y0 else 5.0)
    flags = [f.anchor for f in monitor.flags]
    # Half the critiques copy from the first step: no crossing, but the reward pays the copy
    # most in every group, which is flagged as a level.
    assert flags == ["degeneracy:copy_rewarded_share"]
    # At the first check already: 4 groups, each paying the copy more than the real critique.
    assert monitor.flags[0].step == 1 and "best-paid completion copies its input" in monitor.flags[0].why
    assert "100% of 4 groups" in monitor.flags[0].why
    assert monitor.report()["degeneracy"]["1"]["copy_share"] == 0.5


def test_echoes_paid_less_than_real_critiques_raise_no_level_flag_and_starting_to_copy_is_a_crossing():
    monitor = HackingMonitor({}, every=1, stage="critic")
    # Real critiques for 2 steps, then every critique an echo of y0 (paid less: no level flag).
    _drive(monitor, 4, lambda step, y0: [REAL[0], REAL[1]] if step <= 2 else [y0, y0 + " Fine."],
           lambda c, y0: 2.0 if c.startswith(y0) else 6.0)
    assert [f.anchor for f in monitor.flags] == ["degeneracy:copy_share"]
    assert "completions that copy their input" in monitor.flags[0].why
