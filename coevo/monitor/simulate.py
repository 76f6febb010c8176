"""Replayed training curves for the monitor's rule: what its tests and
`benchmarks/monitor_replay.py` feed it to measure its false alarms and its detections.

A replayed run has `steps` steps; each step gives `completions` rewards at reward_at(step)
plus Gaussian noise, and the anchor, checked every `every` steps (and at the last), gives
each of `items` held-out items anchor_at(step) plus the item's own offset (difficulty) and
noise, averaged over `samples` draws per item (several critiques of one held-out prompt: the
item stays the unit of the anchor's interval). With `binary`, a draw is 1 with probability
anchor_at(step) + offset (clipped to [0, 1]) and 0 otherwise, as a checked anchor that a
critique either meets or not mostly is.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from coevo.monitor.tracker import Monitor

ITEMS = 16
COMPLETIONS = 16
ITEM_SD = 0.5


def replayed(reward_at: Callable[[int], float], anchor_at: Callable[[int], float], *, steps: int = 10,
             seed: int = 0, reward_noise: float = 0.3, anchor_noise: float = 0.3, items: int = ITEMS,
             completions: int = COMPLETIONS, samples: int = 1, every: int = 1, item_sd: float = ITEM_SD,
             binary: bool = False) -> Monitor:
    """A monitor fed one replayed run (its flags say what the rule concluded)."""
    if samples < 1 or every < 1:
        raise ValueError(f"samples and every must be at least 1, got {samples} and {every}")
    rng = random.Random(seed)
    offsets = [rng.gauss(0, item_sd) for _ in range(items)]

    def draw(step: int, offset: float) -> float:
        if binary:
            return float(rng.random() < min(1.0, max(0.0, anchor_at(step) + offset)))
        return anchor_at(step) + offset + rng.gauss(0, anchor_noise)

    def anchor(step: int) -> dict[str, float]:
        return {f"i{i}": sum(draw(step, offset) for _ in range(samples)) / samples for i, offset in enumerate(offsets)}

    monitor = Monitor(stage="replay")
    monitor.observe_anchor(0, "anchor", anchor(0))
    for step in range(1, steps + 1):
        monitor.observe_reward(step, [reward_at(step) + rng.gauss(0, reward_noise) for _ in range(completions)])
        if step % every == 0 or step == steps:
            # As the callback: the anchor is measured and the rule applied at checks only.
            monitor.observe_anchor(step, "anchor", anchor(step))
            monitor.check(step)
    return monitor
