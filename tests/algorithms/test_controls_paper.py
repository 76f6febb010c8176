"""Table 3b at the paper's scale: `coevo plan examples/controls_full.yaml` shows the critique-content
controls' stages, settings, departures and calls (issue 56)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from coevo.algorithms.controls.paper import PAPER_CONDITIONS, departures
from coevo.cli import app
from coevo.settings.config import apply_overrides, read_yaml
from coevo.run.runner import resolve_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _plan(*overrides: str) -> dict:
    args = ["plan", str(EXAMPLES / "controls_full.yaml"), "--json"]
    for override in overrides:
        args += ["--set", override]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_full_controls_config_is_table_3b_but_for_what_no_setting_changes():
    made = _plan()
    assert made["algorithm"] == "controls" and made["data"]["conditions"] == PAPER_CONDITIONS
    assert [(d["setting"], d["settable"]) for d in made["departures"]] == [("generic critique", False),
                                                                          ("roles.judge.model", False)]
    assert [s["name"] for s in made["stages"]] == ["y0", "critiques", *(f"revise: {c}" for c in PAPER_CONDITIONS)]


def test_the_plan_counts_a_y0_a_critique_and_each_conditions_revision_and_judgment():
    made = _plan("data.source=bundled:writing", "data.limit=5")
    calls = {(c["stage"], c["role"]): c["calls"] for c in made["estimate"]["calls"]}
    assert calls[("y0", "actor")] == calls[("critiques", "critic")] == calls[("y0", "judge:gold_rubric")] == 5
    for condition in PAPER_CONDITIONS:
        assert calls[(f"revise: {condition}", "actor")] == calls[(f"revise: {condition}", "judge:gold_rubric")] == 5
    # Other prompts than WritingBench's are a departure a setting removes.
    assert any(d["setting"] == "data.source" and d["settable"] for d in made["departures"])


def test_dropping_a_condition_or_the_embedded_critic_departs():
    raw = apply_overrides(read_yaml(EXAMPLES / "controls_full.yaml"), ["conditions=[none, matched]",
                                                                       "roles.critic.model=smollm2"])
    found = {d.setting for d in departures(resolve_config(raw, "controls_full.yaml")[1])}
    assert {"conditions", "roles.critic.model"} <= found
