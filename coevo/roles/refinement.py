"""Critique-guided refinement, the pipeline every TAIScore stage is built from.

    x --actor--> y0 --critic--> c --actor(x, y0, c)--> y1 --judges--> scores

A library function (`refine`) that experiments call: the `refine` experiment
(`coevo.algorithms.refine`), TAIScore's stages and evaluations, the critique-content
controls. Each step runs over the whole batch at once (one batched model call per step), so
the backend decides how to use the hardware. Rollouts land in the run store as soon as a
batch is judged; with the LLM cache underneath, a killed run resumes without re-asking.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from coevo.llm.base import ChatModel
from coevo.llm.call_tags import tagged
from coevo.core.progress import progress_bar
from coevo.settings.role_specs import RefinementRoleSpecs
from coevo.roles.actor import Actor
from coevo.roles.base import Scorer
from coevo.roles.critic import Critic
from coevo.rundir.store import RunStore
from coevo.core.types import Rollout, Sample


@dataclass
class RefinementRoles:
    """The three model roles of refinement; `judge_model` backs every judge."""

    actor: Actor
    critic: Critic
    judge_model: ChatModel


def build_refinement_roles(specs: RefinementRoleSpecs, store: RunStore | None) -> RefinementRoles:
    """Actor, critic and judge model from a config's role specs (shared weights per spec)."""
    actor = Actor(specs.load("actor", store=store), specs.actor.sampling.response,
                  revise_sampling=specs.actor.sampling.revision, revise_template=specs.actor.template,
                  revise_no_critique_template=specs.actor.template_no_critique)
    critic = Critic(specs.load("critic", store=store), specs.critic.sampling, specs.critic.template)
    return RefinementRoles(actor, critic, specs.load("judge", store=store))


def batches(items: Sequence, size: int | None) -> list[Sequence]:
    """`items` in chunks of `size` (None: one chunk of everything)."""
    size = size or max(1, len(items))
    return [items[i : i + size] for i in range(0, len(items), size)]


def judge_rollouts(rollouts: list[Rollout], judges: Mapping[str, Scorer], samples: Mapping[str, Sample]) -> None:
    """Attach every judge's Judgment to each rollout (in place), one batched call per judge."""
    for name, judge in judges.items():
        for rollout, judgment in zip(rollouts, judge.score(rollouts, samples)):
            rollout.judgments[name] = judgment


def refine(
    samples: list[Sample],
    actor: Actor,
    critic: Critic,
    judges: Mapping[str, Scorer],
    *,
    store: RunStore | None = None,
    stage: str = "refine",
    y0: dict[str, str] | None = None,
    batch_size: int | None = None,
    on_batch: Callable[[list[Rollout]], None] | None = None,
) -> list[Rollout]:
    """Run x -> y0 -> c -> y1 -> judges over `samples`; return one Rollout per sample.

    `y0` maps sample id to a given initial response (`coevo refine --response`); samples
    without one get the actor's. Finished rollouts already in `store` for this stage are
    returned as they are, so a resumed run picks up at the first unfinished batch.
    """
    done = {r.sample_id: r for r in store.rollouts(stage)} if store else {}
    by_id = {s.id: s for s in samples}
    results: dict[str, Rollout] = {}
    todo = [s for s in samples if s.id not in done]
    with progress_bar(f"{stage}", total=len(samples), completed=len(samples) - len(todo)) as advance:
        for batch in batches(todo, batch_size):
            with tagged(stage=stage):
                rollouts = refine_batch(list(batch), actor, critic, judges, by_id, y0 or {})
            for rollout in rollouts:
                if store:
                    store.save_rollout(stage, rollout)
                results[rollout.sample_id] = rollout
            if on_batch:
                on_batch(rollouts)
            advance(len(batch))
    return [done.get(s.id) or results[s.id] for s in samples]


def refine_batch(
    batch: list[Sample],
    actor: Actor,
    critic: Critic,
    judges: Mapping[str, Scorer],
    by_id: Mapping[str, Sample],
    given_y0: dict[str, str],
) -> list[Rollout]:
    missing = [s for s in batch if s.id not in given_y0]
    fresh = dict(zip((s.id for s in missing), actor.respond(missing))) if missing else {}
    initial = [given_y0.get(s.id) or fresh[s.id] for s in batch]
    prompts = [s.prompt for s in batch]
    critiques = [group[0] for group in critic.critique(prompts, initial, n=1)]
    revisions = actor.revise(prompts, initial, critiques)
    rollouts = [
        Rollout(sample_id=s.id, x=s.prompt, y0=y0, c=c, y1=y1)
        for s, y0, c, y1 in zip(batch, initial, critiques, revisions)
    ]
    judge_rollouts(rollouts, judges, by_id)
    return rollouts
