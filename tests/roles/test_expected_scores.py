"""Expected scores (G-Eval): the probability-weighted mean over a score's tokens, read from
the backend's top log-probabilities, for every judge that ends in an integer score, and
P(A) vs P(B) for the pairwise judge. Replay models carry recorded log-probabilities here;
the real backends are exercised in test_expected_scores_real.py."""

import json
import logging
import math

import pytest

from coevo.llm.replay import ReplayModel
from coevo.roles.expected import (
    answer_distribution,
    expected_value,
    integer_answers,
    json_value_offsets,
)
from coevo.roles.judges import GoldRubricJudge, OutcomeGainJudge, PairwiseJudge, TaiScoreJudge
from coevo.core.types import Completion, Criterion, JudgeSampling, Rollout, Rubric, Sample, Sampling

ONE_TO_TEN = integer_answers(1, 10)


def recorded(pieces):
    """A completion from [(token, {alternative: probability})]; the written token gets the
    probability its entry names, or 1.0 when unnamed."""
    tokens = [token for token, _ in pieces]
    top = [{t: math.log(p) for t, p in ({token: 1.0} | (alts or {})).items()} for token, alts in pieces]
    return {"text": "".join(tokens), "tokens": tokens, "top_logprobs": top}


def as_completion(record):
    return Completion(text=record["text"], tokens=record["tokens"], top_logprobs=record["top_logprobs"])


def test_json_value_offsets_find_nested_and_listed_values():
    text = '{"a": {"score": 7, "reason": "x}, \\"y"}, "list": [{"score": 3}], "score": 6}'
    offsets = json_value_offsets(text)
    assert text[offsets[("a", "score")]] == "7" and text[offsets[("score",)]] == "6"
    assert text[offsets[("list", 0, "score")]] == "3"
    assert text[offsets[("a", "reason")]:].startswith('"x}')


def test_expected_value_weights_each_answer_by_its_probability():
    completion = as_completion(recorded([('{"score": ', None), ("7", {"7": 0.5, "8": 0.3, "x": 0.2}), ("}", None)]))
    at = json_value_offsets(completion.text)[("score",)]
    assert expected_value(completion, at, ONE_TO_TEN) == pytest.approx((7 * 0.5 + 8 * 0.3) / 0.8)


def test_ten_is_told_from_one_by_the_next_token_when_one_was_written():
    # "1" written, then "0" with probability 0.75: P(10) = 0.6 * 0.75, P(1) = 0.6 * 0.25.
    completion = as_completion(recorded([
        ('{"score": ', None), ("1", {"1": 0.6, "9": 0.4}), ("0", {"0": 0.75, "}": 0.25}), ("}", None)]))
    at = json_value_offsets(completion.text)[("score",)]
    dist = answer_distribution(completion, at, ONE_TO_TEN)
    assert dist == pytest.approx({"10": 0.45, "1": 0.15, "9": 0.4})
    # Where "1" was NOT written, its mass counts as 1 (the documented approximation).
    other = as_completion(recorded([('{"score": ', None), ("9", {"9": 0.7, "1": 0.3}), ("}", None)]))
    assert answer_distribution(other, at, ONE_TO_TEN) == pytest.approx({"9": 0.7, "1": 0.3})


def test_no_logprobs_or_no_position_means_no_expected_value():
    assert expected_value(Completion(text='{"score": 7}'), 10, ONE_TO_TEN) is None
    completion = as_completion(recorded([('{"score": ', None), ("7", None), ("}", None)]))
    assert expected_value(completion, None, ONE_TO_TEN) is None
    assert expected_value(completion, 0, ONE_TO_TEN) is None  # '{' spells no answer


def taiscore_answer(final_token_alternatives):
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    head = "{" + ", ".join(f'"{d}": {{"score": 5, "reason": "r"}}' for d in dims) + ', "score": '
    return recorded([(head, None), ("4", final_token_alternatives), ("}", None)])


def test_taiscore_judge_scores_by_expectation_and_keeps_the_sampled_integer():
    model = ReplayModel(rules=[{"match": "Critique:\nsharp", "completion": taiscore_answer({"4": 0.5, "6": 0.5})},
                               {"completion": taiscore_answer({"4": 0.9, "3": 0.1})}])
    assert model.supports_logprobs
    rollouts = [Rollout(sample_id=str(i), x="x", y0="a", c=c, y1="b") for i, c in enumerate(["sharp", "vague"])]
    sharp, vague = TaiScoreJudge(model, JudgeSampling(temperature=0.2)).judge(rollouts)
    assert (sharp.sampled, vague.sampled) == (4.0, 4.0)  # the same integer ...
    assert sharp.expected == pytest.approx(5.0) and vague.expected == pytest.approx(3.9)  # ... told apart
    assert (sharp.score, vague.score) == (sharp.expected, vague.expected)
    sampled = TaiScoreJudge(model, JudgeSampling(temperature=0.2, scoring="sampled")).judge(rollouts)
    assert [j.score for j in sampled] == [4.0, 4.0] and sampled[0].expected is None


def test_expected_scoring_asks_for_logprobs_and_falls_back_where_there_are_none(caplog):
    asked = []

    class Plain(ReplayModel):
        def generate(self, conversations, sampling, n=1):
            asked.append(sampling.logprobs)
            return super().generate(conversations, sampling, n)

    rollout = Rollout(sample_id="s", x="x", y0="a", c="c", y1="b")
    with_logprobs = Plain(rules=[{"completion": taiscore_answer({"4": 1.0})}])
    TaiScoreJudge(with_logprobs, JudgeSampling()).judge([rollout])
    without = Plain(rules=[{"completion": '{"score": 4}'}])
    without.model_id = "replay:no-logprobs"
    with caplog.at_level(logging.WARNING):
        judges = [TaiScoreJudge(without, JudgeSampling()) for _ in range(2)]
    (judgment,) = judges[0].judge([rollout])
    assert asked == [20, 0] and judgment.score == 4.0 and judgment.expected is None
    assert judges[0].scoring == "sampled"
    assert sum("replay:no-logprobs returns no token log-probabilities" in r.message for r in caplog.records) == 1


def test_outcome_gain_expectation_tells_a_half_from_zero_by_the_next_token():
    answer = recorded([("0", {"0": 0.8, "1": 0.2}), (".", {".": 0.5, "<end>": 0.5}), ("5", None)])
    model = ReplayModel(rules=[{"completion": answer}])
    (j,) = OutcomeGainJudge(model, JudgeSampling()).judge([Rollout(sample_id="s", x="x", y0="a", c="c", y1="b")])
    assert j.sampled == 0.5
    # P(1) 0.2, P(0.5) 0.8 * 0.5, and P(0) 0.8 * 0.5: a token after "0" that cannot go on
    # ("<end>") ends the answer there.
    assert j.expected == pytest.approx(0.2 * 1 + 0.4 * 0.5 + 0.4 * 0)


def test_pairwise_expected_preference_is_p_second_plus_half_tie_in_the_original_order():
    answer = recorded([("1", {"1": 0.2, "2": 0.7, '"': 0.1}), ])
    model = ReplayModel(rules=[{"completion": answer}])
    judge = PairwiseJudge(model, JudgeSampling())
    (shown_straight,) = judge.judge(["x"], ["A"], ["B"], ids=["id"], rng=_Fixed(0.9))
    (shown_swapped,) = judge.judge(["x"], ["A"], ["B"], ids=["id"], rng=_Fixed(0.1))
    assert shown_straight.shown_order == ["first", "second"] and shown_straight.sampled == 0.0
    assert shown_straight.expected == pytest.approx(0.7 + 0.05) and shown_straight.winner == "second"
    # Swapped: the judge's "2" now means the first original response.
    assert shown_swapped.expected == pytest.approx(0.2 + 0.05) and shown_swapped.winner == "first"


class _Fixed:
    def __init__(self, value):
        self.value = value

    def random(self):
        return self.value


def test_gold_rubric_expected_is_the_weighted_mean_of_each_criteria_expectation():
    head = '{"criteria": [{"name": "tone", "score": '
    answer = recorded([(head, None), ("6", {"6": 0.5, "8": 0.5}), ('}, {"name": "facts", "score": ', None),
                       ("3", {"3": 1.0}), ("}]}", None)])
    model = ReplayModel(rules=[{"completion": answer}])
    rubric = Rubric(criteria=[Criterion(name="tone", weight=1), Criterion(name="facts", weight=3)])
    (j,) = GoldRubricJudge(model, JudgeSampling()).judge([Sample(id="s", prompt="x", rubric=rubric)], ["y"])
    assert j.sampled == pytest.approx((6 + 3 * 3) / 4)
    assert j.expected == pytest.approx((7 + 3 * 3) / 4)


def test_replay_returns_logprobs_only_when_asked():
    model = ReplayModel(rules=[{"completion": taiscore_answer({"4": 1.0})}])
    plain = model.generate([[]], Sampling(), 1)[0][0]
    asked = model.generate([[]], Sampling(logprobs=5), 1)[0][0]
    assert plain.tokens is None and asked.tokens and "".join(asked.tokens) == asked.text
    assert json.loads(asked.text)["score"] == 4
