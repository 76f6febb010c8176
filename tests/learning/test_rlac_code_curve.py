"""RLAC on code's learning curve, read from summary.json (fast: fake summaries, no model)."""

import pytest

from learning.rlac_code import curve_from_summaries, measure


def evaluation(outcomes, lo=0.1, hi=0.9):
    share = sum(outcomes.values()) / len(outcomes)
    return {"pass_at_1": share, "pass_at_1_lo": lo, "pass_at_1_hi": hi, "heldout_n": len(outcomes),
            "per_item": outcomes, "heldout_output_chars": 100.0}


def round_record(r, outcomes, generator_pairs=4, critic_pairs=0, delta=1e-5):
    training = {"generator": {"steps": 2, "seconds": 1.0, "loss": 0.69, "weight_delta": delta}}
    if critic_pairs:
        training["critic"] = {"steps": 1, "seconds": 1.0, "loss": 0.69, "weight_delta": 0.0}
    return {"round": r, "eval": evaluation(outcomes), "pairs": {"generator": generator_pairs, "critic": critic_pairs},
            "trained": {"generator": generator_pairs > 0, "critic": critic_pairs > 0}, "training": training}


def summary(rounds, base):
    return {"baseline": evaluation(base), "rounds": rounds}


BASE = {"p/0": 0.0, "p/1": 0.0, "p/2": 1.0, "p/3": 0.0}
ROUND1 = {"p/0": 1.0, "p/1": 0.0, "p/2": 1.0, "p/3": 0.0}
ROUND2 = {"p/0": 1.0, "p/1": 1.0, "p/2": 1.0, "p/3": 0.0}


def test_points_are_rounds_and_keys_are_problem_and_seed():
    curve = curve_from_summaries({0: summary([round_record(1, ROUND1, critic_pairs=3), round_record(2, ROUND2)], BASE),
                                  1: summary([round_record(1, BASE), round_record(2, ROUND1)], BASE)},
                                 seconds=12.34)
    assert curve.loop == "rlac-code" and curve.target == "held-out pass@1"
    assert curve.reward == "code validator (reference tests in the sandbox)"
    assert curve.curve == [[0, 0.25], [1, 0.375], [2, 0.625]]
    # before / after: round 0 and the last round, over the 4 problems x 2 seeds, paired.
    assert (curve.before, curve.after, curve.n, curve.steps) == (0.25, 0.625, 8, 2)
    assert curve.gain == pytest.approx(0.375)
    assert curve.gain_ci[0] <= curve.gain <= curve.gain_ci[1]
    assert curve.seeds == [0, 1] and curve.seconds == 12.3


def test_notes_say_each_sides_pairs_and_whether_its_weights_moved():
    curve = curve_from_summaries({0: summary([round_record(1, ROUND1, critic_pairs=3),
                                              round_record(2, ROUND2, delta=0.0)], BASE)}, seconds=1.0)
    first, second = curve.settings["rounds"]
    assert first["pairs"] == {"generator": 4, "critic": 3}
    assert first["moved"] == {"generator": True, "critic": False}  # the critic's stage changed nothing
    assert second["moved"] == {"generator": False, "critic": None}  # the critic did not train at all
    text = "\n".join(curve.notes)
    assert "rounds whose weights moved: generator 1, critic 0 of 2" in text
    assert "seed 0 round 0 (untrained generator): held-out pass@1 0.250 [0.100, 0.900] (n=4)" in text
    assert ("seed 0 round 1: generator 4 DPO pairs, 2 steps, weights moved (max |Δw| 1e-05); "
            "critic 3 DPO pairs, 1 steps, weights unchanged; held-out pass@1 0.500 [0.100, 0.900] (n=4)") in text
    assert "seed 0 round 2: generator 4 DPO pairs, 2 steps, weights unchanged; critic 0 DPO pairs, not trained" in text


def test_a_summary_without_per_item_outcomes_is_refused():
    old = summary([round_record(1, ROUND1)], BASE)
    del old["baseline"]["per_item"]
    with pytest.raises(ValueError, match="per_item"):
        curve_from_summaries({0: old}, seconds=0.0)


def test_a_python_reward_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ValueError, match="rlac-code's reward is the code validator"):
        measure(reward="python:rewards.py:score", work_dir=tmp_path)
