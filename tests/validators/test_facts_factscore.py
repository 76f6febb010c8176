"""FactScore-style evaluation: atomic split (LLM or sentences), verification, summary."""

import json

import pytest

from coevo.eval.factscore import factscore, split_atomic_facts, summarize
from coevo.llm.replay import ReplayModel
from coevo.validators.facts import build_fact_validator

BIO = "Marie Curie was born in Warsaw. She discovered polonium and radium. She was born on the Moon."


def test_llm_split_reads_the_json_list_and_falls_back_to_sentences():
    splitter = ReplayModel(rules=[
        {"match": "Warsaw", "completion": json.dumps({"facts": ["Marie Curie was born in Warsaw.",
                                                                "Marie Curie discovered polonium."]})},
        {"completion": "no idea"},
    ])
    facts = split_atomic_facts(splitter, "Marie Curie", [BIO, "She won prizes. She died."])
    assert facts == [["Marie Curie was born in Warsaw.", "Marie Curie discovered polonium."],
                     ["She won prizes.", "She died."]]
    with pytest.raises(ValueError, match="mode"):
        split_atomic_facts(splitter, "x", [BIO], mode="words")


def test_factscore_counts_correct_and_incorrect():
    validator = build_fact_validator(None, mode="lexical")
    [facts] = split_atomic_facts(None, "Marie Curie", [BIO], mode="sentences")
    [result] = factscore(validator, [("Marie Curie", facts)])
    assert result.facts == [("Marie Curie was born in Warsaw.", True), ("She discovered polonium and radium.", True),
                            ("She was born on the Moon.", False)]
    assert (result.correct, result.incorrect) == (2, 1)
    assert result.precision == pytest.approx(2 / 3)
    summary = summarize([result])
    assert summary == {"factscore_precision": pytest.approx(2 / 3), "facts_correct": 2.0, "facts_incorrect": 1.0}
    assert validator.calls == 0  # evaluation is not training verification


def test_summarize_empty():
    assert summarize([])["factscore_precision"] is None


def test_a_biography_with_no_fact_has_no_precision_and_is_left_out_of_the_mean():
    validator = build_fact_validator(None, mode="lexical")
    empty, scored = factscore(validator, [("Marie Curie", []), ("Marie Curie", ["Marie Curie was born in Warsaw."])])
    assert (empty.facts, empty.precision) == ([], None)
    assert summarize([empty, scored]) == {"factscore_precision": 1.0, "facts_correct": 0.5, "facts_incorrect": 0.0}


def test_split_drops_facts_copied_from_the_prompt_example():
    splitter = ReplayModel(rules=[{"completion": json.dumps(
        {"facts": ["Marie Curie was Polish.", "Isaac Newton was born in Woolsthorpe."]})}])
    assert split_atomic_facts(splitter, "Isaac Newton", ["Isaac Newton was born in Woolsthorpe."]) == [
        ["Isaac Newton was born in Woolsthorpe."]]
