"""What every arm of TAIScore's miniature reads and uses (benchmarks/learning/mini_taiscore.py):
the arms' names and settings, `Shared` (the frozen engine, the prompts, the y0s), the gold of
a response, the critic and reviser roles, and the engines and saved weights the arms hand
between them.

Every arm is scored per `prompt#seed` against the SAME initial response y0 (the frozen
actor's, one per prompt and seed, cached in the work folder), so the arms' `scores_before`
are identical and every comparison is exactly paired.
"""

from __future__ import annotations

import gc
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.eval.constraints import check, constraints_of
from learning.common import cached_texts
from learning.critic import CRITIQUE_TOKENS, Y0_SAMPLING
from coevo.core.types import Sample, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic

MODEL = "smollm2"
REWARDS = "python:coevo.eval.checkable"
#: Trained critic arm -> (its GRPO reward, the reward kind: whether the actor revises first).
CRITIC_REWARDS: dict[str, tuple[str, str]] = {
    "critique_quality": (f"{REWARDS}:names_broken_constraint", "critique_quality"),
    "outcome_gain": (f"{REWARDS}:outcome_gain", "taiscore"),
    "taiscore": (f"{REWARDS}:checkable_taiscore", "taiscore"),
}
CRITIC_ARMS = ("frozen", *CRITIC_REWARDS)
ACTOR_ARMS = ("static_critic", "co_evolution")
ARMS = (*CRITIC_ARMS, *ACTOR_ARMS)
PAIRS = [("taiscore", "outcome_gain"), ("taiscore", "critique_quality"), ("taiscore", "frozen"),
         ("co_evolution", "static_critic")]
CRITIC_PAIRS = [(a, b) for a, b in PAIRS if a in CRITIC_ARMS and b in CRITIC_ARMS]
#: The actor's DPO pairs a round: each round's rollouts go on until the judge has preferred this
#: many revisions, and this many are drawn from them (as the paper draws M pairs from its
#: pool), so both actor arms train on as many pairs and differ only in their critic.
PAIRS_PER_ROUND = 32
#: Rollouts per prompt a round: critiques of each y0 that breaks a constraint, each revised.
#: The checkable judge prefers few of the 135M actor's revisions over y0 (BENCHMARKS.md,
#: "TAIScore on checkable constraints"): at that rate the bundled training prompts give
#: PAIRS_PER_ROUND with some to spare; a round that still falls short trains on what it found,
#: and its note says so.
ROLLOUTS = 6
REVISION_TOKENS = 192
CRITIC_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=CRITIQUE_TOKENS)
REVISE_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=REVISION_TOKENS, seed=0)


@dataclass
class Shared:
    """What every arm reads: the frozen engine, the prompts, the y0s and the settings."""

    backend: Backend
    engine: Any                      # the frozen embedded model: π0, the frozen critic, the reviser
    train_all: list[Sample]          # the training prompts (the actor's DPO rollouts)
    train: list[Sample]              # ... those whose frozen y0 breaks a constraint (critic GRPO)
    y0_train: dict[str, str]         # {sample id: the frozen actor's y0}
    held: list[Sample]
    y0_held: dict[str, str]          # {"id#seed": the frozen actor's y0}: every arm's "before"
    seeds: list[int]
    work_dir: Path
    arms: list[str]                  # the arms this run asked for
    steps: int
    rounds: int
    learning_rate: float
    num_generations: int
    model: str = MODEL               # every role's model spec (the tests' tiny random Llama: hf:PATH)
    actor_train: list[Sample] = field(default_factory=list)  # the actor's rollout prompts (train_all first)
    rollouts: int = ROLLOUTS         # critiques (and revisions) of each y0 a round
    pairs_per_round: int = PAIRS_PER_ROUND


# ---- the y0 and their gold ----

def heldout_responses(actor: Actor, held: list[Sample], seeds: list[int], cache: Path) -> dict[str, str]:
    """{"id#seed": y0}: one response of `actor` per held-out prompt and seed (its sampling seeded
    so), kept in `cache`: every arm, and a resumed run, scores against these same y0."""
    by_id = {s.id: s for s in held}

    def make(keys: list[str]) -> list[str]:
        texts: dict[str, str] = {}
        for seed in seeds:
            mine = [k for k in keys if k.rpartition("#")[2] == str(seed)]
            actor.sampling = actor.sampling.model_copy(update={"seed": seed})
            texts |= dict(zip(mine, actor.respond([by_id[k.rpartition("#")[0]] for k in mine])))
        return [texts[k] for k in keys]

    return cached_texts(cache, [f"{s.id}#{seed}" for seed in seeds for s in held], make)


def gold(sample: Sample, response: str) -> float:
    """The share of the sample's own constraints (`meta.constraints`) `response` meets (1.0 for
    a sample without any): a held-out file's prompts need not be bundled ones."""
    wanted = constraints_of(sample)
    return sum(check(response, c) for c in wanted) / len(wanted) if wanted else 1.0


def gold_of_y0(shared: Shared) -> dict[str, float]:
    """{"id#seed": gold of the held-out y0}: every arm's `scores_before`."""
    return {f"{s.id}#{seed}": gold(s, shared.y0_held[f"{s.id}#{seed}"]) for seed in shared.seeds for s in shared.held}


# ---- the roles ----

def critic_on(model: Any, seed: int | None = None, count_tokens: Any = None) -> Critic:
    """A critic on `model` whose critiques are at most CRITIQUE_TOKENS long."""
    from coevo.roles.critic import Critic

    return Critic(model, CRITIC_SAMPLING.model_copy(update={"seed": seed}), max_prompt_tokens=1024,
                  count_tokens=count_tokens)


def reviser(engine: Any, seed: int = 0) -> Actor:
    """An actor on `engine` whose revisions are at most REVISION_TOKENS long."""
    from coevo.roles.actor import Actor

    return Actor(engine, Y0_SAMPLING.model_copy(update={"seed": seed}),
                 revise_sampling=REVISE_SAMPLING.model_copy(update={"seed": seed}))


# ---- engines, saved weights and memory ----

def gguf_copy(backend: Backend, policy: Any, path: Path) -> Any:
    """A llama.cpp copy of `policy`'s weights as they are now, written to `path`: a trained
    role generates on an engine, as the GRPO samples do here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return backend.load_gguf_copy(policy, path)


def gguf_copy_of_saved(shared: Shared, weights: Path, path: Path) -> Any:
    """A llama.cpp copy of the trained weights saved in `weights`, written to `path`."""
    policy = shared.backend.load_trainable(f"hf:{weights}")
    try:
        return gguf_copy(shared.backend, policy, path)
    finally:
        del policy
        free_memory()


def save_weights(policy: Any, weights: Path) -> None:
    """`policy`'s weights and tokenizer saved to the folder `weights` with a fresh id
    (`weights_id`), the folder appearing whole or not at all: a killed save leaves nothing a
    later run would take as finished."""
    partial = weights.with_name(weights.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    write_checkpoint(policy, partial)
    (partial / "weights.id").write_text(uuid.uuid4().hex)
    shutil.rmtree(weights, ignore_errors=True)
    partial.rename(weights)


def write_checkpoint(policy: Any, folder: Path) -> None:
    """A transformers folder of `policy` (a LocalModel) that `hf:FOLDER` loads again."""
    from coevo.train.checkpoints import save_checkpoint

    save_checkpoint(policy.model, policy.tokenizer, folder)


def weights_id(weights: Path) -> str:
    """The id `save_weights` gave the folder: two saves of a critic differ even at one path."""
    return (weights / "weights.id").read_text()


def free_memory() -> None:
    """Hand a finished arm's weights and optimizer state back before the next arm loads its own."""
    from coevo.train.memory import give_back_freed_memory

    gc.collect()
    give_back_freed_memory()
