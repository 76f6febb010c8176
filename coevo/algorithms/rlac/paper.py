"""The RLAC paper's settings, the departures of a config from them, and `coevo plan` for RLAC.

`PAPER_FACTS` (§4.1: biographies, FactScore) and `PAPER_CODE` (§4.2: AceCode-87K-hard,
HumanEval) hold every setting the paper gives, each as a dotted `RlacConfig` path.
`examples/rlac_bio_full.yaml` and `examples/rlac_code_full.yaml` are those settings, so
`departures` of either is empty; the tiny configs list theirs. What the paper leaves open
(learning rate, β, batch sizes, token limits, temperatures, pairs per instruction) is in no
table: the full configs say so in a comment.

The paper's conditions are switches, not departures: `verification: enumerative`
(FactTune-FS / AceCoder-Rule), `verification: reward_model` (ArmoRM / AceCoder-RM),
`critic_training: static` and `validator: random` (Table 2's ablations).
"""

from __future__ import annotations

import functools
from typing import Any

from coevo.algorithms.rlac.stages import STAGE, round_stage
from coevo.settings.departures import Departure, PaperSetting, SettingRow, find_departures, judge_output_setting, \
    model_named, setting_rows, thinking_settings
from coevo.plan.planning import PlanStage, RunPlan, role, source_missing

_BUNDLED = ("bundled:bios", "humaneval", "bundled:humaneval", "bundled:code_easy")


def _brought(source: Any) -> bool:
    """A data source the user brought (a file), not one bundled with coevo."""
    return isinstance(source, str) and bool(source.strip()) and source.strip() not in _BUNDLED


def _reward_model_runs(config: Any) -> bool:
    return config.verification == "reward_model"


def _paper_critic_form(config: Any) -> bool:
    # The schema form has its own prompt (critic_*_schema); `critic_form` is then the listed
    # departure, and its template is not listed again.
    return config.critic_form == "paper"


#: Table 1's rounds per setting: its RLAC verification calls over 120 people x 10 outputs x 4
#: proposals (4,800 a round), by (backbone, sentences).
TABLE1_ITERATIONS = {("Qwen3-4B", 4): 12, ("Qwen3-4B", 8): 10, ("Qwen3-8B", 4): 8, ("Qwen3-8B", 8): 16}


def table1_iterations(config: Any) -> int:
    """The rounds Table 1 trained this config's backbone at its length (Qwen3-8B's where the
    backbone or length is another: Fig. 2's setting)."""
    backbone = "Qwen3-4B" if model_named("Qwen3-4B")(config.roles.generator.model) else "Qwen3-8B"
    return TABLE1_ITERATIONS.get((backbone, config.data.sentences), TABLE1_ITERATIONS[("Qwen3-8B", 8)])


#: §4.1 and Table 1 (factual biographies). Table 1 runs Qwen3-4B and Qwen3-8B at 4 and 8
#: sentences; the headline (Fig. 2) is Qwen3-8B at 8 sentences, so either model and either
#: length is the paper.
PAPER_FACTS: list[PaperSetting] = [
    PaperSetting("roles.generator.model", "Qwen3-8B (or Qwen3-4B)",
                 "§4.1: the generator starts from Qwen3-4B / Qwen3-8B; another model is another experiment",
                 matches=model_named("Qwen3-8B", "Qwen3-4B")),
    PaperSetting("roles.critic.model", "Qwen3-8B (or Qwen3-4B), the generator's backbone",
                 "§4.1: generator and critic start from the same backbone 'to ensure fairness'",
                 matches=model_named("Qwen3-8B", "Qwen3-4B")),
    PaperSetting("k", 10, "§4.1: 10 outputs per prompt; fewer outputs give fewer and less diverse pairs"),
    PaperSetting("n", 4, "§4.1: 4 critic proposals per output; fewer give the critic fewer pairs"),
    PaperSetting("iterations", 16, "Table 1's verification calls are 120 people x k=10 outputs x n=4 proposals "
                 "a round: 57,600 / 48,000 / 38,400 / 76,800 calls are 12 / 10 / 8 / 16 rounds for Qwen3-4B at 4 / 8 "
                 "sentences and Qwen3-8B at 4 / 8 (Fig. 2's 8B, 8 sentences: 16); fewer rounds stop before the "
                 "critic's two-phase dynamics (Fig. 2a)", paper_of=table1_iterations),
    PaperSetting("data.source", "Wikipedia pages of the 170 WikiBio people (FactScore's knowledge source)",
                 "§4.1 / App. B.1: facts are checked against Wikipedia; the bundled corpus is a few pages",
                 matches=_brought),
    PaperSetting("data.train", 120, "§4.1: 120 training people of 170"),
    PaperSetting("data.heldout", 50, "§4.1: 50 test people; fewer make FactScore a noisier estimate"),
    PaperSetting("data.sentences", 8, "§4.1 / Table 1: 'exactly four' or 'eight' sentences; other lengths "
                 "are not in the paper", matches=lambda n: n in (4, 8)),
    PaperSetting("critic_form", "paper", "App. A.2: the critic answers the paper's free-text prompt "
                 "(reason / sentence / error_fact); `schema` fixes the form by a grammar instead"),
    PaperSetting("roles.generator.template", "generator_bio",
                 "App. A.1: the instructions in a system message, 'Write a biography of {topic}.' as the "
                 "user message; another prompt asks the generator something else"),
    PaperSetting("roles.critic.template", "critic_fact",
                 "App. A.2: the answer format in a system message, the example and the paragraph in the user "
                 "message; another prompt asks the critic something else", applies=_paper_critic_form),
    PaperSetting("facts.judge", "llm", "App. B.1: FactScore's model-based verification; `hybrid`/`lexical` "
                 "gate or replace it by word overlap"),
    judge_output_setting("facts.judge_output", "FactScore's free-form True/False answer (App. B.1)",
                         applies=lambda config: config.facts.judge != "lexical"),
    PaperSetting("facts.passages", "not stated (FactScore retrieves 5 passages per fact)",
                 "the paper does not say how many passages each fact is checked against", matches=lambda here: True),
    PaperSetting("facts.min_overlap", "not stated (App. B.1 names no word-overlap floor for the authenticity check)",
                 "the paper does not say how a claimed wrong fact is matched to its sentence",
                 matches=lambda here: True),
    PaperSetting("facts.atomic_facts", "llm", "§4.1: FactScore's atomic facts (model-split); `sentences` "
                 "counts sentences as facts, which changes FactScore and the enumerative cost"),
    PaperSetting("reward_model", "hf:RLHFlow/ArmoRM-Llama3-8B-v0.1",
                 "§4.1: the reward-model baseline is ArmoRM; another scorer is another baseline",
                 matches=model_named("ArmoRM-Llama3-8B-v0.1"), applies=_reward_model_runs),
    # coevo's own estimator, not the FactScore package: it departs, and no setting changes that.
    PaperSetting("evaluation.evaluator", "FactScore precision of the held-out biographies (§4.1, App. B.1): the "
                 "FactScore package (Min et al., 2023; retrieval from Wikipedia, its own judge)",
                 "a FactScore reimplemented here: numbers close to, not the same as, the package's; score the "
                 "saved checkpoints with the package for Table 1's",
                 here_of=lambda config: "coevo's FactScore: precision of the atomic facts the facts validator's "
                 f"splitter takes ({config.facts.atomic_facts}), each judged supported by the run's judge "
                 f"({config.facts.judge}) over {config.facts.passages} BM25-retrieved passages of data.source",
                 matches=lambda here: False, settable=False),
    *thinking_settings("generator", "critic", "judge"),
]

#: §4.2 and Table 3 (code). The paper evaluates on HumanEval(+), MBPP(+), BigCodeBench and
#: LiveCodeBench; coevo's held-out metric is pass@1 on HumanEval (docs/rlac.md).
PAPER_CODE: list[PaperSetting] = [
    PaperSetting("roles.generator.model", "Qwen2.5-Coder-7B (Base or Instruct)",
                 "§4.2 / Table 3: the generator starts from Qwen2.5-Coder-7B-Base or -Instruct",
                 matches=model_named("Qwen2.5-Coder-7B", "Qwen2.5-Coder-7B-Instruct")),
    PaperSetting("k", 8, "§4.2: k=8 outputs per prompt (AceCoder's setting)"),
    PaperSetting("n", 2, "§4.2: n=2 critic proposals per output"),
    PaperSetting("iterations", 3, "§4.2 / Fig. 4: three rounds"),
    PaperSetting("data.source", "AceCode-87K-hard with reference solutions (App. B.2)",
                 "§4.2: training problems come from AceCode-87K-hard, with references written by "
                 "Qwen2.5-Coder-7B-Instruct and kept when they pass the tests", matches=_brought),
    PaperSetting("data.train", 2000, "§4.2: 2k problems sampled at random from AceCode-87K-hard"),
    PaperSetting("data.heldout_source", "humaneval",
                 "§4.2 / Table 3: evaluation is on benchmarks, never on training problems",
                 matches=lambda s: s in ("humaneval", "bundled:humaneval")),
    PaperSetting("data.heldout", 164, "Table 3: the whole HumanEval (164 problems)"),
    PaperSetting("critic_form", "paper", "App. A.2: the critic answers the paper's <think>/<testcase> "
                 "prompt; `schema` fixes the form (one call's arguments) by a grammar instead"),
    PaperSetting("roles.generator.template", "generator_code",
                 "App. A.1: the AceCode-87K-hard problem statement unmodified, as the only (user) message; "
                 "generator_code_instructed adds an instruction to answer in one ```python block (a 135M "
                 "model needs telling), so the generator is asked more than the problem"),
    PaperSetting("roles.critic.template", "critic_code",
                 "App. A.2: the role and <think>/<testcase> rule in a system message, the problem and code "
                 "in the user message; another prompt asks the critic something else",
                 applies=_paper_critic_form),
    PaperSetting("reward_model", "hf:TIGER-Lab/AceCodeRM-7B",
                 "§4.2: the reward-model baseline is AceCodeRM-7B; another scorer is another baseline",
                 matches=model_named("AceCodeRM-7B"), applies=_reward_model_runs),
    PaperSetting("evaluation.evaluator", "pass@1 on HumanEval(+), MBPP(+), BigCodeBench and LiveCodeBench "
                 "with their tests (Table 3)", "only the held-out set's own tests run (HumanEval's): Table 3's "
                 "plus-tests and other benchmarks need their harnesses on the saved checkpoints",
                 here_of=lambda config: f"pass@1 on {config.data.heldout_source} with its own tests, in coevo's "
                 "sandbox", matches=lambda here: False, settable=False),
    PaperSetting("code.executions", "two runs per critic proposal: the proposed test on the reference solution, "
                 "then on the output (App. B.2; Table 3's 192K = 2,000 x 8 x 2 x 3 proposals x 2)",
                 "another number of executions per critic proposal",
                 here_of=lambda config: "2 sandboxed runs per proposal, reference then output, each counted (a "
                 f"reference run answered from the validator's cache counts too), {config.code.timeout_s:g} s at most",
                 matches=lambda here: True),
    PaperSetting("validator.output", "no judge: the validator runs the critic's test case (App. B.2)",
                 "the code domain has no judge to answer in any format",
                 here_of=lambda config: "no judge: proposed tests run in the sandbox", matches=lambda here: True),
    *thinking_settings("generator", "critic"),
]

PAPER: dict[str, list[PaperSetting]] = {"facts": PAPER_FACTS, "code": PAPER_CODE}


def settings(config: Any) -> list[SettingRow]:
    """Every row of the paper's table of `config`'s task beside `config`'s value."""
    return setting_rows(config, PAPER[config.task])


def departures(config: Any) -> list[Departure]:
    """Every way `config` is not the RLAC paper: the table of its task, then what no setting
    expresses (the code baselines' training data and method) where that baseline runs."""
    found = find_departures(config, PAPER[config.task])
    if config.task == "code" and config.verification != "critic":
        name = "AceCoder-Rule" if config.verification == "enumerative" else "AceCoder-RM"
        found.append(Departure(
            setting="verification", paper=f"{name}: RL over all ~22K AceCode-87K-hard problems",
            here=f"DPO on the same {config.data.train} problems as RLAC, with its pair budget",
            why="§4.2 trains the AceCoder baselines on 11x RLAC's data; here every method gets the same "
                "problems and pairs, so the comparison is of methods, not data"))
    return found


# --------------------------------------------------------------------------- plan


def plan(config: Any) -> RunPlan:
    """What an RLAC run will do, told without loading a model.

    `data`: `source` / `heldout_source`, `train` and `held_out` (sample ids after the split),
    `train_size` / `held_out_size`; when the source is not on this machine the id lists are
    empty and a note says what to bring. `stages`: round 0's baseline evaluation, then per
    iteration generate → (critic proposals → validate | check every fact/test | reward-model
    scores) → generator DPO → critic DPO (adversarial only) → evaluate.
    """
    from coevo.algorithms.rlac.data import split_data
    from coevo.tasks.loaders import DataError

    notes: list[str] = []
    data: dict[str, Any] = {"source": config.data.source, "heldout_source": config.data.heldout_source}
    try:
        train, heldout = split_data(config)
    except (DataError, OSError, ImportError) as exc:
        if not (source_missing(config.data.source) or source_missing(config.data.heldout_source or "humaneval")):
            raise  # the data is here but unreadable: the run would fail on it, so the plan does
        train, heldout = [], []
        notes.append(f"data not available here ({exc}); {_bring(config)}")
    data.update(train=[s.id for s in train], held_out=[s.id for s in heldout],
                train_size=len(train), held_out_size=len(heldout))
    n_train, n_heldout = len(train) or config.data.train, len(heldout) or config.data.heldout
    if config.verification == "critic":
        data["verifications"] = _verifications(config, n_train)
        notes.append(f"verification: {data['verifications']['total']:,} {data['verifications']['unit']} over "
                     f"{config.iterations} iteration(s) ({data['verifications']['per_proposal']} a critic proposal)")
    critic_trains = config.critic_training == "adversarial" and config.verification == "critic"
    stages = [PlanStage(name=round_stage(0, "evaluate", prefix=STAGE), kind="evaluate", round=0,
                        role="generator", items=n_heldout, note=_metric_note(config)),
              *_detection(config, 0, n_heldout)]
    for r in range(1, config.iterations + 1):
        stages += _iteration(config, r, n_train, n_heldout, critic_trains)
    roles = [role("generator", config.roles.generator.model, trained=True,
                  options=config.roles.options_for("generator"), generates_on=config.generator_engine)]
    if config.verification == "critic":
        roles.append(role("critic", config.roles.critic.model, trained=critic_trains,
                          options=config.roles.options_for("critic"), generates_on=config.critic_engine))
    if config.task == "facts" and not (config.facts.judge == "lexical" and config.facts.atomic_facts == "sentences"):
        roles.append(role("judge", config.roles.judge.model, trained=False,
                          options=config.roles.options_for("judge")))
    if config.verification == "reward_model":
        roles.append(role("reward_model", config.reward_model, trained=False))
    from coevo.algorithms.rlac.audit import plan_note

    audit = plan_note(config)
    if audit:
        notes.append(audit)
    if config.task == "code":
        notes.append("held-out metric: pass@1 on data.heldout_source with its reference tests; the paper's "
                     "HumanEval+, MBPP(+), BigCodeBench and LiveCodeBench are not run (docs/rlac.md)")
    return RunPlan(algorithm="rlac", data=data, stages=stages, roles=roles, departures=departures(config),
                   settings=settings(config),
                   notes=notes)


def _verifications(config: Any, n_train: int) -> dict[str, Any]:
    """The run's verifications in the paper's unit: every output's N proposals each round, each
    1 validator call (facts) or 2 sandbox executions (code: reference and output, App. B.2)."""
    per = 2 if config.task == "code" else 1
    return {"unit": "executions" if config.task == "code" else "validator calls", "per_proposal": per,
            "total": n_train * config.k * config.n * config.iterations * per}


def _iteration(config: Any, r: int, n_train: int, n_heldout: int, critic_trains: bool) -> list[PlanStage]:
    outputs = n_train * config.k
    budget = f"at most {n_train * config.max_pairs_per_instruction} pairs ({config.max_pairs_per_instruction} " \
             "per instruction, the same budget for every method)"
    # The plan's stage names, as the stage runner's (`rlac/round<r>/<step>`).
    name = functools.partial(round_stage, r, prefix=STAGE)
    stages = [PlanStage(name=name("generate"), kind="generate", round=r, role="generator",
                        items=outputs, note=f"K={config.k} outputs for each of {n_train} instructions")]
    if config.verification == "critic":
        n = config.n  # trained or static alike (§4.1: N per output for every method)
        stages += [
            PlanStage(name=name("critic"), kind="generate", round=r, role="critic", items=outputs * n,
                      note=f"{n} proposal(s) per output"),
            PlanStage(name=name("validate"), kind="validate", round=r, items=outputs * n,
                      note="validator: random labels (ablation)" if config.validator == "random"
                      else "code validator, 2 sandbox runs per proposal (reference, output)" if config.task == "code"
                      else "facts validator, one call per proposal"),
        ]
    elif config.verification == "enumerative":
        unit = "atomic fact" if config.task == "facts" else "reference test"
        stages.append(PlanStage(name=name("enumerate"), kind="validate", round=r, items=None,
                                note=f"every {unit} of every output (count known at run time)"))
    else:
        stages.append(PlanStage(name=name("reward_model"), kind="judge", round=r, role="reward_model",
                                items=outputs, note="one scalar reward per output"))
    stages.append(PlanStage(name=name("generator"), kind="dpo", round=r, role="generator", note=budget))
    if critic_trains:
        stages.append(PlanStage(name=name("critic_dpo"), kind="dpo", round=r, role="critic",
                                note=f"at most {config.max_pairs_per_output} pairs per output"))
    stages.append(PlanStage(name=name("evaluate"), kind="evaluate", round=r, role="generator",
                            items=n_heldout, note=_metric_note(config)))
    return stages + _detection(config, r, n_heldout)


def _detection(config: Any, r: int, n_heldout: int) -> list[PlanStage]:
    """The critic's detection rate on the fixed failing held-out outputs after round r
    (round 0: the base critic, after the set is drawn); none where it is off or no critic proposes."""
    if not config.detection.enabled or config.verification != "critic":
        return []
    most = min(n_heldout * config.detection.samples, config.detection.max_outputs)
    drawn = (f"the base generator's {config.detection.samples} samples per held-out instruction, "
             "the failing ones kept; " if r == 0 else "")
    return [PlanStage(name=round_stage(r, "detection", prefix=STAGE), kind="evaluate", round=r, role="critic",
                      items=most * config.n, note=f"{drawn}the critic's {config.n} proposals on each of at most "
                      f"{most} fixed failing outputs (not in the paper: a measurement)")]


def _metric_note(config: Any) -> str:
    return "FactScore precision of greedy outputs" if config.task == "facts" else "pass@1 of greedy outputs"


def _bring(config: Any) -> str:
    if config.task == "facts":
        return ("bring a JSONL of {title, text} rows: the Wikipedia pages of the 170 WikiBio people "
                "(FactScore's knowledge source), as data.source")
    return ("bring AceCode-87K-hard as JSONL {id, prompt, entry_point, reference, tests} rows (references "
            "written by Qwen2.5-Coder-7B-Instruct and kept when they pass the tests, App. B.2), as data.source")


def estimate(config: Any, plan: RunPlan) -> Any:
    """The model calls and DPO stages a run of `config` will make, and notes on what was
    guessed (rlac/estimate.py); counted without loading a model."""
    from coevo.algorithms.rlac.estimate import estimate as count

    return count(config, plan)


__all__ = ["PAPER", "PAPER_CODE", "PAPER_FACTS", "departures", "estimate", "plan"]
