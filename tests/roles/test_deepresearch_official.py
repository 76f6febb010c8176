"""DeepResearch-Gym's own protocol (the default evaluator): one judge call per key point and one
per quality criterion, KPR / KPC in percent of the points, quality the 0-10 mean x 10."""

from __future__ import annotations

import json

import pytest

from coevo.roles.deepresearch import ReportQualityJudge
from coevo.roles.deepresearch_official import CRITERIA, KeyPointEachJudge, QualityEachCriterionJudge, report_judges
from coevo.core.types import Sample, Sampling

SAMPLING = Sampling(temperature=0.2, top_p=1.0)


def _sample(points=3):
    return Sample(id="g", prompt="Write a report.", meta={"query": "Why do bees die?",
                                                          "key_points": [f"point {k}" for k in range(points)]})


def _label(label):
    return json.dumps({"label": label, "justification": "j"})


def test_each_key_point_is_its_own_call_without_the_question_and_kpr_kpc_count_the_labels(replay):
    model = replay([{"match": "Key point:\npoint 0", "completion": _label("supported")},
                    {"match": "Key point:\npoint 1", "completion": _label("omitted")},
                    {"match": "Key point:\npoint 2", "completion": _label("contradicted")},
                    {"match": "Key point:\npoint 3", "completion": _label("Supported")}])
    [judged] = KeyPointEachJudge(model, SAMPLING).judge([_sample(4)], ["REPORT"])
    asked = model.prompts()
    assert len(asked) == 4 and all("Why do bees die?" not in p and "REPORT" in p for p in asked)
    assert judged.valid and judged.scores == {"kpr": 50.0, "kpc": 25.0} and judged.score == 50.0
    # The verdicts read as the single-call judge's do ("omitted" is its "not_mentioned").
    assert judged.verdicts == ["supported", "not_mentioned", "contradicted", "supported"]
    assert all(schema is not None for schema in model.schemas)


def test_a_report_with_an_unreadable_key_point_is_left_out_not_scored_on_the_rest(replay):
    model = replay([{"match": "Key point:\npoint 1", "completion": "I cannot tell."},
                    {"completion": _label("supported")}])
    [judged] = KeyPointEachJudge(model, SAMPLING).judge([_sample(2)], ["REPORT"])
    assert not judged.valid and "key point(s) [2] of 2" in judged.error and judged.asked == 2  # re-asked once


def test_quality_is_one_0_to_10_call_per_criterion_and_their_mean_times_10(replay):
    ratings = dict(zip(CRITERIA, (8, 7, 7, 8, 7, 7)))  # mean 7.333...
    model = replay([{"match": f"Criterion: {name}", "completion": json.dumps({"rating": r, "justification": "j"})}
                    for name, r in ratings.items()])
    [judged] = QualityEachCriterionJudge(model, SAMPLING).judge([_sample()], ["REPORT"])
    asked = model.prompts()
    assert len(asked) == len(CRITERIA) == 6 and all("Why do bees die?" in p for p in asked)
    assert judged.score == pytest.approx(sum(ratings.values()) / 6 * 10)
    assert judged.scores == {name: float(r) for name, r in ratings.items()}
    # The single-call variant maps the same mean onto another scale: (7.33 - 1) / 9 x 100 = 70.4.
    single = replay([{"completion": json.dumps({c: {"score": r, "reason": "r"} for c, r in ratings.items()})}])
    [old] = ReportQualityJudge(single, SAMPLING).judge([_sample()], ["REPORT"])
    assert old.score == pytest.approx((sum(ratings.values()) / 6 - 1) / 9 * 100) and old.score < judged.score


def test_a_rating_outside_0_to_10_or_missing_makes_the_report_unreadable(replay):
    model = replay([{"match": "Criterion: depth", "completion": json.dumps({"rating": 11, "justification": "j"})},
                    {"completion": json.dumps({"rating": 0, "justification": "no URLs"})}])
    [judged] = QualityEachCriterionJudge(model, SAMPLING).judge([_sample()], ["REPORT"])
    assert not judged.valid and "depth" in judged.error


def test_the_support_criterion_carries_the_benchmarks_zero_without_source_urls():
    assert "no source URLs" in CRITERIA["support"] and list(CRITERIA) == [
        "clarity", "depth", "balance", "breadth", "support", "insightfulness"]


def test_the_protocol_picks_the_judges(replay):
    model = replay([])
    official = report_judges(model, SAMPLING)
    single = report_judges(model, SAMPLING, "single_call")
    assert [type(j).__name__ for j in official] == ["KeyPointEachJudge", "QualityEachCriterionJudge"]
    assert [type(j).__name__ for j in single] == ["KeyPointJudge", "ReportQualityJudge"]
