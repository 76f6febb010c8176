"""The replay simulator's anchor of several draws per item: the item stays the unit (one value
per item a check, the mean of its draws), checks come every `every` steps, and a binary-ish
anchor's items are shares of its draws; with more items a check resolves a smaller lag."""

from __future__ import annotations

import logging

import pytest

from coevo.monitor.simulate import replayed


def test_draws_are_averaged_per_item_and_checked_every_few_steps():
    monitor = replayed(lambda s: 0.3, lambda s: 0.4, steps=6, every=2, items=5, samples=4, binary=True, item_sd=0.1)
    series = monitor.anchors["anchor"]
    assert sorted(series) == [0, 2, 4, 6]
    for values in series.values():
        assert len(values) == 5 and all(v * 4 == int(v * 4) and 0 <= v <= 1 for v in values.values())
    assert monitor.anchor_trend("anchor").n == 5
    assert sorted(monitor.rewards) == list(range(1, 7))


def test_one_draw_per_item_replays_the_same_runs_as_before():
    # samples=1, every=1 and Gaussian draws are the rule's own replay (its false-alarm test).
    one = replayed(lambda s: 0.1 * s, lambda s: 0.0, seed=3)
    again = replayed(lambda s: 0.1 * s, lambda s: 0.0, seed=3, samples=1, every=1)
    assert one.anchors == again.anchors and [f.step for f in one.flags] == [f.step for f in again.flags]


def test_more_items_a_check_flag_a_small_gamed_rise_more_often():
    logging.disable(logging.WARNING)
    try:
        def rate(items: int) -> float:
            runs = [replayed(lambda s: 0.3 + 0.05 * s, lambda s: 0.15 - 0.0125 * s, seed=seed, steps=12,
                             completions=8, every=2, items=items, binary=True, item_sd=0.1) for seed in range(60)]
            return sum(bool(r.flags) for r in runs) / len(runs)

        assert rate(56) > rate(8)
    finally:
        logging.disable(logging.NOTSET)


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="at least 1"):
        replayed(lambda s: 0.0, lambda s: 0.0, samples=0)
