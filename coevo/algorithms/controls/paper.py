"""The settings of TAIScore's critique-content controls (`../shared/seeds/000_*`: §5.3, Table 3b,
App. D.6, Table 12's generation settings), where a config departs from them, and `coevo plan`.

Table 3 holds WritingBench's prompts, the Qwen3-8B actor's y0, the Qwen3-8B reviser, the
revision prompt, the decoding and the evaluator fixed, and varies only the feedback: none, a
generic critique, a TAIScore critique of another example, the matched TAIScore critique.
`examples/controls_full.yaml` departs only where coevo cannot follow it (WritingBench's own
evaluator; the generic critique's wording, which the paper describes and does not print).
"""

from __future__ import annotations

from typing import Any

from coevo.settings.departures import Departure, PaperSetting, SettingRow, find_departures, judge_output_setting, \
    model_named, setting_rows, thinking_settings
from coevo.plan.planning import PlanRole, PlanStage, RunPlan, read_data, role

#: Table 3b's rows, in its order.
PAPER_CONDITIONS = ["none", "generic", "shuffled", "matched"]
#: The paper's actor and reviser (§5.1, Table 3).
ACTOR = "Qwen3-8B"


PAPER: list[PaperSetting] = [
    PaperSetting("data.source", "WritingBench's prompts (writingbench:FILE)", "other prompts: Table 3's numbers "
                 "are WritingBench's", matches=lambda here: str(here).startswith("writingbench:")),
    PaperSetting("roles.actor.model", ACTOR, "another actor writes y0 and revises (Table 3: the Qwen3-8B actor "
                 "before DPO, its reviser)", matches=model_named(ACTOR)),
    PaperSetting("roles.critic.model", "the TAIScore-trained critic (your checkpoint of examples/taiscore_full.yaml's "
                 "critic)", "another critic writes the shuffled and matched critiques",
                 matches=lambda here: not str(here).startswith(("smollm2", "python:"))),
    PaperSetting("conditions", PAPER_CONDITIONS, "not Table 3b's four feedback conditions"),
    PaperSetting("evaluator", "gold_rubric", "not the benchmark score S(y) (Table 3 reports S(y1) and Δ_WB)"),
    PaperSetting("roles.critic.template", "critic", "not Table 6's critique prompt"),
    PaperSetting("roles.actor.template", "reviser", "not Table 7's revision prompt"),
    PaperSetting("roles.actor.sampling.response.temperature", 0.8, "another y0 temperature (Table 12's rollout)"),
    PaperSetting("roles.actor.sampling.response.top_p", 0.95, "another y0 top-p (Table 12)"),
    PaperSetting("roles.actor.sampling.response.max_tokens", 4096, "another y0 length cap (Table 12)"),
    PaperSetting("roles.critic.sampling.temperature", 0.8, "another critique temperature (Table 12's rollout)"),
    PaperSetting("roles.critic.sampling.max_tokens", 4096, "another critique length cap (Table 12)"),
    PaperSetting("roles.actor.sampling.revision.temperature", 0.2, "another refiner temperature (Table 12)"),
    PaperSetting("roles.actor.sampling.revision.top_p", 0.95, "another refiner top-p (Table 12)"),
    PaperSetting("roles.actor.sampling.revision.max_tokens", 4096, "another refiner length cap (Table 12)"),
    PaperSetting("generic critique", "a fixed, prompt-agnostic critique asking for better correctness, clarity, "
                 "relevance and overall quality (App. D.6; its text is not printed)",
                 "another generic critique: the control's baseline moves with its wording",
                 here_of=lambda config: "coevo's generic_critique prompt, written from App. D.6's description",
                 matches=lambda here: False, settable=False),
    PaperSetting("roles.judge.model", "WritingBench's official evaluator (its critic model)",
                 "S(y) is the gold-rubric judge under WritingBench's criteria with coevo's gold-rubric prompt, not "
                 "the benchmark's own evaluator: score the saved revisions with it for Table 3's numbers",
                 here_of=lambda config: f"{config.roles.judge.model} with coevo's gold-rubric prompt",
                 matches=lambda here: False, settable=False),
    judge_output_setting("roles.judge.sampling.output", "the evaluator's own free answer, parsed after"),
    *thinking_settings("actor", "critic", "judge"),
]


def estimate(config: Any, plan: RunPlan) -> Any:
    """The calls of a controls run of `config` (controls/estimate.py)."""
    from coevo.algorithms.controls.estimate import estimate as count

    return count(config, plan)


def departures(config: Any) -> list[Departure]:
    """Every setting of `config` that is not Table 3b's."""
    return find_departures(config, PAPER)


def settings(config: Any) -> list[SettingRow]:
    """Every row of the paper's table beside `config`'s value."""
    return setting_rows(config, PAPER)


def plan(config: Any) -> RunPlan:
    """What `config` will do, without loading a model: y0 and its score, one critique per y0,
    then per condition one revision per y0 and its score (controls/loop.py)."""
    from coevo.tasks.loaders import load_samples

    notes: list[str] = []
    samples = read_data(lambda: load_samples(config.data.source, columns=config.data.columns or None,
                                             limit=config.data.limit), config.data.source, notes)
    n = None if samples is None else len(samples)
    judged = "gold-rubric judge" if config.evaluator == "gold_rubric" else "pairwise judge, both orders"
    stages = [PlanStage(name="y0", kind="generate", role="actor", items=n, note=f"initial responses; {judged}"),
              PlanStage(name="critiques", kind="generate", role="critic", items=n,
                        note="one critique per y0 (the shuffled and matched conditions' feedback)")]
    stages += [PlanStage(name=f"revise: {c}", kind="generate", role="actor", items=n, note=f"{judged} of y1")
               for c in config.conditions]
    if not any(c in config.conditions for c in ("shuffled", "matched")):
        notes.append("no condition reads the critic's critiques, but they are still written (one per y0)")
    notes.append("point roles.critic.model at the TAIScore-trained critic (a checkpoint of a taiscore run) and "
                 "roles.actor.model at the actor before DPO; every revision is kept (no preference filter)")
    data = {"source": config.data.source, "rows": n, "ids": None if samples is None else [s.id for s in samples],
            "conditions": list(config.conditions)}
    return RunPlan(algorithm="controls", data=data, stages=stages, roles=_roles(config),
                   departures=departures(config), settings=settings(config), notes=notes)


def _roles(config: Any) -> list[PlanRole]:
    return [role(name, getattr(config.roles, name).model, trained=False, options=config.roles.options_for(name))
            for name in ("actor", "critic", "judge")]


__all__ = ["PAPER", "PAPER_CONDITIONS", "departures", "estimate", "plan", "settings"]
