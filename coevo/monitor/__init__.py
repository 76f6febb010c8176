"""Reward-hacking monitor (docs/monitor.md): a training reward followed against anchors that
measure what it was meant to reward, and the degeneracy of the outputs, while training runs.

- `rule.py`: the divergence rule, its constants and their reasons;
- `degeneracy.py`: cut-off, empty, repetitive, too-short and copied outputs, and their thresholds;
- `copies.py`: outputs that copy their input (y0, the prompt), per step and in a run's stored
  GRPO rollouts (`summary.json -> monitor -> copies`, the run's `copies-input` warning);
- `tracker.py`: `Monitor`, one stage's observations and flags (no model library);
- `rounds.py`: `RoundMonitor`, a loop watched round by round (RLAC, DecoEvo);
- `simulate.py`: replayed training curves, the rule's false alarms measured on them;
- `callback.py`: `HackingMonitor`, a transformers `TrainerCallback` for TRL trainers
  (imported on first use: `from coevo.monitor import HackingMonitor` loads transformers);
- `generation.py`: `generation_anchor`, the anchor that samples the trainer's current model on
  held-out prompts and scores the answers (docs/trl.md).
"""

from __future__ import annotations

from typing import Any

from coevo.monitor.generation import generation_anchor
from coevo.monitor.tracker import Flag, Monitor

__all__ = ["Flag", "HackingMonitor", "Monitor", "generation_anchor"]


def __getattr__(name: str) -> Any:
    if name == "HackingMonitor":
        from coevo.monitor.callback import HackingMonitor

        return HackingMonitor
    raise AttributeError(f"module 'coevo.monitor' has no attribute {name!r}")
