"""Parsers: lenient about form, strict about meaning, never raising."""

import pytest

from coevo.roles.parsing import (
    extract_json_object,
    parse_score,
    parse_scored_dimensions,
    parse_single_answer,
    strip_reasoning,
)

DIMS = ("specificity", "priority")
OUTCOME = {1.0: 1.0, 0.5: 0.5, 0.0: 0.0}
PAIRWISE = {1.0: "1", 2.0: "2", "tie": "tie"}


@pytest.mark.parametrize(
    "value, expected",
    [(8, 8.0), ("8", 8.0), ("8/10", 8.0), (8.0, 8.0), ("8.0", 8.0), (" 8 ", 8.0),
     ("8 out of 10", 8.0), ({"score": 8, "reason": "fine"}, 8.0), ({"Score": "7"}, 7.0),
     ({"score": {"score": 6}}, 6.0), (1, 1.0), (10, 10.0)],
)
def test_score_forms_accepted(value, expected):
    assert parse_score(value, 1, 10) == (expected, None)


@pytest.mark.parametrize(
    "value, fragment",
    [(11, "outside 1–10"), (0, "outside 1–10"), (-3, "outside"), ("eight", "not a number"),
     ("...", "not a number"), (None, "not a number"), (True, "not a number"),
     (7.5, "not an integer"), ("4/5", "not on the 1–10 scale"), (float("nan"), "finite"),
     ({"reason": "no score here"}, "has no 'score'"), ([8], "not a number"),
     ("Score: 8", "not a number")],
)
def test_score_forms_rejected(value, fragment):
    score, error = parse_score(value, 1, 10)
    assert score is None and fragment in error


def test_non_integer_allowed_when_asked():
    assert parse_score("7.5", 1, 10, integer=False) == (7.5, None)


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"specificity": 8, "priority": 6}\n```',
        '```\n{"specificity": 8, "priority": 6}\n```\nHope this helps!',
        '{"specificity": 8, "priority": 6}\n\nSummary: the critique is useful.',
        "{'specificity': 8, 'priority': 6}",
        'Here is my evaluation: {"specificity": "8/10", "priority": "6"} done.',
        '{"specificity": {"score": 8, "reason": "names the gap"}, '
        '"priority": {"score": 6, "reason": "ok"}}',
        '{"Specificity": 8, "PRIORITY": 6.0, "summary": "extra keys are fine"}',
        '{"evaluation": {"specificity": 8, "priority": 6}}',
        '<think>first {"specificity": 2} maybe</think>{"specificity": 8, "priority": 6}',
        '{"specificity": 8, "priority": 6,}',
    ],
)
def test_dimensions_lenient_about_form(text):
    parsed = parse_scored_dimensions(text, DIMS)
    assert parsed.valid, parsed.error
    assert parsed.scores == {"specificity": 8.0, "priority": 6.0}
    assert parsed.error is None


def test_dimension_reasons_kept():
    parsed = parse_scored_dimensions(
        '{"specificity": {"score": 8, "reason": "names the gap"}, "priority": 6}', DIMS
    )
    assert parsed.reasons == {"specificity": "names the gap"}


@pytest.mark.parametrize(
    "text, fragment",
    [
        ('{"specificity": 11, "priority": 6}', "key 'specificity': 11 is outside 1–10"),
        ('{"specificity": 0, "priority": 6}', "key 'specificity': 0 is outside 1–10"),
        ('{"specificity": 8}', "missing key 'priority'"),
        ('{"specificity": "high", "priority": 6}', "key 'specificity': 'high' is not a number"),
        ('{"specificity": {"reason": "x"}, "priority": 6}', "key 'specificity': has no 'score'"),
        ('{"specificity": {"score": "...", "reason": "..."}, "priority": 6}', "not a number"),
        ("", "no JSON object"),
        ("I cannot evaluate this.", "no JSON object"),
        ("%%%% ]]] garbage", "no JSON object"),
        ('{"specificity": 8, "priority": 6.5}', "key 'priority': 6.5 is not an integer"),
    ],
)
def test_dimensions_strict_about_meaning(text, fragment):
    parsed = parse_scored_dimensions(text, DIMS)
    assert not parsed.valid
    assert fragment in parsed.error


def test_every_error_is_reported():
    parsed = parse_scored_dimensions('{"specificity": 0}', DIMS)
    assert "specificity" in parsed.error and "priority" in parsed.error


def test_aliases_map_other_spellings():
    parsed = parse_scored_dimensions(
        '{"Targeted Quality Gain": 7}', ["quality_gain"], aliases={"targeted_quality_gain":
                                                                   "quality_gain"}
    )
    assert parsed.valid and parsed.scores == {"quality_gain": 7.0}


def test_echoed_format_then_answer_takes_the_answer():
    text = ('Format: {"specificity": {"score": ..., "reason": "..."}, "priority": ...}\n'
            'Answer: {"specificity": 9, "priority": 4}')
    parsed = parse_scored_dimensions(text, DIMS)
    assert parsed.valid and parsed.scores == {"specificity": 9.0, "priority": 4.0}


def test_extract_json_object_none_without_object():
    assert extract_json_object("no json here") is None
    assert extract_json_object("") is None


def test_strip_reasoning():
    assert strip_reasoning("<think>hmm</think>\nAnswer") == "Answer"
    assert strip_reasoning("<think>cut off mid thought") == ""
    assert strip_reasoning(None) == ""


@pytest.mark.parametrize(
    "text, expected",
    [("1", 1.0), ("0.5", 0.5), ("0", 0.0), ("1.0", 1.0), ("0.50", 0.5), ("0.0", 0.0),
     ("Answer: 0.5", 0.5), ("**1**", 1.0), ("`0`", 0.0), ("The answer is 1.", 1.0),
     ("1\n\nResponse B adds 3 concrete examples.", 1.0), ("<think>maybe 0</think>\n1", 1.0),
     ("Final answer: 0.5\nRoughly equal.\n0.5", 0.5)],
)
def test_outcome_answer_accepted(text, expected):
    assert parse_single_answer(text, OUTCOME) == (expected, None)


@pytest.mark.parametrize(
    "text, fragment",
    [("2", "not one of"), ("0.7", "not one of"), ("-1", "not one of"), ("", "empty"),
     ("Response B is better", "no answer"), ("1 or 0", "ambiguous"), ("1\nwait\n0", "ambiguous"),
     ('{"score": 1.5}', "not one of"), ("1/2", "not one of")],
)
def test_outcome_answer_rejected(text, fragment):
    value, error = parse_single_answer(text, OUTCOME)
    assert value is None and fragment in error


@pytest.mark.parametrize(
    "text, expected",
    [("1", "1"), ("2", "2"), ("tie", "tie"), ("Tie.", "tie"), ("TIE", "tie"),
     ("Response 2", "2"), ("2.0", "2"), ("**Answer:** 1", "1")],
)
def test_pairwise_answer_accepted(text, expected):
    assert parse_single_answer(text, PAIRWISE, words=("tie",)) == (expected, None)


@pytest.mark.parametrize(
    "text", ["3", "Response 1 is better than Response 2", "both", "", "0.5", "1 tie"]
)
def test_pairwise_answer_rejected(text):
    value, error = parse_single_answer(text, PAIRWISE, words=("tie",))
    assert value is None and error


@pytest.mark.parametrize("text", [None, 12, "\x00\x01{[(", "{" * 5000, "}" * 10 + "{"])
def test_parsers_never_raise(text):
    parsed = parse_scored_dimensions(text if isinstance(text, str) else str(text), DIMS)
    assert not parsed.valid
    value, error = parse_single_answer(text if isinstance(text, str) else "", OUTCOME)
    assert value is None and error
