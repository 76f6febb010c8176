"""The run store: cache round-trips, rollouts upsert, steps and metrics persist."""

from coevo.llm.cache import CachedModel
from coevo.llm.replay import ReplayModel
from coevo.llm.base import user
from coevo.rundir.store import RunStore
from coevo.core.types import Completion, Judgment, Rollout, Sampling


def test_cache_roundtrip_and_partial_hits(tmp_path):
    store = RunStore(tmp_path)
    store.cache_put("k", "m", {0: Completion(text="a"), 2: Completion(text="c")})
    found = store.cache_get("k", 3)
    assert {i: c.text for i, c in found.items()} == {0: "a", 2: "c"}
    assert (store.cache_hits, store.cache_misses) == (2, 1)


def test_cached_model_asks_only_missing_indices(tmp_path):
    inner = ReplayModel(rules=[{"completions": ["one", "two", "three"]}])
    store = RunStore(tmp_path)
    model = CachedModel(inner, store)
    sampling = Sampling(temperature=0.8)
    first = model.generate([user("hi")], sampling, n=2)
    assert [c.text for c in first[0]] == ["one", "two"] and not any(c.cached for c in first[0])
    again = model.generate([user("hi")], sampling, n=3)
    # indices 0 and 1 come from the cache; only index 2 is asked, as the inner model's first answer
    assert [c.cached for c in again[0]] == [True, True, False]
    assert len(inner.calls) == 2
    reopened = CachedModel(inner, RunStore(tmp_path))
    assert all(c.cached for c in reopened.generate([user("hi")], sampling, n=3)[0])
    assert len(inner.calls) == 2


def test_sampling_is_part_of_the_key(tmp_path):
    inner = ReplayModel(rules=[{"completions": ["x"]}])
    model = CachedModel(inner, RunStore(tmp_path))
    model.generate([user("hi")], Sampling(temperature=0.2), n=1)
    model.generate([user("hi")], Sampling(temperature=0.8), n=1)
    assert len(inner.calls) == 2


def test_rollouts_upsert_and_judgment_counts(tmp_path):
    store = RunStore(tmp_path)
    rollout = Rollout(sample_id="s1", x="x", y0="a", c="c", y1="b",
                      judgments={"taiscore": Judgment(judge="taiscore", score=7)})
    store.save_rollout("refine", rollout)
    rollout.judgments["pairwise"] = Judgment(judge="pairwise", valid=False, raw="??")
    store.save_rollout("refine", rollout)
    assert len(store.rollouts("refine")) == 1
    assert store.judgment_counts() == {"pairwise": {"valid": 0, "invalid": 1},
                                       "taiscore": {"valid": 1, "invalid": 0}}


def test_steps_metrics_records_survive_reopen(tmp_path):
    store = RunStore(tmp_path)
    store.finish_step("round0/critic", {"checkpoint": "c0"})
    store.log_metrics("eval", {"score": 6.5}, round=0)
    store.put_record("pair", "p1", {"chosen": "a"})
    store.close()
    store = RunStore(tmp_path)
    assert store.step_result("round0/critic") == {"checkpoint": "c0"}
    assert store.step_result("round1/critic") is None
    assert store.metrics("eval") == [{"stage": "eval", "round": 0, "name": "score", "value": 6.5}]
    assert store.get_records("pair") == [("p1", {"chosen": "a"})]


def test_delete_record_takes_one_record_back(tmp_path):
    store = RunStore(tmp_path)
    store.put_record("annotation", "p1", {"label": "A"})
    store.put_record("annotation", "p2", {"label": "B"})
    assert store.delete_record("annotation", "p1") is True
    assert store.delete_record("annotation", "p1") is False  # already gone
    assert store.get_record("annotation", "p1") is None and store.get_record("annotation", "p2") == {"label": "B"}
