"""taiscore-critic: does TAIScore's critic GRPO teach the critic what its reward asks?

The critic stage of the TAIScore loop, on the embedded model: the critic writes N critiques
of each (x, y0); the loop's own GRPO reward (`taiscore.make_reward_fn`, its rules for empty
and unreadable answers included) scores them with a Python reward; TRL's GRPO trains the
critic. The target is that reward's mean on HELD-OUT (x, y0), one sampled critique per
prompt and seed, measured before training, every few steps and after.

Default reward: `concise_critique` (1 at 150 characters or fewer, 0 at 360): the concision Table 6
asks of the critic, a property the embedded critic can learn in a few steps. The harder
`names_broken_constraint` (the share of the constraints y0 breaks that the critique names,
less false alarms) is what a useful critic does; BENCHMARKS.md has both curves. With
`reward_kind="critique_quality"` (the default) the reward reads (x, y0, critique) and no
revision is written; `"taiscore"` has the actor revise under each critique first and passes
y1 too (slower: one revision per critique).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from coevo.algorithms.engines import generating_on
from learning.common import cached_texts, checked_reward, split_prompts, train_measuring
from learning.curve import LearningCurve, curve_record
from coevo.eval.checkable import broken
from coevo.core.types import Sample, Sampling

if TYPE_CHECKING:
    from coevo.algorithms.backend import Backend
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic
    from coevo.train.common import TrainResult
    from coevo.train.grpo import GRPOSettings

log = logging.getLogger(__name__)

DEFAULT_REWARD = "python:coevo.eval.checkable:concise_critique"
#: Rewards that score a critique by the failures of y0 it names: 0 wherever y0 has none.
NAMES_FAILURES = "python:coevo.eval.checkable:names_broken_constraint"
#: Initial responses are written once by the frozen engine: the critic is what learns here.
Y0_SAMPLING = Sampling(temperature=0.8, top_p=0.95, max_tokens=256, seed=0)
CRITIQUE_TOKENS = 64


def measure(*, reward: str | None = None, reward_kind: str = "critique_quality", steps: int | None = None,
            seeds: list[int] | None = None, work_dir: Path, model: str = "smollm2", heldout: int = 24,
            train_prompts: int | None = None, score_train: bool = False,
            learning_rate: float = 5e-5, batch_size: int = 2, num_generations: int = 4,
            eval_every: int | None = None, backend: Backend | None = None,
            rollout_engine: str = "transformers", trl: Mapping[str, Any] | None = None) -> LearningCurve:
    """GRPO on the critic for `steps` (default 8) optimizer steps; the reward of one sampled
    critique per scored prompt and seed before, every `eval_every` steps (default a quarter of
    them) and after. `heldout` prompts are held out and scored; `train_prompts` caps the
    training ones; `score_train` scores the training prompts instead (the fast tests). Models
    load and train through `backend` (coevo/algorithms/backend.py; default: the real one);
    `trl` goes to TRL as a config's `grpo.trl:` block does. With `rollout_engine="llamacpp"`
    the GRPO samples and the measured critiques both come from llama.cpp copies of the
    critic's current weights."""
    from coevo.algorithms.backend import default_backend
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.actor import Actor
    from coevo.roles.critic import Critic
    from coevo.roles.judging import judge_for

    backend = backend or default_backend()

    reward = reward or DEFAULT_REWARD
    if reward_kind not in ("critique_quality", "taiscore"):
        raise ValueError(f"reward_kind must be critique_quality or taiscore, got {reward_kind!r}")
    # 8 steps at 5e-5: the held-out reward's gain has its interval above 0 (16 at 1e-5 did not:
    # BENCHMARKS.md, "Learning curves").
    steps, seeds = steps or 8, seeds or [0, 1]
    work_dir = Path(work_dir)
    started = time.perf_counter()
    checked_reward(reward, "reward")  # a bad path or signature: one line, before any model loads

    train, scored = split_prompts(heldout, train_prompts, score_train)
    actor = Actor(backend.load_frozen(model), Y0_SAMPLING)
    y0 = initial_responses(actor, train + scored, work_dir / "y0.json")
    notes: list[str] = []
    if reward == NAMES_FAILURES:
        train, scored = _with_failures(train, scored, y0, notes)

    policy = backend.load_trainable(model)
    critic = Critic(policy, Sampling(temperature=0.8, top_p=0.95, max_tokens=CRITIQUE_TOKENS), max_prompt_tokens=1024)
    judge = judge_for(reward_kind, backend.load_frozen(reward), Sampling())
    reward_fn = make_reward_fn(actor, judge, reward_kind, invalid_reward=0.0)
    scored_reward = scored_reward_fn(critic, reward_fn, scored, y0, seeds,
                                     engine_copy_fn(backend, policy, rollout_engine, work_dir / "measure"))
    result, points = critic_grpo(backend, policy, critic, reward_fn, train, y0, scored_reward, work_dir / "critic",
                                 steps=steps, eval_every=eval_every or max(1, steps // 4), learning_rate=learning_rate,
                                 batch_size=batch_size, num_generations=num_generations, seed=seeds[0],
                                 rollout_engine=rollout_engine, trl=dict(trl or {}))
    notes.append(grpo_note(result))
    which = "training" if score_train else "held-out"
    return curve_record(
        loop="taiscore-critic", target=f"{which} reward ({reward_kind}) of one sampled critique per prompt and seed",
        reward=reward, points=points, seconds=time.perf_counter() - started, seeds=seeds,
        settings={"model": model, "train_prompts": len(train), "scored_prompts": len(scored), "scored": which,
                  "learning_rate": learning_rate, "batch_size": batch_size, "num_generations": num_generations,
                  "beta": 0.0, "max_completion_length": CRITIQUE_TOKENS, "reward_kind": reward_kind,
                  "rollout_engine": rollout_engine,
                  **({"trl": dict(trl)} if trl else {})},
        notes=notes)


def initial_responses(actor: Actor, samples: list[Sample], cache: Path) -> dict[str, str]:
    """{sample id: y0}, the frozen actor's initial response to each prompt (kept in `cache`)."""
    by_id = {s.id: s for s in samples}
    return cached_texts(cache, list(by_id), lambda ids: actor.respond([by_id[i] for i in ids]))


def _with_failures(train: list[Sample], scored: list[Sample], y0: Mapping[str, str],
                   notes: list[str]) -> tuple[list[Sample], list[Sample]]:
    """(train, scored) without the prompts whose y0 breaks no constraint; how many are left
    goes to `notes`."""
    # Where y0 breaks no constraint every critique gets 0: a group with no spread teaches
    # GRPO nothing and a held-out 0 only dilutes the gain, so those prompts sit out.
    before = len(train), len(scored)
    train, scored = ([s for s in group if broken(s.prompt, y0[s.id])] for group in (train, scored))
    notes.append(f"prompts whose y0 breaks at least one constraint: {len(train)} of {before[0]} training, "
                 f"{len(scored)} of {before[1]} scored")
    return train, scored


def engine_copy_fn(backend: Backend, policy: Any, engine: str, folder: Path) -> Callable[[int], Any] | None:
    """Where the measured critiques come from: on the rollout's engine, `copy(n)` is a copy of
    the weights as they are at the n-th measurement (every generation of a trained
    role outside its own optimizer step runs on an engine); None: the trained model itself."""
    if engine != "llamacpp":
        return None
    return lambda n: backend.load_gguf_copy(policy, folder / f"critic-{n}.gguf")


def scored_reward_fn(critic: Critic, reward_fn: Callable[..., list[float]], scored: list[Sample],
                     y0: Mapping[str, str], seeds: list[int],
                     engine_copy: Callable[[int], Any] | None = None) -> Callable[[], dict[str, float]]:
    """The measurement: per (scored prompt, seed) the reward of one critique of its y0 the
    critic samples; from `engine_copy(n)`, an engine copy of its weights as they are at the
    n-th measurement, where one is given, else from the trained model itself."""
    measurements = 0

    def scored_reward() -> dict[str, float]:
        nonlocal measurements
        measurements += 1
        with generating_on(critic, engine_copy(measurements) if engine_copy else None):
            scores: dict[str, float] = {}
            for seed in seeds:
                critic.sampling = critic.sampling.model_copy(update={"seed": seed})
                critiques = [c[0] for c in critic.critique([s.prompt for s in scored], [y0[s.id] for s in scored])]
                values = reward_fn([None] * len(scored), critiques, x=[s.prompt for s in scored],
                                   y0=[y0[s.id] for s in scored], sample_id=[s.id for s in scored])
                scores |= {f"{s.id}#{seed}": float(v) for s, v in zip(scored, values)}
        return scores

    return scored_reward


def critic_grpo(backend: Backend, policy: Any, critic: Critic, reward_fn: Callable[..., list[float]], train: list[Sample],
                y0: Mapping[str, str], measure: Callable[[], dict[str, float]], out: Path, *, steps: int, eval_every: int,
                learning_rate: float, batch_size: int, num_generations: int, seed: int,
                rollout_engine: str = "transformers",
                trl: dict[str, Any] | None = None) -> tuple[TrainResult, list[tuple[int, Mapping[str, float]]]]:
    """TRL's GRPO of the critic `policy` on its critique prompts of the training (x, y0) for
    `steps` optimizer steps (no KL term), measured before, every `eval_every` steps and after."""
    settings = critic_grpo_settings(steps=steps, learning_rate=learning_rate, batch_size=batch_size,
                                    num_generations=num_generations, seed=seed, rollout_engine=rollout_engine, trl=trl)
    return train_measuring(lambda callbacks: train_critic(backend, policy, critic, reward_fn, train, y0, out, settings,
                                                          callbacks),
                           measure, eval_every, steps)


def critic_grpo_settings(*, steps: int, learning_rate: float, batch_size: int, num_generations: int, seed: int,
                         rollout_engine: str = "transformers", trl: dict[str, Any] | None = None) -> GRPOSettings:
    """The critic's GRPO settings of these measurements: no KL term, critiques of at most
    CRITIQUE_TOKENS, one group's gradients accumulated per step."""
    from coevo.train.grpo import GRPOSettings

    return GRPOSettings(num_generations=num_generations, beta=0.0, learning_rate=learning_rate,
                        batch_size=batch_size, grad_accum=num_generations, max_prompt_length=1024,
                        max_completion_length=CRITIQUE_TOKENS, max_steps=steps, epochs=100,
                        save_steps=10_000, seed=seed, rollout_engine=rollout_engine, trl=trl or {})


def train_critic(backend: Backend, policy: Any, critic: Critic, reward_fn: Callable[..., list[float]],
                 train: list[Sample], y0: Mapping[str, str], out: Path, settings: GRPOSettings,
                 callbacks: list[Any]) -> TrainResult:
    """GRPO of `policy` on the critique prompts of the training (x, y0), with `callbacks`."""
    prompts = [[{"role": "user", "content": critic.critique_prompt(s.prompt, y0[s.id])}] for s in train]
    extra = {"x": [s.prompt for s in train], "y0": [y0[s.id] for s in train], "sample_id": [s.id for s in train]}
    return backend.train_grpo(policy, prompts, reward_fn, settings, out, resume=False, extra_columns=extra,
                              callbacks=callbacks)


def grpo_note(result: TrainResult) -> str:
    metrics = result.metrics
    return (f"GRPO: {result.steps} steps, {result.seconds:.0f} s, weights moved "
            f"{metrics.get('weight_delta', 0):.2g}, groups with no reward spread "
            f"{metrics.get('zero_std_fraction', float('nan')):.2f}, train reward mean "
            f"{metrics.get('reward_mean', float('nan')):.3f}")
