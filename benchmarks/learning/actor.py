"""taiscore-actor: does TAIScore's actor DPO move the actor toward what its pairwise judge prefers?

The actor stage of the TAIScore loop, on the embedded model: π_0 answers each training
prompt (y0), the frozen Table 6 critic critiques it, π_0 revises (y1); the critique-blind
pairwise judge compares y0 with y1 (each pair in one seeded random order, as the loop does);
revisions it prefers become DPO pairs (y1 chosen over y0) and TRL's DPO trains π. The
target is `constraint_pass_rate` on HELD-OUT prompts (a response passes when it meets every
constraint of its prompt), one sampled response per prompt and seed, before training,
every few steps and after.

Default judge: `fewer_broken_constraints` (the response breaking fewer of the prompt's
constraints wins; equal counts tie and make no pair), so the pairs carry a signal the
target can see.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learning.common import cached_texts, checked_reward, split_prompts, train_measuring
from learning.curve import LearningCurve, curve_record
from coevo.core.types import PreferencePair, Rollout, Sample, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic
    from coevo.train.common import TrainResult

log = logging.getLogger(__name__)

DEFAULT_JUDGE = "python:coevo.eval.checkable:fewer_broken_constraints"
RESPONSE_TOKENS = 256


def measure(*, reward: str | None = None, steps: int | None = None, seeds: list[int] | None = None,
            work_dir: Path, model: str = "smollm2", heldout: int = 24, train_prompts: int | None = None,
            score_train: bool = False, rollouts: int = 1,
            learning_rate: float = 1e-5, batch_size: int = 4, eval_every: int | None = None,
            target: Callable[[Sample, str], float] | None = None, backend: Backend | None = None) -> LearningCurve:
    """DPO on the judge's pairs for `steps` optimizer steps (default: three passes over the
    pairs); held-out constraint pass rate before, every `eval_every` steps and after.
    `rollouts` (y0, c, y1) per training prompt make the candidates. `target(sample, response)`
    replaces the constraint check as the measured value (a brevity score, say). Models load
    and train through `backend` (coevo/algorithms/backend.py; default: the real one)."""
    from coevo.algorithms.backend import default_backend
    from coevo.roles.actor import Actor
    from coevo.roles.judging import judge_for

    backend = backend or default_backend()

    reward = reward or DEFAULT_JUDGE
    seeds = seeds or [0, 1]
    work_dir = Path(work_dir)
    started = time.perf_counter()
    checked_reward(reward, "pairwise")  # a bad path or signature: one line, before any model loads

    train, scored = split_prompts(heldout, train_prompts, score_train)
    engine = backend.load_frozen(model)  # frozen: π_0 and the critic write the candidates
    judge = judge_for("pairwise", backend.load_frozen(reward), Sampling())
    pairs, candidates = _judged_pairs(engine, judge, train, work_dir, rollouts)
    if not pairs:
        raise ValueError(f"the judge {reward} preferred no revision over its y0 in {candidates} candidates: "
                         "nothing to train on; use more --rollouts or another judge")

    policy = backend.load_trainable(model)
    actor = Actor(policy, Sampling(temperature=0.8, top_p=0.95, max_tokens=RESPONSE_TOKENS))
    steps = steps or 3 * math.ceil(len(pairs) / batch_size)
    result, points = _dpo(backend, policy, pairs, _pass_rate(actor, scored, seeds, target), work_dir / "actor", steps=steps,
                          eval_every=eval_every or max(1, steps // 2), learning_rate=learning_rate,
                          batch_size=batch_size, seed=seeds[0])
    measured = getattr(target, "__name__", "target") if target else "constraint_pass_rate"
    return curve_record(
        loop="taiscore-actor", target=f"{'training' if score_train else 'held-out'} "
               f"{measured} (one sampled response per prompt and seed)",
        reward=reward, points=points, seconds=time.perf_counter() - started, seeds=seeds,
        settings={"model": model, "train_prompts": len(train), "scored_prompts": len(scored),
                  "scored": "train" if score_train else "held-out", "rollouts": rollouts,
                  "learning_rate": learning_rate, "batch_size": batch_size, "beta": 0.1,
                  "max_tokens": RESPONSE_TOKENS},
        notes=[f"{len(pairs)} DPO pairs from {candidates} candidates (y1 preferred over y0 by the judge)",
               f"DPO: {result.steps} steps, {result.seconds:.0f} s, weights moved "
               f"{result.metrics.get('weight_delta', 0):.2g}"])


def _dpo(backend: Backend, policy: Any, pairs: list[PreferencePair], measure: Callable[[], dict[str, float]], out: Path, *,
         steps: int, eval_every: int, learning_rate: float, batch_size: int,
         seed: int) -> tuple[TrainResult, list[tuple[int, Mapping[str, float]]]]:
    """TRL's DPO of `policy` on `pairs` (reference: its weights at entry; beta 0.1) for
    `steps` optimizer steps, measured before, every `eval_every` steps and after."""
    from coevo.train.dpo import DPOSettings

    settings = DPOSettings(beta=0.1, learning_rate=learning_rate, batch_size=batch_size, epochs=100,
                           max_steps=steps, max_length=1024, max_prompt_length=512, save_steps=10_000, seed=seed)
    return train_measuring(lambda callbacks: backend.train_dpo(policy, pairs, settings, out, reference=None, resume=False,
                                                       callbacks=callbacks), measure, eval_every, steps)


def _judged_pairs(engine: Any, judge: Any, train: list[Sample], work_dir: Path,
                  rollouts: int) -> tuple[list[PreferencePair], int]:
    """(DPO pairs, candidates judged): per rollout, each revision the pairwise judge prefers
    over its y0 becomes a pair, y1 chosen (the judge sees each pair in one seeded random
    order, as the loop does)."""
    pairs: list[PreferencePair] = []
    candidates = 0
    for r in range(rollouts):
        base, batch = _rollouts(engine, train, work_dir, r)
        candidates += len(batch)
        pairs += preferred_pairs(base, batch, judge, seed=r)
    return pairs, candidates


def preferred_pairs(base: Actor, batch: list[Rollout], judge: Any, seed: int) -> list[PreferencePair]:
    """The DPO pairs of `batch`: each revision the pairwise judge prefers over its y0, y1
    chosen, under `base`'s respond prompt (each pair shown in one `seed`ed random order)."""
    return [PreferencePair(prompt=base.respond_prompt(rollout.x), chosen=rollout.y1 or "", rejected=rollout.y0,
                           sample_id=rollout.sample_id, source="learning")
            for rollout, judgment in zip(batch, judge.judge_rollouts(batch, seed=seed))
            if judgment.valid and judgment.winner == "y1"]


def _rollouts(engine: Any, train: list[Sample], work_dir: Path, r: int) -> tuple[Actor, list[Rollout]]:
    """Rollout `r` of the frozen engine on every training prompt: π_0 answers (y0), the
    critic critiques, π_0 revises (y1), each step's texts cached in `work_dir`. Returns π_0
    and the rollouts whose y0 and y1 are both non-blank."""
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic

    base = Actor(engine, Sampling(temperature=0.8, top_p=0.95, max_tokens=RESPONSE_TOKENS, seed=r))
    critic = Critic(engine, Sampling(temperature=0.8, top_p=0.95, max_tokens=160, seed=r), max_prompt_tokens=1024)
    return base, rollouts_of(base, critic, train, work_dir, r)


def rollouts_of(base: Actor, critic: Critic, train: list[Sample], folder: Path, r: int) -> list[Rollout]:
    """`base` answers every training prompt (y0), `critic` critiques, `base` revises (y1),
    each step's texts cached in `folder` as `<step>_<r>.json`; the rollouts (`id#r`) whose y0
    and y1 are both non-blank."""
    by_id = {s.id: s for s in train}
    ids = list(by_id)
    y0 = cached_texts(folder / f"y0_{r}.json", ids, lambda todo: base.respond([by_id[i] for i in todo]))
    c = cached_texts(folder / f"critique_{r}.json", ids, lambda todo: [
        x[0] for x in critic.critique([by_id[i].prompt for i in todo], [y0[i] for i in todo])])
    y1 = cached_texts(folder / f"y1_{r}.json", ids, lambda todo: base.revise(
        [by_id[i].prompt for i in todo], [y0[i] for i in todo], [c[i] for i in todo]))
    return [Rollout(sample_id=f"{i}#{r}", x=by_id[i].prompt, y0=y0[i], c=c[i], y1=y1[i], condition="matched")
            for i in ids if y0[i].strip() and y1[i].strip()]


def critiqued_rollouts(base: Actor, critic: Critic, samples: list[Sample], y0: Mapping[str, str], n: int,
                       folder: Path) -> list[Rollout]:
    """`critic` writes `n` critiques of each sample's y0 and `base` revises under each (y1), the
    texts cached in `folder` (`critique.json`, `y1.json`, keyed `id#i`); the rollouts (`id#i`)
    whose y0 and y1 are both non-blank. TAIScore's miniature makes its actor's pairs so."""
    by_id = {s.id: s for s in samples}
    keys = [f"{s.id}#{i}" for s in samples for i in range(n)]

    def critiques(todo: list[str]) -> list[str]:
        # One call for a y0's n critiques: llama.cpp asks them one after another, so it
        # evaluates their shared prompt once (and the revisions', sorted together, share x, y0).
        ids = list(dict.fromkeys(_id_of(k) for k in todo))
        found = critic.critique([by_id[i].prompt for i in ids], [y0[i] for i in ids], n=n)
        made = {f"{i}#{j}": text for i, texts in zip(ids, found) for j, text in enumerate(texts)}
        return [made[k] for k in todo]

    c = cached_texts(folder / "critique.json", keys, critiques)
    y1 = cached_texts(folder / "y1.json", keys, lambda todo: base.revise(
        [by_id[_id_of(k)].prompt for k in todo], [y0[_id_of(k)] for k in todo], [c[k] for k in todo]))
    return [Rollout(sample_id=k, x=by_id[_id_of(k)].prompt, y0=y0[_id_of(k)], c=c[k], y1=y1[k], condition="matched")
            for k in keys if y0[_id_of(k)].strip() and y1[k].strip()]


def _id_of(key: str) -> str:
    return key.rpartition("#")[0]


def _pass_rate(actor: Actor, scored: list[Sample], seeds: list[int],
               target: Callable[[Sample, str], float] | None) -> Callable[[], dict[str, float]]:
    """The measurement: per (scored prompt, seed) one response the actor samples, 1.0 where
    it meets every constraint of its prompt (else 0.0), or `target(sample, response)`."""
    from coevo.eval.constraints import check, constraints_of

    def held_out_pass() -> dict[str, float]:
        scores: dict[str, float] = {}
        for seed in seeds:
            actor.sampling = actor.sampling.model_copy(update={"seed": seed})
            for sample, response in zip(scored, actor.respond(scored)):
                scores[f"{sample.id}#{seed}"] = float(target(sample, response) if target else
                                                      all(check(response, k) for k in constraints_of(sample)))
        return scores

    return held_out_pass
