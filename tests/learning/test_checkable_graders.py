"""The checkable stand-ins for DecoEvo's scoring roles (coevo/eval/checkable_graders.py): which of a
question's stated requirements a criterion refers to, the lenient judge, coverage, the blind
preference, and that each passes the probe its config place makes."""

import pytest

from coevo.algorithms.decoevo.checkable import load_scorer
from coevo.eval.checkable_graders import blind_preference, criterion_met, named, rubric_coverage
from coevo.tasks.loaders import load_samples


@pytest.fixture(scope="module")
def prompts():
    return {s.id: s.prompt for s in load_samples("bundled:writing")}


def kinds(question, criterion):
    return [c["kind"] for c in named(question, criterion)]


def test_a_criterion_refers_to_requirements_by_their_values_or_their_words(prompts):
    q = prompts["wp-001"]  # max_words 350, include lantern + harbour
    assert kinds(q, "Uses at most 350 words") == ["max_words"]
    assert kinds(q, "Is about 300 words long") == ["max_words"]
    assert kinds(q, "Mentions the lantern and the harbour") == ["include_words"]
    assert kinds(q, "Uses every required word and respects the word limit") == ["max_words", "include_words"]
    assert kinds(q, "Is engaging for children") == [] and kinds(q, "1.1.1") == []
    ending = next(p for p in prompts.values() if "slow and steady wins the race" in p)
    assert kinds(ending, "slow and steady wins the race") == ["end_with"]  # the phrase, its period aside


def test_the_judge_checks_what_a_criterion_refers_to_and_passes_the_rest(prompts):
    q = prompts["wp-001"]
    assert criterion_met(q, "The lantern lit the harbour.", "Includes lantern and harbour")["satisfied"] is True
    missed = criterion_met(q, "The lamp lit the bay.", "Includes lantern and harbour")
    assert missed["satisfied"] is False and "'lantern', 'harbour'" in missed["rationale"]
    too_long = criterion_met(q, "word " * 400, "Uses at most 350 words")
    assert too_long["satisfied"] is False and "400 words" in too_long["rationale"]
    unchecked = criterion_met(q, "", "Is engaging")
    assert unchecked["satisfied"] is True and "unchecked" in unchecked["rationale"]


def test_coverage_counts_the_stated_requirements_some_criterion_refers_to(prompts):
    q = prompts["wp-001"]
    rubric = {"criteria": [{"name": "c1", "description": "Uses at most 350 words", "weight": 2},
                           {"name": "c2", "description": "Is engaging", "weight": 1}]}
    half = rubric_coverage(q, rubric)
    assert half["adequacy"] == 0.5 and "'lantern', 'harbour'" in half["rationale"] and half["repair"]
    rubric["criteria"].append({"name": "c3", "description": "Uses the words lantern and harbour", "weight": 1})
    assert rubric_coverage(q, rubric)["adequacy"] == 1.0
    assert rubric_coverage(q, {"criteria": []})["adequacy"] == 0.0


def test_the_blind_preference_sees_requirements_broken_never_a_rubric(prompts):
    q = prompts["wp-001"]
    assert blind_preference(q, "The lantern lit the harbour.", "The lamp lit the bay.")["preference"] == "a"
    assert blind_preference(q, "The lamp lit the bay.", "The lantern lit the harbour.")["preference"] == "b"
    assert blind_preference(q, "A.", "B.")["preference"] == "equivalent"


@pytest.mark.parametrize("spec, kind", [("python:coevo.eval.checkable_graders:criterion_met", "judge"),
                                        ("python:coevo.eval.checkable_graders:rubric_coverage", "structural"),
                                        ("python:coevo.eval.checkable_graders:blind_preference", "preference"),
                                        ("python:coevo.eval.checkable:fewer_broken_constraints", "preference")])
def test_each_passes_the_probe_of_its_place(spec, kind):
    assert callable(load_scorer(spec, kind, "roles.x"))
