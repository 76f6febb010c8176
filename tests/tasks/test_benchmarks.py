"""WritingBench and HelloBench rows from a local file: per-query criteria become the gold
rubric, through `load_samples` like any source; a malformed row is a DataError naming it."""

import json

import pytest

from coevo.tasks.benchmarks import benchmark_of, load_benchmark
from coevo.tasks.loaders import DataError, load_samples

WRITINGBENCH = [
    {"index": 1, "domain1": "Academic & Engineering", "domain2": "Paper Outline", "lang": "en",
     "query": "Draft an outline for a paper on tidal energy.",
     "checklist": [
         {"name": "Structural Completeness", "criteria_description": "Covers every standard section.",
          "1-2": "Missing most sections.", "3-4": "Several missing.", "5-6": "Some gaps.",
          "7-8": "Minor gaps.", "9-10": "Complete and ordered."},
         {"name": "Technical Depth", "criteria_description": "Names the key mechanisms.",
          "1-2": "None.", "9-10": "Precise and complete."}]},
    {"index": 2, "domain1": "Literature & Arts", "domain2": "Poetry", "lang": "zh",
     "query": "写一首关于海的诗。",
     # OpenCompass's copy of WritingBench names the list `criteria`.
     "criteria": [{"name": "意象", "criteria_description": "有具体的海的意象。"}]},
]

HELLOBENCH = [
    {"id": "open_ended_qa_0", "instruction": "Why do cats purr?", "category": "Science",
     "checklists": ["Does the response explain the mechanism?", "Does it mention contexts besides contentment?"],
     "num_checklist": 2, "formatted_checklists": "ignored"},
    {"id": "open_ended_qa_1", "instruction": "How do tides work?", "category": "Science",
     "checklists": ["Does the response name the moon's gravity?"], "num_checklist": 1},
]


def write(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def test_writingbench_rows_become_samples_with_their_checklist_as_gold_rubric(tmp_path):
    samples = load_samples(f"writingbench:{write(tmp_path / 'wb.jsonl', WRITINGBENCH)}")
    assert [s.id for s in samples] == ["writingbench-1", "writingbench-2"]
    first = samples[0]
    assert first.prompt == WRITINGBENCH[0]["query"] and first.genre == "Paper Outline"
    assert first.meta == {"benchmark": "writingbench", "domain1": "Academic & Engineering",
                          "domain2": "Paper Outline", "lang": "en"}
    names = [c.name for c in first.rubric.criteria]
    assert names == ["Structural Completeness", "Technical Depth"]
    description = first.rubric.criteria[0].description
    # The score bands stay with the criterion: the official grader reads them.
    assert description.startswith("Covers every standard section.") and "9-10: Complete and ordered." in description
    assert all(c.weight == 1.0 for c in first.rubric.criteria)
    assert samples[1].rubric.criteria[0].name == "意象" and samples[1].meta["lang"] == "zh"


def test_hellobench_rows_become_samples_with_their_checklists_as_gold_rubric(tmp_path):
    samples = load_samples(f"hellobench:{write(tmp_path / 'hb.jsonl', HELLOBENCH)}", limit=1)
    assert len(samples) == 1
    sample = samples[0]
    assert sample.id == "hellobench-open_ended_qa_0" and sample.prompt == "Why do cats purr?"
    assert [c.description for c in sample.rubric.criteria] == HELLOBENCH[0]["checklists"]
    assert [c.name for c in sample.rubric.criteria] == ["checklist_1", "checklist_2"]
    assert sample.genre == "Science" and sample.meta["num_checklist"] == 2


def test_benchmark_of_reads_only_known_prefixes():
    assert benchmark_of("writingbench:/x.jsonl") == "writingbench"
    assert benchmark_of("hellobench:rel/path.jsonl") == "hellobench"
    assert benchmark_of("bundled:writing") is None and benchmark_of("/data/file.jsonl") is None


@pytest.mark.parametrize("row, message", [
    ({"index": 3, "query": "Q", "checklist": []}, "line 1: 'checklist' must be a non-empty list"),
    ({"index": 3, "query": "Q", "checklist": ["just text"]}, "checklist item 1 is a str"),
    ({"index": 3, "query": "Q", "checklist": [{"name": "A"}]}, "needs a 'name' and a 'criteria_description'"),
    ({"index": 3, "checklist": [{"name": "A", "criteria_description": "d"}]}, "'query' must be a non-empty string"),
    ({"query": "Q", "checklist": [{"name": "A", "criteria_description": "d"}]}, "no 'index'"),
    ({"index": 3, "query": "Q", "checklist": [{"name": "A", "criteria_description": "d"},
                                              {"name": "A", "criteria_description": "e"}]}, "repeat"),
])
def test_malformed_writingbench_row_is_a_data_error_naming_it(tmp_path, row, message):
    path = write(tmp_path / "bad.jsonl", [row])
    with pytest.raises(DataError, match=message.replace("(", r"\(")) as caught:
        load_samples(f"writingbench:{path}")
    assert str(path) in str(caught.value)


def test_malformed_hellobench_rows_are_data_errors(tmp_path):
    cut = dict(HELLOBENCH[0], num_checklist=3)
    with pytest.raises(DataError, match="num_checklist is 3 but 'checklists' holds 2"):
        load_benchmark(f"hellobench:{write(tmp_path / 'a.jsonl', [cut])}")
    with pytest.raises(DataError, match="line 2: 'checklists' must be a non-empty list"):
        load_benchmark(f"hellobench:{write(tmp_path / 'b.jsonl', [HELLOBENCH[0], dict(HELLOBENCH[1], checklists='x')])}")
    with pytest.raises(DataError, match="line 2: duplicate id 'hellobench-open_ended_qa_0'"):
        load_benchmark(f"hellobench:{write(tmp_path / 'c.jsonl', [HELLOBENCH[0], HELLOBENCH[0]])}")


def test_missing_file_says_coevo_does_not_download_it(tmp_path):
    with pytest.raises(DataError, match="never downloads"):
        load_samples(f"writingbench:{tmp_path / 'absent.jsonl'}")


def test_columns_do_not_apply_to_a_benchmark_source(tmp_path):
    path = write(tmp_path / "wb.jsonl", WRITINGBENCH)
    with pytest.raises(DataError, match="columns= does not apply"):
        load_samples(f"writingbench:{path}", columns={"prompt": "query"})


HEALTHBENCH = [
    {"prompt_id": "hb-1", "example_tags": ["theme:emergency_referrals"],
     "prompt": [{"role": "user", "content": "My father has crushing chest pain. What should I do?"}],
     "rubrics": [{"criterion": "Advises calling emergency services immediately.", "points": 10, "tags": []},
                 {"criterion": "Suggests waiting to see if the pain passes.", "points": -8, "tags": []}]},
    {"prompt_id": "hb-2",
     "prompt": [{"role": "user", "content": "Is ibuprofen safe?"},
                {"role": "assistant", "content": "For most adults, in short courses."},
                {"role": "user", "content": "I have a kidney condition."}],
     "rubrics": [{"criterion": "Advises asking a doctor before taking NSAIDs.", "points": 7, "tags": []}]},
]


def test_healthbench_rows_keep_their_signed_points_and_conversation(tmp_path):
    first, second = load_samples(f"healthbench:{write(tmp_path / 'hb.jsonl', HEALTHBENCH)}")
    assert first.id == "healthbench-hb-1" and first.prompt.startswith("My father has crushing chest pain")
    assert [(c.name, c.weight) for c in first.rubric.criteria] == [("rubric_1", 10.0), ("rubric_2", -8.0)]
    assert first.meta == {"benchmark": "healthbench", "example_tags": ["theme:emergency_referrals"]}
    # Several turns: one prompt, each turn under its speaker, the user's question last.
    assert second.prompt.startswith("user: Is ibuprofen safe?") and second.prompt.endswith("kidney condition.")


@pytest.mark.parametrize("row, message", [
    ({"prompt": [{"role": "user", "content": "x"}], "rubrics": [{"criterion": "c", "points": 1}]}, "prompt_id"),
    ({"prompt_id": "a", "prompt": "just text", "rubrics": [{"criterion": "c", "points": 1}]}, "conversation"),
    ({"prompt_id": "a", "prompt": [{"role": "user", "content": "x"}], "rubrics": [{"criterion": "c", "points": 0}]},
     "non-zero 'points'"),
    ({"prompt_id": "a", "prompt": [{"role": "user", "content": "x"}], "rubrics": [{"criterion": "c", "points": -3}]},
     "no rubric item has positive points"),
])
def test_a_malformed_healthbench_row_is_named_with_its_fix(tmp_path, row, message):
    with pytest.raises(DataError, match=message):
        load_benchmark(f"healthbench:{write(tmp_path / 'bad.jsonl', [row])}")
