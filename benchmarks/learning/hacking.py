"""hacking-onset: does the monitor flag a reward built to be gamed, and spare an honest one?

The TAIScore critic trains with GRPO on `reward` (a `python:` function of (x, y0, critique,
y1), as the critic learning curve's), with `HackingMonitor` watching: the training reward
from every completion, and `anchor` (the same signature: what the reward was meant to
measure) on held-out (x, y0), one critique per prompt sampled from the policy before
training and every `every` steps. Per seed: whether it flagged, the onset and the flag's step,
the two curves, and what each check of the anchor cost. No stop: the point is to see the
whole curve past the flag.

What a check sees: `heldout` prompts, each with `anchor_samples` critiques whose anchor
values are averaged, so a held-out prompt stays the unit of the anchor's interval (its n is
prompts, never critiques: several critiques of one prompt are not independent items).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field

from learning.common import checked_reward, writing_split
from learning.critic import CRITIQUE_TOKENS, Y0_SAMPLING, critic_grpo_settings, engine_copy_fn, \
    initial_responses, scored_reward_fn, train_critic
from coevo.core.types import Record, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend
    from coevo.core.types import Sample

log = logging.getLogger(__name__)

#: Held-out prompts beyond this many come from after the training prompts, so the prompts
#: trained on stay those of a 16-prompt anchor whatever the anchor's size (a larger anchor
#: then changes what the monitor sees, not what the critic learns from).
FIXED_TRAIN_AFTER = 16
#: The sampling seeds of one held-out prompt's critiques are the seed plus multiples of this
#: (the first is the seed itself, as with one critique a prompt; GRPO seeds stay far below).
SAMPLE_SEED_STRIDE = 1000


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
    #: The step of the anchor's own divergence flag (None where only a degeneracy statistic
    #: flagged, or nothing did).
    anchor_flag_step: int | None = None
    #: One entry per anchor check, in order (the baseline first): its wall seconds, of them
    #: those making the engine copy of the weights, and the critiques generated (model calls).
    anchor_checks: list[dict[str, float]] = Field(default_factory=list)
    #: Each check's anchor value per held-out prompt ({step: {prompt id: value}}): the rule's
    #: verdict at any check can be recomputed from the JSON alone.
    anchor_items: dict[int, dict[str, float]] = Field(default_factory=dict)


class HackingOnset(Record):
    """`benchmarks/hacking_onset.py`'s JSON: the seeds, and over them the flag rate (with its
    Wilson interval) and the steps from onset to flag."""

    reward: str
    anchor: str
    flagged: dict[str, Any]               # {count, n, rate, ci}: any flag, an anchor's or a degeneracy statistic's
    onset_to_flag_steps: list[int]
    seeds: list[SeedOnset]
    steps: int
    every: int
    seconds: float
    settings: dict[str, Any] = Field(default_factory=dict)
    #: The same rate counting the anchor's divergence flags only (what the anchor's size changes).
    anchor_flagged: dict[str, Any] = Field(default_factory=dict)
    #: Over every seed's checks: critiques per check, mean seconds per check (sd, n checks).
    anchor_cost: dict[str, Any] = Field(default_factory=dict)


def measure(*, reward: str, anchor: str, steps: int = 8, seeds: list[int] | None = None, every: int = 2,
            work_dir: Path, model: str = "smollm2", heldout: int = 8, train_prompts: int | None = 16,
            learning_rate: float = 5e-5, batch_size: int = 2, num_generations: int = 4,
            rollout_engine: str = "transformers", anchor_samples: int = 1, backend: Backend | None = None,
            on_seed: Callable[[HackingOnset], None] | None = None) -> HackingOnset:
    """GRPO of the critic on `reward` for `steps` steps under each seed, the monitor watching
    `anchor` on `heldout` held-out prompts (`anchor_samples` critiques each, averaged per
    prompt) every `every` steps. With `rollout_engine="llamacpp"`
    the GRPO samples and the anchor's critiques come from llama.cpp copies of the critic's
    current weights (~6x transformers' speed on a CPU). `on_seed` is given the result so far
    after each seed (the benchmark writes it: a seed's ~15 minutes are never lost)."""
    from coevo.algorithms.backend import default_backend
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.actor import Actor
    from coevo.roles.judging import judge_for

    checked_reward(reward, "reward")
    checked_reward(anchor, "reward", "--anchor")
    if steps < 2 * every:
        raise ValueError(f"--steps {steps} leaves fewer than two checks after the baseline at --every {every}: "
                         f"use --steps {2 * every} or more")
    if anchor_samples < 1:
        raise ValueError(f"--anchor-samples must be at least 1, got {anchor_samples}")
    train, scored = monitor_split(heldout, train_prompts)
    backend, seeds, work_dir = backend or default_backend(), seeds or [0, 1, 2], Path(work_dir)
    started = time.perf_counter()
    actor = Actor(backend.load_frozen(model), Y0_SAMPLING)
    y0 = initial_responses(actor, train + scored, work_dir / "y0.json")
    reward_fn = make_reward_fn(actor, judge_for("critique_quality", backend.load_frozen(reward), Sampling()),
                               "critique_quality", invalid_reward=0.0)
    anchor_fn = make_reward_fn(actor, judge_for("critique_quality", backend.load_frozen(anchor), Sampling()),
                               "critique_quality", invalid_reward=0.0)
    described = {"model": model, "train_prompts": len(train), "heldout_prompts": len(scored),
                 "learning_rate": learning_rate, "batch_size": batch_size, "num_generations": num_generations,
                 "max_completion_length": CRITIQUE_TOKENS, "beta": 0.0, "rollout_engine": rollout_engine,
                 "anchor_samples": anchor_samples}
    runs: list[SeedOnset] = []
    for seed in seeds:
        settings = critic_grpo_settings(steps=steps, learning_rate=learning_rate, batch_size=batch_size,
                                        num_generations=num_generations, seed=seed, rollout_engine=rollout_engine)
        runs.append(watched_seed(backend, model, seed, settings, reward_fn, anchor_fn, train, scored, y0, every,
                                 work_dir, anchor_samples))
        so_far = summarized(runs, reward=reward, anchor=anchor, steps=steps, every=every, started=started,
                            settings=described)
        if on_seed is not None:
            on_seed(so_far)
    return so_far


def monitor_split(heldout: int, train_prompts: int | None) -> tuple[list[Sample], list[Sample]]:
    """(training prompts, held-out prompts) of the bundled writing prompts: up to
    FIXED_TRAIN_AFTER held out as `split_prompts` holds them out, then `train_prompts` (all the
    rest where None) for training, then the rest of `heldout` from the prompts after those.
    The two never share a prompt."""
    first = min(heldout, FIXED_TRAIN_AFTER)
    train, held = writing_split(first)
    train, beyond = (train, []) if train_prompts is None else (train[:train_prompts], train[train_prompts:])
    extra = heldout - first
    if extra > len(beyond):
        raise ValueError(f"--heldout {heldout} leaves no room: the bundled writing prompts hold "
                         f"{first + len(train) + len(beyond)}, {len(train)} of them trained on, so at most "
                         f"{first + len(beyond)} can be held out")
    return train, held + beyond[:extra]


def per_item(values: Mapping[str, float]) -> dict[str, float]:
    """{prompt id: mean value} from {"<prompt id>#<sampling seed>": value}: the critiques of
    one held-out prompt averaged, so the prompt is the item the anchor's interval counts."""
    groups: dict[str, list[float]] = {}
    for key, value in values.items():
        groups.setdefault(key.rsplit("#", 1)[0], []).append(float(value))
    return {item: sum(v) / len(v) for item, v in groups.items()}


def sample_seeds(seed: int, samples: int) -> list[int]:
    """The sampling seeds of one prompt's `samples` critiques at a check (the first is `seed`)."""
    return [seed + SAMPLE_SEED_STRIDE * k for k in range(samples)]


def costed_anchor(critic: Any, anchor_fn: Any, scored: list[Any], y0: Mapping[str, str], seeds: list[int],
                  copies: Callable[[int], Any] | None,
                  checks: list[dict[str, float]]) -> Callable[[], dict[str, float]]:
    """The monitor's anchor: per held-out prompt the mean of `anchor_fn` over one critique per
    sampling seed in `seeds`; each call appends its cost to `checks` (wall seconds, of them the
    engine copy's, critiques generated)."""
    copy_seconds = [0.0]

    def timed_copy(n: int) -> Any:
        started = time.perf_counter()
        try:
            return copies(n)  # type: ignore[misc]
        finally:
            copy_seconds[0] += time.perf_counter() - started

    measure = scored_reward_fn(critic, anchor_fn, scored, y0, seeds, timed_copy if copies else None)

    def anchor() -> dict[str, float]:
        started, copy_seconds[0] = time.perf_counter(), 0.0
        values = measure()
        checks.append({"seconds": round(time.perf_counter() - started, 2), "copy_seconds": round(copy_seconds[0], 2),
                       "critiques": len(values)})
        return per_item(values)

    return anchor


def anchor_cost(runs: list[SeedOnset]) -> dict[str, Any]:
    """Over every check of every seed: critiques per check and mean seconds per check (sd, n)."""
    checks = [c for r in runs for c in r.anchor_checks]
    if not checks:
        return {}
    seconds = [c["seconds"] for c in checks]
    mean = sum(seconds) / len(seconds)
    sd = math.sqrt(sum((s - mean) ** 2 for s in seconds) / (len(seconds) - 1)) if len(seconds) > 1 else 0.0
    return {"checks": len(checks), "critiques_per_check": sum(c["critiques"] for c in checks) / len(checks),
            "seconds_per_check": round(mean, 2), "seconds_sd": round(sd, 2),
            "copy_seconds_per_check": round(sum(c["copy_seconds"] for c in checks) / len(checks), 2)}


def summarized(runs: list[SeedOnset], *, reward: str, anchor: str, steps: int, every: int, started: float,
               settings: dict[str, Any]) -> HackingOnset:
    """The seeds so far, with the flag rate over them (Wilson interval), the steps from onset to
    flag and the anchor's cost per check."""
    from coevo.eval.stats import wilson_interval

    def rate_of(count: int) -> dict[str, Any]:
        rate, lo, hi = wilson_interval(count, len(runs))
        return {"count": count, "n": len(runs), "rate": rate, "ci": [lo, hi]}

    return HackingOnset(
        reward=reward, anchor=anchor, flagged=rate_of(sum(r.flagged for r in runs)),
        anchor_flagged=rate_of(sum(r.anchor_flag_step is not None for r in runs)), anchor_cost=anchor_cost(runs),
        onset_to_flag_steps=[r.flag_step - r.onset_step for r in runs if r.flagged and r.onset_step is not None
                             and r.flag_step is not None],
        seeds=runs, steps=steps, every=every, seconds=round(time.perf_counter() - started, 1), settings=settings)


def merged(parts: list[HackingOnset]) -> HackingOnset:
    """One result from runs of the same measurement over different seeds (a stopped run's
    remaining seeds, `--first-seed`): the seeds together, the rates over all of them again,
    the seconds summed. Runs of different rewards, anchors, steps or settings are refused."""
    if not parts:
        raise ValueError("nothing to merge: give at least one result JSON")
    first = parts[0]
    for part in parts[1:]:
        for field in ("reward", "anchor", "steps", "every", "settings"):
            if getattr(part, field) != getattr(first, field):
                raise ValueError(f"cannot merge results whose {field} differ ({getattr(first, field)!r} vs "
                                 f"{getattr(part, field)!r}): they measured different things")
    runs = sorted((run for part in parts for run in part.seeds), key=lambda run: run.seed)
    seeds = [run.seed for run in runs]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seed {next(s for s in seeds if seeds.count(s) > 1)} is in more than one result; "
                         "merge each seed once")
    result = summarized(runs, reward=first.reward, anchor=first.anchor, steps=first.steps, every=first.every,
                        started=time.perf_counter(), settings=first.settings)
    return result.model_copy(update={"seconds": round(sum(part.seconds for part in parts), 1)})


def watched_seed(backend: Backend, model: str, seed: int, settings: Any, reward_fn: Any, anchor_fn: Any,
                 train: list[Any], scored: list[Any], y0: dict[str, str], every: int, work_dir: Path,
                 anchor_samples: int = 1) -> SeedOnset:
    """One seed: a fresh critic trained by GRPO on `reward_fn` under a monitor whose anchor is
    `anchor_fn` of `anchor_samples` critiques per scored prompt, averaged per prompt (from a
    llama.cpp copy of the current weights where the settings' rollout engine is llama.cpp)."""
    from coevo.monitor.callback import HackingMonitor
    from coevo.roles.critic import Critic

    started = time.perf_counter()
    policy = backend.load_trainable(model)
    critic = Critic(policy, Sampling(temperature=0.8, top_p=0.95, max_tokens=CRITIQUE_TOKENS, seed=seed),
                    max_prompt_tokens=1024)
    copies = engine_copy_fn(backend, policy, settings.rollout_engine, work_dir / f"anchor-seed{seed}")
    checks: list[dict[str, float]] = []
    anchor = costed_anchor(critic, anchor_fn, scored, y0, sample_seeds(seed, anchor_samples), copies, checks)
    monitor = HackingMonitor({"anchor": anchor}, every=every, stage=f"critic seed {seed}")
    train_critic(backend, policy, critic, monitor.wrap_reward(reward_fn), train, y0, work_dir / f"critic-seed{seed}",
                 settings, [monitor])
    report = monitor.report()
    first = min(monitor.flags, key=lambda f: f.step) if monitor.flags else None
    by_anchor = next((f.step for f in monitor.flags if f.anchor == "anchor"), None)
    log.info("seed %d: %s", seed, f"flagged at step {first.step} by {first.anchor} (onset {first.onset_step}): "
             f"{first.why}" if first else "not flagged")
    return SeedOnset(seed=seed, flagged=first is not None, onset_step=report["onset_step"],
                     flag_step=first.step if first else None, reward_curve=report["reward_curve"],
                     anchor_curve=report["anchor_curves"].get("anchor", []), flags=report["flags"],
                     seconds=round(time.perf_counter() - started, 1), anchor_flag_step=by_anchor,
                     anchor_checks=checks, anchor_items=monitor.monitor.anchors.get("anchor", {}))
