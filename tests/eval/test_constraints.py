"""The constraint checkers, `constraint_pass_rate` and its Wilson interval."""

import math

import pytest

from coevo.eval import constraints as C
from coevo.eval.stats import wilson_interval


# ---------------------------------------------------------------- text units
def test_word_count_joins_apostrophes_and_hyphens_not_punctuation():
    assert C.count_words("Don't stop the well-known band, at 14:20!") == 8  # "14" and "20" are two
    assert C.count_words("") == 0 and C.count_words("  --  ... ") == 0


def test_sentences_split_on_terminal_punctuation_not_abbreviations():
    text = 'Mr. Okafor waved. "Stop!" he said?! Dr. Lee, e.g. the vet, came at 9 a.m. today\nno period here'
    assert C.split_sentences(text) == ["Mr. Okafor waved.", '"Stop!"', "he said?!",
                                       "Dr. Lee, e.g. the vet, came at 9 a.m. today\nno period here"]
    assert C.split_sentences("3.5 percent rose. Then fell.") == ["3.5 percent rose.", "Then fell."]
    assert C.split_sentences("") == [] and C.split_sentences("...") == []


def test_paragraphs_are_blank_line_separated_blocks():
    assert C.split_paragraphs("one\nstill one\n\n  \ntwo\n\n\nthree\n") == ["one\nstill one", "two", "three"]
    assert C.split_paragraphs("   ") == []


# ---------------------------------------------------------------- each checker, pass and fail
CASES = [
    ({"kind": "max_words", "value": 3}, "one two three", "one two three four"),
    ({"kind": "min_words", "value": 3}, "one two three", "one two"),
    ({"kind": "max_sentences", "value": 2}, "One. Two!", "One. Two. Three?"),
    ({"kind": "include_words", "words": ["harbour", "thank you"]}, "Thank  you, HARBOUR.", "harbours thank you"),
    ({"kind": "forbidden_words", "words": ["sad", "I"]}, "Saddle up; it is fine.", "We were sad."),
    ({"kind": "forbidden_words", "words": ["I"]}, "It is in italics.", "Then I left."),
    ({"kind": "paragraphs", "value": 2}, "a\n\nb", "a\nb"),
    ({"kind": "no_commas"}, "No commas here.", "One, two."),
    ({"kind": "title"}, "<<Harbour Lights>>\nText.", "<Harbour Lights> or <<\n>>"),
    ({"kind": "bullets", "value": 2}, "Intro\n* one\n- two\n**bold** line", "* one\n* two\n* three"),
    ({"kind": "end_with", "phrase": "Keep the lights on."}, "So: keep the lights on.  \n", "Keep the lights on. Thanks."),
    ({"kind": "postscript"}, "Best,\nAna\n\nP.S. Bring cake.", "PS bring cake; the p.s. is inline"),
    ({"kind": "include_words", "words": ["Mr. Lindqvist"]}, "Dear Mr. Lindqvist,", "Dear Mr Lindqvist,"),
]


@pytest.mark.parametrize("constraint,good,bad", CASES, ids=[C.label(c) for c, _, _ in CASES])
def test_each_checker_passes_and_fails(constraint, good, bad):
    assert C.check(good, constraint) is True
    assert C.check(bad, constraint) is False


def test_every_kind_has_a_case_and_ifeval_ids_name_known_kinds():
    assert {c["kind"] for c, _, _ in CASES} == set(C.CHECKERS)
    assert set(C.IFEVAL_IDS) <= set(C.CHECKERS)
    assert set(C.PARAMS) <= set(C.CHECKERS)


def test_limits_are_inclusive():
    assert C.check("a b", {"kind": "max_words", "value": 2}) and C.check("a b", {"kind": "min_words", "value": 2})
    assert C.check("", {"kind": "max_sentences", "value": 1})


@pytest.mark.parametrize("bad,message", [
    ({"kind": "max_chars", "value": 3}, "unknown constraint kind 'max_chars'"),
    ({"value": 3}, "unknown constraint kind None"),
    ({"kind": "max_words"}, "needs 'value' as int"),
    ({"kind": "max_words", "value": "120"}, "needs 'value' as int"),
    ({"kind": "max_words", "value": True}, "needs 'value' as int"),
    ({"kind": "max_words", "value": 0}, "value >= 1"),
    ({"kind": "include_words", "words": []}, "non-empty list"),
    ({"kind": "include_words", "words": "harbour"}, "needs 'words' as list"),
    ({"kind": "forbidden_words", "words": ["ok", " "]}, "non-empty list"),
    ({"kind": "end_with", "phrase": "  "}, "non-empty phrase"),
    ({"kind": "no_commas", "value": 1}, "takes no ['value']"),
    ({"kind": "max_words", "value": 3, "words": ["x"]}, "takes no ['words']"),
])
def test_invalid_records_are_errors_that_say_why(bad, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        C.check("text", bad)


# ---------------------------------------------------------------- judgments and the rate
def test_constraint_judgment_records_each_check():
    checks = [{"kind": "max_words", "value": 3}, {"kind": "no_commas"}, {"kind": "include_words", "words": ["sea"]}]
    judged = C.constraint_judgment("The sea, calm.", checks)
    assert judged.judge == C.CONSTRAINTS and judged.valid
    assert judged.scores == {"max_words=3": 1.0, "no_commas": 0.0, "include_words=sea": 1.0}
    assert judged.score == pytest.approx(2 / 3) and judged.raw == "failed: no_commas"
    assert C.passed(judged) == [True, False, True]
    assert C.constraint_judgment("Calm sea.", checks).raw == "all met"


def test_constraints_of_reads_sample_meta():
    from coevo.core.types import Sample

    assert C.constraints_of(Sample(id="a", prompt="p")) == []
    record = {"kind": "no_commas"}
    assert C.constraints_of(Sample(id="a", prompt="p", meta={"constraints": [record]})) == [record]


def test_pass_rate_is_all_constraints_met_with_wilson_ci_and_n():
    outcomes = [[True, True], [True, False], [False], [True], []]  # [] = no constraint: left out
    found = C.pass_rate_metrics(outcomes)
    p, lo, hi = wilson_interval(2, 4)
    assert found == {"constraint_pass_rate": 0.5, "constraint_pass_rate_lo": lo, "constraint_pass_rate_hi": hi,
                     "constraint_count": 4.0, "constraint_check_rate": 4 / 6, "constraint_checks_count": 6.0}
    assert p == 0.5
    assert set(C.pass_rate_metrics([[True]], prefix="refine_constraint")) >= {"refine_constraint_pass_rate"}


def test_pass_rate_is_none_without_constraints():
    assert C.pass_rate_metrics([]) == {"constraint_pass_rate": None, "constraint_count": 0.0}
    assert C.pass_rate_metrics([[], []])["constraint_pass_rate"] is None


def test_wilson_interval_known_values_and_edges():
    # 5/10: the textbook value; 81/263 worked by hand from the score-interval formula.
    p, lo, hi = wilson_interval(5, 10)
    assert (p, round(lo, 4), round(hi, 4)) == (0.5, 0.2366, 0.7634)
    p, lo, hi = wilson_interval(81, 263)
    assert (round(lo, 4), round(hi, 4)) == (0.2553, 0.3662)
    assert wilson_interval(0, 10)[1] == 0.0 and wilson_interval(10, 10)[2] == 1.0
    assert wilson_interval(0, 10)[2] == pytest.approx(0.2775, abs=1e-4)
    # Wider at 99 %, narrower with more data.
    assert wilson_interval(5, 10, alpha=0.01)[1] < wilson_interval(5, 10)[1]
    assert wilson_interval(50, 100)[2] - wilson_interval(50, 100)[1] < 0.7634 - 0.2366
    for bad in [(1, 0), (-1, 3), (4, 3)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError, match="alpha"):
        wilson_interval(1, 2, alpha=1.0)
    assert not math.isnan(wilson_interval(1, 1)[1])
