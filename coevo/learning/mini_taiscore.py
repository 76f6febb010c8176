"""TAIScore's central comparison in miniature, on checkable gold (issue 43, `benchmarks/miniature.py
--paper taiscore`).

The bundled writing prompts carry machine-checkable constraints; the gold of a response is the
share of its prompt's constraints it meets. Every arm is scored per `prompt#seed` against the
SAME initial response y0 (the frozen actor's, one per prompt and seed, cached in the work
folder), so the arms' `scores_before` are identical and every comparison is exactly paired.

Critic arms, Table 3a's shape (direct refinement before any actor update: only the feedback
varies): before = gold of y0, after = gold of the y1 the FROZEN actor writes under the arm's
critique of y0.

- `frozen`: the untrained embedded critic (Table 6 prompt): Table 1/3a's off-the-shelf critic.
- `critique_quality`: GRPO on `names_broken_constraint`, which reads the critique alone, no
  revision (the critique-quality baseline of Table 1 and App. D.4).
- `outcome_gain`: GRPO on `outcome_gain`, 1/0.5/0 as y1 meets more/as many/fewer constraints
  than y0, never reading the critique (the outcome-gain baseline).
- `taiscore`: GRPO on `checkable_taiscore`: the critique names a broken constraint (Target),
  y1 acts on it (Actionable) and meets it (Improvement) (the paper's TAIScore row).

Actor arms, Table 1's second question (co-evolving vs static critic; only with `rounds >= 2`):
the actor trains with DPO for `rounds` rounds on the revisions the `fewer_broken_constraints`
judge prefers over y0; before = gold of π0's held-out response (that same y0), after = gold of
the trained actor's own held-out response.

- `static_critic`: the `taiscore` arm's trained critic writes every round's critiques.
- `co_evolution`: before each round the critic trains again with GRPO on `checkable_taiscore`
  against the CURRENT actor (TAIScore + co-evolution).

Comparisons: `taiscore_minus_outcome_gain`, `taiscore_minus_critique_quality`,
`taiscore_minus_frozen`, `co_evolution_minus_static_critic`.
"""

from __future__ import annotations

import gc
import json
import logging
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.eval.constraints import check, constraints_of
from coevo.learning.actor import _dpo, preferred_pairs, rollouts_of
from coevo.learning.common import cached_texts, split_prompts
from coevo.learning.critic import CRITIQUE_TOKENS, Y0_SAMPLING, critic_grpo, grpo_note, initial_responses
from coevo.learning.miniature import ArmResult, Miniature, arm_result, comparisons
from coevo.learning.rewards import broken
from coevo.llm.gguf_export import discard_copy
from coevo.types import Sample, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic

log = logging.getLogger(__name__)

MODEL = "smollm2"
REWARDS = "python:coevo.learning.rewards"
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
PAIRWISE_JUDGE = f"{REWARDS}:fewer_broken_constraints"
REVISION_TOKENS = 192
CRITIC_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=CRITIQUE_TOKENS)
REVISE_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=REVISION_TOKENS, seed=0)
#: The actor's DPO: actor.py's learning-curve rate and batch (its held-out gain at 1e-5).
ACTOR_LEARNING_RATE = 1e-5
ACTOR_BATCH = 4
CRITIC_BATCH = 2


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
    kept: dict[str, Any] = field(default_factory=dict)  # the taiscore critic's copy, for static_critic


def measure(*, seeds: list[int], work_dir: Path, steps: int = 4, rounds: int = 2, heldout: int = 12,
            train_prompts: int | None = 16, heldout_file: str | None = None, learning_rate: float = 5e-5,
            num_generations: int = 4, arms: list[str] | None = None, backend: Backend | None = None,
            model: str = MODEL) -> Miniature:
    """Every requested arm (default: all; the actor arms only with `rounds >= 2`) scored on the
    held-out prompts (`heldout` of the bundled split, or every prompt of `heldout_file`, a
    .jsonl with `meta.constraints`), one key per prompt and seed. Critics train `steps` GRPO
    steps at `learning_rate` with `num_generations` critiques per group; the actor `steps` DPO
    steps per round (the defaults: six arms x 3 seeds in 63 minutes on 2 CPU cores, BENCHMARKS.md
    "Miniatures").
    A finished arm is kept in `work_dir/arm_<name>.json` and not run again."""
    from coevo.algorithms.backend import default_backend
    from coevo.roles.actor import Actor

    started = time.perf_counter()
    wanted = requested_arms(arms, rounds)
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    backend = backend or default_backend()
    engine = backend.load_frozen(model)
    train_all, held = _prompts(heldout, train_prompts, heldout_file)
    y0_train = initial_responses(Actor(engine, Y0_SAMPLING), train_all, work_dir / "y0_train.json")
    train = [s for s in train_all if broken(s.prompt, y0_train[s.id])]
    y0_held = heldout_responses(Actor(engine, Y0_SAMPLING), held, seeds, work_dir / "y0_heldout.json")
    shared = Shared(backend, engine, train_all, train, y0_train, held, y0_held, seeds, work_dir, wanted, steps,
                    rounds, learning_rate, num_generations, model)
    results = {arm: _run_or_load(shared, arm) for arm in wanted}
    for copy in shared.kept.values():
        discard_copy(copy)
    return Miniature(
        paper="taiscore", target="held-out share of the prompt's checkable constraints met (gold), "
                                 "one response per prompt and seed",
        arms=results, comparisons=comparisons(results, PAIRS), seeds=seeds, seconds=time.perf_counter() - started,
        settings={"model": model, "train_prompts": len(train_all), "critic_train_prompts": len(train),
                  "heldout_prompts": len(held), "heldout_file": heldout_file, "steps": steps,
                  "learning_rate": learning_rate, "num_generations": num_generations, "rounds": rounds,
                  "actor_learning_rate": ACTOR_LEARNING_RATE, "actor_batch_size": ACTOR_BATCH,
                  "critique_tokens": CRITIQUE_TOKENS, "revision_tokens": REVISION_TOKENS,
                  "response_tokens": Y0_SAMPLING.max_tokens, "rollout_engine": "llamacpp"},
        notes=[f"critic GRPO on the {len(train)} of {len(train_all)} training prompts whose y0 breaks a constraint",
               f"held-out keys whose y0 breaks a constraint: {sum(v < 1 for v in _gold_of_y0(shared).values())} "
               f"of {len(y0_held)}", *(f"{arm}: {note}" for arm, result in results.items() for note in result.notes)])


def requested_arms(arms: list[str] | None, rounds: int) -> list[str]:
    """The arms to run, in ARMS order (the taiscore critic before static_critic, which reuses
    it); the actor arms only where `rounds >= 2`."""
    unknown = sorted(set(arms or []) - set(ARMS))
    if unknown:
        raise ValueError(f"unknown arms {unknown}; known: {', '.join(ARMS)}")
    return [a for a in ARMS if (arms is None or a in arms) and (a not in ACTOR_ARMS or rounds >= 2)]


def _prompts(heldout: int, train_prompts: int | None, heldout_file: str | None) -> tuple[list[Sample], list[Sample]]:
    """(training prompts, scored prompts): the bundled split's, or every prompt of `heldout_file`
    scored instead of the split's held-out ones."""
    from coevo.tasks.loaders import load_samples

    train, held = split_prompts(heldout, train_prompts, score_train=False)
    return train, (load_samples(heldout_file) if heldout_file else held)


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


def _gold_of_y0(shared: Shared) -> dict[str, float]:
    return {f"{s.id}#{seed}": gold(s, shared.y0_held[f"{s.id}#{seed}"]) for seed in shared.seeds for s in shared.held}


def _run_or_load(shared: Shared, arm: str) -> ArmResult:
    """The arm's result from `work_dir/arm_<arm>.json` where a run finished it, else run and keep it."""
    path = _arm_file(shared, arm)
    if path.exists():
        kept = ArmResult.model_validate_json(path.read_text())
        # Kept only if scored against these y0: other seeds or prompts would break the pairing.
        if kept.scores_before == _gold_of_y0(shared):
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


# ---- the critic arms (Table 3a): the frozen actor refines held-out y0 under each critic ----

def _critic(model: Any, seed: int | None = None, count_tokens: Any = None) -> Critic:
    from coevo.roles.critic import Critic

    return Critic(model, CRITIC_SAMPLING.model_copy(update={"seed": seed}), max_prompt_tokens=1024,
                  count_tokens=count_tokens)


def _reviser(engine: Any, seed: int = 0) -> Actor:
    """An actor on `engine` whose revisions are at most REVISION_TOKENS long."""
    from coevo.roles.actor import Actor

    return Actor(engine, Y0_SAMPLING.model_copy(update={"seed": seed}),
                 revise_sampling=REVISE_SAMPLING.model_copy(update={"seed": seed}))


def refinement_gold(shared: Shared, critic: Critic, texts: Path) -> dict[str, float]:
    """{"id#seed": gold of y1}, y1 the frozen actor's revision of the held-out y0 under one
    critique `critic` samples (both seeded per seed); the critiques and y1 go to `texts`."""
    scores: dict[str, float] = {}
    written: dict[str, dict[str, str]] = {}
    for seed in shared.seeds:
        keys = [f"{s.id}#{seed}" for s in shared.held]
        prompts, y0 = [s.prompt for s in shared.held], [shared.y0_held[k] for k in keys]
        critic.sampling = critic.sampling.model_copy(update={"seed": seed})
        critiques = [c[0] for c in critic.critique(prompts, y0)]
        y1 = _reviser(shared.engine, seed).revise(prompts, y0, critiques)
        scores |= {k: gold(s, y) for k, s, y in zip(keys, shared.held, y1)}
        written |= {k: {"critique": c, "y1": y} for k, c, y in zip(keys, critiques, y1)}
    texts.write_text(json.dumps(written, indent=1))
    return scores


def _frozen_arm(shared: Shared) -> ArmResult:
    after = refinement_gold(shared, _critic(shared.engine), shared.work_dir / "texts_frozen.json")
    return arm_result(_gold_of_y0(shared), after)


def _trained_critic_arm(arm: str) -> Callable[[Shared], ArmResult]:
    def run(shared: Shared) -> ArmResult:
        copy, notes, count_tokens = train_critic_copy(shared, arm, shared.work_dir / arm)
        after = refinement_gold(shared, _critic(copy, count_tokens=count_tokens),
                                shared.work_dir / f"texts_{arm}.json")
        if arm == "taiscore" and "static_critic" in shared.arms and not _arm_file(shared, "static_critic").exists():
            shared.kept["taiscore"] = copy  # static_critic writes its critiques with this critic
        else:
            discard_copy(copy)
        return arm_result(_gold_of_y0(shared), after, notes)

    return run


def train_critic_copy(shared: Shared, arm: str, folder: Path) -> tuple[Any, list[str], Any]:
    """GRPO of a fresh critic on the arm's reward against the frozen actor, in `folder`: (a
    llama.cpp copy of its trained weights, its notes, its token counter); the trainable
    weights are freed."""
    policy = shared.backend.load_trainable(shared.model)
    y0 = {s.id: shared.y0_train[s.id] for s in shared.train}
    result, count_tokens = train_critic(shared, policy, arm, _reviser(shared.engine), shared.train, y0,
                                        folder / "critic", seed=shared.seeds[0])
    copy = _copy(shared.backend, policy, folder / "critic.gguf")
    del policy
    _free()
    return copy, [grpo_note(result)], count_tokens


def train_critic(shared: Shared, policy: Any, arm: str, actor: Actor, train: list[Sample], y0: dict[str, str],
                 out: Path, seed: int) -> tuple[Any, Any]:
    """`shared.steps` GRPO steps of the critic `policy` on the arm's reward over (train, y0),
    `actor` revising under each critique where the reward reads y1; critic samples come from
    llama.cpp copies. (TrainResult, the critic's token counter)."""
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.python_scorers import judge_for

    spec, kind = CRITIC_REWARDS[arm]
    judge = judge_for(kind, shared.backend.load_frozen(spec), Sampling())
    critic = _critic(policy)
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


# ---- the actor arms (Table 1: co-evolving vs static critic): DPO rounds of the actor ----

def _static_critic_arm(shared: Shared) -> ArmResult:
    notes: list[str] = []
    copy = shared.kept.pop("taiscore", None)
    if copy is None:
        # The taiscore arm's result was kept from an earlier run, its weights were not.
        copy, critic_notes, _ = train_critic_copy(shared, "taiscore", shared.work_dir / "static_critic")
        notes += ["taiscore critic trained again (its arm was kept from an earlier run)", *critic_notes]
    try:
        return _evolve_actor(shared, "static_critic", lambda r, base, folder: (copy, []), notes)
    finally:
        discard_copy(copy)


def _co_evolution_arm(shared: Shared) -> ArmResult:
    critic = CoEvolvingCritic(shared)
    try:
        return _evolve_actor(shared, "co_evolution", critic.for_round, [])
    finally:
        critic.release()


class CoEvolvingCritic:
    """One trainable critic, trained again with GRPO on `checkable_taiscore` before each round
    against that round's actor (its y0 and its revisions), continuing from where it stopped."""

    def __init__(self, shared: Shared):
        self.shared, self.policy, self.copy = shared, None, None

    def for_round(self, r: int, base: Actor, folder: Path) -> tuple[Any, list[str]]:
        """(a llama.cpp copy of the critic trained against `base`, its notes); the previous
        round's copy is discarded."""
        shared = self.shared
        self._discard_copy()
        self.policy = self.policy or shared.backend.load_trainable(shared.model)
        by_id = {s.id: s for s in shared.train_all}
        # The same file rollouts_of reads: the critic trains on the y0 the round's DPO pairs revise.
        y0 = cached_texts(folder / f"y0_{r}.json", list(by_id), lambda ids: base.respond([by_id[i] for i in ids]))
        train = [s for s in shared.train_all if broken(s.prompt, y0[s.id])]
        if train:
            result, _ = train_critic(shared, self.policy, "taiscore", base, train, y0, folder / "critic", seed=r)
            note = f"round {r} critic ({len(train)} prompts with a broken constraint): {grpo_note(result)}"
        else:  # every reward would be 0: nothing to learn this round
            note = f"round {r} critic: no training prompt's y0 breaks a constraint, not trained"
        self.copy = _copy(shared.backend, self.policy, folder / "critic.gguf")
        return self.copy, [note]

    def release(self) -> None:
        """The last copy discarded, the trainable critic freed."""
        self._discard_copy()
        self.policy = None
        _free()

    def _discard_copy(self) -> None:
        if self.copy is not None:
            discard_copy(self.copy)
            self.copy = None


def _evolve_actor(shared: Shared, arm: str, critic_for_round: Callable[[int, Actor, Path], tuple[Any, list[str]]],
                  notes: list[str]) -> ArmResult:
    """`shared.rounds` rounds: the current actor answers the training prompts, the round's
    critic critiques, the actor revises; DPO on the revisions the pairwise judge prefers.
    Scored on the trained actor's own held-out responses."""
    from coevo.roles.python_scorers import judge_for

    policy = shared.backend.load_trainable(shared.model)
    judge = judge_for("pairwise", shared.backend.load_frozen(PAIRWISE_JUDGE), Sampling())
    for r in range(shared.rounds):
        folder = shared.work_dir / arm / f"round_{r}"
        current = shared.engine if r == 0 else _copy(shared.backend, policy, folder / "actor.gguf")
        base = _reviser(current, seed=r)
        critic_model, round_notes = critic_for_round(r, base, folder)
        batch = rollouts_of(base, _critic(critic_model, seed=r), shared.train_all, folder, r)
        pairs = preferred_pairs(base, batch, judge, seed=r)
        notes += round_notes + [_dpo_round(shared, arm, policy, pairs, len(batch), folder, r)]
        if current is not shared.engine:
            discard_copy(current)
    after = _actor_gold(shared, policy, shared.work_dir / arm / "actor-final.gguf")
    del policy
    _free()
    return arm_result(_gold_of_y0(shared), after, notes)


def _dpo_round(shared: Shared, arm: str, policy: Any, pairs: list, candidates: int, folder: Path, r: int) -> str:
    """DPO of the actor on the round's pairs (none: the round trains nothing); its note."""
    if not pairs:
        return f"round {r}: 0 DPO pairs from {candidates} rollouts, no actor update"
    log.info("%s: round %d, DPO on %d pairs", arm, r, len(pairs))
    result, _ = _dpo(shared.backend, policy, pairs, dict, folder / "actor", steps=shared.steps,
                     eval_every=shared.steps, learning_rate=ACTOR_LEARNING_RATE, batch_size=ACTOR_BATCH,
                     seed=shared.seeds[0] + r)
    return (f"round {r}: {len(pairs)} DPO pairs from {candidates} rollouts, {result.steps} steps, "
            f"{result.seconds:.0f} s, weights moved {result.metrics.get('weight_delta', 0):.2g}")


def _actor_gold(shared: Shared, policy: Any, path: Path) -> dict[str, float]:
    """{"id#seed": gold} of the trained actor's own held-out response (seeded as y0 was)."""
    from coevo.roles.actor import Actor

    copy = _copy(shared.backend, policy, path)
    try:
        responses = heldout_responses(Actor(copy, Y0_SAMPLING), shared.held, shared.seeds, path.with_suffix(".json"))
    finally:
        discard_copy(copy)
    by_key = {f"{s.id}#{seed}": s for seed in shared.seeds for s in shared.held}
    return {k: gold(by_key[k], text) for k, text in responses.items()}


# ---- engines and memory ----

def _copy(backend: Backend, policy: Any, path: Path) -> Any:
    """A llama.cpp copy of `policy`'s weights as they are now, written to `path` (issue 25: a
    trained role generates on an engine, as the GRPO samples do here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return backend.load_gguf_copy(policy, path)


def _free() -> None:
    """Hand a finished arm's weights and optimizer state back before the next arm loads its own."""
    from coevo.train.common import give_back_freed_memory

    gc.collect()
    give_back_freed_memory()


RUNS: dict[str, Callable[[Shared], ArmResult]] = {
    "frozen": _frozen_arm, **{arm: _trained_critic_arm(arm) for arm in CRITIC_REWARDS},
    "static_critic": _static_critic_arm, "co_evolution": _co_evolution_arm,
}
