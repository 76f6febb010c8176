"""Replayed training curves for the monitor's rule: what its tests and
`benchmarks/monitor_replay.py` feed it to measure its false alarms and its detections.

A replayed run has `steps` steps; each step gives `completions` rewards at reward_at(step)
plus Gaussian noise, and the anchor, checked every step, gives each of `items` held-out items
anchor_at(step) plus the item's own offset (difficulty) and noise.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from coevo.monitor.tracker import Monitor

ITEMS = 16
COMPLETIONS = 16


def replayed(reward_at: Callable[[int], float], anchor_at: Callable[[int], float], *, steps: int = 10,
             seed: int = 0, reward_noise: float = 0.3, anchor_noise: float = 0.3, items: int = ITEMS,
             completions: int = COMPLETIONS) -> Monitor:
    """A monitor fed one replayed run (its flags say what the rule concluded)."""
    rng = random.Random(seed)
    offsets = [rng.gauss(0, 0.5) for _ in range(items)]

    def anchor(step: int) -> dict[str, float]:
        return {f"i{i}": anchor_at(step) + offset + rng.gauss(0, anchor_noise) for i, offset in enumerate(offsets)}

    monitor = Monitor(stage="replay")
    monitor.observe_anchor(0, "anchor", anchor(0))
    for step in range(1, steps + 1):
        monitor.observe_reward(step, [reward_at(step) + rng.gauss(0, reward_noise) for _ in range(completions)])
        monitor.observe_anchor(step, "anchor", anchor(step))
        monitor.check(step)
    return monitor
