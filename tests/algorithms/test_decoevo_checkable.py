"""DecoEvo with checkable scoring (examples/decoevo_checkable.yaml) on a replay backbone: the
code judge and auditors stand in for the model roles, and the paper's mechanism shows:
SC-CoEvo takes a rubric generator whose rubrics are easier to satisfy (its proxy rises, the
gold does not), DecoEvo's structural audit refuses it; proxy and gold are kept per step."""

import json

import pytest
from decoevo_fakes import (
    COVERING_RUBRIC,
    EASY_GENERATOR_SKILL,
    SHORT_ANSWER,
    checkable_run_config,
)

from coevo.algorithms.decoevo import DecoEvoConfig
from coevo.algorithms.decoevo.backbone import build_decoevo_roles
from coevo.algorithms.decoevo.checkable import (
    CheckedContrastiveAuditor,
    CheckedCriterionJudge,
    CheckedStructuralAuditor,
)
from coevo.algorithms.decoevo.summary import TRAJECTORY_PLOT, MethodResult
from coevo.llm.base import ModelError
from coevo.llm.replay import ReplayModel
from coevo.roles.decoevo import CriterionJudge, RubricGenerator
from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore
from coevo.tasks.loaders import load_samples
from coevo.core.types import Sample


@pytest.fixture(scope="module")
def first():
    return load_samples("bundled:writing")[0]  # wp-001: max_words 350, include lantern + harbour


@pytest.fixture(scope="module")
def coupled_run(tmp_path_factory):
    """SC-CoEvo and DecoEvo, one seed, 2 inner steps, the solver never rewritten (so every
    change of the proxy comes from the rubric generator)."""
    folder = tmp_path_factory.mktemp("checkable")
    config = checkable_run_config(folder, methods=["sc_coevo", "decoevo"])
    summary = run_experiment(None, folder / "run", data=config)
    store = RunStore(folder / "run", read_only=True)
    results = {m: MethodResult.model_validate(store.step_result(f"{m}/seed0")) for m in ("sc_coevo", "decoevo")}
    plots = store.get_meta("plots", {})
    store.close()
    return summary, results, plots


def _roles(tmp_path, **roles):
    raw = checkable_run_config(tmp_path)
    raw["roles"] = {**raw["roles"], **roles}
    config = DecoEvoConfig.model_validate(raw)
    model = ReplayModel(rules=[{"completions": ["x"]}])
    return config, build_decoevo_roles(config, model, model, 0)


def test_the_config_builds_code_for_the_scoring_roles_and_the_backbone_for_the_rest(tmp_path):
    _, roles = _roles(tmp_path)
    assert isinstance(roles.judge, CheckedCriterionJudge)
    assert isinstance(roles.structural, CheckedStructuralAuditor)
    assert isinstance(roles.contrastive, CheckedContrastiveAuditor)
    assert isinstance(roles.generator, RubricGenerator)  # the backbone still writes the rubrics
    _, plain = _roles(tmp_path, judge={}, auditor={})
    assert isinstance(plain.judge, CriterionJudge) and not isinstance(plain.structural, CheckedStructuralAuditor)


def test_a_scorer_that_fails_its_probe_stops_the_run_before_it_starts(tmp_path):
    with pytest.raises(ModelError, match="roles.judge.scorer"):
        _roles(tmp_path, judge={"scorer": "python:coevo.eval.checkable_graders:constraint_grader"})  # wrong arguments


def test_the_checked_judge_scores_points_of_criteria_met(tmp_path, first):
    _, roles = _roles(tmp_path)
    rubric = RubricGenerator(ReplayModel(rules=[{"completions": [COVERING_RUBRIC]}]), roles.generator.sampling,
                             min_criteria=1, max_criteria=3).generate([first], "G")[0].rubric
    question = Sample(id=first.id, prompt=first.prompt)
    met, broke = roles.judge.judge([question] * 2, ["The lantern lit the harbour.", SHORT_ANSWER], [rubric] * 2)
    assert met.score == 1.0 and met.satisfied == {"c1": True, "c2": True, "c3": True}
    assert broke.score == pytest.approx(3 / 5)  # the 2-point required-words criterion fails
    assert "lantern" in broke.rationales["c2"] and "unchecked" in broke.rationales["c3"]
    assert roles.judge.judge([question], ["x"], [None])[0].valid is False


def test_the_checked_auditors_read_coverage_and_prefer_by_requirements_blind(tmp_path, first):
    _, roles = _roles(tmp_path)
    generator = RubricGenerator(ReplayModel(rules=[{"completions": [COVERING_RUBRIC]}]), roles.generator.sampling,
                                min_criteria=1, max_criteria=3)
    question = Sample(id=first.id, prompt=first.prompt)
    (audit,) = roles.structural.audit([question], [generator.generate([first], "G")[0].rubric])
    assert audit.adequacy == 1.0 and audit.valid
    (verdict,) = roles.contrastive.blind_preferences([question], [(SHORT_ANSWER, "The lantern lit the harbour.")])
    assert verdict.preferred == 1  # the second answer (original order) meets the required words
    assert verdict.conversation[-1].role == "assistant" and "rubric" not in verdict.conversation[0].content.lower()


def test_score_coupled_acceptance_takes_the_easier_rubrics_decoupled_refuses_them(coupled_run):
    summary, _, _ = coupled_run
    generator = {(v["method"], v["version"]): v for v in summary["skill_versions"]["rubric_generator"]}
    assert generator[("sc_coevo", 1)]["decision"] == "accepted"   # its proxy rose by >= eta
    assert generator[("decoevo", 1)]["decision"] == "rejected"    # coverage of the stated requirements fell
    assert "structural regressed" in generator[("decoevo", 1)]["why"]


def test_proxy_and_gold_are_recorded_per_step_for_both_methods(coupled_run):
    summary, results, plots = coupled_run
    for method, result in results.items():
        assert [p.step for p in result.trajectory] == [0, 1, 2], method
        assert all(p.proxy is not None and p.gold is not None for p in result.trajectory), method
        assert [p["step"] for p in summary["trajectory"][method]] == [0, 1, 2]
    series = plots[TRAJECTORY_PLOT]  # what the run page draws with plotly
    assert {"sc_coevo proxy", "sc_coevo gold", "decoevo proxy", "decoevo gold"} <= set(series)
    # The divergence: SC-CoEvo's proxy rose with the easier rubrics while the gold (the same
    # solver skill's answers) did not move; DecoEvo's proxy stayed where the gold did.
    sc, de = results["sc_coevo"].trajectory, results["decoevo"].trajectory
    assert sc[1].proxy > sc[0].proxy and sc[1].gold == sc[0].gold
    assert de[1].proxy == de[0].proxy and de[1].gold == de[0].gold
    assert json.dumps(summary["methods"]["sc_coevo"]["skill_form_refused"]) == '{"solver": 0, "rubric_generator": 0}'
    assert EASY_GENERATOR_SKILL == results["sc_coevo"].rubric_generator.text
