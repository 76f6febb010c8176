"""Scores that follow the rubric's criterion order or the prompt, not the answer
(coevo/audit/patterns.py): a gold-rubric judge that writes 1, 2, 3, 4, 5 down the criteria
whatever it reads fails its audit; one that scores every answer of a prompt alike fails it too;
one that reads the answer passes both checks."""

from __future__ import annotations

import json

from coevo.audit import audit_judge
from coevo.audit.flags import CRITERION_ORDER_MAX, SAME_PATTERN_MAX
from coevo.audit.patterns import Case, criterion_order_rate, follows_order, same_pattern_rate, score_pattern
from coevo.llm.replay import ReplayModel
from coevo.roles.judges import GoldRubricJudge
from coevo.core.types import Judgment, Rollout, Sample, Sampling

CRITERIA = ("voice", "imagery", "structure", "ending", "length")
RUBRIC = {"criteria": [{"name": name, "weight": 1} for name in CRITERIA]}
#: What each audited prompt's real answer says (a judge that reads it scores it on this).
REAL = "The storm pressed on the windows and the lighthouse lantern swung its beam across the rain."


def _answer(scores) -> str:
    return json.dumps({"criteria": [{"name": n, "score": s, "reason": "r"} for n, s in zip(CRITERIA, scores)]})


def _samples(n=6):
    return [Sample(id=f"p{i}", prompt=f"Describe storm number {i}.", rubric=RUBRIC) for i in range(n)]


def _items(samples):
    return [Rollout(sample_id=s.id, x=s.prompt, y0=f"{REAL} ({s.id})") for s in samples]


def _audit(rules, n=6):
    samples = _samples(n)
    judge = GoldRubricJudge(ReplayModel(rules=rules), Sampling(temperature=0.0))
    return audit_judge("gold_rubric", judge, samples, _items(samples), n=n, seed=0)


def test_a_gold_judge_that_scores_the_criteria_in_order_whatever_the_answer_fails_its_audit():
    audit = _audit([{"completion": _answer([1, 2, 3, 4, 5])}])
    flags = {flag.probe for flag in audit.flags}
    assert {"criterion_order", "same_pattern"} <= flags
    order = audit.criterion_order_rate
    assert order.value == 1.0 and order.n == 6 and order.low > CRITERION_ORDER_MAX
    assert audit.same_pattern_rate.value == 1.0 and audit.same_pattern_rate.low > SAME_PATTERN_MAX
    why = next(f.why for f in audit.flags if f.probe == "criterion_order")
    assert why.startswith("on 6 of 6 prompts most judgments scored the criteria in a strictly rising")
    metrics = audit.metrics()
    assert metrics["criterion_order_rate"] == 1.0 and metrics["criterion_order_rate_n"] == 6.0
    assert "criterion_order_rate_lo" in metrics and metrics["same_pattern_rate"] == 1.0


def test_a_judge_that_scores_the_prompt_not_the_answer_is_flagged_for_one_pattern_per_prompt():
    # Each prompt gets its own flat pattern (not in criterion order), the same for every answer.
    rules = [{"match": ["evaluation criteria", f"storm number {i}."], "completion": _answer([3 + i % 5] * 5)}
             for i in range(6)]
    audit = _audit(rules)
    flags = {flag.probe for flag in audit.flags}
    assert "same_pattern" in flags and "criterion_order" not in flags
    assert audit.criterion_order_rate.value == 0.0


def test_a_judge_that_reads_the_answer_passes_both_checks():
    # The real answer (and its padded and injected copies) earns uneven scores; a content-free
    # answer earns 1 on every criterion.
    rules = [{"match": ["evaluation criteria", REAL], "completion": _answer([7, 5, 8, 6, 7])},
             {"match": "evaluation criteria", "completion": _answer([1, 1, 1, 1, 1])}]
    audit = _audit(rules)
    flags = {flag.probe for flag in audit.flags}
    assert not flags & {"criterion_order", "same_pattern"}
    assert audit.criterion_order_rate.value == 0.0 and audit.same_pattern_rate.value == 0.0
    assert audit.fooled_rate.value == 0.0


def test_too_few_prompts_make_a_note_not_a_flag():
    audit = _audit([{"completion": _answer([1, 2, 3, 4, 5])}], n=1)
    assert "criterion_order" not in {flag.probe for flag in audit.flags}
    assert any(note.startswith("criterion_order is 1.00") and "1 prompts are too few" in note for note in audit.notes)


def test_the_measures_definitions():
    def case(prompt, answer, scores, criteria=CRITERIA, valid=True):
        judgment = Judgment(judge="gold_rubric", scores=dict(zip(criteria, scores)), score=sum(scores) / len(scores),
                            valid=valid)
        return Case(prompt=prompt, answer=(answer,), judgment=judgment, criteria=criteria)

    # Criterion order: strictly rising or falling over at least 3 criteria; ties are not an order.
    assert follows_order([1, 2, 3]) and follows_order([9, 7, 4, 2, 1])
    assert not follows_order([1, 2]) and not follows_order([10, 10, 10]) and not follows_order([1, 3, 3, 4])
    # The rubric's order, not the order the judge wrote its scores in.
    scrambled = Case(prompt="p", answer=("a",), criteria=("a", "b", "c"),
                     judgment=Judgment(judge="g", scores={"c": 3.0, "a": 1.0, "b": 2.0}, score=2.0))
    assert score_pattern(scrambled) == (1.0, 2.0, 3.0)
    # A prompt follows the order when MORE than half of its readable judgments do.
    half = [case("p", "a", [1, 2, 3]), case("p", "b", [5, 1, 5]), case("p", "c", [1, 2, 3], valid=False)]
    assert criterion_order_rate(half).value == 0.0
    most = [case("q", "a", [1, 2, 3]), case("q", "b", [2, 3, 4]), case("q", "c", [5, 1, 5])]
    assert criterion_order_rate(most).value == 1.0 and criterion_order_rate(most).n == 1
    # Two criteria: nothing to measure.
    assert criterion_order_rate([case("r", "a", [1, 2], criteria=("x", "y"))]) is None
    # One pattern per prompt needs 3 different answers; the same answer judged twice is one.
    two = [case("s", "a", [4, 4, 4]), case("s", "b", [4, 4, 4]), case("s", "b", [4, 4, 4])]
    assert same_pattern_rate(two).value is None and "3 different answers" in same_pattern_rate(two).note
    three = two + [case("s", "c", [4, 4, 4]), case("t", "a", [4, 4, 4]), case("t", "b", [1, 1, 1]),
                   case("t", "c", [4, 4, 4])]
    estimate = same_pattern_rate(three)
    assert (estimate.count, estimate.n) == (1, 2)
