"""TAIScore's deep-research sources (coevo/tasks/deepresearch.py): `openscholar:PATH` with
Appendix C's rule-based stage counted, `deepresearch_gym:PATH` with its key points as gold."""

from __future__ import annotations

import json

import pytest

from coevo.tasks.benchmarks import benchmark_of, read_benchmark
from coevo.tasks.deepresearch import looks_english, removal_rule
from coevo.tasks.errors import DataError
from coevo.tasks.loaders import load_samples


def _write(tmp_path, rows, name="rows.jsonl"):
    path = tmp_path / name
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False)) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def test_the_rules_remove_unsupported_intents_short_and_non_english_queries_and_count_them(tmp_path):
    path = _write(tmp_path, [
        {"id": 1, "intent": "Summarize", "query": "What are the main causes of coral reef bleaching worldwide?"},
        {"id": 2, "intent": "Cannot determine", "query": "What are the main causes of coral reef bleaching today?"},
        {"id": 3, "intent": "metadata", "query": "Which venue published the paper on attention being all you need?"},
        {"id": 4, "input": "reef bleaching"},
        {"id": 5, "question": "Quels sont les effets du réchauffement sur les récifs coralliens?"},
        {"id": 6, "question": "How does ocean acidification affect shell formation in marine organisms?",
         "quality": 5},
    ])
    read = read_benchmark(f"openscholar:{path}")
    assert [s.id for s in read.samples] == ["openscholar-1", "openscholar-6"]
    assert read.rows == 6 and read.removed == {"unsupported_intent": 2, "too_short": 1, "not_english": 1}
    kept = read.samples[1]
    # The question is the report-writing task's; the quality column stays for the pools.
    assert "ocean acidification" in kept.prompt and "research report" in kept.prompt
    assert kept.meta["quality"] == 5 and kept.meta["query"].startswith("How does")
    assert load_samples(f"openscholar:{path}", limit=1)[0].id == "openscholar-1"


def test_the_english_heuristic_and_rule_order():
    assert looks_english("How do transformers compare with recurrent networks for speech?")
    assert not looks_english("Wie vergleichen sich Transformer mit rekurrenten Netzen?")
    assert not looks_english("变压器与循环网络相比如何在语音识别中表现")
    assert removal_rule("short one", "Other") == "unsupported_intent"  # the first rule that holds names it
    assert removal_rule("What is the role of glia in memory?", None) is None


@pytest.mark.parametrize("rows, message", [
    ([{"id": 1, "text": "a question without the right key"}], r"line 1: no research question: give it as a "
                                                               r"non-empty string under 'query' or 'input'"),
    ([{"query": "What is known about the gut microbiome and depression?", "intent": 3}], r"'intent' must be a string"),
    (["{not json"], r"line 1"),
    ([{"intent": "Other", "query": "What is known about the gut microbiome and mood?"}],
     r"the rules removed all 1 .*give queries that pass them"),
    ([{"id": 1, "query": "What is known about the gut microbiome and depression?"},
      {"id": 1, "query": "What is known about the gut microbiome and anxiety?"}], r"duplicate id 'openscholar-1'"),
])
def test_bad_openscholar_rows_end_in_one_line_naming_the_fix(tmp_path, rows, message):
    with pytest.raises(DataError, match=message) as caught:
        load_samples(f"openscholar:{_write(tmp_path, rows)}")
    assert "\n" not in str(caught.value)


def test_a_missing_file_and_columns_are_refused(tmp_path):
    with pytest.raises(DataError, match=r"no such file .*give its path, e.g. openscholar:/data/openscholar.jsonl"):
        load_samples(f"openscholar:{tmp_path / 'absent.jsonl'}")
    with pytest.raises(DataError, match="columns= does not apply"):
        load_samples(f"deepresearch_gym:{tmp_path / 'x.jsonl'}", columns={"prompt": "q"})


def test_deepresearch_gym_rows_carry_key_points_and_context_in_meta(tmp_path):
    path = _write(tmp_path, [
        {"query_id": "q7", "query": "Why do honeybee colonies collapse?",
         "key_points": ["Varroa mites spread viruses.", {"point_number": 2, "point_content": "Pesticides harm bees."}],
         "context": [{"title": "Survey", "url": "https://x.org", "text": "Mites are the top cause."}, "Plain snippet."]},
        {"question": "How do heat pumps perform in the cold?", "key_points": ["Efficiency drops below freezing."]},
    ])
    first, second = load_samples(f"deepresearch_gym:{path}")
    assert benchmark_of(f"deepresearch_gym:{path}") == "deepresearch_gym"
    assert first.id == "deepresearch_gym-q7" and first.rubric is None
    assert first.meta["key_points"] == ["Varroa mites spread viruses.", "Pesticides harm bees."]
    assert first.meta["context"] == ["Survey — https://x.org\nMites are the top cause.", "Plain snippet."]
    # The retrieved materials are the report's sources; the key points are never in the prompt.
    assert "[2] Plain snippet." in first.prompt and "Varroa" not in first.prompt
    assert second.id.startswith("deepresearch_gym-h-") and second.meta["context"] == []
    assert "No sources are given" in second.prompt


@pytest.mark.parametrize("row, message", [
    ({"query": "Why do bees die?"}, r"'key_points' must be a non-empty list"),
    ({"query": "Why do bees die?", "key_points": [{"spans": []}]}, r"key point 1 must be a non-empty string"),
    ({"query": "Why do bees die?", "key_points": ["a"], "context": "one doc"}, r"'context' must be a list"),
])
def test_bad_deepresearch_gym_rows_name_the_fix(tmp_path, row, message):
    with pytest.raises(DataError, match=message):
        load_samples(f"deepresearch_gym:{_write(tmp_path, [row])}")


def test_the_bundled_tiny_samples_read():
    read = read_benchmark("openscholar:bundled:openscholar_tiny.jsonl")
    assert (read.rows, len(read.samples)) == (12, 8)
    assert read.removed == {"unsupported_intent": 2, "too_short": 1, "not_english": 1}
    gym = load_samples("deepresearch_gym:bundled:deepresearch_gym_tiny.jsonl")
    assert len(gym) == 4 and all(len(s.meta["key_points"]) == 3 for s in gym)
