"""`constraint_grader`: the share of a bundled writing prompt's constraints an answer meets."""

import pytest

from coevo.eval.checkable_graders import UnknownPrompt, constraint_grader, constraints_for
from coevo.llm.python_functions import PROBE_PROMPT as PROBE_QUESTION
from coevo.llm.python_functions import check_python_spec
from coevo.tasks.loaders import load_samples


@pytest.fixture(scope="module")
def first():
    return load_samples("bundled:writing")[0]  # wp-001: max_words 350, include lantern + harbour


def test_share_of_constraints_met(first):
    assert [c["kind"] for c in constraints_for(first.prompt)] == ["max_words", "include_words"]
    assert constraint_grader(first.prompt, "The lantern lit the harbour.", None) == 1.0
    assert constraint_grader(first.prompt, "The lantern glowed.", None) == 0.5
    assert constraint_grader(first.prompt, "lantern harbour " * 200, None) == 0.5  # 400 words: too long
    assert constraint_grader(first.prompt, "A cat. " * 200, {"criteria": []}) == 0.0  # too long, no word


def test_question_is_found_by_its_text_whitespace_forgiven(first):
    assert constraint_grader("  " + first.prompt.replace(" ", "\n  ", 3), "lantern harbour", None) == 1.0


def test_unknown_question_is_named():
    with pytest.raises(UnknownPrompt, match="Write about dragons"):
        constraint_grader("Write about dragons.", "Dragons.", None)


def test_every_bundled_prompt_is_gradable():
    samples = load_samples("bundled:writing")
    assert len(samples) >= 64  # the bundled set (tests/tasks/test_bundled_writing.py): not an empty loop
    for sample in samples:
        assert 0.0 <= constraint_grader(sample.prompt, "", sample.rubric.model_dump()) <= 1.0


def test_passes_the_runners_probe():
    # The runner probes a python: grader with a question of its own before a run starts.
    assert constraint_grader(PROBE_QUESTION, "Rain.", None) == 1.0
    loaded = check_python_spec("python:coevo.eval.checkable_graders:constraint_grader", ["grader"], "roles.grader.model")
    assert loaded.get("grader") is constraint_grader  # the function the spec names serves the grader
