"""DecoEvo's acceptance rules as pure functions: margins pinned exactly."""

import pytest

from coevo.algorithms.decoevo.rules import outer_step_due, pareto_accept, resolution_rate, score_coupled_accept, select_near_ties, solver_gate

ETA, TAU = 0.05, 0.02


# -- Pareto rule -------------------------------------------------------------------------
def test_pareto_improvement_of_exactly_eta_is_enough():
    assert pareto_accept({"structural": 0.55 - 0.5, "resolution": 0.0}, ETA, TAU).accept


def test_pareto_improvement_just_below_eta_is_not():
    assert not pareto_accept({"structural": 0.049, "resolution": 0.0}, ETA, TAU).accept


def test_pareto_regression_of_exactly_tau_is_tolerated():
    decision = pareto_accept({"structural": 0.3, "resolution": 0.48 - 0.5}, ETA, TAU)
    assert decision.accept, decision.reason


def test_pareto_regression_beyond_tau_vetoes_any_improvement():
    decision = pareto_accept({"structural": 0.9, "resolution": -0.021}, ETA, TAU)
    assert not decision.accept and "resolution" in decision.reason


def test_pareto_unavailable_objective_is_ignored_and_none_available_rejects():
    assert pareto_accept({"structural": 0.05, "resolution": None}, ETA, TAU).accept
    assert not pareto_accept({"structural": None, "resolution": None}, ETA, TAU).accept


def test_pareto_accepts_on_either_objective():
    assert pareto_accept({"structural": 0.0, "resolution": 0.5}, ETA, TAU).accept


# -- decoupled vs score-coupled: the same candidate, opposite decisions ---------------------
def test_score_coupled_and_decoupled_rules_decide_differently():
    # A candidate generator whose rubrics are easier to satisfy: the solver's aggregate
    # score rises (0.5 -> 0.8) while the rubrics cover less (adequacy 0.7 -> 0.4) and
    # separate no more near-ties. SC-CoEvo accepts it; DecoEvo's Pareto rule refuses it.
    coupled = score_coupled_accept(0.5, 0.8, ETA)
    decoupled = pareto_accept({"structural": 0.4 - 0.7, "resolution": 0.0}, ETA, TAU)
    assert coupled.accept and not decoupled.accept
    # ... and the converse: a stricter, better-covering generator lowers the solver score.
    assert not score_coupled_accept(0.8, 0.5, ETA).accept
    assert pareto_accept({"structural": 0.2, "resolution": 0.5}, ETA, TAU).accept


def test_score_coupled_margin_and_unreadable_scores():
    assert score_coupled_accept(0.5, 0.55, ETA).accept
    assert not score_coupled_accept(0.5, 0.54, ETA).accept
    assert not score_coupled_accept(None, 0.9, ETA).accept


# -- solver gate ---------------------------------------------------------------------------
def test_solver_gate_accepts_a_gain_of_exactly_delta():
    decision = solver_gate([0.5, 0.6], [0.52, 0.62], 0.02)
    assert decision.accept, decision.reason
    assert decision.details["n_pairs"] == 2


def test_solver_gate_rejects_below_delta_and_ties():
    assert not solver_gate([0.5, 0.6], [0.51, 0.62], 0.02).accept
    assert not solver_gate([0.5], [0.5], 0.02).accept


def test_solver_gate_pairs_only_questions_judged_for_both():
    # The unreadable question is dropped from BOTH sides: the gain is 0.1 on one pair, not
    # a comparison of means over different question sets.
    decision = solver_gate([0.5, None, 0.9], [0.6, 1.0, None], 0.05)
    assert decision.accept and decision.details["n_pairs"] == 1
    assert not solver_gate([None], [0.9], 0.0).accept


# -- outer trigger ---------------------------------------------------------------------------
@pytest.mark.parametrize("since, stall, due", [(3, 0, True), (2, 0, False), (1, 2, True), (2, 1, False), (0, 0, False)])
def test_outer_step_every_k_steps_or_after_s_rejections(since, stall, due):
    assert outer_step_due(since, stall, k=3, s=2) is due


# -- near-tie selection ----------------------------------------------------------------------
def test_near_ties_smallest_gaps_first_no_rollout_reused_at_most_p():
    scores = [[0.50, 0.52, 0.60, 0.51], [0.0, 1.0, 0.0]]
    pairs = select_near_ties(scores, epsilon=0.1, max_pairs=5)
    assert [p[:3] for p in pairs[:2]] == [(1, 0, 2), (0, 0, 3)]  # gap 0, then gap 0.01
    used = [(q, i) for q, a, b, _ in pairs for i in (a, b)]
    assert len(used) == len(set(used))                     # no rollout twice
    assert all(gap <= 0.1 + 1e-9 for *_, gap in pairs)
    assert len(select_near_ties(scores, epsilon=0.1, max_pairs=1)) == 1


def test_near_ties_skip_unreadable_scores_identical_texts_and_large_gaps():
    scores = [[0.5, None, 0.5, 0.9]]
    texts = [["same", "x", "same ", "y"]]
    assert select_near_ties(scores, 0.1, 4, texts) == []
    assert select_near_ties([[0.5, 0.6]], 0.1, 4) == [(0, 0, 1, pytest.approx(0.1))]


# -- resolution rate -------------------------------------------------------------------------
def test_resolution_rate_is_question_balanced():
    margins = [("q1", 0.5), ("q1", 0.0), ("q1", 0.0), ("q1", 0.0), ("q2", 0.2)]
    # q1 resolves 1/4, q2 1/1 (exactly gamma): (0.25 + 1) / 2, not 2/5.
    assert resolution_rate(margins, gamma=0.2) == pytest.approx(0.625)
    assert resolution_rate([("q", None)], 0.2) == 0.0
    assert resolution_rate([], 0.2) is None
