"""The actor arms of TAIScore's miniature (benchmarks/learning/mini_taiscore.py), Table 1's second
question: co-evolving vs static critic (only with `rounds >= 2`).

The actor trains with DPO for `rounds` rounds on the revisions the `fewer_broken_constraints`
judge prefers over y0, `pairs_per_round` pairs a round (`rollouts` critiques of each of the
round's y0, each revised, until the judge has preferred that many); before = gold of π0's
held-out response (that same y0), after = gold of the trained actor's own held-out response.

- `static_critic`: the `taiscore` arm's trained critic writes every round's critiques.
- `co_evolution`: from round 1 on, before each round the critic trains again with GRPO on
  `checkable_taiscore` against the CURRENT actor (TAIScore + co-evolution).

Round 0 is the same for both arms: co-evolution's critic trained against π0 IS the taiscore
critic (the same reward, prompts, y0 and seed), so π0's rollouts under it and the DPO that
makes π1 run once (`work_dir/round_0`) and the arms differ from round 1 on, where the paper's
co-evolution first differs: its critic trains again against the changed actor.
"""

from __future__ import annotations

import json
import logging
import math
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learning.actor import _dpo, critiqued_rollouts, preferred_pairs
from learning.common import cached_texts
from learning.critic import Y0_SAMPLING, grpo_note
from learning.mini_taiscore_critic_arms import saved_taiscore_critic, taiscore_critic, train_critic
from learning.mini_taiscore_shared import (
    REWARDS,
    Shared,
    critic_on,
    free_memory,
    gguf_copy,
    gguf_copy_of_saved,
    gold,
    gold_of_y0,
    heldout_responses,
    reviser,
    save_weights,
    weights_id,
)
from learning.miniature import ArmResult, arm_result
from coevo.eval.checkable import broken
from coevo.llm.gguf_export import discard_copy
from coevo.core.types import PreferencePair, Sampling

if TYPE_CHECKING:
    from coevo.roles.actor import Actor

log = logging.getLogger(__name__)

#: Prompts asked at a time: a round stops within one chunk's rollouts of PAIRS_PER_ROUND.
CHUNK = 4
PAIRWISE_JUDGE = f"{REWARDS}:fewer_broken_constraints"
#: The actor's DPO: actor.py's learning-curve rate and batch (its held-out gain at 1e-5).
ACTOR_LEARNING_RATE = 1e-5
ACTOR_BATCH = 4


def static_critic_arm(shared: Shared) -> ArmResult:
    """Every round's critiques written by the taiscore arm's trained critic."""
    weights, notes = taiscore_critic(shared)
    copy = gguf_copy_of_saved(shared, weights, shared.work_dir / "static_critic" / "critic.gguf")
    try:
        return _evolve_actor(shared, "static_critic", lambda r, base, folder: (copy, []), notes)
    finally:
        discard_copy(copy)


def co_evolution_arm(shared: Shared) -> ArmResult:
    """Each round's critiques written by a critic trained again against that round's actor."""
    critic = CoEvolvingCritic(shared)
    try:
        return _evolve_actor(shared, "co_evolution", critic.for_round, [])
    finally:
        critic.release()


class CoEvolvingCritic:
    """One trainable critic, from round 1 on trained again with GRPO on `checkable_taiscore`
    before each round against that round's actor (its y0 and its revisions), continuing from
    the taiscore critic (round 0's) and then from where it stopped."""

    def __init__(self, shared: Shared):
        self.shared, self.policy, self.copy = shared, None, None

    def for_round(self, r: int, base: Actor, folder: Path) -> tuple[Any, list[str]]:
        """(a llama.cpp copy of the critic trained against `base`, its notes); the previous
        round's copy is discarded."""
        shared = self.shared
        self._discard_copy()
        if self.policy is None:
            weights, _ = taiscore_critic(shared)
            self.policy = shared.backend.load_trainable(f"hf:{weights}")
        # The y0 the round's DPO pairs revise, on the prompts the static critic trained on: only
        # the actor it trains against differs.
        y0 = round_y0(shared, base, folder)
        train = [s for s in shared.train_all if broken(s.prompt, y0[s.id])]
        if train:
            result, _ = train_critic(shared, self.policy, "taiscore", base, train, y0, folder / "critic", seed=r)
            note = f"round {r} critic ({len(train)} prompts with a broken constraint): {grpo_note(result)}"
        else:  # every reward would be 0: nothing to learn this round
            note = f"round {r} critic: no training prompt's y0 breaks a constraint, not trained"
        self.copy = gguf_copy(shared.backend, self.policy, folder / "critic.gguf")
        return self.copy, [note]

    def release(self) -> None:
        """The last copy discarded, the trainable critic freed."""
        self._discard_copy()
        self.policy = None
        free_memory()

    def _discard_copy(self) -> None:
        if self.copy is not None:
            discard_copy(self.copy)
            self.copy = None


def _evolve_actor(shared: Shared, arm: str, critic_for_round: Callable[[int, Actor, Path], tuple[Any, list[str]]],
                  notes: list[str]) -> ArmResult:
    """π1 from the shared round 0, then rounds 1 … `shared.rounds` − 1: the round's critic
    (from `critic_for_round`, given the round's actor), rollouts until the pairwise judge
    has preferred `pairs_per_round` revisions, DPO on that many. Scored on the trained actor's
    own held-out responses."""
    judge = _pairwise_judge(shared)
    weights, round_0 = shared_round_0(shared, judge)
    notes += round_0
    policy = shared.backend.load_trainable(f"hf:{weights}")
    for r in range(1, shared.rounds):
        folder = shared.work_dir / arm / f"round_{r}"
        current = gguf_copy(shared.backend, policy, folder / "actor.gguf")
        try:
            critic_model, round_notes = critic_for_round(r, reviser(current, seed=r), folder)
            notes += round_notes + [actor_round(shared, arm, policy, current, critic_model, judge, folder, r)]
        finally:
            discard_copy(current)
    after = _actor_gold(shared, policy, shared.work_dir / arm / "actor-final.gguf")
    del policy
    free_memory()
    return arm_result(gold_of_y0(shared), after, notes)


def shared_round_0(shared: Shared, judge: Any) -> tuple[Path, list[str]]:
    """(the folder of π1's weights, round 0's notes): π0 revising under the taiscore critic,
    DPO on the round's pairs; run once and kept in `work_dir/round_0` for both actor arms. It
    starts over where it did not finish (its rollouts came from a process that is gone) or was
    made with another taiscore critic than the one saved now."""
    folder = shared.work_dir / "round_0"
    weights, record = folder / "actor-weights", folder / "round.json"
    critic_now = saved_taiscore_critic(shared)
    if weights.exists() and record.exists() and critic_now is not None:
        kept = json.loads(record.read_text())
        if kept["critic"] == weights_id(critic_now):
            return weights, kept["notes"]
    shutil.rmtree(folder, ignore_errors=True)
    critic_weights, notes = taiscore_critic(shared)
    critic = gguf_copy_of_saved(shared, critic_weights, folder / "critic.gguf")
    policy = shared.backend.load_trainable(shared.model)
    try:
        notes.append(actor_round(shared, "round 0", policy, shared.engine, critic, judge, folder, 0))
    finally:
        discard_copy(critic)
    save_weights(policy, weights)
    del policy
    free_memory()
    record.write_text(json.dumps({"critic": weights_id(critic_weights), "notes": notes}))
    return weights, notes


# ---- one round of the actor: its rollout pairs, one DPO pass ----

def actor_round(shared: Shared, arm: str, policy: Any, actor_model: Any, critic_model: Any, judge: Any,
                folder: Path, r: int) -> str:
    """Round `r` of the actor: its rollout pairs (`round_pairs`), one DPO pass of `policy` over
    them; the round's note."""
    pairs, found = round_pairs(shared, actor_model, critic_model, judge, folder, r)
    return _dpo_round(shared, arm, policy, pairs, found, folder, r)


def _pairwise_judge(shared: Shared) -> Any:
    from coevo.roles.judging import judge_for

    return judge_for("pairwise", shared.backend.load_frozen(PAIRWISE_JUDGE), Sampling())


def round_pairs(shared: Shared, actor_model: Any, critic_model: Any, judge: Any, folder: Path,
                r: int) -> tuple[list[PreferencePair], str]:
    """(the round's DPO pairs, how they were found, in words). `actor_model` answers every
    actor prompt (y0, kept in `folder/y0.json`); for each y0 that breaks a constraint,
    `critic_model` writes `rollouts` critiques and `actor_model` revises under each, CHUNK
    prompts at a time, until the judge has preferred `pairs_per_round` revisions; then
    `pairs_per_round` of the preferred ones are drawn, seeded. Sampling seeded by the round."""
    base = reviser(actor_model, seed=r)
    y0 = round_y0(shared, base, folder)
    # The paper's pool has one rollout per query of thousands; the miniature's few dozen prompts
    # get several critiques of each y0 instead (as its critic's GRPO groups do), which costs no
    # new y0. A y0 meeting every constraint is left out: the checkable judge can only tie it or
    # prefer it, so its revisions are never a pair.
    candidates = [s for s in shared.actor_train if gold(s, y0[s.id]) < 1]
    critic = critic_on(critic_model, seed=r)
    pairs: list[PreferencePair] = []
    judged = asked = 0
    while asked < len(candidates) and len(pairs) < shared.pairs_per_round:
        chunk = candidates[asked:asked + CHUNK]
        batch = critiqued_rollouts(base, critic, chunk, y0, shared.rollouts, folder)
        pairs += preferred_pairs(base, batch, judge, seed=r)
        judged, asked = judged + len(batch), asked + len(chunk)
        # The round's progress: minutes of rollouts a chunk here, and nothing else logs them.
        log.info("actor round %d: %d of %d pairs found, %d of %d prompts asked", r, len(pairs),
                 shared.pairs_per_round, asked, len(candidates))
    found = (f"{judged} rollouts ({shared.rollouts} per y0 of {asked} of the {len(candidates)} prompts whose y0 "
             f"breaks a constraint)")
    return drawn(pairs, shared.pairs_per_round, seed=r), found


def round_y0(shared: Shared, base: Actor, folder: Path) -> dict[str, str]:
    """{sample id: y0}: `base`'s answer to every actor prompt, kept in `folder/y0.json` (the
    co-evolving critic trains on the same y0 the round's rollouts revise)."""
    by_id = {s.id: s for s in shared.actor_train}
    return cached_texts(folder / "y0.json", list(by_id), lambda ids: base.respond([by_id[i] for i in ids]))


def drawn(pairs: list[PreferencePair], m: int, seed: int) -> list[PreferencePair]:
    """`m` of `pairs` drawn uniformly without replacement (all of them where there are fewer):
    the last chunk's prompts are not favoured over the first's."""
    return random.Random(seed).sample(pairs, m) if len(pairs) > m else list(pairs)


def _dpo_round(shared: Shared, arm: str, policy: Any, pairs: list, found: str, folder: Path, r: int) -> str:
    """One DPO pass of the actor over the round's pairs (none: the round trains nothing); its note."""
    head = f"round {r}: {len(pairs)} DPO pairs from {found}"
    short = "" if len(pairs) >= shared.pairs_per_round else f", under the {shared.pairs_per_round} asked"
    if not pairs:
        return f"{head}{short}, no actor update"
    steps = math.ceil(len(pairs) / ACTOR_BATCH)
    log.info("%s: round %d, DPO on %d pairs, %d steps", arm, r, len(pairs), steps)
    result, _ = _dpo(shared.backend, policy, pairs, dict, folder / "actor", steps=steps, eval_every=steps,
                     learning_rate=ACTOR_LEARNING_RATE, batch_size=ACTOR_BATCH, seed=shared.seeds[0] + r)
    return (f"{head}{short}, {result.steps} steps, {result.seconds:.0f} s, weights moved "
            f"{result.metrics.get('weight_delta', 0):.2g}")


def _actor_gold(shared: Shared, policy: Any, path: Path) -> dict[str, float]:
    """{"id#seed": gold} of the trained actor's own held-out response (seeded as y0 was)."""
    from coevo.roles.actor import Actor

    copy = gguf_copy(shared.backend, policy, path)
    try:
        responses = heldout_responses(Actor(copy, Y0_SAMPLING), shared.held, shared.seeds, path.with_suffix(".json"))
    finally:
        discard_copy(copy)
    by_key = {f"{s.id}#{seed}": s for seed in shared.seeds for s in shared.held}
    return {k: gold(by_key[k], text) for k, text in responses.items()}
