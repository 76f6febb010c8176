"""The critic arms of TAIScore's miniature (benchmarks/learning/mini_taiscore.py), Table 3a's shape:
direct refinement before any actor update, so only the feedback varies. before = gold of the
held-out y0, after = gold of the y1 the FROZEN actor writes under the arm's critique of y0.

- `frozen`: the untrained embedded critic (Table 6 prompt): Table 1/3a's off-the-shelf critic.
- `critique_quality`: GRPO on `names_broken_constraint`, which reads the critique alone, no
  revision (the critique-quality baseline of Table 1 and App. D.4).
- `outcome_gain`: GRPO on `outcome_gain`, 1/0.5/0 as y1 meets more/as many/fewer constraints
  than y0, never reading the critique (the outcome-gain baseline).
- `taiscore`: GRPO on `checkable_taiscore`: the critique names a broken constraint (Target),
  y1 acts on it (Actionable) and meets it (Improvement) (the paper's TAIScore row).

Each arm's critiques and y1 are kept in `texts_<arm>.json`, where the critique measure
(mini_taiscore_critique.py) reads them. The taiscore critic's weights are kept too: the actor
arms (mini_taiscore_actor_arms.py) critique with it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learning.common import cached_texts
from learning.critic import critic_grpo, grpo_note
from learning.mini_taiscore_shared import (
    CRITIC_REWARDS,
    Shared,
    critic_on,
    free_memory,
    gguf_copy,
    gold,
    gold_of_y0,
    reviser,
    save_weights,
)
from learning.miniature import ArmResult, arm_result
from coevo.llm.gguf_export import discard_copy
from coevo.core.types import Sample, Sampling

if TYPE_CHECKING:
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic

log = logging.getLogger(__name__)

CRITIC_BATCH = 2


def frozen_arm(shared: Shared) -> ArmResult:
    """The frozen critic's critiques of the held-out y0, revised by the frozen actor."""
    after = refinement_gold(shared, frozen_critiques(shared), texts_file(shared, "frozen"))
    return arm_result(gold_of_y0(shared), after)


def trained_critic_arm(arm: str) -> Callable[[Shared], ArmResult]:
    """The run of a trained critic arm: GRPO on its reward, then its critiques revised."""
    def run(shared: Shared) -> ArmResult:
        # The taiscore critic's weights are kept: the actor arms critique with it.
        weights = _critic_weights(shared) if arm == "taiscore" else None
        copy, notes, count_tokens = train_critic_copy(shared, arm, shared.work_dir / arm, weights)
        try:
            critiques = sampled_critiques(shared, critic_on(copy, count_tokens=count_tokens))
        finally:
            discard_copy(copy)
        after = refinement_gold(shared, critiques, texts_file(shared, arm))
        return arm_result(gold_of_y0(shared), after, notes)

    return run


def texts_file(shared: Shared, arm: str) -> Path:
    """Where the arm's held-out critiques and y1 are kept."""
    return shared.work_dir / f"texts_{arm}.json"


def sampled_critiques(shared: Shared, critic: Critic) -> dict[str, str]:
    """{"id#seed": one critique of the held-out y0 that `critic` samples, seeded by the seed}."""
    found: dict[str, str] = {}
    for seed in shared.seeds:
        keys = [f"{s.id}#{seed}" for s in shared.held]
        critic.sampling = critic.sampling.model_copy(update={"seed": seed})
        found |= dict(zip(keys, (c[0] for c in critic.critique([s.prompt for s in shared.held],
                                                                [shared.y0_held[k] for k in keys]))))
    return found


def frozen_critiques(shared: Shared) -> dict[str, str]:
    """The frozen critic's critiques of the held-out y0, kept in the work folder: the frozen
    arm revises under them and every critic's critique measure starts from them."""
    keys = [f"{s.id}#{seed}" for seed in shared.seeds for s in shared.held]

    def make(todo: list[str]) -> list[str]:
        found = sampled_critiques(shared, critic_on(shared.engine))
        return [found[k] for k in todo]

    return cached_texts(shared.work_dir / "critiques_frozen.json", keys, make)


def refinement_gold(shared: Shared, critiques: dict[str, str], texts: Path) -> dict[str, float]:
    """{"id#seed": gold of y1}, y1 the frozen actor's revision of the held-out y0 under its
    critique (seeded per seed); the critiques and y1 go to `texts`."""
    scores: dict[str, float] = {}
    written: dict[str, dict[str, str]] = {}
    for seed in shared.seeds:
        keys = [f"{s.id}#{seed}" for s in shared.held]
        prompts, y0 = [s.prompt for s in shared.held], [shared.y0_held[k] for k in keys]
        y1 = reviser(shared.engine, seed).revise(prompts, y0, [critiques[k] for k in keys])
        scores |= {k: gold(s, y) for k, s, y in zip(keys, shared.held, y1)}
        written |= {k: {"critique": critiques[k], "y1": y} for k, y in zip(keys, y1)}
    texts.write_text(json.dumps(written, indent=1))
    return scores


# ---- training a critic ----

def train_critic_copy(shared: Shared, arm: str, folder: Path,
                      weights: Path | None = None) -> tuple[Any, list[str], Any]:
    """GRPO of a fresh critic on the arm's reward against the frozen actor, in `folder`: (a
    llama.cpp copy of its trained weights, its notes, its token counter); the trained weights
    are saved to `weights` where given, then freed."""
    policy = shared.backend.load_trainable(shared.model)
    y0 = {s.id: shared.y0_train[s.id] for s in shared.train}
    result, count_tokens = train_critic(shared, policy, arm, reviser(shared.engine), shared.train, y0,
                                        folder / "critic", seed=shared.seeds[0])
    copy = gguf_copy(shared.backend, policy, folder / "critic.gguf")
    if weights is not None:
        save_weights(policy, weights)
    del policy
    free_memory()
    return copy, [grpo_note(result)], count_tokens


def train_critic(shared: Shared, policy: Any, arm: str, actor: Actor, train: list[Sample], y0: dict[str, str],
                 out: Path, seed: int) -> tuple[Any, Any]:
    """`shared.steps` GRPO steps of the critic `policy` on the arm's reward over (train, y0),
    `actor` revising under each critique where the reward reads y1; critic samples come from
    llama.cpp copies. (TrainResult, the critic's token counter)."""
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.judging import judge_for

    spec, kind = CRITIC_REWARDS[arm]
    judge = judge_for(kind, shared.backend.load_frozen(spec), Sampling())
    critic = critic_on(policy)
    steps_done = 0

    def progress() -> dict[str, float]:
        # Called before training and after every step: the benchmark's progress line.
        nonlocal steps_done
        log.info("%s critic: GRPO step %d of %d", arm, steps_done, shared.steps)
        steps_done += 1
        return {}

    reward_fn = make_reward_fn(actor, judge, kind, invalid_reward=0.0)
    result, _ = critic_grpo(shared.backend, policy, critic, reward_fn, train, y0, progress, out, steps=shared.steps,
                            eval_every=1, learning_rate=shared.learning_rate, batch_size=CRITIC_BATCH,
                            num_generations=shared.num_generations, seed=seed, rollout_engine="llamacpp")
    return result, critic.count_tokens


# ---- the taiscore critic the actor arms critique with ----

def _critic_weights(shared: Shared) -> Path:
    return shared.work_dir / "taiscore" / "critic-weights"


def saved_taiscore_critic(shared: Shared) -> Path | None:
    """The folder of the taiscore critic's saved weights (its arm's, else a retrained one), if any."""
    found = [w for w in (_critic_weights(shared), shared.work_dir / "taiscore_critic" / "critic-weights")
             if w.exists()]
    return found[0] if found else None


def taiscore_critic(shared: Shared) -> tuple[Path, list[str]]:
    """(the folder of the taiscore arm's trained critic weights, notes): the arm's own, or,
    where its result was kept from a run that did not keep them or it was not asked for, a
    critic trained again the same way (kept in `work_dir/taiscore_critic`)."""
    weights = saved_taiscore_critic(shared)
    if weights is not None:
        return weights, []
    weights = shared.work_dir / "taiscore_critic" / "critic-weights"
    copy, notes, _ = train_critic_copy(shared, "taiscore", weights.parent, weights)
    discard_copy(copy)
    return weights, ["taiscore critic trained again (its arm's weights were not kept)", *notes]
