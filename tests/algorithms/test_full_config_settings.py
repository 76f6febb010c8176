"""Every full config's `coevo plan --json → settings` names how it is evaluated, how its
judges answer and whether its models think (issue 45's rows), and the full configs depart
only where no coevo setting can follow the paper."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coevo.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FULL = sorted(p.name for p in EXAMPLES.glob("*_full.yaml"))
#: Which row says how each full config is evaluated and how its judges answer.
EVALUATOR = {"decoevo_full.yaml": "roles.grader.prompt", "scaling_full.yaml": "roles.gold.model",
             "controls_full.yaml": "roles.judge.model"}
OUTPUT = {"decoevo_full.yaml": "roles.judge.output", "rlac_bio_full.yaml": "facts.judge_output",
          "rlac_code_full.yaml": "validator.output"}


def test_there_is_a_full_config_per_paper_part():
    assert {"taiscore_full.yaml", "taiscore_deepresearch_full.yaml", "rlac_bio_full.yaml", "rlac_code_full.yaml",
            "decoevo_full.yaml", "scaling_full.yaml"} <= set(FULL)


@pytest.mark.parametrize("name", FULL)
def test_a_full_configs_plan_lists_the_evaluator_the_judge_output_and_thinking(name):
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / name), "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    rows = {row["setting"]: row for row in made["settings"]}
    assert EVALUATOR.get(name, "evaluation.evaluator") in rows
    output = rows[OUTPUT.get(name, "roles.judge.sampling.output")]
    assert not output["departs"], output  # free where the paper's judges answer freely
    assert any(setting.endswith(".thinking") for setting in rows)
    assert all(not row["settable"] for row in made["departures"]), made["departures"]


#: What a row's `here` says when its value is coevo's own choice, not the paper's.
COEVOS_OWN = re.compile(r"\bcoevo's\b|\bwritten from\b|\bheuristic\b|\bestimator\b|\breimplement", re.IGNORECASE)


@pytest.mark.parametrize("name", FULL)
def test_a_row_whose_value_is_coevos_own_departs(name):
    made = json.loads(CliRunner().invoke(app, ["plan", str(EXAMPLES / name), "--json"]).stdout)
    faithful_but_ours = [(row["setting"], row["here"]) for row in made["settings"]
                         if not row["departs"] and COEVOS_OWN.search(str(row["here"]))]
    assert faithful_but_ours == []


def test_the_rule_catches_coevos_own_rows():
    # The rows this rule was written for: each says it is coevo's and departs.
    made = json.loads(CliRunner().invoke(app, ["plan", str(EXAMPLES / "rlac_bio_full.yaml"), "--json"]).stdout)
    [row] = [r for r in made["settings"] if r["setting"] == "evaluation.evaluator"]
    assert COEVOS_OWN.search(str(row["here"])) and row["departs"]
