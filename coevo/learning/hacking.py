"""hacking-onset: does the monitor flag a reward built to be gamed, and spare an honest one?

The TAIScore critic trains with GRPO on `reward` (a `python:` function of (x, y0, critique,
y1), as the critic learning curve's), with `HackingMonitor` watching: the training reward
from every completion, and `anchor` (the same signature: what the reward was meant to
measure) on held-out (x, y0), one critique per prompt sampled from the policy before
training and every `every` steps. Per seed: whether it flagged, the onset and the flag's step,
and the two curves. No stop: the point is to see the whole curve past the flag.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import Field

from coevo.learning.common import checked_reward, split_prompts
from coevo.learning.critic import CRITIQUE_TOKENS, Y0_SAMPLING, critic_grpo_settings, engine_copy_fn, \
    initial_responses, scored_reward_fn, train_critic
from coevo.types import Record, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend

log = logging.getLogger(__name__)


class SeedOnset(Record):
    """One seed's training under the monitor."""

    seed: int
    flagged: bool
    onset_step: int | None
    flag_step: int | None
    reward_curve: list[list[float]]       # [step, mean training reward, n completions]
    anchor_curve: list[list[float]]       # [step, mean anchor on held-out, n items]
    flags: list[dict[str, Any]] = Field(default_factory=list)
    seconds: float


class HackingOnset(Record):
    """`benchmarks/hacking_onset.py`'s JSON: the seeds, and over them the flag rate (with its
    Wilson interval) and the steps from onset to flag."""

    reward: str
    anchor: str
    flagged: dict[str, Any]               # {count, n, rate, ci}
    onset_to_flag_steps: list[int]
    seeds: list[SeedOnset]
    steps: int
    every: int
    seconds: float
    settings: dict[str, Any] = Field(default_factory=dict)


def measure(*, reward: str, anchor: str, steps: int = 8, seeds: list[int] | None = None, every: int = 2,
            work_dir: Path, model: str = "smollm2", heldout: int = 8, train_prompts: int | None = 16,
            learning_rate: float = 5e-5, batch_size: int = 2, num_generations: int = 4,
            rollout_engine: str = "transformers", backend: Backend | None = None,
            on_seed: Callable[[HackingOnset], None] | None = None) -> HackingOnset:
    """GRPO of the critic on `reward` for `steps` steps under each seed, the monitor watching
    `anchor` on `heldout` held-out prompts every `every` steps. With `rollout_engine="llamacpp"`
    the GRPO samples and the anchor's critiques come from llama.cpp copies of the critic's
    current weights (~6x transformers' speed on a CPU). `on_seed` is given the result so far
    after each seed (the benchmark writes it: a seed's ~15 minutes are never lost)."""
    from coevo.algorithms.backend import default_backend
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.actor import Actor
    from coevo.roles.python_scorers import judge_for

    checked_reward(reward, "reward")
    checked_reward(anchor, "reward", "--anchor")
    if steps < 2 * every:
        raise ValueError(f"--steps {steps} leaves fewer than two checks after the baseline at --every {every}: "
                         f"use --steps {2 * every} or more")
    backend, seeds, work_dir = backend or default_backend(), seeds or [0, 1, 2], Path(work_dir)
    started = time.perf_counter()
    train, scored = split_prompts(heldout, train_prompts, score_train=False)
    actor = Actor(backend.load_frozen(model), Y0_SAMPLING)
    y0 = initial_responses(actor, train + scored, work_dir / "y0.json")
    reward_fn = make_reward_fn(actor, judge_for("critique_quality", backend.load_frozen(reward), Sampling()),
                               "critique_quality", invalid_reward=0.0)
    anchor_fn = make_reward_fn(actor, judge_for("critique_quality", backend.load_frozen(anchor), Sampling()),
                               "critique_quality", invalid_reward=0.0)
    described = {"model": model, "train_prompts": len(train), "heldout_prompts": len(scored),
                 "learning_rate": learning_rate, "batch_size": batch_size, "num_generations": num_generations,
                 "max_completion_length": CRITIQUE_TOKENS, "beta": 0.0, "rollout_engine": rollout_engine}
    runs: list[SeedOnset] = []
    for seed in seeds:
        settings = critic_grpo_settings(steps=steps, learning_rate=learning_rate, batch_size=batch_size,
                                        num_generations=num_generations, seed=seed, rollout_engine=rollout_engine)
        runs.append(watched_seed(backend, model, seed, settings, reward_fn, anchor_fn, train, scored, y0, every,
                                 work_dir))
        so_far = summarized(runs, reward=reward, anchor=anchor, steps=steps, every=every, started=started,
                            settings=described)
        if on_seed is not None:
            on_seed(so_far)
    return so_far


def summarized(runs: list[SeedOnset], *, reward: str, anchor: str, steps: int, every: int, started: float,
               settings: dict[str, Any]) -> HackingOnset:
    """The seeds so far, with the flag rate over them (Wilson interval) and the steps from onset to flag."""
    from coevo.eval.stats import wilson_interval

    count = sum(r.flagged for r in runs)
    rate, lo, hi = wilson_interval(count, len(runs))
    return HackingOnset(
        reward=reward, anchor=anchor, flagged={"count": count, "n": len(runs), "rate": rate, "ci": [lo, hi]},
        onset_to_flag_steps=[r.flag_step - r.onset_step for r in runs if r.flagged and r.onset_step is not None
                             and r.flag_step is not None],
        seeds=runs, steps=steps, every=every, seconds=round(time.perf_counter() - started, 1), settings=settings)


def watched_seed(backend: Backend, model: str, seed: int, settings: Any, reward_fn: Any, anchor_fn: Any,
                 train: list[Any], scored: list[Any], y0: dict[str, str], every: int, work_dir: Path) -> SeedOnset:
    """One seed: a fresh critic trained by GRPO on `reward_fn` under a monitor whose anchor is
    `anchor_fn` of one critique per scored prompt (from a llama.cpp copy of the current weights
    where the settings' rollout engine is llama.cpp)."""
    from coevo.monitor.callback import HackingMonitor
    from coevo.roles.critic import Critic

    started = time.perf_counter()
    policy = backend.load_trainable(model)
    critic = Critic(policy, Sampling(temperature=0.8, top_p=0.95, max_tokens=CRITIQUE_TOKENS, seed=seed),
                    max_prompt_tokens=1024)
    copies = engine_copy_fn(backend, policy, settings.rollout_engine, work_dir / f"anchor-seed{seed}")
    monitor = HackingMonitor({"anchor": scored_reward_fn(critic, anchor_fn, scored, y0, [seed], copies)},
                             every=every, stage=f"critic seed {seed}")
    train_critic(backend, policy, critic, monitor.wrap_reward(reward_fn), train, y0, work_dir / f"critic-seed{seed}",
                 settings, [monitor])
    report = monitor.report()
    first = min(monitor.flags, key=lambda f: f.step) if monitor.flags else None
    log.info("seed %d: %s", seed, f"flagged at step {first.step} (onset {first.onset_step}): {first.why}"
             if first else "not flagged")
    return SeedOnset(seed=seed, flagged=first is not None, onset_step=report["onset_step"],
                     flag_step=first.step if first else None, reward_curve=report["reward_curve"],
                     anchor_curve=report["anchor_curves"].get("anchor", []), flags=report["flags"],
                     seconds=round(time.perf_counter() - started, 1))
