"""The RLAC miniature's settings and its per-round readers (fast: plans and fake summaries and
stores, no model; the whole measurement on fakes is test_mini_rlac_design.py)."""

from __future__ import annotations

import pytest

from learning import mini_rlac
from coevo.run.runner import plan_experiment
from coevo.rundir.store import RunStore


def settings(arm: str) -> list[str]:
    return [*mini_rlac.DEFAULT_OVERRIDES, *mini_rlac.ARMS[arm], "data.train=18", "data.heldout=40"]


@pytest.mark.parametrize("arm", sorted(mini_rlac.ARMS))
def test_every_arm_runs_the_same_rounds_and_the_critic_arms_the_same_proposals(arm):
    """At least three rounds (a critic trained in round t proposes from round t+1), and every
    critic arm asks N proposals per output and measures its critic after every round."""
    assert mini_rlac.ITERATIONS >= 3
    plan = plan_experiment(mini_rlac.DEFAULT_CONFIG, settings(arm))
    rounds = {s.round for s in plan.stages if s.kind == "dpo"}
    assert rounds == set(range(1, mini_rlac.ITERATIONS + 1))
    proposals = [s for s in plan.stages if s.name.endswith("/critic") and s.kind == "generate"]
    detection = [s.round for s in plan.stages if s.name.endswith("/detection")]
    trains_critic = [s for s in plan.stages if s.kind == "dpo" and s.role == "critic"]
    if arm == "enumerative":
        assert not proposals and not detection and not trains_critic
        return
    assert [s.items for s in proposals] == [18 * 4 * 2] * mini_rlac.ITERATIONS  # K=4 outputs x N=2, both arms
    assert detection == list(range(mini_rlac.ITERATIONS + 1))
    assert bool(trains_critic) == (arm == "co_trained")


@pytest.mark.parametrize("arm", sorted(mini_rlac.ARMS))
def test_each_round_trains_one_pass_over_its_pairs_whatever_their_number(arm):
    """A fixed step count would train a role with few pairs (the critic's 1-3 a round) for many
    passes over them, and one with many pairs for less than one: one epoch, no step cap."""
    from coevo.algorithms.rlac.config import RlacConfig
    from coevo.settings.config import apply_overrides, read_yaml, validate

    config = validate(RlacConfig, apply_overrides(read_yaml(mini_rlac.DEFAULT_CONFIG), settings(arm)))
    assert config.dpo.max_steps is None and config.dpo.epochs == 1


def summary(condition: str, used: list[int]) -> dict:
    evaluation = {"pass_at_1": 0.5, "heldout_n": 2, "per_item": {"p/0": 0.0, "p/1": 1.0}}
    return {"condition": condition, "baseline": evaluation,
            "rounds": [{"round": r + 1, "eval": evaluation, "pairs": {"generator": 2, "critic": 1},
                        "counts": {"used": u}, "critic": {"detection_rate": 0.5, "proposals": 4}}
                       for r, u in enumerate(used)]}


def test_executions_are_counted_as_app_b2_counts_them_and_an_output_is_one_error(tmp_path):
    critic_run, enum_run = tmp_path / "critic", tmp_path / "enum"
    store = RunStore(critic_run)
    # Round 1: output 0 caught by both its proposals (one error), output 1 by neither.
    for i, j, verdict in [(0, 0, "caught"), (0, 1, "caught"), (1, 0, "survived"), (1, 1, "invalid")]:
        store.put_record("rlac_proposal", f"r1:p/0:{i}:{j}", {"round": 1, "sample_id": "p/0", "output_index": i,
                                                              "proposal_index": j, "verdict": verdict})
    store.close()
    store = RunStore(enum_run)
    store.put_record("rlac_enumerative", "r1:p/0:0", {"round": 1, "sample_id": "p/0", "score": 0.0})
    store.put_record("rlac_enumerative", "r1:p/0:1", {"round": 1, "sample_id": "p/0", "score": 1.0})
    store.close()
    # The run counts in App. B.2's unit: 4 proposals, 2 executions each (reference and output).
    critic = mini_rlac.arm_from_summaries({0: summary("rlac-adversarial", [8])}, {0: critic_run})
    enum = mini_rlac.arm_from_summaries({0: summary("enumerative", [12])}, {0: enum_run})
    [_, first] = critic.metrics["per_iteration"]
    assert (first["executions"], first["errors_found"]) == (2 * 4, 1)  # reference + output per proposal
    assert enum.metrics["executions"] == 12 and enum.metrics["outputs_shown_failing"] == 1  # one per hidden test
    assert critic.metrics["errors_per_execution"]["value"] == pytest.approx(1 / 8)
    found = mini_rlac.execution_comparison({"co_trained": critic, "enumerative": enum})
    difference = found["co_trained_minus_enumerative_errors_per_execution"]
    assert difference.value == pytest.approx(1 / 8 - 1 / 12) and difference.n == 20
    assert difference.ci[0] < difference.value < difference.ci[1]


def test_newcombes_interval_is_the_wilson_intervals_combined():
    value, lo, hi = mini_rlac.newcombe(10, 20, 10, 20)
    assert value == 0.0 and lo == pytest.approx(-hi) and lo < 0 < hi
    value, lo, hi = mini_rlac.newcombe(90, 100, 5, 100)
    assert value == pytest.approx(0.85) and 0.7 < lo < 0.85 < hi < 0.95


def test_the_detection_measure_pairs_the_critic_arms_over_items_and_seeds():
    from learning.miniature import ArmResult

    def arm(rounds):
        return ArmResult(before=None, after=None, gain=None, gain_ci=[None, None], n=0,
                         metrics={"detection_scores": rounds})

    base = {"a#0": 0.0, "b#0": 1.0, "c#0": 0.0, "d#0": 0.0}
    co = arm({"0": base, "3": {"a#0": 1.0, "b#0": 1.0, "c#0": 1.0, "d#0": 0.0}})
    static = arm({"0": base, "3": base})
    measure = mini_rlac.detection_measure({"co_trained": co, "static_critic": static, "enumerative": arm({})})
    assert set(measure.arms) == {"co_trained", "static_critic"}
    assert measure.arms["co_trained"].gain == pytest.approx(0.5) and measure.arms["static_critic"].gain == 0.0
    assert measure.comparisons["co_trained_minus_static_critic"].value == pytest.approx(0.5)
    assert mini_rlac.detection_measure({"enumerative": arm({})}) is None
