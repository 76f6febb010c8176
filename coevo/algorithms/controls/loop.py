"""Critique-content controls (TAIScore paper §5.3 and Appendix D.6).

Same prompts, same initial responses y0, same reviser, decoding and evaluator; only the
feedback differs:
  none      the reviser is asked to improve y0 with no critique;
  generic   one fixed, prompt-agnostic critique for every example;
  shuffled  the critic's critiques permuted by a derangement (no response gets its own),
            keeping critique source, style and marginal distribution;
  matched   each y0 gets the critique written for it.
Every revision is kept (no preference filtering). The evaluator reports S(y0), S(y1) and
Δ = S(y1) − S(y0) (gold-rubric judge), or the win rate of y1 over y0 (pairwise judge: every
pair judged in both shown orders and averaged, with its Wilson 95 % CI, the position
consistency and the first-position rate; coevo.eval.both_orders). Per rollout, the pairwise
judgments are "pairwise" (y0 shown first) and "pairwise_swapped".
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import BaseModel, Field

from coevo.settings.config import DataConfig, ExperimentConfig
from coevo.eval.both_orders import judge_both_orders, summarise_both_orders
from coevo.eval.stats import derangement, mean_sd, paired_bootstrap_ci
from coevo.core.progress import map_batches
from coevo.settings.role_specs import REFINEMENT_MOVED, RefinementRoleSpecs
from coevo.roles.critic import generic_critique
from coevo.roles.judges import GoldRubricJudge, PairwiseJudge
from coevo.roles.query_filter import load_data
from coevo.roles.refinement import build_refinement_roles
from coevo.rundir.store import RunStore
from coevo.tasks.loaders import DataError
from coevo.core.types import Judgment, Rollout, Table

Condition = Literal["none", "generic", "shuffled", "matched"]


class ControlsConfig(ExperimentConfig):
    MOVED_KEYS = REFINEMENT_MOVED

    algorithm: Literal["controls"] = "controls"
    data: DataConfig = DataConfig(limit=8)
    roles: RefinementRoleSpecs = RefinementRoleSpecs()
    conditions: list[Condition] = Field(default_factory=lambda: ["none", "generic", "shuffled", "matched"])
    evaluator: Literal["gold_rubric", "pairwise"] = "gold_rubric"
    #: Prompts per model call; None (default): a whole stage per call, which vLLM and servers
    #: batch best. A number bounds what a crash mid-stage loses and shows progress per chunk.
    batch_size: int | None = Field(None, ge=1)
    seed: int = 0


def feedback_for(condition: Condition, critiques: list[str], seed: int) -> list[str | None]:
    """The feedback each y0 receives under one condition (None = no critique at all)."""
    if condition == "none":
        return [None] * len(critiques)
    if condition == "generic":
        return [generic_critique()] * len(critiques)
    if condition == "shuffled":
        order = derangement(len(critiques), random.Random(seed))
        return [critiques[j] for j in order]
    return list(critiques)


class ControlsSummary(BaseModel):
    """`summary.json` of a controls run: the evaluator and one row per critique condition."""

    n_samples: int
    evaluator: str
    table: Table


def run_controls(config: ControlsConfig, store: RunStore) -> ControlsSummary:
    """`coevo run` entry for `algorithm: controls`."""
    roles = build_refinement_roles(config.roles, store)
    samples = load_data(config.data, roles.judge_model, config.roles.judge.sampling)
    if config.evaluator == "gold_rubric" and any(s.rubric is None for s in samples):
        raise DataError("the gold_rubric evaluator needs samples with rubrics; use evaluator: pairwise")
    size = config.batch_size
    prompts = [s.prompt for s in samples]
    y0 = map_batches(roles.actor.respond, samples, size, "initial responses y0")
    critiques = [group[0] for group in map_batches(
        lambda rows: roles.critic.critique([p for p, _ in rows], [y for _, y in rows]),
        list(zip(prompts, y0)), size, "critiques")]
    evaluate = _evaluator(config, roles.judge_model)
    s_y0 = evaluate(samples, y0, None) if config.evaluator == "gold_rubric" else None

    rows = []
    for condition in config.conditions:
        feedback = feedback_for(condition, critiques, config.seed)
        y1 = map_batches(lambda items: _revise(roles.actor, items), list(zip(prompts, y0, feedback)),
                         size, f"revise: {condition}")
        judged = evaluate(samples, y1, y0)
        for sample, a, c, b, judgment, before in zip(samples, y0, feedback, y1, judged, s_y0 or judged):
            if s_y0 is not None:
                judgments = {config.evaluator: judgment, f"{config.evaluator}_y0": before}
            else:  # the pairwise judge's (y0 shown first, y1 shown first)
                judgments = {config.evaluator: judgment[0], f"{config.evaluator}_swapped": judgment[1]}
            store.save_rollout("controls", Rollout(sample_id=sample.id, x=sample.prompt, y0=a, c=c,
                                                    y1=b, condition=condition, judgments=judgments))
        row = _summarise(condition, judged, s_y0)
        store.log_metrics(f"controls/{condition}", {k: v for k, v in row.items() if isinstance(v, float)})
        rows.append(row)
    columns = (["condition", "S(y0)", "S(y1)", "delta", "delta_ci_low", "delta_ci_high", "n_valid",
                "n_invalid"] if s_y0 is not None else ["condition", "win_rate_vs_y0", "win_rate_vs_y0_lo",
                                                       "win_rate_vs_y0_hi", "position_consistency_vs_y0",
                                                       "first_position_rate_vs_y0", "n_valid", "n_invalid"])
    table = Table(columns=columns, rows=rows)
    store.set_meta("tables", {"Critique-content controls": table.model_dump()})
    return ControlsSummary(n_samples=len(samples), evaluator=config.evaluator, table=table)


def _revise(actor, items: list[tuple[str, str, str | None]]) -> list[str]:
    prompts, responses, feedback = (list(col) for col in zip(*items))
    if all(f is None for f in feedback):
        return actor.revise_without_critique(prompts, responses)
    return actor.revise(prompts, responses, feedback)


def _evaluator(config: ControlsConfig, model):
    size = config.batch_size
    if config.evaluator == "gold_rubric":
        judge = GoldRubricJudge(model, config.roles.judge.sampling)
        return lambda samples, responses, _y0: map_batches(
            lambda rows: judge.judge([s for s, _ in rows], [r for _, r in rows]),
            list(zip(samples, responses)), size, "gold-rubric judge")
    pairwise = PairwiseJudge(model, config.roles.judge.sampling)
    # Each pair in both shown orders (one call): a position bias cannot move the win rate.
    return lambda samples, y1, y0: map_batches(
        lambda rows: judge_both_orders(pairwise, [s.prompt for s, _, _ in rows], [a for _, a, _ in rows],
                                       [b for _, _, b in rows], labels=("y0", "y1")),
        list(zip(samples, y0, y1)), size, "pairwise judge (both orders)")


def _summarise(condition: str, judged: list[Any], before: list[Judgment] | None) -> dict[str, Any]:
    """One table row: `judged` holds gold-rubric judgments of y1 (`before`: of y0), or
    without `before` the pairwise judge's (y0 first, y1 first) judgments of (y0, y1)."""
    if before is None:
        found = summarise_both_orders(judged)
        # `win_rate_vs_y0_n` (= n_valid) is logged with the rest, though not a table column.
        return {"condition": condition, **found.metrics("win_rate_vs_y0", "vs_y0"), "n_valid": found.n,
                "n_invalid": found.n_invalid}
    # Δ is paired: only samples whose y0 and y1 judgments are both readable count.
    pairs = [(b.score, a.score) for a, b in zip(judged, before) if a.valid and b.valid]
    row: dict[str, Any] = {"condition": condition, "n_valid": len(pairs), "n_invalid": len(judged) - len(pairs)}
    if pairs:
        s0, s1 = [p[0] for p in pairs], [p[1] for p in pairs]
        row.update({"S(y0)": mean_sd(s0)[0], "S(y1)": mean_sd(s1)[0]})
        diff, low, high = paired_bootstrap_ci(s1, s0, n_resamples=2000)
        row.update({"delta": float(diff), "delta_ci_low": float(low), "delta_ci_high": float(high)})
    return row
