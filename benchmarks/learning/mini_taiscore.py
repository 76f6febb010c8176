"""TAIScore's central comparison in miniature, on checkable gold (`benchmarks/miniature.py
--paper taiscore`).

The bundled writing prompts carry machine-checkable constraints; the gold of a response is the
share of its prompt's constraints it meets. Every arm is scored per `prompt#seed` against the
SAME initial response y0 (the frozen actor's, one per prompt and seed, cached in the work
folder), so the arms' `scores_before` are identical and every comparison is exactly paired.

- Critic arms, Table 3a (mini_taiscore_critic_arms.py): `frozen`, `critique_quality`,
  `outcome_gain`, `taiscore`; before = gold of y0, after = gold of the y1 the FROZEN actor
  writes under the arm's critique of y0.
- The same critiques scored at the critic, without the actor (mini_taiscore_critique.py,
  `measures["critique"]`): the share that name a constraint y0 breaks.
- Actor arms, Table 1 (mini_taiscore_actor_arms.py, only with `rounds >= 2`): `static_critic`,
  `co_evolution`, DPO rounds of the actor from a shared round 0; before = gold of π0's
  held-out response, after = gold of the trained actor's own.

What they all read (`Shared`, the arms' names and settings, gold, engines and saved weights):
mini_taiscore_shared.py. Comparisons: `taiscore_minus_outcome_gain`,
`taiscore_minus_critique_quality`, `taiscore_minus_frozen`, `co_evolution_minus_static_critic`;
the critic ones on the critique measure too.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from learning.common import split_prompts
from learning.critic import CRITIQUE_TOKENS, Y0_SAMPLING, initial_responses
from learning.mini_taiscore_actor_arms import (
    ACTOR_BATCH,
    ACTOR_LEARNING_RATE,
    co_evolution_arm,
    static_critic_arm,
)
from learning.mini_taiscore_critic_arms import frozen_arm, trained_critic_arm
from learning.mini_taiscore_critique import critique_measure
from learning.mini_taiscore_shared import (
    ACTOR_ARMS,
    ARMS,
    CRITIC_REWARDS,
    MODEL,
    PAIRS,
    PAIRS_PER_ROUND,
    REVISION_TOKENS,
    ROLLOUTS,
    Shared,
    gold_of_y0,
    heldout_responses,
)
from learning.miniature import ArmResult, Miniature, comparisons
from coevo.eval.checkable import broken
from coevo.core.types import Sample

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend

log = logging.getLogger(__name__)


def measure(*, seeds: list[int], work_dir: Path, steps: int = 4, rounds: int = 2, heldout: int = 12,
            train_prompts: int | None = 16, heldout_file: str | None = None, learning_rate: float = 5e-5,
            num_generations: int = 4, arms: list[str] | None = None, backend: Backend | None = None,
            model: str = MODEL, actor_prompts: int | None = None, rollouts: int = ROLLOUTS,
            pairs_per_round: int = PAIRS_PER_ROUND) -> Miniature:
    """Every requested arm (default: all; the actor arms only with `rounds >= 2`) scored on the
    held-out prompts (`heldout` of the bundled split, or every prompt of `heldout_file`, a
    .jsonl with `meta.constraints`), one key per prompt and seed; the critic arms' critiques
    scored at the critic too (`measures["critique"]`). Critics train `steps` GRPO steps at
    `learning_rate` with `num_generations` critiques per group on the first `train_prompts`
    training prompts; the actor, each round, answers the first `actor_prompts` (default: every
    training prompt), revises each answer under `rollouts` critiques until the judge has
    preferred `pairs_per_round` revisions, then trains one DPO pass over that many.
    A finished arm is kept in `work_dir/arm_<name>.json` and not run again."""
    from coevo.algorithms.backend import default_backend
    from coevo.roles.actor import Actor

    started = time.perf_counter()
    wanted = requested_arms(arms, rounds)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    backend = backend or default_backend()
    engine = backend.load_frozen(model)
    train_all, actor_train, held = _prompts(heldout, train_prompts, actor_prompts, heldout_file)
    y0_train = initial_responses(Actor(engine, Y0_SAMPLING), train_all, work_dir / "y0_train.json")
    train = [s for s in train_all if broken(s.prompt, y0_train[s.id])]
    y0_held = heldout_responses(Actor(engine, Y0_SAMPLING), held, seeds, work_dir / "y0_heldout.json")
    shared = Shared(backend, engine, train_all, train, y0_train, held, y0_held, seeds, work_dir, wanted, steps,
                    rounds, learning_rate, num_generations, model, actor_train=actor_train, rollouts=rollouts,
                    pairs_per_round=pairs_per_round)
    results = {arm: _run_or_load(shared, arm) for arm in wanted}
    critique = critique_measure(shared, results)
    return Miniature(
        paper="taiscore", target="held-out share of the prompt's checkable constraints met (gold), "
                                 "one response per prompt and seed",
        arms=results, comparisons=comparisons(results, PAIRS), seeds=seeds, seconds=time.perf_counter() - started,
        settings={"model": model, "train_prompts": len(train_all), "critic_train_prompts": len(train),
                  "heldout_prompts": len(held), "heldout_file": heldout_file, "steps": steps,
                  "learning_rate": learning_rate, "num_generations": num_generations, "rounds": rounds,
                  "actor_prompts": len(actor_train), "rollouts": rollouts, "pairs_per_round": pairs_per_round,
                  "actor_steps": "one pass over the round's pairs", "actor_learning_rate": ACTOR_LEARNING_RATE,
                  "actor_batch_size": ACTOR_BATCH, "critique_tokens": CRITIQUE_TOKENS,
                  "revision_tokens": REVISION_TOKENS, "response_tokens": Y0_SAMPLING.max_tokens,
                  "rollout_engine": "llamacpp"},
        notes=[f"critic GRPO on the {len(train)} of {len(train_all)} training prompts whose y0 breaks a constraint",
               f"held-out keys whose y0 breaks a constraint: {sum(v < 1 for v in gold_of_y0(shared).values())} "
               f"of {len(y0_held)}", *(f"{arm}: {note}" for arm, result in results.items() for note in result.notes)],
        measures={"critique": critique} if critique else {})


def requested_arms(arms: list[str] | None, rounds: int) -> list[str]:
    """The arms to run, in ARMS order (the taiscore critic before static_critic, which reuses
    it); the actor arms only where `rounds >= 2`."""
    unknown = sorted(set(arms or []) - set(ARMS))
    if unknown:
        raise ValueError(f"unknown arms {unknown}; known: {', '.join(ARMS)}")
    return [a for a in ARMS if (arms is None or a in arms) and (a not in ACTOR_ARMS or rounds >= 2)]


def _prompts(heldout: int, train_prompts: int | None, actor_prompts: int | None,
             heldout_file: str | None) -> tuple[list[Sample], list[Sample], list[Sample]]:
    """(the critics' training prompts, the actor's, scored prompts): the bundled split's, or
    every prompt of `heldout_file` scored instead of the split's held-out ones. Both training
    lists are beginnings of the same split, so the critics' prompts are the actor's first ones."""
    from coevo.tasks.loaders import load_samples

    train, held = split_prompts(heldout, None, score_train=False)
    return (train[:train_prompts] if train_prompts else train, train[:actor_prompts] if actor_prompts else train,
            load_samples(heldout_file) if heldout_file else held)


def _run_or_load(shared: Shared, arm: str) -> ArmResult:
    """The arm's result from `work_dir/arm_<arm>.json` where a run finished it, else run and keep it."""
    path = _arm_file(shared, arm)
    if path.exists():
        kept = ArmResult.model_validate_json(path.read_text())
        # Kept only if scored against these y0: other seeds or prompts would break the pairing.
        if kept.scores_before == gold_of_y0(shared):
            log.info("arm %s: kept from %s", arm, path)
            return kept
        log.warning("arm %s: %s was scored on other held-out keys; running it again", arm, path)
    log.info("arm %s: running", arm)
    # A killed arm starts over: its cached rollouts came from weights that are gone.
    shutil.rmtree(shared.work_dir / arm, ignore_errors=True)
    started = time.perf_counter()
    result = RUNS[arm](shared)
    path.write_text(result.model_dump_json(indent=1))
    log.info("arm %s: gain %s in %.0f s", arm, result.gain, time.perf_counter() - started)
    return result


def _arm_file(shared: Shared, arm: str) -> Path:
    return shared.work_dir / f"arm_{arm}.json"


#: Arm -> its run (a plain dict: the arms are this miniature's, not a plugin point).
RUNS: dict[str, Callable[[Shared], ArmResult]] = {
    "frozen": frozen_arm, **{arm: trained_critic_arm(arm) for arm in CRITIC_REWARDS},
    "static_critic": static_critic_arm, "co_evolution": co_evolution_arm,
}
