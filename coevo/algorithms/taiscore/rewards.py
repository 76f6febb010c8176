"""The critic's GRPO reward (§4.2): critique -> the current actor's revision -> the judge's raw
score, as a TRL reward callable (coevo.rewards.taiscore wraps it for users' own trainers)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from coevo.algorithms.taiscore.config import RewardName
from coevo.roles.judging import judge_as_reward
from coevo.roles.judges import judge_reads
from coevo.roles.actor import Actor
from coevo.roles.base import Scorer
from coevo.roles.parsing import strip_reasoning
from coevo.core.types import Rollout


def completion_text(completion: Any) -> str:
    """A TRL completion as text (conversational completions are lists of messages)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(m.get("content", "") for m in completion if isinstance(m, dict))
    if isinstance(completion, dict):
        return str(completion.get("content", ""))
    return str(completion)


def make_reward_fn(
    actor: Actor,
    judge: Scorer,
    reward: RewardName,
    *,
    invalid_reward: float = 0.0,
    on_scored: Callable[[list[Rollout]], None] | None = None,
) -> Callable[..., list[float]]:
    """The GRPO reward: critique c -> actor revision y1 -> judge -> RAW score per completion.

    The dataset's extra columns `x`, `y0`, `sample_id` arrive as keyword lists aligned with
    `completions`. Scores are returned raw (TAIScore 1–10, outcome gain 1/0.5/0, critique
    quality mean of six): TRL normalises them within each group of N critiques, so they must
    not be normalised here. The rules are the TAIScore authors' (`compute_score_batched`):
    reasoning is stripped from the critique; an empty critique or an empty revision gets
    `invalid_reward` without a judge call; an answer the judge could not give readably
    (after its one re-ask) gets `invalid_reward` too, and it STAYS in its group's mean and
    std — a group of one 7 and three unreadable answers still teaches the critic something.
    Each judgment records the reward it gave in `reward`.
    """

    def reward_fn(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        critiques = [strip_reasoning(completion_text(c)) for c in completions]
        xs, y0s, ids = columns["x"], columns["y0"], columns["sample_id"]
        rollouts = [Rollout(sample_id=f"{sid}#{_digest(c)}", x=x, y0=y0, c=c, condition="grpo")
                    for sid, x, y0, c in zip(ids, xs, y0s, critiques)]
        # A judge that reads no revision (critique quality: x, y0, c) gets none: revising
        # would cost time and change nothing.
        needs_revision = judge_reads(reward, "y1")
        revise = [r for r in rollouts if r.c]
        if needs_revision and revise:
            for rollout, y1 in zip(revise, actor.revise([r.x for r in revise], [r.y0 for r in revise],
                                                        [r.c or "" for r in revise])):
                rollout.y1 = y1
        rewards = judge_as_reward(rollouts, judge, reward, invalid_reward=invalid_reward,
                                  needs_revision=needs_revision)
        if on_scored:
            on_scored(rollouts)
        return rewards

    reward_fn.__name__ = f"{reward}_reward"  # TRL logs rewards/<name>/mean
    return reward_fn


def _digest(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()[:10]
