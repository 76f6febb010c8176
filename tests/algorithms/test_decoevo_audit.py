"""A DecoEvo run audits its grading (the criterion judge + the current rubric-generator skill)
on the initial skills and after every outer step (issue 23): a grader that gives everything
full marks is flagged every audit, one that reads the answer is not; the drift of the
rubric-generator skill from round 0 is measured; the opt-in gate (`audit.gate`) refuses a
rubric-generator update whose grading ':' fools, and keeps the old skill; `audit.enabled:
false` turns the audits off."""

from __future__ import annotations

import json
import logging

import pytest
from decoevo_fakes import (
    GENERATOR,
    GENERATOR_REWRITER,
    JUDGE,
    SOLVER,
    STRUCTURAL,
    config,
    method_run,
    replay,
    replay_run_config,
    rubric,
    verdicts,
    write_data,
)

from coevo.algorithms.decoevo.data import make_partitions
from coevo.algorithms.decoevo.audit import RubricGrading, items
from coevo.audit import audit_judge
from coevo.audit.in_run import run_records
from coevo.roles.base import Scorer
from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore
from coevo.tasks.loaders import load_samples

#: A grader that gives every answer full marks, whatever it is.
GULLIBLE = [{"match": JUDGE, "completions": [verdicts(True, True)]}]
#: A grader that reads the answer: the solver's answers meet one criterion, anything else none.
READING = [{"match": [JUDGE, "answer one"], "completions": [verdicts(True, False)]},
           {"match": JUDGE, "completions": [verdicts(False, False)]}]


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data.jsonl")


def _run(data, tmp_path, judge, **overrides):
    """One DecoEvo run (2 inner steps, an outer step after the first) on a replay model
    whose criterion judge answers by `judge`; its store."""
    store = RunStore(tmp_path / "run")
    cfg = config(data, audit={"prompts": 2, **overrides.pop("audit", {})}, **overrides)
    run = method_run(cfg, replay(judge=judge), store=store)
    run.run()
    return run, store


def _metrics(store, stage="decoevo/seed0"):
    return {(m["round"], m["name"]): m["value"] for m in store.metrics(stage)}


def test_a_gullible_grader_is_flagged_every_audit(data, tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        _, store = _run(data, tmp_path, GULLIBLE)
    records = run_records(store)
    # Round 0 (the initial skills) and after the one outer step (step 1); none after step 2,
    # where no outer step ran and G could not change.
    assert [(r["round"], r["judge_role"], r["kind"]) for r in records] == [
        ("decoevo/seed0/round0", "grader", "gold_rubric"), ("decoevo/seed0/round1", "grader", "gold_rubric")]
    for record in records:
        assert record["n_items"] == 2 and record["fooled_rate"]["value"] == 1.0
        assert "master_keys" in {flag["probe"] for flag in record["flags"]}
    metrics = _metrics(store)
    for step in (0, 1):
        assert metrics[(step, "audit_grader_fooled_rate")] == 1.0
        assert metrics[(step, "audit_grader_fooled_rate_lo")] > 0.2
        assert metrics[(step, "audit_grader_fooled_rate_n")] == 16  # 2 questions x 8 master keys
        assert metrics[(step, "audit_grader_flags")] >= 1
    assert (2, "audit_grader_fooled_rate") not in metrics
    said = [r.getMessage() for r in caplog.records if "grader judge" in r.getMessage()]
    assert len(said) == 2 and all("can game it" in line for line in said)


def test_a_grader_that_reads_the_answer_is_not_flagged_and_its_drift_is_measured(data, tmp_path):
    _, store = _run(data, tmp_path, READING)
    records = run_records(store)
    assert len(records) == 2
    for record in records:
        assert record["fooled_rate"]["value"] == 0.0
        assert not {flag["probe"] for flag in record["flags"]} & {"master_keys", "padding", "injection"}
    metrics = _metrics(store)
    assert metrics[(0, "audit_grader_fooled_rate")] == 0.0
    # Drift: from round 1 on, the current G's grades against G0's on the same answers (every
    # answer graded alike here: no ranking, so n and a note, no rho), and the gold grader's.
    assert (0, "audit_grader_agreement_with_round0_n") not in metrics
    assert metrics[(1, "audit_grader_agreement_with_round0_n")] == 2
    assert records[1]["agreement_with_round0"]["n"] == 2 and "agreement_with_round0" not in records[0]
    assert records[1]["agreement_with_gold"]["n"] == 2


def test_drift_from_round0_is_the_spearman_of_the_two_gradings(data, tmp_path):
    """G0's rubric ranks the held-out answers one way, the accepted G''s the other: rho = -1."""
    cfg = config(data, audit={"prompts": 4})
    parts = make_partitions(load_samples(str(data)), cfg.partitions)
    first = (parts["diagnostic"] + parts["test"])[0].prompt  # its answer is "answer one"
    judge = [{"match": [JUDGE, "NEW CRITERION", "answer one"], "completions": [verdicts(False, False)]},
             {"match": [JUDGE, "NEW CRITERION"], "completions": [verdicts(True, True)]},
             {"match": [JUDGE, "answer one"], "completions": [verdicts(True, True)]},
             {"match": JUDGE, "completions": [verdicts(False, False)]}]
    solver = [{"match": [first, SOLVER], "completions": ["answer one"]},
              {"match": SOLVER, "completions": ["answer two"]}]
    store = RunStore(tmp_path / "run")
    run = method_run(cfg, replay(judge=judge, solver=solver, **_accepting_generator()), store=store)
    run.run()
    assert run.generator_skill.text == "NEW GENERATOR SKILL"
    record = run_records(store)[-1]
    assert record["n_items"] == 4 and record["agreement_with_round0"]["n"] == 4
    assert record["agreement_with_round0"]["value"] == pytest.approx(-1.0)
    assert _metrics(store)[(1, "audit_grader_agreement_with_round0")] == pytest.approx(-1.0)


def _accepting_generator():
    """Replay rules under which the generator rewriter's G' ('NEW GENERATOR SKILL', whose
    rubrics hold 'NEW CRITERION') is accepted by the Pareto rule: adequacy 6 -> 9."""
    return {
        "generator": [{"match": [GENERATOR, "NEW GENERATOR SKILL"],
                       "completions": [rubric(("NEW CRITERION", 1), ("Anything", 1))]},
                      {"match": GENERATOR, "completions": [rubric(("Meets the length", 2), ("Avoids cliches", 1))]}],
        "structural": [{"match": [STRUCTURAL, "NEW CRITERION"], "completions": [json.dumps(
                            {"rationale": "covers it", "adequacy": 9, "repair": "r"})]},
                       {"match": STRUCTURAL, "completions": [json.dumps(
                           {"rationale": "omits the audience", "adequacy": 6, "repair": "r"})]}],
        "generator_rewriter": [{"match": GENERATOR_REWRITER, "completions": [json.dumps(
            {"analysis": "a", "skill": "NEW GENERATOR SKILL"})]}],
    }


#: G0's grading reads the answer; the candidate G''s rubrics give anything full marks.
GULLIBLE_CANDIDATE = [{"match": [JUDGE, "NEW CRITERION"], "completions": [verdicts(True, True)]}, *READING]


@pytest.mark.parametrize("gate", [False, True])
def test_the_gate_refuses_a_flagged_rubric_generator_update_and_keeps_the_old_skill(data, tmp_path, caplog, gate):
    store = RunStore(tmp_path / "run")
    cfg = config(data, audit={"prompts": 2, "gate": gate})
    run = method_run(cfg, replay(judge=GULLIBLE_CANDIDATE, **_accepting_generator()), store=store)
    initial = run.generator_skill.text
    with caplog.at_level(logging.WARNING):
        run.run()
    versions = [r for _, r in store.get_records("skill") if r["name"] == "rubric_generator" and r["version"] > 0]
    assert len(versions) == 1 and versions[0]["text"] == "NEW GENERATOR SKILL"
    metrics = _metrics(store)
    if not gate:  # the paper's loop: the Pareto rule accepts it, nothing audits the candidate
        assert versions[0]["decision"] == "accepted" and run.generator_skill.text == "NEW GENERATOR SKILL"
        assert "audit_gate" not in versions[0] and (1, "audit_gate_rejected") not in metrics
        # ... and the round's audit then flags the grading under the accepted G'.
        assert [bool(r["flags"]) for r in run_records(store)] == [False, True]
        return
    assert versions[0]["decision"] == "rejected" and run.generator_skill.text == initial
    assert versions[0]["audit_gate"] == "rejected" and versions[0]["audit_gate_fooled_rate"] == 1.0
    assert versions[0]["why"].startswith("refused by the audit gate") and "structural improved" in versions[0]["why"]
    assert metrics[(1, "audit_gate_rejected")] == 1.0
    said = [r.getMessage() for r in caplog.records if "refused by the audit gate" in r.getMessage()]
    assert len(said) == 1 and "rubric-generator candidate v1" in said[0]
    # The candidate's audit is kept beside the round's; the round's (under G0) is clean.
    roles = {r["judge_role"]: r for r in run_records(store) if r["round"] == "decoevo/seed0/round1"}
    assert set(roles) == {"grader", "grader_candidate"}
    assert roles["grader_candidate"]["gate"] == "rejected" and roles["grader_candidate"]["candidate_version"] == 1
    assert not roles["grader"]["flags"]


def test_the_gate_passes_an_update_whose_grading_reads_the_answer(data, tmp_path):
    store = RunStore(tmp_path / "run")
    cfg = config(data, audit={"prompts": 2, "gate": True, "enabled": False})
    run = method_run(cfg, replay(judge=READING, **_accepting_generator()), store=store)
    run.run()
    assert run.generator_skill.text == "NEW GENERATOR SKILL"
    version = next(r for _, r in store.get_records("skill") if r["name"] == "rubric_generator" and r["version"] == 1)
    assert version["decision"] == "accepted" and version["audit_gate"] == "passed"
    # The gate runs without the per-round audits: only its own record is kept.
    assert [(r["round"], r["judge_role"]) for r in run_records(store)] == [("decoevo/seed0/round1", "grader_candidate")]
    assert _metrics(store)[(1, "audit_gate_rejected")] == 0.0


def test_the_audit_can_be_turned_off(data, tmp_path):
    _, store = _run(data, tmp_path, GULLIBLE, audit={"enabled": False})
    assert run_records(store) == []
    assert not any(m["name"].startswith("audit_") for m in store.metrics())


def test_the_grading_is_a_scorer_the_audit_can_call(data):
    run = method_run(config(data), replay(judge=READING))
    grading = RubricGrading(run.roles.judge, run.rubrics, run.skills["rubric_generator"])
    assert isinstance(grading, Scorer)
    questions = run.parts["test"]
    real = items(questions, ["answer one"] * 2, "decoevo/seed0")
    audit = audit_judge("gold_rubric", grading, questions, real, n=2, seed=0)
    assert audit.fooled_rate.value == 0.0 and audit.judge == "grader"


def test_summary_json_holds_every_audit_and_the_gate_count(tmp_path):
    cfg = replay_run_config(tmp_path, methods=["sc_coevo", "decoevo"], seeds=[0], audit={"prompts": 2, "gate": True})
    summary = run_experiment(None, tmp_path / "run", data=cfg)
    found = {(r["round"], r["judge_role"]): r for r in summary["audit"]}
    assert all(r["kind"] == "gold_rubric" for r in summary["audit"])
    # Round 0 and after each outer step (steps 1 and 2), per method.
    for method in ("sc_coevo", "decoevo"):
        assert {(f"{method}/seed0/round{t}", "grader") for t in range(3)} <= set(found)
    # SC-CoEvo's score-coupled rule takes EASY_G, whose rubrics every answer meets (the
    # solver's score rises 1/3 -> 1): the gate sees ':' meet them too and refuses it.
    assert summary["methods"]["sc_coevo"]["audit_gate_rejected"] == 1
    assert found[("sc_coevo/seed0/round1", "grader_candidate")]["gate"] == "rejected"
    refused = [v for v in summary["skill_versions"]["rubric_generator"] if v["method"] == "sc_coevo" and v["step"] == 1]
    assert refused[0]["decision"] == "rejected" and "score-coupled" in refused[0]["why"]


def test_the_gate_is_a_listed_departure_and_the_audit_is_not(data):
    from coevo.algorithms.decoevo.paper import departures

    assert "audit.gate" not in {d.setting for d in departures(config(data, audit={"prompts": 1}))}
    assert "audit.gate" in {d.setting for d in departures(config(data, audit={"gate": True}))}
