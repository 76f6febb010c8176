"""Each judge with replayed answers: prompt content, parsing, score, template hash."""

import json
import random

import pytest

from coevo.prompts import load_template
from coevo.roles.judges import (
    AdherenceJudge,
    CritiqueQualityJudge,
    GoldRubricJudge,
    OutcomeGainJudge,
    PairwiseJudge,
    QueryFilterJudge,
    TaiScoreJudge,
    order_swapped,
)
from coevo.core.types import Criterion, Rollout, Rubric, Sample

CRITIQUE = "CRITIQUE-TEXT: the ending is rushed"


def rollout(i=0, critique=CRITIQUE):
    return Rollout(sample_id=f"s{i}", x=f"PROMPT-{i} write a story", y0=f"INITIAL-{i}",
                   c=critique, y1=f"REVISED-{i}")


def dims_answer(names, scores, extra=None):
    body = {n: {"score": s, "reason": f"why {n}"} for n, s in zip(names, scores)}
    return json.dumps({**body, **(extra or {})})


def test_taiscore_reward_is_the_final_score(replay, judge_sampling):
    names = TaiScoreJudge.dimensions
    answer = "```json\n" + dims_answer(names, [8, 7, 6, 9], {"score": 7}) + "\n```"
    model = replay([{"match": "PROMPT-", "completions": [answer]}])
    judge = TaiScoreJudge(model, judge_sampling)
    [j] = judge.judge([rollout()])
    assert j.valid and j.judge == "taiscore" and j.score == 7.0
    assert j.scores == {"critique_quality": 8, "critique_uptake": 7, "quality_gain": 6,
                        "prompt_faithfulness": 9}
    assert j.reasons["quality_gain"] == "why quality_gain"
    assert j.template == load_template("judge_taiscore").hash
    asked = model.prompts()[0]
    for text in ("PROMPT-0", "INITIAL-0", CRITIQUE, "REVISED-0"):
        assert text in asked
    assert model.batches == [(1, 1, judge_sampling)]


def test_taiscore_missing_final_score_is_invalid(replay, judge_sampling):
    answer = dims_answer(TaiScoreJudge.dimensions, [8, 7, 6, 9])
    model = replay([{"completions": [answer]}])
    [j] = TaiScoreJudge(model, judge_sampling).judge([rollout()])
    assert not j.valid and j.score is None and "missing key 'score'" in j.error
    assert j.raw == answer


def test_critique_quality_mean_and_no_revision_shown(replay, judge_sampling):
    names = CritiqueQualityJudge.dimensions
    model = replay([{"completions": [dims_answer(names, [9, 8, 7, 6, 5, 7])]}])
    [j] = CritiqueQualityJudge(model, judge_sampling).judge([rollout()])
    assert j.valid and j.score == pytest.approx(42 / 6)
    assert set(j.scores) == set(names)
    assert "REVISED-0" not in model.prompts()[0] and CRITIQUE in model.prompts()[0]


def test_critique_quality_out_of_range_is_invalid(replay, judge_sampling):
    names = CritiqueQualityJudge.dimensions
    model = replay([{"completions": [dims_answer(names, [9, 8, 11, 6, 5, 7])]}])
    [j] = CritiqueQualityJudge(model, judge_sampling).judge([rollout()])
    assert not j.valid and j.score is None and "'priority': 11 is outside" in j.error


def test_adherence_mean(replay, judge_sampling):
    names = AdherenceJudge.dimensions
    model = replay([{"completions": [dims_answer(names, [8, 6, 7, 3])]}])
    [j] = AdherenceJudge(model, judge_sampling).judge([rollout()])
    assert j.valid and j.score == 6.0 and j.judge == "adherence"
    assert "REVISED-0" in model.prompts()[0]


def test_outcome_gain_is_critique_blind(replay, judge_sampling):
    model = replay([{"match": "INITIAL-0", "completions": ["1"]},
                    {"match": "INITIAL-1", "completions": ["0.50"]},
                    {"match": "INITIAL-2", "completions": ["Response B is worse: 0"]},
                    {"match": "INITIAL-3", "completions": ["0.7"]}])
    judgments = OutcomeGainJudge(model, judge_sampling).judge([rollout(i) for i in range(4)])
    assert [j.score for j in judgments] == [1.0, 0.5, 0.0, None]
    assert [j.valid for j in judgments] == [True, True, True, False]
    assert judgments[0].scores == {"gain": 1.0}
    assert "0.7" in judgments[3].error
    # One call for all, then the unreadable answer asked once more with the next seed.
    assert [(size, sampling.seed) for size, _, sampling in model.batches] == [(4, None), (1, 1)]
    assert [j.asked for j in judgments] == [1, 1, 1, 2]
    for asked in model.prompts():
        assert CRITIQUE not in asked and "the ending is rushed" not in asked
        assert "REVISED-" in asked and "INITIAL-" in asked


@pytest.mark.parametrize("answer", ["1", "2", "tie"])
def test_pairwise_maps_back_under_both_orders(replay, judge_sampling, answer):
    ids = [f"item{i}" for i in range(40)]
    assert {order_swapped(i) for i in ids} == {True, False}  # both orders get exercised
    rollouts = [Rollout(sample_id=i, x=f"PROMPT {i}", y0=f"Y0-{i}", c=CRITIQUE, y1=f"Y1-{i}")
                for i in ids]
    model = replay([{"completions": [answer]}])
    judgments = PairwiseJudge(model, judge_sampling).judge_rollouts(rollouts)
    assert len(model.batches) == 1
    for r, j, asked in zip(rollouts, judgments, model.prompts()):
        swapped = order_swapped(r.sample_id)
        assert j.shown_order == (["y1", "y0"] if swapped else ["y0", "y1"])
        shown_first = asked.index(r.y1) < asked.index(r.y0)
        assert shown_first == swapped
        assert CRITIQUE not in asked
        if answer == "tie":
            assert j.winner == "tie" and j.score == 0.5
        else:
            winner = j.shown_order[int(answer) - 1]
            assert j.winner == winner
            assert j.scores == {"preference": 1.0 if winner == "y1" else 0.0}
        assert j.reasons["shown_order"] == ", ".join(j.shown_order)


def test_pairwise_judge_that_recognises_content(replay, judge_sampling):
    # The judge always prefers the text containing GOOD, wherever it is shown.
    def rule(first_shown):
        return {"match": f"Response 1:\n{first_shown}", "completions": [
            "1" if first_shown.startswith("GOOD") else "2"]}
    model = replay([rule("GOOD-a"), rule("BAD-a"), rule("GOOD-b"), rule("BAD-b")])
    judge = PairwiseJudge(model, judge_sampling)
    for seed in range(6):
        js = judge.judge(["p", "p"], ["BAD-a", "GOOD-b"], ["GOOD-a", "BAD-b"],
                         ids=["a", "b"], seed=seed)
        assert [j.score for j in js] == [1.0, 0.0]
        assert [j.winner for j in js] == ["second", "first"]


def test_pairwise_rng_order_is_reproducible(replay, judge_sampling):
    model = replay([{"completions": ["1"]}])
    judge = PairwiseJudge(model, judge_sampling)
    args = (["p"] * 20, [f"a{i}" for i in range(20)], [f"b{i}" for i in range(20)])
    one = [j.shown_order for j in judge.judge(*args, rng=random.Random(7))]
    two = [j.shown_order for j in judge.judge(*args, rng=random.Random(7))]
    assert one == two and len({tuple(o) for o in one}) == 2


def test_pairwise_invalid_answer_keeps_order(replay, judge_sampling):
    model = replay([{"completions": ["Response 1 is better than Response 2"]}])
    [j] = PairwiseJudge(model, judge_sampling).judge_rollouts([rollout()])
    assert not j.valid and j.score is None and j.winner is None
    assert "ambiguous" in j.error and j.shown_order in (["y0", "y1"], ["y1", "y0"])


def gold_sample():
    rubric = Rubric(criteria=[
        Criterion(name="Clarity", description="easy to follow", weight=2.0),
        Criterion(name="Depth of analysis", description="goes beyond the obvious", weight=1.0),
        Criterion(name="Tone", weight=1.0),
    ])
    return Sample(id="g1", prompt="GOLD-PROMPT", rubric=rubric)


def test_gold_rubric_weighted_mean(replay, judge_sampling):
    answer = ("Scores below.\n" + json.dumps({"criteria": [
        {"name": "Clarity", "score": 8, "reason": "clear"},
        {"name": "depth of analysis", "score": "5/10"},
        {"name": "Tone", "score": 9}, {"name": "Unasked", "score": 1}]}))
    model = replay([{"completions": [answer]}])
    [j] = GoldRubricJudge(model, judge_sampling).judge([gold_sample()], ["A RESPONSE"])
    assert j.valid, j.error
    assert j.score == pytest.approx((2 * 8 + 1 * 5 + 1 * 9) / 4)  # 7.5
    assert j.scores == {"Clarity": 8, "Depth of analysis": 5, "Tone": 9}
    assert j.reasons == {"Clarity": "clear"}
    asked = model.prompts()[0]
    assert "1. Clarity: easy to follow" in asked and "3. Tone" in asked
    assert "GOLD-PROMPT" in asked and "A RESPONSE" in asked


def test_gold_rubric_accepts_mapping_form(replay, judge_sampling):
    answer = "{'Clarity': 4, 'Depth of analysis': {'score': 6}, 'Tone': 8}"
    model = replay([{"completions": [answer]}])
    [j] = GoldRubricJudge(model, judge_sampling).judge([gold_sample()], ["r"])
    assert j.valid and j.score == pytest.approx((8 + 6 + 8) / 4)


@pytest.mark.parametrize("criteria, fragment", [
    ([{"name": "Clarity", "score": 8}, {"name": "Tone", "score": 9}],
     "missing criterion 'Depth of analysis'"),
    ([{"name": "Clarity", "score": 8}, {"name": "Depth of analysis", "score": 0},
      {"name": "Tone", "score": 9}], "'Depth of analysis': 0 is outside"),
    ([{"name": "Clarity", "score": 8}, {"name": "Clarity", "score": 3},
      {"name": "Depth of analysis", "score": 5}, {"name": "Tone", "score": 9}],
     "'Clarity' scored twice"),
])
def test_gold_rubric_invalid(replay, judge_sampling, criteria, fragment):
    model = replay([{"completions": [json.dumps({"criteria": criteria})]}])
    [j] = GoldRubricJudge(model, judge_sampling).judge([gold_sample()], ["r"])
    assert not j.valid and j.score is None and fragment in j.error


def test_gold_rubric_needs_a_rubric(replay, judge_sampling):
    judge = GoldRubricJudge(replay([{"completions": ["{}"]}]), judge_sampling)
    with pytest.raises(ValueError, match="no gold rubric"):
        judge.judge([Sample(id="x", prompt="p")], ["r"])


def query_answer(score, decision, qid="q1"):
    return json.dumps({"results": [{"id": qid, "score": score, "decision": decision,
                                    "rationale": "a reason"}]})


@pytest.mark.parametrize("score, model_decision, decision, overridden", [
    (1, "SKIP", "SKIP", False), (2, "GRADE", "SKIP", True), (3, "GRADE", "GRADE", False),
    (4, "SKIP", "GRADE", True), (5, "grade", "GRADE", False),
])
def test_query_filter_decision_follows_score(replay, judge_sampling, score, model_decision,
                                             decision, overridden):
    model = replay([{"completions": [query_answer(score, model_decision)]}])
    sample = Sample(id="q1", prompt="QUERY TEXT", meta={"domain": "Business"})
    [j] = QueryFilterJudge(model, judge_sampling).judge([sample])
    assert j.valid and j.score == score and j.decision == decision
    assert ("decision" in j.reasons) == overridden
    assert j.reasons["rationale"] == "a reason"
    asked = model.prompts()[0]
    assert "id: q1" in asked and "query: QUERY TEXT" in asked
    assert "domain: Business" in asked and "ability: not available" in asked


@pytest.mark.parametrize("answer, fragment", [
    (query_answer(6, "GRADE"), "outside 1–5"), (query_answer(3.5, "GRADE"), "not an integer"),
    ('{"results": [{"id": "q1", "decision": "GRADE"}]}', "missing key 'score'"),
    ("GRADE", "no JSON object"),
])
def test_query_filter_invalid(replay, judge_sampling, answer, fragment):
    [j] = QueryFilterJudge(replay([{"completions": [answer]}]), judge_sampling).judge(
        [Sample(id="q1", prompt="x")])
    assert not j.valid and j.decision is None and fragment in j.error


def test_query_filter_accepts_bare_result(replay, judge_sampling):
    answer = '```json\n{"id": "q1", "score": 4, "decision": "GRADE", "rationale": "r"}\n```'
    [j] = QueryFilterJudge(replay([{"completions": [answer]}]), judge_sampling).judge(
        [Sample(id="q1", prompt="x")])
    assert j.valid and j.score == 4 and j.decision == "GRADE"


def test_batches_are_one_call_and_keep_order(replay, judge_sampling):
    names = AdherenceJudge.dimensions
    rules = [{"match": f"INITIAL-{i}", "completions": [dims_answer(names, [i + 1] * 4)]}
             for i in range(5)]
    model = replay(rules)
    judgments = AdherenceJudge(model, judge_sampling).judge([rollout(i) for i in range(5)])
    assert [j.score for j in judgments] == [1, 2, 3, 4, 5]
    assert model.batches == [(5, 1, judge_sampling)]
    assert AdherenceJudge(model, judge_sampling).judge([]) == []
    assert len(model.batches) == 1  # an empty batch asks nothing


def test_template_override_and_hash(replay, judge_sampling, tmp_path):
    path = tmp_path / "my_gain.md"
    path.write_text("Is {revision} better than {response} for {prompt}? Answer 1, 0.5 or 0.\n")
    model = replay([{"completions": ["0.5"]}])
    [j] = OutcomeGainJudge(model, judge_sampling, template=str(path)).judge([rollout()])
    assert j.valid and j.template == load_template(str(path)).hash
    assert j.template != load_template("judge_outcome_gain").hash
    assert model.prompts()[0].startswith("Is REVISED-0 better than INITIAL-0")


def test_override_cannot_leak_the_critique_to_a_blind_judge(replay, judge_sampling, tmp_path):
    path = tmp_path / "leaky.md"
    path.write_text("{prompt} {response} {revision} {critique}\n")
    judge = OutcomeGainJudge(replay([{"completions": ["1"]}]), judge_sampling, template=path)
    with pytest.raises(Exception, match="critique"):
        judge.judge([rollout()])


def test_rollout_without_critique_is_a_caller_error(replay, judge_sampling):
    judge = TaiScoreJudge(replay([{"completions": ["{}"]}]), judge_sampling)
    with pytest.raises(ValueError, match="has no c"):
        judge.judge([rollout(critique=None)])


def test_empty_completion_list_is_invalid_not_a_crash(judge_sampling):
    class Silent:
        model_id = "silent"

        def generate(self, conversations, sampling, n=1):
            return [[] for _ in conversations]

    [j] = TaiScoreJudge(Silent(), judge_sampling).judge([rollout()])
    assert not j.valid and j.raw == ""


def test_judges_ask_for_their_answer_schema(replay, judge_sampling):
    """Constrained decoding: each judge sends the JSON Schema of its answer with the call."""
    import json

    from coevo.roles.judges import GoldRubricJudge, OutcomeGainJudge, TaiScoreJudge
    from coevo.core.types import Rollout, Rubric, Criterion, Sample

    model = replay([{"completions": ["{}"]}])
    rollout = Rollout(sample_id="s", x="x", y0="a", c="c", y1="b")
    TaiScoreJudge(model, judge_sampling).judge([rollout])
    OutcomeGainJudge(model, judge_sampling).judge([rollout])
    rubric = Rubric(criteria=[Criterion(name="tone"), Criterion(name="facts")])
    GoldRubricJudge(model, judge_sampling).judge([Sample(id="s", prompt="x", rubric=rubric)], ["a"])
    TaiScoreJudge(model, judge_sampling, structured=False).judge([rollout])
    # "{}" is unreadable everywhere, so each call is followed by its re-ask with the same schema.
    assert model.schemas[0::2] == model.schemas[1::2]
    taiscore, gain, gold, unstructured = model.schemas[0::2]
    assert json.loads(taiscore)["required"][-1] == "score"
    assert json.loads(taiscore)["properties"]["quality_gain"]["properties"]["score"] == {
        "type": "integer", "minimum": 1, "maximum": 10}
    assert json.loads(gain) == {"enum": [1, 0.5, 0]}
    items = json.loads(gold)["properties"]["criteria"]["prefixItems"]
    assert [item["properties"]["name"]["const"] for item in items] == ["tone", "facts"]
    assert unstructured is None


def test_a_judge_asked_for_free_output_sends_no_schema_and_reads_the_json_it_writes(replay, judge_sampling):
    """`sampling.output: free` (the papers' judges): no answer schema, the answer read after,
    a thought before the JSON and a reason longer than the schema's cap kept."""
    from coevo.roles.judges import TaiScoreJudge
    from coevo.core.types import Rollout

    reason = "the critique names the missing deadline and the revision adds it " * 4
    answer = ("Let me weigh the critique first. " + json.dumps(
        {d: {"score": 8, "reason": reason} for d in
         ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")} | {"score": 7}))
    model = replay([{"completions": [answer]}])
    from coevo.core.types import JudgeSampling

    free = JudgeSampling(temperature=0.2, top_p=1.0, scoring="sampled", output="free")
    [judgment] = TaiScoreJudge(model, free).judge([Rollout(sample_id="s", x="x", y0="a", c="c", y1="b")])
    assert model.schemas == [None]
    assert judgment.valid and judgment.sampled == 7 and len(judgment.reasons["critique_quality"]) > 160
