"""The TAIScore paper's settings, where a config departs from them, and `coevo plan`.

The table cites the paper (`../shared/seeds/000_*`): §5.1 (models, training), Table 12
(hyper-parameters), Appendix C (query pools), §5.4 / Table 4 (actor–critic matching),
Appendix D.3 (pairs). `examples/taiscore_full.yaml` departs from none of it. The deep-research
domain's rows (§5.1, App. C: OpenScholar queries, DeepResearch-Gym with GPT-4.1-mini) apply
only to a deep-research config (`openscholar:` data or `deepresearch_gym:` evaluation data);
`examples/taiscore_deepresearch_full.yaml` departs from none of them that a setting can change:
the OpenScholar filter's prompt and its rules' thresholds are coevo's own (rows that say so).
"""

from __future__ import annotations

from typing import Any

from coevo.settings.departures import Departure, PaperSetting, SettingRow, find_departures, judge_output_setting, \
    model_named, setting_rows, thinking_settings
from coevo.plan.planning import PlanRole, PlanStage, RunPlan, read_data, role

#: Table 1's conditions and Table 4's critics tailored to other actors (§5.4); the third of
#: Table 4, tailored to the target Qwen3-8B itself, is the `taiscore` condition.
PAPER_CONDITIONS = ("off_the_shelf", "outcome_gain", "critique_quality", "taiscore", "coevolution")
PAPER_TAILORED = ("Llama-3.2-3B", "Qwen3-4B")
#: DeepResearch-Gym's judge in the paper (§5.1).
GYM_JUDGE = "gpt-4.1-mini"
#: How `evaluation.evaluator` reads for a config scored by coevo's DeepResearch-Gym evaluator.
_GYM_EVALUATOR = "DeepResearch-Gym's report-level metrics (KPR, KPC, report quality) judged by "


def _source_kind(source: Any) -> str | None:
    from coevo.tasks.benchmarks import benchmark_of

    return benchmark_of(source) if isinstance(source, str) else None


def _gym_evaluation(config: Any) -> bool:
    """Whether the held-out set is DeepResearch-Gym's (`evaluation.data: deepresearch_gym:FILE`)."""
    data = config.evaluation.data
    return data is not None and _source_kind(data.source) == "deepresearch_gym"


def deep_research(config: Any) -> bool:
    """A deep-research config (§5.1's second domain): OpenScholar queries or DeepResearch-Gym."""
    return _source_kind(config.data.source) == "openscholar" or _gym_evaluation(config)


def evaluator_judge(config: Any) -> str:
    """The model spec that judges DeepResearch-Gym's metrics: `evaluation.judge`, else the run's judge."""
    return (config.evaluation.judge or config.roles.judge).model


def _rules_here() -> str:
    from coevo.tasks.deepresearch import MIN_WORDS

    return (f"coevo's thresholds: 'very short' is under {MIN_WORDS} words; 'non-English' is under 90 % ASCII "
            "letters or no common English function word (tasks/deepresearch.py)")


def _evaluator_here(config: Any) -> str:
    if _gym_evaluation(config):
        return _GYM_EVALUATOR + evaluator_judge(config)
    return f"the run's judge ({config.roles.judge.model}) with coevo's gold-rubric prompt"


def _evaluator_matches(here: Any) -> bool:
    # coevo's DeepResearch-Gym evaluator with the paper's judge computes the benchmark's metrics;
    # the gold-rubric judge of the writing benchmarks is not their official evaluator.
    return isinstance(here, str) and here.startswith(_GYM_EVALUATOR) and model_named(GYM_JUDGE)(
        here.removeprefix(_GYM_EVALUATOR))


def _conditions_are_the_papers(conditions: list[Any]) -> bool:
    names = {c if isinstance(c, str) else (c.get("preset") or c.get("name")) for c in conditions}
    tailored = [c.get("tailored_to") for c in conditions if isinstance(c, dict) and c.get("tailored_to")]
    return set(PAPER_CONDITIONS) <= names and all(
        any(model_named(name, name + "-Instruct")(spec) for spec in tailored) for name in PAPER_TAILORED)


PAPER: list[PaperSetting] = [
    PaperSetting("roles.actor.model", "Qwen3-8B", "another actor: the paper's numbers are Qwen3-8B's (§5.1)",
                 matches=model_named("Qwen3-8B")),
    PaperSetting("roles.critic.model", "Qwen3-8B", "another critic to start from (§5.1: Qwen3-8B)",
                 matches=model_named("Qwen3-8B")),
    PaperSetting("roles.judge.model", "gpt-oss-120b", "another judge scores every reward and pair (§5.1: gpt-oss-120B)",
                 matches=model_named("gpt-oss-120b")),
    PaperSetting("data.filter_queries", True, "queries are not rated by the Table 11 grader (App. C), so pools "
                 "are not the top-rated queries"),
    PaperSetting("data.pool_total", 9000, "another number of pooled queries (App. C: 9,000)"),
    PaperSetting("data.pool_size", 3000, "another pool size (App. C: K = 3,000 per round)"),
    PaperSetting("data.top_up", True, "queries rated 3 do not fill the pools when those rated 4-5 fall short "
                 "(App. C tops DeepWriting's 4,937 up to 9,000)", applies=lambda config: not deep_research(config)),
    PaperSetting("data.top_up", False, "queries rated 3 fill the pools when those rated 4-5 fall short, a rule "
                 "App. C gives for DeepWriting only (OpenScholar: 9,000 sampled from the 17,022 rated 4-5)",
                 applies=deep_research),
    PaperSetting("rounds", 3, "another number of co-evolution rounds (§5.1: three)"),
    PaperSetting("critic_queries", 2000, "the critic trains on another number of queries per pool (§5.1: 2K)"),
    PaperSetting("pairs_per_round", 2000, "the actor trains on another number of DPO pairs per pool (§5.1: 2K)"),
    PaperSetting("roles.critic.template", "critic", "not Table 6's critic prompt"),
    PaperSetting("roles.actor.template", "reviser", "not the paper's revision prompt"),
    # Table 12's rollout decoding is both the actor's responses (y0) and the critic's critiques.
    PaperSetting("roles.actor.sampling.response.temperature", 0.8, "another rollout temperature (Table 12)"),
    PaperSetting("roles.actor.sampling.response.top_p", 0.95, "another rollout top-p (Table 12)"),
    PaperSetting("roles.actor.sampling.response.max_tokens", 4096, "shorter responses (Table 12: 4,096 tokens)"),
    PaperSetting("roles.critic.sampling.temperature", 0.8, "another critique temperature (Table 12's rollout)"),
    PaperSetting("roles.critic.sampling.top_p", 0.95, "another critique top-p (Table 12's rollout)"),
    PaperSetting("roles.critic.sampling.max_tokens", 4096, "shorter critiques (Table 12: 4,096 tokens)"),
    PaperSetting("roles.actor.sampling.revision.temperature", 0.2, "another refiner temperature (Table 12)"),
    PaperSetting("roles.actor.sampling.revision.top_p", 0.95, "another refiner top-p (Table 12)"),
    PaperSetting("roles.actor.sampling.revision.max_tokens", 4096, "shorter revisions (Table 12: 4,096 tokens)"),
    PaperSetting("roles.critic.sampling.repetition_penalty", 1.0,
                 "a repetition penalty on critiques (the paper samples without one)"),
    PaperSetting("roles.actor.sampling.response.repetition_penalty", 1.0,
                 "a repetition penalty on responses (the paper samples without one)"),
    PaperSetting("roles.actor.sampling.revision.repetition_penalty", 1.0,
                 "a repetition penalty on revisions (the paper samples without one)"),
    PaperSetting("roles.judge.sampling.temperature", 0.2, "another judge temperature (Table 12)"),
    PaperSetting("roles.judge.sampling.top_p", 1.0, "another judge top-p (Table 12)"),
    PaperSetting("roles.judge.sampling.scoring", "sampled", "the reward is the judge's expected score (G-Eval "
                 "mean over its score tokens), not the integer final score it writes"),
    PaperSetting("grpo.num_generations", 4, "another number of critiques per response (Table 12: N = 4)"),
    PaperSetting("grpo.learning_rate", 1e-6, "another critic learning rate (Table 12)"),
    PaperSetting("grpo.beta", 0.02, "another KL coefficient (Table 12)"),
    PaperSetting("grpo.batch_size", 8, "another critic batch (Table 12: 8 prompts, mini-batch 8)"),
    PaperSetting("grpo.loss_type", "grpo", "not the GRPO objective of Shao et al. (2024)"),
    PaperSetting("grpo.max_prompt_length", 2048, "another prompt budget (Table 12: 2,048 tokens)"),
    PaperSetting("grpo.max_completion_length", 4096, "shorter critiques in training (Table 12: 4,096 tokens)"),
    PaperSetting("grpo.max_steps", None, "training stops after a fixed number of steps, not one pass"),
    PaperSetting("dpo.beta", 0.1, "another DPO beta (§5.1, Table 12)"),
    PaperSetting("dpo.learning_rate", 1e-6, "another actor learning rate (Table 12)"),
    PaperSetting("dpo.epochs", 1, "another number of DPO epochs (Table 12)"),
    PaperSetting("dpo.max_length", 4096, "another DPO length limit (Table 12)"),
    PaperSetting("dpo.max_prompt_length", 2048, "another DPO prompt limit (Table 12)"),
    PaperSetting("dpo.max_steps", None, "training stops after a fixed number of steps, not one epoch"),
    # The deep-research domain's held-out set is DeepResearch-Gym's (its own row below).
    PaperSetting("evaluation.data", "WritingBench / HelloBench (the user's file)", "held-out prompts are a "
                 "share of the training data, not a benchmark (§5.1 evaluates on WritingBench, HelloBench)",
                 matches=lambda here: here is not None, applies=lambda config: not deep_research(config)),
    PaperSetting("evaluation.output_sets", 3, "each checkpoint is scored on another number of generated "
                 "output sets (§5.1: three, mean ± sd)"),
    PaperSetting("evaluation.evaluator", "each benchmark's own: WritingBench's critic model, HelloBench's "
                 "GPT-4o-mini, DeepResearch-Gym's GPT-4.1-mini (§5.1)",
                 "the gold score is the run's judge under the benchmark's criteria with coevo's gold-rubric "
                 "prompt, not the benchmark's evaluator (HelloBench's checklist items weigh 1 each, not its "
                 "weights): score the saved checkpoints with each benchmark's own evaluator for Table 1's numbers "
                 "(`coevo eval checkpoints RUN --data SPEC --judge SPEC` scores every one on any benchmark set)",
                 here_of=_evaluator_here, matches=_evaluator_matches,
                 applies=lambda config: config.evaluation.gold_rubric or _gym_evaluation(config), settable=False),
    judge_output_setting("roles.judge.sampling.output", "unconstrained generation of the JSON each prompt asks for, "
                         "parsed after (Tables 8, 9, 11, 14); the outcome-gain judge one token, 1, 0.5 or 0 "
                         "(Table 13)"),
    *thinking_settings("actor", "critic", "judge"),
    PaperSetting("data.source", "DeepWriting-20K's prompts after App. C's rule filters (your file)",
                 "the critic and actor train on other prompts than DeepWriting-20K's (§5.1's creative-writing "
                 "domain); deep research: openscholar:FILE", matches=lambda here: not str(here).startswith("bundled:"),
                 applies=lambda config: not deep_research(config)),
    # The deep-research domain (§5.1, App. C), only for deep-research configs.
    PaperSetting("data.source", "OpenScholar queries (openscholar:FILE), App. C's rules applied as read",
                 "another training source than OpenScholar's queries (§5.1's deep-research domain)",
                 matches=lambda here: _source_kind(here) == "openscholar", applies=deep_research),
    # coevo's own parts of the OpenScholar filter, which no setting changes (App. C names the
    # rules and DR-Tulu's prompt, not their thresholds or text).
    PaperSetting("data.filter_template", "DR-Tulu's query-filtering prompt, graded by gpt-oss-120B (App. C)",
                 "another query grader: the pools hold other queries than the paper's",
                 here_of=lambda config: "coevo's openscholar_query_filter, written from the paper's description of "
                 "DR-Tulu's filter (not its text)", matches=lambda here: False, settable=False,
                 applies=lambda config: _source_kind(config.data.source) == "openscholar" and config.data.filter_queries),
    PaperSetting("data.rules", "App. C's rules: unsupported intents (Other, Metadata, Cannot determine), 'very "
                 "short' and 'non-English' queries removed (no thresholds given)",
                 "other queries removed than the paper's rules remove",
                 here_of=lambda config: _rules_here(), matches=lambda here: False, settable=False,
                 applies=lambda config: _source_kind(config.data.source) == "openscholar"),
    PaperSetting("evaluation.data.source", "DeepResearch-Gym (deepresearch_gym:FILE): its queries, reference "
                 "key points and officially retrieved ClueWeb22 materials", "held-out prompts are not "
                 "DeepResearch-Gym's, so no KPR, KPC or report quality (§5.1)",
                 here_of=lambda config: config.evaluation.data.source if config.evaluation.data else None,
                 matches=lambda here: _source_kind(here) == "deepresearch_gym", applies=deep_research),
    PaperSetting("evaluation.judge.model", GYM_JUDGE, "another judge of DeepResearch-Gym's KPR, KPC and report "
                 "quality (§5.1: GPT-4.1-mini)", here_of=evaluator_judge, matches=model_named(GYM_JUDGE),
                 applies=deep_research),
    PaperSetting("evaluation.deepresearch_protocol", "official: DeepResearch-Gym's scripts, one judge call per key "
                 "point (supported / omitted / contradicted) and one per quality criterion (0-10, mean x 10)",
                 "DeepResearch-Gym's metrics from 2 calls a report (all key points at once; the six criteria at "
                 "once on 1-10, mapped (m-1)/9 x 100): not the benchmark's numbers (a mean of 7.4 reads 71.1 "
                 "here, 74.0 there)", matches=lambda here: here == "official", applies=_gym_evaluation),
    PaperSetting("conditions", [*PAPER_CONDITIONS, *(f"matching: tailored to {m}" for m in PAPER_TAILORED)],
                 "a comparison without all of Table 1's conditions and Table 4's three tailored critics",
                 matches=_conditions_are_the_papers, applies=lambda config: bool(config.conditions)),
]


def estimate(config: Any, plan: RunPlan) -> Any:
    """The calls and training stages of a run of `config` (taiscore/estimate.py)."""
    from coevo.algorithms.taiscore.estimate import estimate as count

    return count(config, plan)


def departures(config: Any) -> list[Departure]:
    """Every setting of `config` that is not the paper's (for taiscore_full.yaml: only what
    coevo cannot do the paper's way, the benchmarks' evaluators and free-form judges)."""
    return find_departures(config, PAPER)


def settings(config: Any) -> list[SettingRow]:
    """Every row of the paper's table beside `config`'s value."""
    return setting_rows(config, PAPER)


def plan(config: Any) -> RunPlan:
    """What `config` will do: pools (sample ids), critic queries, held-out prompts, stages,
    roles and departures, without loading a model. With `data.filter_queries` and no quality
    column the pools are known only after the judge grades every query: the plan says how
    many calls that is and shows no pool ids."""
    from coevo.algorithms.taiscore.config import resolve_conditions
    from coevo.algorithms.taiscore.data import held_out_split, query_ratings
    from coevo.roles.query_filter import load_data
    from coevo.tasks.loaders import load_samples
    from coevo.tasks.pools import quality_pools, sample_critic_queries

    notes: list[str] = []
    conditions = resolve_conditions(config)
    samples = read_data(lambda: load_samples(config.data.source, columns=config.data.columns or None,
                                             limit=config.data.limit), config.data.source, notes)
    if samples is None:
        return RunPlan(algorithm="taiscore", data={"source": config.data.source, "pools": None,
                                                  "critic_queries": None, "held_out": None},
                       stages=_stages(config, conditions, {"held_out": None}),
                       roles=_roles(config, conditions), departures=departures(config), settings=settings(config),
                       notes=notes)
    eval_samples = None
    if (ev := config.evaluation.data) is not None:
        # Its own query filter (if any) needs the judge: the plan shows the held-out set unfiltered.
        eval_samples = read_data(lambda: load_data(ev.model_copy(update={"filter_queries": False})),
                                 ev.source, notes) or []
    train, held_out = held_out_split(config, samples, eval_samples)
    ratings = query_ratings(config, train)
    data: dict[str, Any] = {"source": config.data.source, "rows": len(samples), "train_candidates": len(train)}
    if ratings is None and config.data.filter_queries:
        prompt = "OpenScholar's grader" if _source_kind(config.data.source) == "openscholar" else "Table 11 prompt"
        notes.append(f"the run first grades {len(train)} queries with the judge ({prompt}): "
                     f"{len(train)} filter calls; pools are known only after (or add a "
                     f"{config.data.quality_column!r} column with the scores)")
        data.update(pools=None, critic_queries=None, filter_calls=len(train))
    else:
        pools, report = quality_pools(train, ratings, config.rounds, pool_total=config.data.pool_total,
                                      pool_size=config.data.pool_size, seed=config.seed, top_up=config.data.top_up)
        notes += report.notes
        data.update(
            pools=[[s.id for s in pool] for pool in pools],
            critic_queries=[[s.id for s in sample_critic_queries(pool, config.critic_queries, config.seed, t)]
                            for t, pool in enumerate(pools)],
            pool_sizes=report.sizes, quality_histogram=report.histogram, rated_high=report.rated_high,
            rated_three=report.rated_three, topped_up=report.topped_up, dropped=report.dropped, filter_calls=0)
    data["held_out"] = [s.id for s in held_out]
    if deep_research(config):
        _deep_research_plan(config, data, held_out, notes)
    return RunPlan(algorithm="taiscore", data=data, stages=_stages(config, conditions, data),
                   roles=_roles(config, conditions),
                   departures=departures(config), settings=settings(config), notes=notes)


def _deep_research_plan(config: Any, data: dict[str, Any], held_out: list[Any], notes: list[str]) -> None:
    """A deep-research config's filter stage and evaluator in `data` (`rules_removed`: what App.
    C's rules removed as the rows were read; `filter_template`: the query grader's prompt;
    `evaluator`: DeepResearch-Gym's metrics, their judge and how many held-out rows carry key
    points) and `notes`."""
    from coevo.algorithms.taiscore.data import filter_template, rules_removed
    from coevo.roles.deepresearch import key_points_of

    rules = rules_removed(config)
    if rules is not None:
        data["rules_removed"] = rules
        notes.append(f"App. C's rules kept {rules['kept']} of {rules['rows']} OpenScholar rows (removed: "
                     f"{rules['unsupported_intent']} unsupported intent, {rules['too_short']} too short, "
                     f"{rules['not_english']} not English)")
    data["filter_template"] = filter_template(config.data.source) or "query_filter"
    from coevo.roles.deepresearch_official import CRITERIA

    keyed = sum(bool(key_points_of(s)) for s in held_out)
    points = sum(len(key_points_of(s)) for s in held_out)
    protocol = config.evaluation.deepresearch_protocol
    # The benchmark's scripts: a call per key point and one per quality criterion; the
    # single-call variant: one call for the key points and one for the criteria.
    calls = points + len(CRITERIA) * keyed if protocol == "official" else 2 * keyed
    data["evaluator"] = {"kind": "deepresearch_gym" if _gym_evaluation(config) else None,
                         "judge": evaluator_judge(config), "metrics": ["kpr", "kpc", "report_quality"],
                         "protocol": protocol, "rows_with_key_points": keyed, "key_points": points,
                         "calls_per_output_set": calls}
    if _gym_evaluation(config) and keyed:
        how = (f"one call per key point ({points}) and per quality criterion ({len(CRITERIA)} a report)"
               if protocol == "official" else "2 calls a report (single_call: not the benchmark's protocol)")
        notes.append(f"every evaluation scores {keyed} held-out report(s) per output set with DeepResearch-Gym's "
                     f"KPR, KPC and report quality: {how}, {calls} calls to {evaluator_judge(config)}")


def _roles(config: Any, plans: list[Any]) -> list[PlanRole]:
    roles = [role("actor", config.roles.actor.model, trained=True, generates_on=config.actor_engine),
             role("judge", config.roles.judge.model, trained=False, options=config.roles.options_for("judge"))]
    if config.evaluation.judge is not None:
        roles.append(role("evaluator", config.evaluation.judge.model, trained=False,
                          options={**config.roles.default.options, **config.evaluation.judge.options}))
    for p in plans:
        roles.append(role(f"critic[{p.name}]", p.critic, trained=p.critic_training == "grpo",
                          options=config.roles.options_for("critic"), generates_on=config.critic_engine))
        if p.tailored_to:
            roles.append(role(f"actor[{p.name}]", p.tailored_to, trained=False,
                              options=config.roles.options_for("actor")))
    return roles


def _stages(config: Any, plans: list[Any], data: dict[str, Any]) -> list[PlanStage]:
    from coevo.algorithms.taiscore.loop import stages_for

    sizes = [len(p) for p in data["pools"]] if data.get("pools") else [None] * config.rounds
    critic_sizes = [len(q) for q in data["critic_queries"]] if data.get("critic_queries") else sizes
    held = len(data["held_out"]) if data.get("held_out") is not None else None
    out = []
    for p in plans:
        for seed in range(config.seeds):
            tag = p.name if config.seeds == 1 else f"{p.name}/seed{config.seed + seed}"
            out.append(PlanStage(name=f"{tag}/round0/eval", kind="evaluate", round=0, items=held,
                                 note="the base models on the held-out prompts"))
            for r, pool_ids in enumerate(stages_for(p.schedule, config.rounds), start=1):
                n = _total([sizes[t] for t in pool_ids])
                pre = f"{tag}/round{r}"
                out.append(PlanStage(name=f"{pre}/y0", kind="generate", round=r, role="actor", items=n,
                                     note=f"initial responses of pool(s) {pool_ids}"))
                if p.critic_training == "grpo":
                    out.append(PlanStage(name=f"{pre}/critic", kind="grpo", round=r, role="critic",
                                         items=_total([critic_sizes[t] for t in pool_ids]),
                                         note=f"reward {p.reward}, {config.grpo.num_generations} critiques each"
                                              + (f", against {p.tailored_to}" if p.tailored_to else "")))
                out.append(PlanStage(name=f"{pre}/pairs", kind="judge", round=r, role="judge", items=n,
                                     note="one revision per query, critique-blind pairwise judge"))
                out.append(PlanStage(name=f"{pre}/actor", kind="dpo", round=r, role="actor",
                                     items=config.pairs_per_round * len(pool_ids),
                                     note=f"at most {config.pairs_per_round} pairs per pool"))
                out.append(PlanStage(name=f"{pre}/eval", kind="evaluate", round=r, items=held))
    return out


def _total(sizes: list[int | None]) -> int | None:
    return None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]


__all__ = ["PAPER", "departures", "estimate", "plan"]
