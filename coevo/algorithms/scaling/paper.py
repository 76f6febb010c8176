"""The settings of TAIScore's controlled zero-shot analysis (`../shared/seeds/000_*`: §3.1,
Figure 1, Appendix A, Table 5; prompts Tables 6-9), where a config departs from them, and
`coevo plan`. The paper states no decoding for this analysis, so none is in the table
(`examples/scaling_full.yaml` says so in a comment)."""

from __future__ import annotations

from typing import Any

from coevo.algorithms.scaling.cells import comparisons, grid_cells, short_name
from coevo.algorithms.scaling.config import COLUMN
from coevo.settings.departures import Departure, PaperSetting, SettingRow, find_departures, judge_output_setting, \
    model_named, setting_rows, thinking_settings
from coevo.plan.planning import PlanRole, PlanStage, RunPlan, read_data, role

#: Table 5's critic-scaling rows: (setting = the self-refining actor, smaller critic, larger critic).
PAPER_CRITIC_ROWS = (
    ("Qwen3-4B", "Qwen3-8B", "Qwen3-32B"), ("Qwen3-8B", "Qwen3-8B", "Qwen3-32B"),
    ("Qwen3-32B", "Qwen3-8B", "Qwen3-32B"), ("Llama-3.2-3B", "Llama-3.1-8B", "Llama-3.3-70B"),
    ("Llama-3.1-8B", "Llama-3.1-8B", "Llama-3.3-70B"),
)
#: Table 5's refiner-scaling rows: (y0 from, critique from, smaller refiner, larger refiner).
PAPER_REFINER_ROWS = (
    ("Qwen3-4B", "Qwen3-32B", "Qwen3-4B", "Qwen3-32B"), ("Qwen3-8B", "Qwen3-32B", "Qwen3-8B", "Qwen3-32B"),
    ("Llama-3.2-3B", "Llama-3.3-70B", "Llama-3.2-3B", "Llama-3.3-70B"),
    ("Llama-3.1-8B", "Llama-3.3-70B", "Llama-3.1-8B", "Llama-3.3-70B"),
)


def _is(name: str, spec: str) -> bool:
    return model_named(name, name + "-Instruct")(spec)


def _critic_rows(config: Any) -> list[dict[str, Any]]:
    """The config's critic-scaling comparisons: (self-refiner, smaller critic, larger critic)."""
    return [{"setting": c.setting, "actor": c.larger.refiner, "critics": [c.smaller.critic, c.larger.critic]}
            for c in comparisons(config) if c.kind == "critic"]


def _refiner_rows(config: Any) -> list[dict[str, Any]]:
    """The config's refiner-scaling comparisons: (y0 from, critique from, smaller and larger refiner)."""
    return [{"setting": c.setting, "y0_from": c.smaller.y0, "critique_from": c.smaller.critic,
             "refiners": [c.smaller.refiner, c.larger.refiner]} for c in comparisons(config) if c.kind == "refiner"]


def _has_critic_rows(here: list[dict[str, Any]]) -> bool:
    return all(any(_is(a, r["actor"]) and _is(s, r["critics"][0]) and _is(b, r["critics"][1]) for r in here)
               for a, s, b in PAPER_CRITIC_ROWS)


def _has_refiner_rows(here: list[dict[str, Any]]) -> bool:
    return all(any(_is(y, r["y0_from"]) and _is(c, r["critique_from"]) and _is(s, r["refiners"][0])
                   and _is(b, r["refiners"][1]) for r in here) for y, c, s, b in PAPER_REFINER_ROWS)


def _gold_here(config: Any) -> str:
    spec = config.roles.gold.model or config.roles.judge.model
    return spec if spec.startswith("python:") else f"{spec} with coevo's gold-rubric prompt"


PAPER: list[PaperSetting] = [
    PaperSetting("data.source", "WritingBench's official evaluation set (writingbench:FILE)",
                 "other prompts: Table 5's numbers are WritingBench's (App. A)",
                 matches=lambda here: str(here).startswith("writingbench:")),
    PaperSetting("data.limit", 1000, "another number of examples (App. A: the same 1,000 for every comparison)"),
    PaperSetting("critic_scaling", [f"{a}: {s} → {b}" for a, s, b in PAPER_CRITIC_ROWS],
                 "not every critic-scaling row of Table 5 (a row: its self-refiner and two critics, any engine)",
                 matches=_has_critic_rows, here_of=_critic_rows),
    PaperSetting("refiner_scaling", [f"{y} y0 + {c} critique: {s} → {b}" for y, c, s, b in PAPER_REFINER_ROWS],
                 "not every refiner-scaling row of Table 5 (a row: its y0, its critique and two refiners)",
                 matches=_has_refiner_rows, here_of=_refiner_rows),
    PaperSetting("roles.judge.model", "gpt-oss-120b", "another judge scores critique quality and adherence "
                 "(App. A: prompted gpt-oss-120B)", matches=model_named("gpt-oss-120b")),
    PaperSetting("roles.critic.template", "critic", "not Table 6's critique prompt"),
    PaperSetting("roles.actor.template", "reviser", "not Table 7's revision prompt"),
    PaperSetting("judge prompts", "Table 8 (critique quality: x, y0, c), Table 9 (adherence: x, y0, c, y1)",
                 "the judges' prompts", here_of=lambda config: "Table 8 (judge_critique_quality), Table 9 "
                 "(judge_adherence)", matches=lambda here: True),
    judge_output_setting("roles.judge.sampling.output", "unconstrained generation of the JSON Tables 8 and 9 ask for, "
                         "parsed after"),
    PaperSetting("roles.gold.model", "WritingBench's official evaluator", "S(y) is the gold-rubric judge (or a "
                 "python: scorer) under WritingBench's criteria, not the benchmark's own evaluator model",
                 here_of=_gold_here, matches=lambda here: False, settable=False),
    *thinking_settings("actor", "critic", "judge"),
]


def estimate(config: Any, plan: RunPlan) -> Any:
    """The calls of a run of `config` (scaling/estimate.py)."""
    from coevo.algorithms.scaling.estimate import estimate as count

    return count(config, plan)


def departures(config: Any) -> list[Departure]:
    """Every setting of `config` that is not the paper's (for scaling_full.yaml: only the
    evaluator, WritingBench's own, which coevo cannot run)."""
    return find_departures(config, PAPER)


def settings(config: Any) -> list[SettingRow]:
    """Every row of the paper's table beside `config`'s value."""
    return setting_rows(config, PAPER)


def plan(config: Any) -> RunPlan:
    """What `config` will do, without loading a model: its stages (one y0 per source, one
    critique per (y0, critic), one revision per cell), roles and departures."""
    from coevo.tasks.loaders import load_samples

    notes: list[str] = []
    samples = read_data(lambda: load_samples(config.data.source, columns=config.data.columns or None,
                                             limit=config.data.limit), config.data.source, notes)
    n = None if samples is None else len(samples)
    cells, found = grid_cells(config), comparisons(config)
    stages: list[PlanStage] = []
    for attribute, kind, role_name, note in (
            ("y0_stage", "generate", "actor", "S(y0): the gold score"),
            ("critique_stage", "generate", "critic", "critique quality judged (Table 8)"),
            ("revise_stage", "generate", "actor", "adherence judged (Table 9) and S(y1)")):
        for cell in cells:
            name = getattr(cell, attribute)
            if any(s.name == name for s in stages):
                continue
            read = attribute == "y0_stage" and cell.y0.startswith(COLUMN)
            stages.append(PlanStage(name=name, kind="judge" if read else kind, role="judge" if read else role_name,
                                    items=n, note=("y0 read from the data; " if read else "") + note))
    data = {"source": config.data.source, "rows": n, "ids": None if samples is None else [s.id for s in samples],
            "cells": len(cells), "comparisons": [f"{c.kind}: {c.setting}: {c.scaling}" for c in found]}
    return RunPlan(algorithm="scaling", data=data, stages=stages, roles=_roles(config, cells),
                   departures=departures(config), settings=settings(config), notes=notes)


def _roles(config: Any, cells: list[Any]) -> list[PlanRole]:
    roles: dict[str, PlanRole] = {}
    for cell in cells:
        for name, spec in (("actor", cell.y0), ("critic", cell.critic), ("actor", cell.refiner)):
            if not spec.startswith(COLUMN):
                roles.setdefault(f"{name}[{spec}]", role(f"{name}[{short_name(spec)}]", spec, trained=False,
                                                         options=config.roles.options_for(name)))
    out = list(roles.values()) + [role("judge", config.roles.judge.model, trained=False,
                                       options=config.roles.options_for("judge"))]
    if config.roles.gold.model:
        out.append(role("gold", config.roles.gold.model, trained=False, options=config.roles.options_for("gold")))
    return out


__all__ = ["PAPER", "departures", "estimate", "plan", "settings"]
