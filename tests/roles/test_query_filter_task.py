"""coevo.roles.query_filter.filter_queries keeps GRADE-scored queries, in order."""

import json

from coevo.roles.query_filter import filter_queries
from coevo.core.types import Sample, Sampling


def answer(score):
    return json.dumps({"results": [{"id": "x", "score": score, "decision": "GRADE",
                                    "rationale": "r"}]})


def test_filter_queries_keeps_scores_at_or_above_min(replay):
    model = replay([{"match": "Q-one", "completions": [answer(1)]},
                    {"match": "Q-three", "completions": [answer(3)]},
                    {"match": "Q-five", "completions": [answer(5)]},
                    {"match": "Q-bad", "completions": ["no idea"]}])
    samples = [Sample(id=name, prompt=f"Q-{name}") for name in ("one", "three", "five", "bad")]
    sampling = Sampling(temperature=0.2, top_p=1.0)
    kept, judgments = filter_queries(samples, model, sampling)
    assert [s.id for s in kept] == ["three", "five"]
    assert [j.decision for j in judgments] == ["SKIP", "GRADE", "GRADE", None]
    assert [j.valid for j in judgments] == [True, True, True, False]
    # The unreadable answer is asked once more, seeded apart from the first call.
    assert model.batches == [(4, 1, sampling), (1, 1, sampling.model_copy(update={"seed": 1}))]
    kept4, _ = filter_queries(samples, model, sampling, min_score=4)
    assert [s.id for s in kept4] == ["five"]
