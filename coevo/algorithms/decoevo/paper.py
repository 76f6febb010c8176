"""DecoEvo as its paper gives it: the settings table, the departures of a config, the plan.

The paper (Decoupled Co-Evolution, `shared/seeds/002_*`) states its setup in words: the
backbones (GPT-4o, Qwen3-4B, Qwen3-8B, one frozen model behind every optimisation role),
the four methods on the same splits and budgets, seven disjoint partitions of each source
benchmark, five matched seeds, binary criterion-level verdicts, stochastic rollouts for the
near-tie audit, and each benchmark's own grader for the final score. Its numeric schedule
(k, s, m, P, delta, eta, tau, gamma, epsilon, inner steps, batch size) is "provided in the
supplementary material", which the copy this project reproduces from does not hold, and
the paper selects those on its pilot partition: they are therefore not rows here (a
setting the paper is silent on is not a departure), and `examples/decoevo_full.yaml`
says so beside each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coevo.settings.departures import Departure, PaperSetting, SettingRow, find_departures, judge_output_setting, \
    model_named, setting_rows, thinking_settings
from coevo.plan.planning import PlanStage, RunPlan, read_data, role

if TYPE_CHECKING:
    from coevo.plan.estimate import CallEstimate, TrainingEstimate

#: The paper's backbones (Setup: "We test GPT-4o and Qwen3-4B/8B").
BACKBONES = ("gpt-4o", "qwen3-4b", "qwen3-8b")
ALL_METHODS = ["zero_shot", "skillopt", "sc_coevo", "decoevo"]
#: Benchmark prefixes a DecoEvo run may use as its paper's data: WritingBench is one of the
#: paper's three source benchmarks; HelloBench is not (it is the TAIScore paper's).
_NOT_PAPER_SOURCES = ("bundled:", "hellobench:")


def _five_distinct(seeds: Any) -> bool:
    return isinstance(seeds, list) and len(seeds) == 5 and len(set(seeds)) == 5


def _all_methods(methods: Any) -> bool:
    return isinstance(methods, list) and sorted(methods) == sorted(ALL_METHODS)


def _paper_source(source: Any) -> bool:
    # A user's own file is taken as the benchmark it claims to be (coevo cannot tell
    # HealthBench from ResearchQA by looking); the bundled set and HelloBench are not.
    return isinstance(source, str) and not source.startswith(_NOT_PAPER_SOURCES)


#: Every setting the paper gives that a config can change, in the paper's order.
#: The bundled prompt each grader kind fills (roles/decoevo.py).
GRADER_TEMPLATES = {"gold_rubric": "judge_gold_rubric", "healthbench": "healthbench_grader"}

PAPER: list[PaperSetting] = [
    PaperSetting("roles.backbone.model", "GPT-4o | Qwen3-4B | Qwen3-8B",
                 "another backbone: the paper's numbers (Table 1) are for these three only",
                 matches=model_named(*BACKBONES)),
    PaperSetting("data.source", "HealthBench | WritingBench | ResearchQA (writingbench:PATH or your file)",
                 "not one of the paper's source benchmarks: results are not comparable to Table 1",
                 matches=_paper_source),
    PaperSetting("data.filter_queries", False,
                 "the paper uses each benchmark as published; query filtering drops questions",),
    PaperSetting("data.limit", None, "only the first rows of the benchmark are used"),
    PaperSetting("partitions.sizes", {},
                 "partitions capped below their share of the benchmark: fewer test and gate "
                 "questions, a noisier final score and noisier gates",
                 matches=lambda sizes: not sizes),
    PaperSetting("methods", ALL_METHODS,
                 "the paper compares all four methods on the same splits and budgets",
                 matches=_all_methods),
    PaperSetting("seeds", "5 matched seeds",
                 "the paper reports mean ± sd and a 95% CI over five matched end-to-end runs",
                 matches=_five_distinct),
    PaperSetting("roles.judge.sampling.scoring", "sampled",
                 "the paper's criterion-level judge returns satisfied / not satisfied per criterion; "
                 "`expected` weights each verdict by its token probability (a fractional score)"),
    PaperSetting("roles.auditor.sampling.scoring", "sampled",
                 "the paper's structural auditor returns an adequacy score; `expected` replaces it "
                 "with a probability-weighted mean"),
    PaperSetting("roles.grader.sampling.scoring", "sampled",
                 "each benchmark's official scalar metric is the grade written; `expected` is not "
                 "the official metric"),
    PaperSetting("roles.solver.sampling.rollout.temperature", "> 0 (stochastic rollouts)",
                 "greedy rollouts give m identical answers: the near-tie audit finds no pair",
                 matches=lambda t: isinstance(t, (int, float)) and t > 0),
    # Not a setting of the paper but a change to its acceptance rule: the judge audit itself
    # (`audit.enabled`, `audit.prompts`) only observes and is no departure.
    PaperSetting("audit.gate", False,
                 "a rubric-generator update that its rule accepts is refused when the judge audit flags "
                 "its grading for master keys; the paper accepts by the Pareto rule (or SC-CoEvo's) alone",
                 applies=lambda config: bool({"sc_coevo", "decoevo"} & set(config.methods))),
    # The paper's scoring roles are the frozen backbone; code standing for one (checkable.py)
    # is another judge, however well it checks what it checks.
    PaperSetting("roles.judge.scorer", None,
                 "the criterion-level judge is code, not the frozen backbone: its verdicts check what the code "
                 "can check (e.g. a question's stated requirements) and pass the rest"),
    PaperSetting("roles.auditor.structural_scorer", None,
                 "the structural auditor is code, not the frozen backbone with the task family's audit spec"),
    PaperSetting("roles.auditor.preference_scorer", None,
                 "the near-tie audit's rubric-blind preference is code, not the frozen backbone (its "
                 "explanation stage still is the backbone)"),
    # The paper does not say what happens to a rewrite that is not a skill: a check of its
    # form is shown beside the paper's settings, never counted as a departure.
    PaperSetting("skill_form.enabled", "not stated (its rewriters are asked for skills)",
                 "a rewrite under skill_form.min_words words, or with no instruction in it, is refused "
                 "before its gate", matches=lambda here: True),
    PaperSetting("roles.grader.kind", "healthbench",
                 "HealthBench's official metric grades each criterion met or not with its signed points "
                 "(points met over positive points); 1-10 grades per criterion are another metric",
                 applies=lambda config: str(config.data.source).startswith("healthbench:")),
    judge_output_setting("roles.judge.output", None),
    PaperSetting("roles.grader.prompt", "each benchmark's official grader prompt (Setup)",
                 "the final grade comes from coevo's prompt (the Table-8-style gold-rubric prompt, or "
                 "HealthBench's written from its description), not the benchmark's own: grade the final "
                 "skills' answers with the official harness for the paper's numbers",
                 here_of=lambda config: f"coevo's {GRADER_TEMPLATES[config.roles.grader.kind]} prompt",
                 matches=lambda here: False, settable=False),
    PaperSetting("roles.grader.scale", "the official scalar metric, linearly mapped to a common range where needed",
                 "another mapping of the grade", here_of=lambda config: "points met over positive points, in [0, 1]"
                 if config.roles.grader.kind == "healthbench" else "1-10 grades mapped to [0, 1] as (g - 1) / 9",
                 matches=lambda here: True),
    *thinking_settings("backbone", "grader"),
]

GRADER_WHY = ("the backbone grades its own test answers: the paper scores them with each benchmark's "
              "official grader, separate from the training-time judge")


def grader_departure(config: Any) -> Departure | None:
    """The grader row: the paper's final grader is each benchmark's own, never the backbone
    that fills the optimisation roles (unset `roles.grader.model` means the backbone grades)."""
    from coevo.algorithms.decoevo.loop import grades_itself

    grader = config.roles.grader.model
    if not grades_itself(config):
        return None
    return Departure(setting="roles.grader.model", paper="the benchmark's own grader",
                     here=grader if grader is not None else f"{config.roles.backbone.model} (the backbone)",
                     why=GRADER_WHY)


def settings(config: Any) -> list[SettingRow]:
    """Every row of the paper's table beside `config`'s value, the grader's last."""
    grader = grader_departure(config)
    here = grader.here if grader is not None else config.roles.grader.model
    return setting_rows(config, PAPER) + [SettingRow(setting="roles.grader.model", paper="the benchmark's own grader",
                                                     here=here, departs=grader is not None, why=GRADER_WHY)]


def departures(config: Any) -> list[Departure]:
    """Every setting where `config` (a DecoEvoConfig) is not the paper, the grader included."""
    found = find_departures(config, PAPER)
    grader = grader_departure(config)
    return found + ([grader] if grader is not None else [])


def plan(config: Any) -> RunPlan:
    """What a DecoEvo run will do, without loading a model.

    `data` holds `total` (samples read), `partitions` (ids per partition, in the run's
    order), `sizes`, `held_out` (the test ids, the only ones the final score uses) and
    `lacking_gold_rubric` (test / diagnostic ids without one: the run refuses them).
    """
    from coevo.algorithms.decoevo.config import PARTITIONS
    from coevo.algorithms.decoevo.data import make_partitions
    from coevo.tasks.loaders import load_samples

    missing: list[str] = []
    samples = read_data(lambda: load_samples(config.data.source, columns=config.data.columns or None,
                                             limit=config.data.limit), config.data.source, missing)
    if samples is None:  # the benchmark the user brings is not here: stages without sizes
        parts: dict[str, list] = {name: [] for name in PARTITIONS}
        data: dict[str, Any] = {"source": config.data.source, "total": None, "partitions": None,
                                "sizes": None, "held_out": None}
        lacking: list[str] = []
    else:
        parts = make_partitions(samples, config.partitions)
        lacking = [s.id for name in ("test", "diagnostic") for s in parts[name]
                   if s.rubric is None or not s.rubric.criteria]
        data = {"total": len(samples),
                "partitions": {name: [s.id for s in parts[name]] for name in PARTITIONS},
                "sizes": {name: len(parts[name]) for name in PARTITIONS},
                "held_out": [s.id for s in parts["test"]],
                "lacking_gold_rubric": lacking}
    grader_spec = config.roles.grader.model or config.roles.backbone.model
    roles = [role("backbone", config.roles.backbone.model, trained=False,
                  options=config.roles.options_for("backbone")),
             role("grader", grader_spec, trained=False, options=config.roles.options_for("grader"))]
    notes = missing + _notes(config, parts, lacking)
    return RunPlan(algorithm="decoevo", data=data, stages=_stages(config, parts), roles=roles,
                   departures=departures(config), settings=settings(config), notes=notes)


def _stages(config: Any, parts: dict[str, list]) -> list[PlanStage]:
    """Per seed, per method: the inner steps, the outer steps, the diagnostic points, the test."""
    from coevo.algorithms.decoevo.loop import METHOD_POLICIES

    steps, gate, diag = config.inner_steps, len(parts["solver_gate"]), len(parts["diagnostic"])
    scheduled = sum(1 for t in range(1, steps) if t % config.k == 0)  # without stalls
    stages = []
    for seed in config.seeds:
        for method in config.methods:
            policy, prefix = METHOD_POLICIES[method], f"seed{seed}/{method}"
            if policy.inner:
                stages.append(PlanStage(
                    name=f"{prefix}/inner", kind="edit", role="backbone", items=steps,
                    note=f"{steps} solver steps: {min(config.batch_size, len(parts['train']))} train "
                         f"questions each, solver gate on {gate} questions (margin delta={config.delta:g})"))
            if policy.outer and steps > 1:
                stages.append(PlanStage(
                    name=f"{prefix}/outer", kind="edit", role="backbone", items=None,
                    note=f"generator audits on {len(parts['probe'])} probe questions (m={config.m} rollouts, "
                         f"P<={config.max_pairs} near-ties), verified on {len(parts['generator_gate'])} gate "
                         f"questions; every k={config.k} steps ({scheduled} if no stall) or after "
                         f"s={config.s} rejections (decided at run time)"))
            if diag:
                stages.append(PlanStage(name=f"{prefix}/diagnostic", kind="evaluate", role="grader",
                                        items=diag * (steps + 1),
                                        note=f"{diag} questions at steps 0..{steps}, proxy vs gold (post hoc)"))
            stages.append(PlanStage(name=f"{prefix}/test", kind="evaluate", role="grader",
                                    items=len(parts["test"]), note="final solver skill, gold rubrics"))
    return stages


def _notes(config: Any, parts: dict[str, list], lacking: list[str]) -> list[str]:
    notes = []
    if config.data.filter_queries:
        notes.append("data.filter_queries is on: the query filter grades every row before partitioning "
                     "(one backbone call per row); the partitions above are before that filter")
    if lacking:
        notes.append(f"{len(lacking)} test/diagnostic sample(s) have no gold rubric (e.g. {lacking[:3]}): "
                     "the run will refuse them; map a rubric column or use writingbench:PATH")
    if config.roles.grader.model is None:
        notes.append("roles.grader.model is unset: the backbone grades its own test answers (a departure)")
    notes.append("bring: the benchmark file (e.g. WritingBench's JSONL as writingbench:PATH) and its official "
                 "grader model as roles.grader.model; the paper's transfer benchmarks (LLMEval-Med, EQ-Bench "
                 "Creative Writing v3) are scored afterwards with `coevo eval skill` on the final solver skill (no updates)")
    notes.append("the paper picks its schedule (k, s, m, P, margins) on the pilot partition; coevo leaves "
                 f"the {len(parts['pilot'])} pilot questions unused by the run, for the user's own tuning")
    return notes


def estimate(config: Any, plan: RunPlan) -> tuple[list[CallEstimate], list[TrainingEstimate], list[str]]:
    """The model calls (per stage and role) a run of `config` will make, counted from the config
    and `plan` (the RunPlan that `plan(config)` in this module returns: its data sizes and
    stages), without loading any model; notes: what could not be counted. DecoEvo trains no
    weights: the training list is empty. The counting: decoevo/estimate.py."""
    from coevo.algorithms.decoevo.estimate import count_calls

    calls, notes = count_calls(config, plan)
    return calls, [], notes


__all__ = ["BACKBONES", "GRADER_WHY", "PAPER", "departures", "estimate", "grader_departure", "plan"]
