"""CachedModel: a repeated call asks nothing, a partly cached call asks only what is missing."""

from coevo.llm.base import user
from coevo.llm.cache import CachedModel, call_key, call_request
from coevo.store import RunStore
from coevo.types import Completion, Sampling


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
