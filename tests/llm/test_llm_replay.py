"""The replay backend's rules: exact conversations, substrings, fallback, sample cycling."""

import json

import pytest

from coevo.llm.base import ModelError, user
from coevo.llm.replay import ReplayModel
from coevo.core.types import Message, Sampling

SAMPLING = Sampling(temperature=0.0, max_tokens=8)


def write_rules(tmp_path, rules):
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rules) + "\n\n", encoding="utf-8")
    return path


def test_rules_are_tried_in_file_order(tmp_path):
    exact = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    path = write_rules(tmp_path, [
        {"messages": exact, "completion": "exact"},
        {"match": "hello", "completions": ["sub"]},
        {"completions": ["fallback"]},
        {"match": "never reached", "completions": ["x"]},
    ])
    model = ReplayModel(path)
    conversations = [
        [Message(**m) for m in exact],
        user("well hello there"),
        user("something else"),
        user("never reached"),
    ]
    out = model.generate(conversations, SAMPLING)
    assert [c[0].text for c in out] == ["exact", "sub", "fallback", "fallback"]
    assert model.model_id == f"replay:{path}"
    assert model.calls == conversations


def test_sample_index_cycles_through_completions():
    model = ReplayModel(rules=[{"completions": ["a", "b"]}])
    [samples] = model.generate([user("q")], SAMPLING, n=5)
    assert [c.text for c in samples] == ["a", "b", "a", "b", "a"]
    assert all(c.completion_tokens == 1 for c in samples)


def test_unanswered_prompt_and_bad_files_raise_model_error(tmp_path):
    model = ReplayModel(rules=[{"match": "cat", "completions": ["meow"]}])
    with pytest.raises(ModelError, match="no answer"):
        model.generate([user("dog")], SAMPLING)
    with pytest.raises(ModelError, match="does not exist"):
        ReplayModel(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"completions": ["ok"]}\nnot json\n', encoding="utf-8")
    with pytest.raises(ModelError, match="line 2 is not valid JSON"):
        ReplayModel(bad)
    with pytest.raises(ModelError, match="no 'completions'"):
        ReplayModel(rules=[{"match": "x"}])
