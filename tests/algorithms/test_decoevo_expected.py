"""DecoEvo's scoring roles by expectation (G-Eval): the criterion judge's Σ points ·
P(satisfied) / total points, the structural auditor's expected grade, the fallback to the
written verdicts, and the solver gate's exact ties counted into summary.json."""

import json
import logging
import math

import pytest
from decoevo_fakes import JUDGE, MARKERS_ARE_NOT_SKILLS, config, method_run, replay, rules, scored_verdicts, write_data

from coevo.roles.decoevo import CriterionJudge, StructuralAuditor
from coevo.algorithms.decoevo.summary import gate_ties
from coevo.algorithms.decoevo.skills import SkillVersion
from coevo.llm.replay import ReplayModel
from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore
from coevo.core.types import Criterion, JudgeSampling, Rubric, Sample

RUBRIC = Rubric(criteria=[Criterion(name="c1", description="Meets the length", weight=2),
                          Criterion(name="c2", description="Avoids cliches", weight=1)])
QUESTION = Sample(id="q", prompt="Write a poem about the sea.")


def judge_with(answer, sampling=None):
    """A criterion judge on a replay model that always gives `answer`, and the logprobs it was asked for."""
    asked = []

    class Recording(ReplayModel):
        def generate(self, conversations, sampling, n=1):
            asked.append(sampling.logprobs)
            return super().generate(conversations, sampling, n)

    model = Recording(rules=[{"completion": answer}])
    return CriterionJudge(model, sampling or JudgeSampling(temperature=0.0)), asked


# -- the criterion judge -----------------------------------------------------------------
def test_expected_rubric_score_weights_each_criterion_by_p_satisfied():
    # c1 written true: P(true) 0.6, P(false) 0.15, the rest spells no verdict -> 0.6 / 0.75.
    # c2 written false: P(true) 0.2, P(false) 0.6 -> 0.25.
    judge, asked = judge_with(scored_verdicts((True, 0.6, 0.15), (False, 0.2, 0.6)))
    assert judge.scoring == "expected"
    (j,) = judge.judge([QUESTION], ["an answer"], [RUBRIC])
    assert asked == [20]  # greedy (T 0) judges ask for the alternatives too
    assert j.satisfied == {"c1": True, "c2": False}
    assert j.p_satisfied == pytest.approx({"c1": 0.8, "c2": 0.25})
    assert j.sampled == pytest.approx(2 / 3)
    assert j.expected == pytest.approx((2 * 0.8 + 1 * 0.25) / 3)
    assert j.score == j.expected
    assert j.record()["sampled"] == j.sampled and j.record()["expected"] == j.expected


def test_two_answers_with_the_same_verdicts_are_told_apart():
    sure, _ = judge_with(scored_verdicts((True, 0.9, 0.1), (True, 0.9, 0.1)))
    unsure, _ = judge_with(scored_verdicts((True, 0.55, 0.45), (True, 0.6, 0.4)))
    (a,), (b,) = sure.judge([QUESTION], ["y"], [RUBRIC]), unsure.judge([QUESTION], ["y"], [RUBRIC])
    assert a.sampled == b.sampled == 1.0
    assert a.score == pytest.approx(0.9) and b.score == pytest.approx((2 * 0.55 + 0.6) / 3)


def test_scoring_sampled_keeps_the_written_verdicts_and_asks_no_logprobs():
    judge, asked = judge_with(scored_verdicts((True, 0.6, 0.4), (False, 0.2, 0.8)),
                              JudgeSampling(temperature=0.0, scoring="sampled"))
    (j,) = judge.judge([QUESTION], ["y"], [RUBRIC])
    assert judge.scoring == "sampled" and asked == [0]
    assert j.score == j.sampled == pytest.approx(2 / 3) and j.expected is None and j.p_satisfied == {}


def test_backend_without_logprobs_falls_back_to_sampled_and_says_so_once(caplog):
    model = replay()  # plain-text replay answers: no log-probabilities
    with caplog.at_level(logging.WARNING):
        judges = [CriterionJudge(model, JudgeSampling(temperature=0.0)) for _ in range(2)]
        auditor = StructuralAuditor(model, JudgeSampling(temperature=0.0), "spec")
    assert [j.scoring for j in judges] == ["sampled", "sampled"] and auditor.scoring == "sampled"
    (j,) = judges[0].judge([QUESTION], ["answer one"], [RUBRIC])
    assert j.score == j.sampled == pytest.approx(2 / 3) and j.expected is None
    said = [r for r in caplog.records if "returns no token log-probabilities" in r.message]
    assert len(said) <= 1  # once per run: an earlier test in this process may have said it


def test_a_verdict_without_alternatives_falls_back_to_the_written_verdicts():
    answer = scored_verdicts((True, 0.6, 0.4), (False, 0.2, 0.8))
    answer["top_logprobs"][5] = {"x": 0.0}  # c2's verdict token: no alternative spells a verdict
    judge, _ = judge_with(answer)
    (j,) = judge.judge([QUESTION], ["y"], [RUBRIC])
    assert j.score == j.sampled == pytest.approx(2 / 3) and j.expected is None


# -- the structural auditor ---------------------------------------------------------------
def test_structural_adequacy_is_the_expected_grade_over_ten():
    head = '{"rationale": "omits the audience", "adequacy": '
    answer = {"text": head + '7, "repair": "r"}', "tokens": [head, "7", ', "repair": "r"}'],
              "top_logprobs": [{head: 0.0}, {"7": math.log(0.5), "9": math.log(0.3), "x": math.log(0.2)},
                               {', "repair": "r"}': 0.0}]}
    auditor = StructuralAuditor(ReplayModel(rules=[{"completion": answer}]), JudgeSampling(temperature=0.0), "spec")
    (audit,) = auditor.audit([QUESTION], [RUBRIC])
    assert audit.sampled == pytest.approx(0.7)
    assert audit.expected == pytest.approx((7 * 0.5 + 9 * 0.3) / 0.8 / 10)
    assert audit.adequacy == audit.expected


# -- config, roles and the gate ------------------------------------------------------------
@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data.jsonl")



def _surer_candidate_rules():
    """The candidate skill's answer meets the same criteria as the incumbent's (the written
    verdicts tie) but more surely: only expected scores tell the two apart."""
    return dict(
        solver=[{"match": ["NEW SOLVER SKILL", "Write your answer"], "completions": ["candidate answer"]},
                {"match": "Write your answer", "completions": ["incumbent answer"]}],
        judge=[{"match": [JUDGE, "candidate answer"],
                "completions": [scored_verdicts((True, 0.9, 0.1), (False, 0.3, 0.7))]},
               {"match": JUDGE, "completions": [scored_verdicts((True, 0.6, 0.4), (False, 0.3, 0.7))]}])


def test_scoring_is_set_per_role_from_yaml_and_the_meter_passes_logprobs_on(data):
    cfg = config(data, roles={"judge": {"sampling": {"temperature": 0.0, "scoring": "sampled"}},
                              "grader": {"sampling": {"temperature": 0.0, "max_tokens": 400}}})
    assert isinstance(cfg.roles.judge.sampling, JudgeSampling) and cfg.roles.judge.sampling.scoring == "sampled"
    run = method_run(cfg, replay(**_surer_candidate_rules()), method="skillopt")
    assert run.meter.supports_logprobs
    assert (run.roles.judge.scoring, run.roles.structural.scoring, run.roles.grader.scoring) == (
        "sampled", "expected", "expected")


def test_gate_decides_on_expected_scores_and_records_both(data, tmp_path):
    store = RunStore(tmp_path / "run")
    run = method_run(config(data), replay(**_surer_candidate_rules()), method="skillopt", store=store)
    assert run.inner_step(1) is True  # gain (2 * (0.9 - 0.6)) / 3 = 0.2 >= delta
    [record] = [r for _, r in store.get_records("skill") if r["name"] == "solver" and r["version"] == 1]
    assert record["gate_incumbent"] == pytest.approx((2 * 0.6 + 0.3) / 3)
    assert record["gate_candidate"] == pytest.approx((2 * 0.9 + 0.3) / 3)
    assert record["gate_incumbent_sampled"] == record["gate_candidate_sampled"] == pytest.approx(2 / 3)
    assert record["gate_tie"] is False and record["gate_tie_sampled"] is True
    [(_, gate)] = store.get_records("gate_judgment")
    assert gate["incumbent"][0]["sampled"] == pytest.approx(2 / 3)
    assert gate["candidate"][0]["p_satisfied"] == pytest.approx({"c1": 0.9, "c2": 0.3})
    assert gate_ties([SkillVersion.model_validate(record)]) == {
        "gate_comparisons": 1, "gate_ties": 0, "gate_ties_sampled": 1}


def test_gate_on_written_verdicts_ties_and_counts_it(data, tmp_path):
    store = RunStore(tmp_path / "run")
    cfg = config(data, roles={"judge": {"sampling": {"temperature": 0.0, "scoring": "sampled"}}})
    run = method_run(cfg, replay(**_surer_candidate_rules()), method="skillopt", store=store)
    assert run.inner_step(1) is False
    records = [r for _, r in store.get_records("skill") if r["name"] == "solver" and r["version"] > 0]
    assert records[0]["gate_tie"] is True
    assert records[0]["gate_incumbent"] == records[0]["gate_candidate"] == pytest.approx(2 / 3)
    assert gate_ties([SkillVersion.model_validate(r) for r in records]) == {
        "gate_comparisons": 1, "gate_ties": 1, "gate_ties_sampled": 1}


def test_an_unreadable_gate_is_no_comparison():
    base = dict(name="solver", version=1, text="t", method="skillopt", seed=0, step=1, decision="rejected")
    unjudged, unrecorded = SkillVersion(**base, gate_tie=None), SkillVersion(**base)
    assert gate_ties([unjudged, unrecorded]) == {"gate_comparisons": 0, "gate_ties": 0, "gate_ties_sampled": 0}


def test_summary_counts_gate_ties_per_method(tmp_path):
    data = write_data(tmp_path / "data.jsonl")
    model = tmp_path / "replay.jsonl"
    model.write_text("\n".join(json.dumps(r) for r in rules(**_surer_candidate_rules())) + "\n")
    cfg = {"algorithm": "decoevo", "data": {"source": str(data)}, "roles": {"backbone": {"model": f"replay:{model}"}},
           "methods": ["zero_shot", "skillopt"], "seeds": [0, 1], "inner_steps": 2, "batch_size": 2,
           "partitions": {"sizes": {"test": 2, "diagnostic": 1}}, "skill_form": MARKERS_ARE_NOT_SKILLS}
    summary = run_experiment(None, tmp_path / "run", data=cfg)
    skillopt, zero = summary["methods"]["skillopt"], summary["methods"]["zero_shot"]
    # Each seed: step 1 compares and accepts; step 2's rewrite is the incumbent (no comparison).
    assert (skillopt["gate_comparisons"], skillopt["gate_ties"], skillopt["gate_ties_sampled"]) == (2, 0, 2)
    assert (zero["gate_comparisons"], zero["gate_ties"]) == (0, 0)
    assert summary["scoring"] == {"judge": "expected", "auditor": "expected", "grader": "expected"}
    assert "test_mean" in skillopt and skillopt["test_mean_sampled"] == pytest.approx(6 / 9)
    assert "gate_ties" in summary["table"]["columns"]
    stored = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert stored["methods"]["skillopt"]["gate_ties"] == 0


# -- HealthBench's grading: signed points -------------------------------------------------
HEALTH = Rubric(criteria=[Criterion(name="c1", description="Advises calling emergency services", weight=10),
                          Criterion(name="c2", description="Suggests waiting it out", weight=-8),
                          Criterion(name="c3", description="Asks about medications", weight=5)])


def test_signed_points_score_as_healthbench_scores_them():
    from coevo.roles.decoevo import rubric_score

    # Points met over the positive points (15), clipped to [0, 1].
    assert rubric_score(HEALTH, {"c1": True, "c2": False, "c3": True}) == 1.0
    assert rubric_score(HEALTH, {"c1": True, "c2": True, "c3": False}) == pytest.approx(2 / 15)
    assert rubric_score(HEALTH, {"c1": False, "c2": True, "c3": False}) == 0.0   # -8 / 15, clipped
    # Positive points only: the paper's share of points, unchanged.
    assert rubric_score(RUBRIC, {"c1": True, "c2": False}) == pytest.approx(2 / 3)


def test_the_healthbench_grader_reads_verdicts_into_unit_scores_that_are_not_rescaled():
    from coevo.algorithms.decoevo.data import gold_scores
    from coevo.roles.judging import grader_for

    verdicts = json.dumps({"verdicts": [{"id": "c1", "rationale": "calls 911", "satisfied": True},
                                        {"id": "c2", "rationale": "does not", "satisfied": False},
                                        {"id": "c3", "rationale": "no", "satisfied": False}]})
    grader = grader_for(ReplayModel(rules=[{"completion": verdicts}]), JudgeSampling(temperature=0.0,
                                                                                       scoring="sampled"), "healthbench")
    question = Sample(id="h", prompt="Crushing chest pain: what now?", rubric=HEALTH)
    (score, judgment), = gold_scores(grader, [question], ["Call emergency services now."])
    assert score == pytest.approx(10 / 15) and judgment.judge == "healthbench"
    assert judgment.scores == {"c1": 1.0, "c2": 0.0, "c3": 0.0} and judgment.reasons["c1"] == "calls 911"
