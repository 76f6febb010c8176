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
                 on_flag: Callable[[Flag], None] | None = None, follow: str = "optimised"):
        """`follow`: the reward curve watched: "optimised", what GRPO optimises (the wrapped
        reward's values, or with several reward functions TRL's logged weighted total, read a
        step late), or "wrapped", the wrapped reward alone whatever else the trainer adds."""
        if follow not in ("optimised", "wrapped"):
            raise ValueError(f"follow={follow!r}: give 'optimised' (what GRPO optimises) or 'wrapped' (the wrapped "
                             "reward alone)")
        self.follow = follow
        self._several = False  # TRL logged several reward functions: the total is the curve
        if every < 1:
            raise ValueError(f"every must be at least 1 (optimizer steps between anchor checks), got {every}")
        self.anchor_fns = checked_anchors(anchors)
        self.every, self.stop = every, stop
        self.monitor = Monitor(stage=stage)
        self.on_flag = on_flag
        self.stopped_at: int | None = None
        self.restored_step: int | None = None
        self._step = 0
        self._wrapped = False
        self._began = False  # on_train_begin ran: the monitor is among the trainer's callbacks
        self._main = True  # the main process of a many-process training (the others stay quiet)
        self._many = False  # several processes: the reward curve is TRL's logged mean over them
        self._logged_checks = 0  # the checks already handed to TRL's log_metric
        self._snapshots: dict[int, dict[str, Any]] = {}
        self._model: Any = None

    # -- what training produces ------------------------------------------------------------
    def wrap_reward(self, reward_fn: Callable[..., list[float]]) -> Callable[..., list[float]]:
        """`reward_fn` for GRPO, recording every completion's reward and text at the step it
        is computed for (its signature and `__name__` kept: TRL logs rewards by that name)."""
        self._wrapped = True

        @functools.wraps(reward_fn)
        def recorded(*args: Any, **kwargs: Any) -> list[float]:
            if not self._began and "trainer_state" in kwargs:  # TRL's call, with no on_train_begin before it
                raise RuntimeError("HackingMonitor.wrap_reward: the monitor is not among the trainer's callbacks, so "
                                   "every reward would be filed under step 0; pass callbacks=[monitor] to the trainer")
            # Called as TRL calls it (prompts=, completions=, ... by keyword) and passed on so.
            rewards = reward_fn(*args, **kwargs)
            completions = kwargs.get("completions", args[1] if len(args) > 1 else [])
            prompts = kwargs.get("prompts", args[0] if args else None)
            if self._main and not self._many and not self._several:  # else TRL's logged total (on_log)
                self.monitor.observe_reward(self._step, [float(r) for r in rewards if r is not None])
            if self._main:
                self.monitor.observe_outputs(self._step, [_text(c) for c in completions],
                                             inputs=_inputs(prompts, kwargs, len(completions)),
                                             rewards=[None if r is None else float(r) for r in rewards])
            self._log_through_trl(kwargs.get("log_metric"))
            return rewards

        return recorded

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        self._began, self._model = True, model
        self._step = state.global_step + 1
        # Anchors run on the main process only; under several processes the reward curve is
        # TRL's logged mean over all of them, not one rank's share of the completions.
        self._main = bool(getattr(state, "is_world_process_zero", True))
        self._many = getattr(args, "world_size", 1) > 1
        tokenizer = kwargs.get("processing_class") or kwargs.get("tokenizer")
        for anchor in self.anchor_fns.values():
            if hasattr(anchor, "bind"):  # generation_anchor: the trainer's model, as it trains
                anchor.bind(model, tokenizer)
        if self._main:
            self._measure(state.global_step)
            self._snapshot(state.global_step)

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._step = state.global_step + 1

    def on_log(self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        if not logs:
            return
        step = state.global_step
        if not self._main:
            return
        if self.follow == "optimised" and sum(k.startswith("rewards/") and k.endswith("/mean") for k in logs) > 1:
            if not self._several:
                self.monitor.rewards.pop(step, None)  # the wrapped reward's share of this step, replaced
            self._several = True
        if not self._wrapped or self._many or self._several:
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
        if not self._main or (step % self.every and step != state.max_steps):
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
            self.monitor.observe_anchor(step, name, anchor_values(name, anchor()))

    def _log_through_trl(self, log_metric: Callable[[str, float], None] | None) -> None:
        """What the monitor found, through TRL's `log_metric` (a reward function's kwarg), so
        it reaches the trainer's logs, `state.log_history` and `report_to` (TensorBoard, W&B):
        each anchor's mean at its latest check (`monitor/<anchor>`), the flags so far
        (`monitor/flags`) and the onset step once there is one (`monitor/onset_step`)."""
        checks = sum(len(series) for series in self.monitor.anchors.values())
        if log_metric is None or not self._main or checks == self._logged_checks:
            return
        self._logged_checks = checks
        for name, series in self.monitor.anchors.items():
            latest = series[max(series)] if series else {}
            if latest:
                log_metric(f"monitor/{name}", sum(latest.values()) / len(latest))
        log_metric("monitor/flags", float(len(self.monitor.flags)))
        if self.monitor.onset_step is not None:
            log_metric("monitor/onset_step", float(self.monitor.onset_step))

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


def checked_anchors(anchors: Any) -> dict[str, Anchor]:
    """`anchors` as {name: function}, or a one-line error that shows the form wanted."""
    example = "HackingMonitor({'held_out': generation_anchor(prompts, score)})"
    if not isinstance(anchors, Mapping):
        raise TypeError(f"HackingMonitor takes a dict of named anchors, e.g. {example}; got a "
                        f"{type(anchors).__name__}")
    if not anchors:  # the degeneracy checks still run; said, not silent
        log.warning("HackingMonitor has no anchors: only the outputs' degeneracy (copies, cut-offs, empty and "
                    "repeated outputs) is watched and the reward is compared with nothing; e.g. %s", example)
    for name, anchor in anchors.items():
        if not isinstance(name, str) or not callable(anchor):
            raise TypeError(f"HackingMonitor: anchor {name!r} must be a name and a function of no arguments returning "
                            f"{{held-out item: value}}; e.g. {example}")
    return dict(anchors)


def anchor_values(name: str, values: Any) -> Mapping[str, float]:
    """An anchor's answer checked: {held-out item: number}, else a one-line TypeError."""
    if not isinstance(values, Mapping) or not all(isinstance(v, (int, float)) for v in values.values()):
        raise TypeError(f"anchor {name!r} returned {type(values).__name__} {str(values)[:60]}: an anchor returns "
                        "{held-out item: value}, one number per item, e.g. {'q1': 0.7, 'q2': 0.4}")
    return values


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
