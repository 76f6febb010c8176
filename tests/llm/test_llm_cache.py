"""CachedModel: a repeated call asks nothing, a partly cached call asks only what is missing."""

import json

from coevo.llm.base import user
from coevo.llm.cache import CachedModel, call_key, call_request
from coevo.llm.call_tags import current_tags, tagged
from coevo.rundir.store import RunStore
from coevo.core.types import Completion, Sampling


class CountingModel:
    """Answers `<prompt>#<k>` where k counts every completion ever produced."""

    model_id = "counting:v1"

    def __init__(self):
        self.requests: list[tuple[int, int]] = []  # (batch size, n) per call
        self.produced = 0

    def generate(self, conversations, sampling, n=1):
        self.requests.append((len(conversations), n))
        out = []
        for conversation in conversations:
            row = []
            for _ in range(n):
                row.append(Completion(text=f"{conversation[-1].content}#{self.produced}"))
                self.produced += 1
            out.append(row)
        return out


SAMPLING = Sampling(temperature=0.7, max_tokens=16, seed=1)


def test_second_call_is_answered_from_the_store(tmp_path):
    inner = CountingModel()
    model = CachedModel(inner, RunStore(tmp_path))
    first = model.generate([user("a"), user("b")], SAMPLING, n=2)
    second = model.generate([user("a"), user("b")], SAMPLING, n=2)
    assert inner.requests == [(2, 2)]
    assert [[c.text for c in row] for row in second] == [[c.text for c in row] for row in first]
    assert not any(c.cached for row in first for c in row)
    assert all(c.cached for row in second for c in row)


def test_partial_hits_ask_only_the_missing_indices(tmp_path):
    inner = CountingModel()
    store = RunStore(tmp_path)
    model = CachedModel(inner, store)
    model.generate([user("a")], SAMPLING, n=2)
    inner.requests.clear()
    # "a" has 2 of 4 samples cached, "b" none, "c" none: two batched calls, by missing count.
    out = model.generate([user("a"), user("b"), user("c")], SAMPLING, n=4)
    assert sorted(inner.requests) == [(1, 2), (2, 4)]
    assert [c.text for c in out[0]] == ["a#0", "a#1", "a#2", "a#3"]
    assert [c.cached for c in out[0]] == [True, True, False, False]
    assert store.cache_size() == 12
    # Fewer samples than cached: nothing asked, the first indices come back.
    inner.requests.clear()
    assert [c.text for c in model.generate([user("a")], SAMPLING, n=1)[0]] == ["a#0"]
    assert inner.requests == []


def test_key_separates_models_messages_and_sampling():
    base = call_key("m", call_request(user("x"), SAMPLING))
    assert base == call_key("m", call_request(user("x"), Sampling(temperature=0.7, max_tokens=16, seed=1)))
    assert base != call_key("other", call_request(user("x"), SAMPLING))
    assert base != call_key("m", call_request(user("y"), SAMPLING))
    assert base != call_key("m", call_request(user("x"), Sampling(temperature=0.7, max_tokens=16, seed=2)))


def test_wrapper_exposes_the_inner_models_attributes(tmp_path):
    inner = CountingModel()
    model = CachedModel(inner, RunStore(tmp_path))
    assert model.model_id == "counting:v1"
    assert model.requests is inner.requests


class EachModel(CountingModel):
    """A backend that takes a sampling per conversation (as vLLM and servers do)."""

    def generate_each(self, conversations, samplings, n=1):
        self.requests.append((len(conversations), n))
        return [self.generate([c], s, n)[0] for c, s in zip(conversations, samplings)]


def test_mixed_samplings_reach_a_per_request_backend_in_one_call_and_are_cached_apart(tmp_path):
    from coevo.llm.base import generate_each

    inner = EachModel()
    model = CachedModel(inner, RunStore(tmp_path))
    schemas = [Sampling(temperature=0.7, max_tokens=16, seed=1, json_schema=f'{{"const": {i}}}') for i in range(3)]
    first = generate_each(model, [user("a"), user("b"), user("a")], schemas)
    assert inner.requests[0] == (3, 1)
    # Each (conversation, sampling) has its own cache entry: the same prompt under another
    # schema is another call, and asking again costs nothing.
    assert len({row[0].text for row in first}) == 3
    inner.requests.clear()
    again = generate_each(model, [user("a"), user("b"), user("a")], schemas)
    assert inner.requests == [] and [r[0].text for r in again] == [r[0].text for r in first]


def test_a_backend_with_one_sampling_per_call_gets_one_call_per_distinct_sampling():
    from coevo.llm.base import generate_each

    inner = CountingModel()
    a, b = Sampling(temperature=0.0, max_tokens=4), Sampling(temperature=0.0, max_tokens=8)
    out = generate_each(inner, [user("x"), user("y"), user("z")], [a, b, a])
    assert sorted(inner.requests) == [(1, 1), (2, 1)]
    assert [row[0].text.split("#")[0] for row in out] == ["x", "y", "z"]


# -- who made a call: tags beside the request, never in the key ---------------------------------

def test_a_cached_call_records_its_tags_seconds_and_cut_off_beside_the_request(tmp_path):
    class Counting:
        model_id = "counting:v1"

        def generate(self, conversations, sampling, n=1):
            return [[Completion(text=c[-1].content, prompt_tokens=3, completion_tokens=len(c[-1].content.split()))
                     for _ in range(n)] for c in conversations]

    store = RunStore(tmp_path)
    model = CachedModel(Counting(), store)
    sampling = Sampling(temperature=0.0, max_tokens=3)
    with tagged(stage="taiscore/round1/eval"):
        with tagged(role="actor", step="revise"):
            assert current_tags() == {"stage": "taiscore/round1/eval", "role": "actor", "step": "revise"}
            model.generate([user("one two three four"), user("one")], sampling)
        assert current_tags() == {"stage": "taiscore/round1/eval"}
    assert current_tags() == {}
    calls = {call["completion"]: call for call in store.cached_calls()}
    long, short = calls["one two three four"]["request"], calls["one"]["request"]
    for request in (long, short):
        assert {k: request["call"][k] for k in ("role", "stage", "step")} == {
            "role": "actor", "stage": "taiscore/round1/eval", "step": "revise"}
        assert request["call"]["seconds"] >= 0 and request["messages"] and request["sampling"]["max_tokens"] == 3
    assert long["call"]["cut_off"] is True and short["call"]["cut_off"] is False
    assert calls["one"]["prompt_tokens"] == 3 and calls["one"]["completion_tokens"] == 1


#: `call_key` of the request below, as every earlier coevo computed it: a resumed run finds
#: its cached calls only while this stays the same.
PINNED_KEY = "b188f6e4fd7de71fdef138f5dfcab8649500873b1befcc0ba62a987ecbc8e7f8"


def test_call_key_is_the_same_whatever_the_tags(tmp_path):
    request = call_request(user("Name a planet."), Sampling(temperature=0.8, max_tokens=64, seed=3))
    assert "call" not in request
    assert call_key("replay:test", request) == PINNED_KEY

    class Once:
        model_id = "replay:test"
        asked = 0

        def generate(self, conversations, sampling, n=1):
            Once.asked += 1
            return [[Completion(text="Mars")] for _ in conversations]

    store = RunStore(tmp_path)
    model = CachedModel(Once(), store)
    with tagged(role="actor", stage="one"):
        model.generate([user("Name a planet.")], Sampling(temperature=0.8, max_tokens=64, seed=3))
    with tagged(role="critic", stage="two"):
        again = model.generate([user("Name a planet.")], Sampling(temperature=0.8, max_tokens=64, seed=3))
    assert Once.asked == 1 and again[0][0].cached  # other tags, the same call: a hit
    [stored] = store.cached_calls()
    assert stored["key"] == PINNED_KEY and stored["request"]["call"]["stage"] == "one"
    assert json.loads(json.dumps(stored["request"]))["messages"] == request["messages"]
