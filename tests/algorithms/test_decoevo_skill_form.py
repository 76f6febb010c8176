"""The skill-form audit: a solver or rubric-generator rewrite that is no longer a skill (too
short to instruct, or no instruction in it) is refused before its gate, for every method,
and counted per method in summary.json."""

import pytest
from decoevo_fakes import REAL_SOLVER_SKILL, checkable_rules, checkable_run_config

from coevo.algorithms.decoevo.config import DEFAULT_GENERATOR_SKILL, DEFAULT_SOLVER_SKILL, DecoEvoConfig
from coevo.algorithms.decoevo.rules import instructs, skill_form
from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore

TITLE = "Project Manager Issues"  # what the 135M rewriter once wrote in place of a solver skill


@pytest.mark.parametrize("text", [TITLE, "The task-relevant quality difference", ""])
def test_a_title_is_too_short_to_instruct(text):
    refused = skill_form(text, 8)
    assert refused is not None and not refused.accept
    assert refused.details["skill_form"] == "too_short" and "refused by the skill-form audit" in refused.reason


def test_words_without_an_instruction_are_refused():
    text = "A story about the harbour and the lantern, with a cat, a dog and a boat at night."
    refused = skill_form(text, 8)
    assert refused is not None and refused.details["skill_form"] == "no_instruction"


@pytest.mark.parametrize("text", [DEFAULT_SOLVER_SKILL, DEFAULT_GENERATOR_SKILL, REAL_SOLVER_SKILL,
                                  "1. Count the words and stop at the limit.",
                                  "Answers must name the required words and stay short."])
def test_a_real_skill_passes(text):
    assert skill_form(text, 8) is None and instructs(text)


def test_the_default_config_refuses_non_skills_and_the_paper_table_says_so():
    from coevo.algorithms.decoevo.paper import departures, settings

    config = DecoEvoConfig()
    assert config.skill_form.enabled and config.skill_form.min_words == 8
    row = next(r for r in settings(config) if r.setting == "skill_form.enabled")
    assert not row.departs and "not stated" in str(row.paper)  # the paper is silent, shown, not a departure
    assert "skill_form.enabled" not in {d.setting for d in departures(config)}


@pytest.fixture(scope="module")
def refused_run(tmp_path_factory):
    """SkillOpt and DecoEvo, one inner step: the solver rewriter writes a title."""
    folder = tmp_path_factory.mktemp("skill_form")
    config = checkable_run_config(folder, rules_=checkable_rules(solver_rewrite=TITLE, generator_rewrite=TITLE),
                                  methods=["zero_shot", "skillopt", "decoevo"], inner_steps=2,
                                  batch_size=6)  # the whole train split: some question's required words go unmet
    summary = run_experiment(None, folder / "run", data=config)
    return folder, summary


def test_a_refused_rewrite_is_recorded_never_gated_and_counted_per_method(refused_run):
    folder, summary = refused_run
    solver = [v for v in summary["skill_versions"]["solver"] if v["version"] > 0]
    assert {v["method"] for v in solver} == {"skillopt", "decoevo"}
    assert all(v["decision"] == "rejected" and v["why"].startswith("refused by the skill-form audit") for v in solver)
    for method in ("skillopt", "decoevo"):  # every candidate of each method, counted under its own name
        found = summary["methods"][method]
        assert found["skill_form_refused"]["solver"] == found["solver_candidates"] == 2, method
        assert found["skill_form_refused"]["rubric_generator"] == found["generator_candidates"], method
    assert summary["methods"]["decoevo"]["generator_candidates"] == 1  # its one outer step's title
    assert summary["methods"]["zero_shot"]["skill_form_refused"] == {"solver": 0, "rubric_generator": 0}
    store = RunStore(folder / "run", read_only=True)
    try:
        # No gate call: the solver never answered under the title, and no gate judgment was kept.
        asked = [row for row in store.get_records("gate_judgment")]
        versions = [r for _, r in store.get_records("skill") if r["method"] == "decoevo" and r["version"] > 0]
    finally:
        store.close()
    assert asked == [] and all(r["skill_form"] == "too_short" and r["skill_words"] == 3 for r in versions)


def test_a_real_rewrite_reaches_its_gate(tmp_path):
    config = checkable_run_config(tmp_path, rules_=checkable_rules(solver_rewrite=REAL_SOLVER_SKILL),
                                  methods=["skillopt"], inner_steps=1, batch_size=6)
    summary = run_experiment(None, tmp_path / "run", data=config)
    (v1,) = [v for v in summary["skill_versions"]["solver"] if v["version"] == 1]
    assert "skill-form" not in v1["why"] and "gate score" in v1["why"]
    assert summary["methods"]["skillopt"]["skill_form_refused"]["solver"] == 0
