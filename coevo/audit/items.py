"""The real rollouts a judge audit compares its probes with, written by a model.

Per judge kind, what the judged model writes (the audit's slot, see coevo/audit/probes.py):
an answer y0 (gold_rubric); two answers y0, y1 (pairwise: the second is the other side of
the position and retest comparisons); y0 and a critique c (critique_quality); y0, c and a
revision y1 (taiscore). One batched model call per step.
"""

from __future__ import annotations

from collections.abc import Sequence

from coevo.llm.base import ChatModel, user
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.roles.parsing import strip_reasoning
from coevo.core.types import Rollout, Sample, Sampling

#: Answers are written as rollouts are (TAIScore's T 0.8 / top-p 0.95), revisions as the
#: refiner writes them (T 0.2): the real items look like the ones a run's judge sees.
WRITE_TEMPERATURE, REVISE_TEMPERATURE = 0.8, 0.2
#: Token budget of each written text: enough for a real answer, small enough for a laptop.
WRITE_MAX_TOKENS = 256


def _samplings(seed: int, max_tokens: int) -> tuple[Sampling, Sampling]:
    return (Sampling(temperature=WRITE_TEMPERATURE, top_p=0.95, max_tokens=max_tokens, seed=seed),
            Sampling(temperature=REVISE_TEMPERATURE, top_p=0.95, max_tokens=max_tokens, seed=seed))


def write_items(kind: str, samples: Sequence[Sample], model: ChatModel, *, seed: int = 0,
                max_tokens: int = WRITE_MAX_TOKENS, critic_template: str | None = None) -> list[Rollout]:
    """One real rollout per sample with what a `kind` judge reads, all written by `model`."""
    write, revise = _samplings(seed, max_tokens)
    samples = list(samples)
    if kind == "pairwise":
        outputs = model.generate([user(s.prompt) for s in samples], write, n=2)
        answers = [[strip_reasoning(c.text) for c in pair] + [""] * (2 - len(pair)) for pair in outputs]
        return [Rollout(sample_id=s.id, x=s.prompt, y0=a[0], y1=a[1]) for s, a in zip(samples, answers)]
    y0 = Actor(model, write).respond(samples)
    base = [Rollout(sample_id=s.id, x=s.prompt, y0=y) for s, y in zip(samples, y0)]
    if kind == "gold_rubric":
        return base
    return slot_items(kind, base, model, seed=seed, max_tokens=max_tokens, critic_template=critic_template)


def slot_items(kind: str, base: Sequence[Rollout], model: ChatModel, *, seed: int = 0,
               max_tokens: int = WRITE_MAX_TOKENS, critic_template: str | None = None) -> list[Rollout]:
    """`base` with the slot of `kind` (re)written by `model`: the answer y0 (gold_rubric,
    pairwise), the critique of base's y0 (critique_quality), the critique and the revision
    (taiscore). How the self-preference measure gets the judge's own and another model's."""
    write, revise = _samplings(seed, max_tokens)
    base = list(base)
    if kind in ("gold_rubric", "pairwise"):
        samples = [Sample(id=r.sample_id, prompt=r.x) for r in base]
        answers = Actor(model, write).respond(samples)
        return [r.model_copy(update={"y0": y, "y1": None, "c": None, "judgments": {}}) for r, y in zip(base, answers)]
    prompts, responses = [r.x for r in base], [r.y0 for r in base]
    critiques = [group[0] for group in Critic(model, write, critic_template).critique(prompts, responses)]
    items = [r.model_copy(update={"c": c, "judgments": {}}) for r, c in zip(base, critiques)]
    if kind == "taiscore":
        revisions = Actor(model, write, revise_sampling=revise).revise(prompts, responses, critiques)
        items = [r.model_copy(update={"y1": y}) for r, y in zip(items, revisions)]
    return items
