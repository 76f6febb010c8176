"""`algorithm: refine` and `coevo refine`: critique-guided refinement over a dataset (or one
instruction), scored by the judges a config names. The pipeline itself is the library
function `coevo.roles.refinement.refine`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel

from coevo.settings.config import DataConfig, ExperimentConfig, Field
from coevo.eval.both_orders import BothOrdersScorer, both_orders_of, summarise_both_orders
from coevo.roles.judging import rollout_judge
from coevo.llm.base import ModelError
from coevo.settings.role_specs import REFINEMENT_MOVED, RefinementRoleSpecs
from coevo.roles.judges import JUDGE_NAMES
from coevo.roles.query_filter import load_data
from coevo.roles.refinement import build_refinement_roles, refine
from coevo.rundir.store import RunStore
from coevo.core.types import Sample, Table


class RefineRunConfig(ExperimentConfig):
    """`algorithm: refine` — critique-guided refinement over a dataset, with judges."""

    MOVED_KEYS = REFINEMENT_MOVED

    algorithm: Literal["refine"] = "refine"
    data: DataConfig = DataConfig()
    roles: RefinementRoleSpecs = RefinementRoleSpecs()
    #: Any of the judges (roles/judges.py declares them; JUDGE_NAMES is derived there).
    judges: list[Literal[JUDGE_NAMES]] = ["taiscore"]  # type: ignore[valid-type]
    #: Prompts per model call; None (default): a whole stage per call, which vLLM and servers
    #: batch best. A number bounds what a crash mid-stage loses and shows progress per chunk.
    batch_size: int | None = Field(None, ge=1)
    seed: int = 0


class RefineSummary(BaseModel):
    """`summary.json` of a refine run: how many samples, and each judge's mean score (the
    pairwise judge's: the win rate of y1 over y0 from both shown orders, with its 95 % CI
    and the judge's position consistency)."""

    n_samples: int
    table: Table


def run_refinement(config: RefineRunConfig, store: RunStore) -> RefineSummary:
    """`coevo run` entry for `algorithm: refine`: rollouts + judges, mean score per judge.
    The pairwise judge is an evaluation here: each (y0, y1) in both shown orders, averaged
    (`coevo.eval.both_orders`), so its position preference cannot move the mean."""
    roles = build_refinement_roles(config.roles, store)
    judge_sampling = config.roles.judge.sampling
    samples = load_data(config.data, roles.judge_model, judge_sampling)
    judges = {name: rollout_judge(name, roles.judge_model, judge_sampling)
              for name in config.judges}
    if "pairwise" in judges:
        judges["pairwise"] = BothOrdersScorer(judges["pairwise"])  # type: ignore[arg-type]
    rollouts = refine(samples, roles.actor, roles.critic, judges, store=store,
                      batch_size=config.batch_size)
    rows, metrics = [], {}
    for name in config.judges:
        scores = [r.judgments[name].score for r in rollouts if r.judgments[name].valid]
        row = {"judge": name, "mean": sum(scores) / len(scores) if scores else None,
               "valid": len(scores), "invalid": len(rollouts) - len(scores)}
        if name == "pairwise":
            found = summarise_both_orders([both_orders_of(r.judgments[name]) for r in rollouts])
            row |= {"mean_lo": found.win_rate_lo, "mean_hi": found.win_rate_hi,
                    "position_consistency": found.position_consistency}
            metrics |= found.metrics("pairwise_mean", "pairwise")
        rows.append(row)
    metrics |= {f"{row['judge']}_mean": row["mean"] for row in rows}
    store.log_metrics("refine", metrics)
    columns = ["judge", "mean"] + (["mean_lo", "mean_hi", "position_consistency"] if "pairwise" in judges else [])
    return RefineSummary(n_samples=len(samples), table=Table(columns=columns + ["valid", "invalid"], rows=rows))


def texts_capped(roles: RefinementRoleSpecs, max_tokens: int) -> RefinementRoleSpecs:
    """`roles` with the generated texts (y0, critique, y1) held to `max_tokens` each; the
    judge's limit is left alone, since a cut-off judgment would only be unreadable."""
    def cap(setting):
        return setting.model_copy(update={"max_tokens": min(setting.max_tokens, max_tokens)})

    actor_sampling = roles.actor.sampling.model_copy(update={"response": cap(roles.actor.sampling.response),
                                                             "revision": cap(roles.actor.sampling.revision)})
    return roles.model_copy(update={"actor": roles.actor.model_copy(update={"sampling": actor_sampling}),
                                    "critic": roles.critic.model_copy(update={"sampling": cap(roles.critic.sampling)})})


def with_models(roles: RefinementRoleSpecs, **specs: str) -> RefinementRoleSpecs:
    """`roles` with each named role's model replaced (`actor="hf:…"`)."""
    return roles.model_copy(update={name: getattr(roles, name).model_copy(update={"model": spec})
                                    for name, spec in specs.items()})


def refine_one(prompt: str, response: str | None, *, actor: str, critic: str, judge: str,
               roles: RefinementRoleSpecs | None = None) -> dict[str, Any]:
    """`coevo refine`: one instruction through the pipeline, with the TAIScore judge (a model,
    or a `python:` reward function, probed before any model loads)."""
    from coevo.llm.python_functions import check_python_spec, is_python_spec

    for role, spec in (("--actor", actor), ("--critic", critic)):
        if is_python_spec(spec):
            raise ModelError(f"{role} {spec!r}: a Python scorer stands where a judge goes, not for the {role[2:]}; "
                             "give a model spec (see `coevo models`)")
    if is_python_spec(judge):
        check_python_spec(judge, ["reward"], "--judge")
    specs = with_models(roles or RefinementRoleSpecs(), actor=actor, critic=critic, judge=judge)
    built = build_refinement_roles(specs, None)
    sample = Sample(id="cli", prompt=prompt)
    judges = {"taiscore": rollout_judge("taiscore", built.judge_model, specs.judge.sampling)}
    (rollout,) = refine([sample], built.actor, built.critic, judges,
                        y0={sample.id: response} if response else None)
    verdict = rollout.judgments["taiscore"]
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    return {
        "prompt": prompt, "y0": rollout.y0, "critique": rollout.c, "y1": rollout.y1,
        "taiscore": {**{d: verdict.scores.get(d) for d in dims}, "score": verdict.score,
                     "valid": verdict.valid, **({"error": verdict.error} if verdict.error else {})},
    }
