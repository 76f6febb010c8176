"""The divergence rule on replayed curves: a reward that rises while its anchor falls or stays
flat is flagged, one whose anchor rises with it is not, and noise alone raises flags at no more
than the rate the rule promises."""

from __future__ import annotations

import pytest

from coevo.monitor import Monitor
from coevo.monitor.simulate import replayed as replay
from coevo.monitor.rule import FALSE_ALARM_RATE, PERSISTENCE, REWARD_WINDOW, StepReward, anchor_trend, lags, onset, reward_trend

def test_a_reward_rising_while_its_anchor_falls_is_flagged_with_its_onset():
    monitor = replay(lambda s: 0.1 * max(0, s - 4), lambda s: -0.1 * max(0, s - 4))
    assert [f.anchor for f in monitor.flags] == ["anchor"]
    flag = monitor.flags[0]
    # The rise starts at step 5; the onset is the first step of the window it first shows in,
    # so at most REWARD_WINDOW - 1 steps early (a rollback keeps weights from before it).
    assert 5 - (REWARD_WINDOW - 1) <= flag.onset_step <= flag.step <= 10
    assert flag.reward_trend["ci"][0] > 0 and flag.anchor_trend["gain"] < 0
    assert monitor.report()["onset_step"] == flag.onset_step


def test_a_reward_rising_while_its_anchor_stays_flat_is_flagged():
    monitor = replay(lambda s: 0.1 * s, lambda s: 0.0)
    assert [f.anchor for f in monitor.flags] == ["anchor"] and "flat" in monitor.flags[0].why


def test_a_reward_whose_anchor_rises_with_it_is_not_flagged():
    monitor = replay(lambda s: 0.1 * s, lambda s: 0.1 * s)
    assert monitor.flags == []


def test_an_anchor_on_another_scale_is_compared_in_its_own_units():
    # A 1-10 judge anchor rising with a 0-1 reward: standardized gains, not raw ones.
    monitor = replay(lambda s: 0.05 * s, lambda s: 0.5 * s, anchor_noise=3.0)
    assert monitor.flags == []


def test_noise_alone_raises_flags_no_more_often_than_the_rule_promises():
    runs = 400
    flagged = sum(bool(replay(lambda s: 0.5, lambda s: 0.5, seed=seed).flags) for seed in range(runs))
    assert flagged / runs <= FALSE_ALARM_RATE


def test_one_diverging_check_is_not_a_flag():
    monitor = Monitor()
    monitor.observe_anchor(0, "a", {"x": 0.0, "y": 0.1, "z": 0.2})
    for step in (1, 2, 3, 4):
        monitor.observe_reward(step, [0.0, 0.1] * 8 if step < 3 else [1.0, 0.9] * 8)
    monitor.observe_anchor(4, "a", {"x": 0.0, "y": 0.1, "z": 0.2})
    assert PERSISTENCE > 1 and monitor.check(4) == []


def test_trends_and_intervals():
    steps = {1: StepReward.of([0.0, 0.2] * 4), 2: StepReward.of([0.1] * 8), 3: StepReward.of([0.9, 1.0] * 4),
             4: StepReward.of([1.0] * 8)}
    trend = reward_trend(steps)
    assert trend.gain == pytest.approx(0.875) and trend.ci[0] > 0.7 and trend.n == 32
    assert reward_trend({1: StepReward.of([1.0])}) is None  # no two windows yet
    flat = anchor_trend({"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0})
    assert flat.gain == 0 and flat.ci == (0.0, 0.0)
    assert anchor_trend({"a": 1.0}, {"a": 2.0}) is None  # under two shared items
    assert lags(trend, flat) is not None and lags(None, flat) is None
    assert onset({s: StepReward.of([0.0, 0.1] * 8) for s in range(1, 5)}
                 | {s: StepReward.of([0.9, 1.0] * 8) for s in range(5, 9)}, flag_step=8) == 5


def test_degeneracy_flags_a_crossing_not_a_state():
    crossing = Monitor()
    kept = Monitor()
    for step in range(1, 7):
        crossing.observe_outputs(step, ["a fine critique of the answer"] * 4, cut=[step > 3] * 4)
        kept.observe_outputs(step, ["a fine critique of the answer"] * 4, cut=[True] * 4)
        crossing.check(step)
        kept.check(step)
    assert [f.anchor for f in crossing.flags] == ["degeneracy:cut_share"] and kept.flags == []


def test_empty_and_repeated_outputs_are_degenerate():
    monitor = Monitor()
    for step in range(1, 5):
        monitor.observe_outputs(step, ["the answer is fine"] * 4 if step < 3 else ["", *["yes yes yes yes yes yes"] * 3])
        monitor.check(step)
    assert {f.anchor for f in monitor.flags} >= {"degeneracy:empty_share", "degeneracy:repeat_share"}
