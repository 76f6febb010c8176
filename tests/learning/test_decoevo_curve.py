"""DecoEvo's learning curve read from a fake run: summary.json's skill versions and the
per-seed test results -> the curve's points, the paired gain and the notes."""

import pytest

from coevo.algorithms.decoevo.summary import MethodResult, ScoringModes
from learning.curve import curve_record
from learning.decoevo import curve_points, edit_notes, incumbents, rejected_notes
from coevo.core.types import Skill

STEPS = 4
IDS = ["wp-001", "wp-002", "wp-003"]


def result(method, seed, scores, version=0, text="S0"):
    return MethodResult(
        method=method, seed=seed, test_scores=scores, test_ids=IDS, test_mean=None, test_scores_sampled=scores,
        test_mean_sampled=None, scoring=ScoringModes(judge="expected", auditor="expected", grader="sampled"),
        solver=Skill(name="solver", version=version, text=text, accepted=True),
        rubric_generator=Skill(name="rubric_generator", version=0, text="G0", accepted=True),
        trajectory=[], costs=[], invalid={})


def version(seed, v, decision, step, name="solver", method="decoevo"):
    return {"method": method, "seed": seed, "version": v, "parent": v - 1, "decision": decision,
            "why": f"gate says {decision}", "step": step}


# Seed 0: v1 rejected at step 1, v2 accepted at step 2, v3 accepted at step 3 (final).
# Seed 1: every edit rejected, so its final skill is the initial one.
SUMMARY = {
    "skill_versions": {
        "solver": [version(0, 0, "accepted", 0), version(0, 1, "rejected", 1), version(0, 2, "accepted", 2),
                   version(0, 3, "accepted", 3), version(1, 0, "accepted", 0), version(1, 1, "rejected", 1),
                   version(0, 1, "accepted", 2, method="skillopt")],
        "rubric_generator": [version(0, 0, "accepted", 0, "rubric_generator"),
                             version(0, 1, "rejected", 1, "rubric_generator")],
    },
    "methods": {"decoevo": {"invalid_outputs": {"judge": 2}}},
    "trajectory": {"decoevo": [{"step": 0, "proxy": 0.5, "gold": 0.5}, {"step": 4, "proxy": 0.6, "gold": None}]},
}
RESULTS = {
    "zero_shot/seed0": result("zero_shot", 0, [0.5, 0.5, 0.0]),
    "decoevo/seed0": result("decoevo", 0, [1.0, 1.0, 0.5], version=3, text="S3"),
    "zero_shot/seed1": result("zero_shot", 1, [0.5, None, 1.0]),
    "decoevo/seed1": result("decoevo", 1, [0.5, None, 1.0]),
}


def test_incumbent_solver_after_each_step():
    assert incumbents(SUMMARY["skill_versions"]["solver"], 0, STEPS) == {0: 0, 1: 0, 2: 2, 3: 3, 4: 3}
    assert incumbents(SUMMARY["skill_versions"]["solver"], 1, STEPS) == {s: 0 for s in range(5)}


def test_points_before_between_after():
    asked = []

    def evaluate(seed, text):
        asked.append((seed, text))
        return {"wp-001": 1.0, "wp-002": 0.5, "wp-003": None}

    texts = {(0, 1): "S1", (0, 2): "S2", (0, 3): "S3"}
    points = curve_points(SUMMARY, RESULTS, [0, 1], STEPS, texts, evaluate)
    assert [step for step, _ in points] == [0, 2, 3, 4]
    assert asked == [(0, "S2")]  # only the intermediate accepted version is re-scored, once
    before, at2, at3, after = (p for _, p in points)
    assert before == {"wp-001#0": 0.5, "wp-002#0": 0.5, "wp-003#0": 0.0, "wp-001#1": 0.5, "wp-003#1": 1.0}
    assert at2 == {"wp-001#0": 1.0, "wp-002#0": 0.5, "wp-001#1": 0.5, "wp-003#1": 1.0}
    assert at3 == after == {"wp-001#0": 1.0, "wp-002#0": 1.0, "wp-003#0": 0.5, "wp-001#1": 0.5, "wp-003#1": 1.0}

    record = curve_record(loop="decoevo", target="t", reward="r", points=points, seconds=1.0, seeds=[0, 1])
    assert record.n == 5 and record.steps == STEPS
    assert record.before == pytest.approx(2.5 / 5) and record.after == pytest.approx(4.0 / 5)
    assert record.gain == pytest.approx(1.5 / 5)
    assert [s for s, _ in record.curve] == [0, 2, 3, 4]


def test_no_accepted_edit_means_two_points_and_no_gain():
    summary = {**SUMMARY, "skill_versions": {"solver": [version(1, 0, "accepted", 0), version(1, 1, "rejected", 1)]}}
    points = curve_points(summary, RESULTS, [1], STEPS, {}, lambda seed, text: pytest.fail("nothing to re-score"))
    assert [step for step, _ in points] == [0, STEPS]
    record = curve_record(loop="decoevo", target="t", reward="r", points=points, seconds=1.0, seeds=[1])
    assert record.gain == 0.0 and record.gain_ci == [0.0, 0.0]


def test_notes_say_which_edits_were_accepted():
    notes = edit_notes(SUMMARY, RESULTS, [0, 1])
    assert "solver: 2/4 candidate edits accepted over seeds [0, 1]" in notes
    assert "rubric_generator: 0/1 candidate edits accepted over seeds [0, 1]" in notes
    assert any("solver v1 (seed 0, step 1) rejected: gate says rejected" in n for n in notes)
    assert not any("skillopt" in n for n in notes)
    assert "seed 0 final solver skill v3: 'S3'" in notes
    assert any("unreadable" in n and "judge" in n for n in notes)
    assert notes[-1].endswith("0: 0.500, 4: n/a")


def test_rejected_candidates_are_scored_for_the_notes():
    texts = {(0, 1): "S1 " * 100, (1, 1): "T1"}
    scores = {"S1 " * 100: {"wp-001": 0.0, "wp-002": 1.0, "wp-003": None}, "T1": {"wp-001": None}}
    notes = rejected_notes(SUMMARY, texts, lambda seed, text: scores[text], [0, 1])
    assert len(notes) == 2
    assert notes[0].startswith("rejected solver v1 (seed 0, step 1) would have scored 0.500 on the test set: 'S1 S1")
    assert notes[0].endswith("...'")
    assert "scored n/a" in notes[1]
