"""`HackingMonitor`: the monitor as a transformers `TrainerCallback`, for coevo's own stages and
for a user's TRL `GRPOTrainer` / `DPOTrainer`.

    monitor = HackingMonitor({"honest_length": measure_on_heldout}, every=2, stop=True)
    trainer = GRPOTrainer(model, reward_funcs=monitor.wrap_reward(my_reward), ..., callbacks=[monitor])

An anchor is a function of no arguments returning {held-out item key: value}, called with the
policy as it is at that moment (before training, then every `every` optimizer steps). The
training reward comes from `wrap_reward` (every completion's reward and text: the interval and
the degeneracy statistics) or, without it, from TRL's logs (`reward` / `reward_std` for GRPO,
`rewards/margins` for DPO, `completions/clipped_ratio`). With `stop=True` a flag ends training at
that step and puts back the trainable weights as they were at the last check before the onset
(kept in CPU memory: one copy of the trainable parameters per check in the streak, which for
LoRA is small and for a full model is its size in fp32 each).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import Any

from transformers import TrainerCallback

from coevo.monitor.rule import StepReward
from coevo.monitor.tracker import Flag, Monitor

log = logging.getLogger(__name__)

Anchor = Callable[[], Mapping[str, float]]
#: TRL's per-step log keys read as the training reward, first found first (GRPO, then DPO).
REWARD_KEYS = (("reward", "reward_std"), ("rewards/margins", None))
#: TRL's per-step log key read as the share of completions cut at their limit.
CLIPPED_KEY = "completions/clipped_ratio"
#: Checks whose weights are kept for a rollback (the flag's streak plus the one before it).
KEPT_SNAPSHOTS = 3


class HackingMonitor(TrainerCallback):
    """Follows the training reward and each anchor over the steps and flags a divergence
    (coevo/monitor/rule.py); `report()` is what summary.json keeps."""

    def __init__(self, anchors: Mapping[str, Anchor], *, every: int = 2, stop: bool = False, stage: str = "",
                 on_flag: Callable[[Flag], None] | None = None):
        if every < 1:
            raise ValueError(f"every must be at least 1 (optimizer steps between anchor checks), got {every}")
        self.anchor_fns = dict(anchors)
        self.every, self.stop = every, stop
        self.monitor = Monitor(stage=stage)
        self.on_flag = on_flag
        self.stopped_at: int | None = None
        self.restored_step: int | None = None
        self._step = 0
        self._wrapped = False
        self._snapshots: dict[int, dict[str, Any]] = {}
        self._model: Any = None

    # -- what training produces ------------------------------------------------------------
    def wrap_reward(self, reward_fn: Callable[..., list[float]]) -> Callable[..., list[float]]:
        """`reward_fn` for GRPO, recording every completion's reward and text at the step it
        is computed for (its signature and `__name__` kept: TRL logs rewards by that name)."""
        self._wrapped = True

        @functools.wraps(reward_fn)
        def recorded(*args: Any, **kwargs: Any) -> list[float]:
            # Called as TRL calls it (prompts=, completions=, ... by keyword) and passed on so.
            rewards = reward_fn(*args, **kwargs)
            completions = kwargs.get("completions", args[1] if len(args) > 1 else [])
            prompts = kwargs.get("prompts", args[0] if args else None)
            self.monitor.observe_reward(self._step, [float(r) for r in rewards if r is not None])
            self.monitor.observe_outputs(self._step, [_text(c) for c in completions],
                                         inputs=_inputs(prompts, kwargs, len(completions)),
                                         rewards=[None if r is None else float(r) for r in rewards])
            return rewards

        return recorded

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self._model = model
        self._step = state.global_step + 1
        self._measure(state.global_step)
        self._snapshot(state.global_step)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step = state.global_step + 1

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs:
            return
        step = state.global_step
        if not self._wrapped:
            for mean_key, sd_key in REWARD_KEYS:
                if mean_key in logs:
                    # One logged mean per step: its spread is TRL's std over the step's
                    # completions where logged (GRPO), else unknown and the step counts once.
                    sd = float(logs.get(sd_key, 0.0)) if sd_key else 0.0
                    n = max(1, int(getattr(args, "per_device_train_batch_size", 1)
                                   * getattr(args, "gradient_accumulation_steps", 1))) if sd_key else 1
                    self.monitor.observe_reward(step, StepReward(mean=float(logs[mean_key]), sd=sd, n=n))
                    break
        if CLIPPED_KEY in logs:
            self.monitor.observe_statistic(step, "cut_share", float(logs[CLIPPED_KEY]))

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        step = state.global_step
        if step % self.every and step != state.max_steps:
            return
        self._measure(step)
        flags = self.monitor.check(step)
        for flag in flags:
            if self.on_flag:
                self.on_flag(flag)
        if flags and self.stop and getattr(args, "world_size", 1) > 1:
            # The monitor runs on the main process only: stopping or rolling back there alone
            # would leave the other processes training different weights (or waiting forever).
            log.warning("%s: the monitor flagged but does not stop a training of %d processes (stop: true needs "
                        "one); the flag is kept", self.monitor.stage or "training", args.world_size)
        elif flags and self.stop:
            self._roll_back(min(f.onset_step for f in flags))
            self.stopped_at = step
            control.should_training_stop = True
        else:
            self._snapshot(step)

    # -- what the monitor keeps -------------------------------------------------------------
    @property
    def flags(self) -> list[Flag]:
        return self.monitor.flags

    def report(self) -> dict[str, Any]:
        """summary.json's monitor entry: flags, onset, curves, and what `stop` did."""
        return {**self.monitor.report(), "every": self.every, "stop": self.stop, "stopped_at": self.stopped_at,
                "restored_weights_of_step": self.restored_step}

    def _measure(self, step: int) -> None:
        for name, anchor in self.anchor_fns.items():
            self.monitor.observe_anchor(step, name, anchor())

    def _snapshot(self, step: int) -> None:
        if not self.stop or self._model is None:
            return
        self._snapshots[step] = {n: p.detach().to("cpu", copy=True)
                                 for n, p in self._model.named_parameters() if p.requires_grad}
        for old in sorted(self._snapshots)[:-KEPT_SNAPSHOTS]:
            del self._snapshots[old]

    def _roll_back(self, onset_step: int) -> None:
        """The trainable weights as they were at the last check before `onset_step`."""
        before = [s for s in self._snapshots if s < onset_step] or sorted(self._snapshots)[:1]
        if not before or self._model is None:
            log.warning("%s: stopped at the flag with no weights kept from before the onset (step %d): "
                        "the weights stay as trained", self.monitor.stage or "training", onset_step)
            return
        step = max(before)
        import torch

        with torch.no_grad():
            for name, param in self._model.named_parameters():
                if name in self._snapshots[step]:
                    param.copy_(self._snapshots[step][name].to(param.device))
        self.restored_step = step
        log.warning("%s: stopped at the flag; the weights are back to step %d (the last check before the onset, "
                    "step %d)", self.monitor.stage or "training", step, onset_step)


#: Dataset columns TRL passes to the reward that hold a completion's inputs (TAIScore's critic:
#: the prompt x and the answer y0 it critiques), besides the prompt it was asked with.
INPUT_COLUMNS = ("x", "y0")


def _inputs(prompts: Any, columns: Mapping[str, Any], n: int) -> list[list[str | None]] | None:
    """Per completion, the texts it was given (INPUT_COLUMNS where TRL passes them, and its
    prompt's text), for the copy statistics; None where nothing lines up with the completions."""
    given = [list(columns[c]) for c in INPUT_COLUMNS if isinstance(columns.get(c), (list, tuple))
             and len(columns[c]) == n]
    if isinstance(prompts, (list, tuple)) and len(prompts) == n:
        given.append([_prompt_text(p) for p in prompts])
    if not given:
        return None
    return [[None if column[i] is None else str(column[i]) for column in given] for i in range(n)]


def _prompt_text(prompt: Any) -> str:
    """A prompt as text: a string, or the contents of its chat messages."""
    if isinstance(prompt, list):
        return "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, Mapping))
    return str(prompt)


def _text(completion: Any) -> str:
    """A completion as text: TRL passes strings, or chat messages for conversational prompts."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list) and completion and isinstance(completion[-1], Mapping):
        return str(completion[-1].get("content", ""))
    return str(completion)
