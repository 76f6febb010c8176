"""Critique-guided refinement, the pipeline every TAIScore stage is built from.

    x --actor--> y0 --critic--> c --actor(x, y0, c)--> y1 --judges--> scores

Each stage runs over the whole batch at once (one batched model call per step), so the
backend decides how to use the hardware. Rollouts land in the run store as soon as a batch
is judged; with the LLM cache underneath, a killed run resumes without re-asking anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from coevo.config import DataConfig, Models, SamplingConfig, StrictModel
from coevo.judging import RolloutJudge, rollout_judge
from coevo.progress import progress_bar
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic
from coevo.store import RunStore
from coevo.types import Rollout, Sample


class Templates(StrictModel):
    """Prompt template per role: a bundled name or a path to your own file."""

    critic: str = "critic"
    reviser: str = "reviser"
    reviser_no_critique: str = "reviser_no_critique"


class RefineRunConfig(StrictModel):
    """`algorithm: refine` — critique-guided refinement over a dataset, with judges."""

    algorithm: Literal["refine"] = "refine"
    data: DataConfig = DataConfig()
    models: Models = Models()
    sampling: SamplingConfig = SamplingConfig()
    templates: Templates = Templates()
    judges: list[Literal["taiscore", "critique_quality", "adherence", "outcome_gain",
                         "pairwise", "gold_rubric"]] = ["taiscore"]
    batch_size: int = 8
    seed: int = 0


@dataclass
class Roles:
    actor: Actor
    critic: Critic
    judge_model: Any


def build_roles(models: Models, sampling: SamplingConfig, templates: Templates,
                store: RunStore | None) -> Roles:
    """Actor, critic and judge model from named model roles (shared weights per spec)."""
    from coevo.llm.specs import load_model

    actor = Actor(load_model(models.actor, store=store), sampling.rollout,
                  revise_sampling=sampling.revision, revise_template=templates.reviser,
                  revise_no_critique_template=templates.reviser_no_critique)
    critic = Critic(load_model(models.critic, store=store), sampling.rollout, templates.critic)
    return Roles(actor, critic, load_model(models.judge, store=store))


def load_data(data: DataConfig, judge_model: Any = None, sampling: SamplingConfig | None = None) -> list[Sample]:
    """Samples from a data config, query-filtered with the judge model when asked."""
    from coevo.tasks.loaders import load_samples

    samples = load_samples(data.source, columns=data.columns or None, limit=data.limit)
    if data.filter_queries:
        from coevo.tasks.query_filter import filter_queries

        samples, _ = filter_queries(samples, judge_model, (sampling or SamplingConfig()).judge)
    return samples


def batches(items: Sequence, size: int) -> list[Sequence]:
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]


def judge_rollouts(rollouts: list[Rollout], judges: dict[str, RolloutJudge], samples: dict[str, Sample]) -> None:
    """Attach every judge's Judgment to each rollout (in place), one batched call per judge."""
    for name, judge in judges.items():
        for rollout, judgment in zip(rollouts, judge(rollouts, samples)):
            rollout.judgments[name] = judgment


def refine(
    samples: list[Sample],
    actor: Actor,
    critic: Critic,
    judges: dict[str, RolloutJudge],
    *,
    store: RunStore | None = None,
    stage: str = "refine",
    y0: dict[str, str] | None = None,
    batch_size: int = 8,
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
    judges: dict[str, RolloutJudge],
    by_id: dict[str, Sample],
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


def run_refinement(config: RefineRunConfig, store: RunStore) -> dict[str, Any]:
    """`coevo run` entry for `algorithm: refine`: rollouts + judges, mean score per judge."""
    roles = build_roles(config.models, config.sampling, config.templates, store)
    samples = load_data(config.data, roles.judge_model, config.sampling)
    judges = {name: rollout_judge(name, roles.judge_model, config.sampling.judge)
              for name in config.judges}
    rollouts = refine(samples, roles.actor, roles.critic, judges, store=store,
                      batch_size=config.batch_size)
    rows = []
    for name in config.judges:
        scores = [r.judgments[name].score for r in rollouts if r.judgments[name].valid]
        rows.append({"judge": name, "mean": sum(scores) / len(scores) if scores else None,
                     "valid": len(scores), "invalid": len(rollouts) - len(scores)})
    store.log_metrics("refine", {f"{row['judge']}_mean": row["mean"] for row in rows})
    return {"n_samples": len(samples), "table": {"columns": ["judge", "mean", "valid", "invalid"],
                                                 "rows": rows}}


def refine_one(prompt: str, response: str | None, *, actor: str, critic: str, judge: str,
               sampling: SamplingConfig | None = None) -> dict[str, Any]:
    """`coevo refine`: one instruction through the pipeline, with the TAIScore judge."""
    sampling = sampling or SamplingConfig()
    roles = build_roles(Models(actor=actor, critic=critic, judge=judge), sampling, Templates(), None)
    sample = Sample(id="cli", prompt=prompt)
    judges = {"taiscore": rollout_judge("taiscore", roles.judge_model, sampling.judge)}
    (rollout,) = refine([sample], roles.actor, roles.critic, judges,
                        y0={sample.id: response} if response else None)
    verdict = rollout.judgments["taiscore"]
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    return {
        "prompt": prompt, "y0": rollout.y0, "critique": rollout.c, "y1": rollout.y1,
        "taiscore": {**{d: verdict.scores.get(d) for d in dims}, "score": verdict.score,
                     "valid": verdict.valid, **({"error": verdict.error} if verdict.error else {})},
    }
