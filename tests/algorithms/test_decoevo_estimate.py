"""DecoEvo's cost estimate (`estimate` in decoevo/paper.py, counted in decoevo/estimate.py):
rows per (stage, role) as the run's cost rows name them, counted without loading a model."""

from pathlib import Path

import yaml
from real_runs import decoevo_test_size

from coevo.algorithms.decoevo.estimate import ExpectedPath, count_calls
from coevo.algorithms.decoevo.paper import estimate, plan
from coevo.run.runner import resolve_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _config(data):
    return resolve_config(data, "test")[1]


def _example(name):
    return _config(yaml.safe_load((EXAMPLES / name).read_text()))


def _test_size(**changes):
    """tests/algorithms/test_decoevo_e2e.py's test-size run (on the bundled data: the counts
    depend on the partition sizes only)."""
    return _config({**decoevo_test_size("bundled:writing"), **changes})


#: Every candidate accepted: the path the hand counts below follow (the default rejects S').
ACCEPTED = ExpectedPath(accept_solver=True, accept_coupled=True)


def _counts(config, path=ExpectedPath()):
    calls, _ = count_calls(config, plan(config), path)
    return {(c.stage, c.role): c.calls for c in calls}


def test_the_shipped_examples_have_rows_with_positive_counts_and_no_training():
    for name in ("decoevo_tiny.yaml", "decoevo_full.yaml"):
        config = _example(name)
        calls, training, notes = estimate(config, plan(config))
        assert calls and training == [], name
        assert all(c.calls >= 0 and c.prompt_tokens >= 0 and c.completion_tokens >= 0 for c in calls), name
        assert sum(c.calls > 0 and c.prompt_tokens > 0 and c.completion_tokens > 0 for c in calls) >= 2, name
        assert any("expected path" in note for note in notes)
        if plan(config).data.get("sizes") is None:  # WritingBench is not on every machine
            assert any("not on this machine" in note for note in notes)
            assert {c.role for c in calls} == {"solver_rewriter", "generator_rewriter"}


def test_the_test_size_run_counted_call_by_call():
    # Every candidate accepted (ACCEPTED). Held-out audit question = test[0] (no diagnostic).
    # round 0 audit: solver 1 (test0 under S0), rubric 1, judge 13 (real + 8 master keys +
    #   padding + injection + retest + drift), grade 1.
    # step 1 inner: solver 2 (batch) + 1 (gate, S0) + 1 (gate, S1); rubric 2 + 1 (gate);
    #   judge 2 + 2; solver rewriter 1; S1 accepted.
    # step 1 outer: rubric 1 (probe) + 2 (generator gate under G0, G1); structural 1 + 2;
    #   solver 2 rollouts (probe) + 2 (gate near-ties); judge 2 + 2 + 2 (G1 on the frozen pair);
    #   contrastive 1 blind + 1 explain + 1 blind (gate); generator rewriter 1; G1 accepted.
    # round 1 audit: solver 1 (S1), rubric 1 (G1), judge 13 + 1 (G0's drift), grade 1.
    # step 2 inner: solver 2 + 1 (S2 on the gate; S1's gate answer is cached); rubric 2 + 1
    #   (G1); judge 2 + 2; solver rewriter 1. No outer step after the last inner step.
    # test: solver 1 (S2), grade 1.
    assert _counts(_test_size(), ACCEPTED) == {
        ("decoevo", "solver"): 13, ("decoevo", "rubric_generator"): 11, ("decoevo", "judge:criteria"): 41,
        ("decoevo", "judge:gold_rubric"): 2, ("decoevo", "structural_auditor"): 3,
        ("decoevo", "contrastive_auditor"): 3, ("decoevo", "solver_rewriter"): 2,
        ("decoevo", "generator_rewriter"): 1, ("test", "solver"): 1, ("test", "judge:gold_rubric"): 1}


def test_the_roles_and_stages_are_the_real_runs():
    # Read off a real run of _test_size() on the embedded model (2026-12-03; summary.json -> cost):
    # the 135M judge marked every train criterion met, so no solver candidate was proposed
    # (no solver_rewriter call), and the test answer and its grade were the round audits'
    # (`test` rows with 0 calls and 1 cache hit each; the estimate lists such rows too). The
    # path of that run gives exactly its set; the default path (a candidate every inner step)
    # adds the solver rewriter.
    observed = {("decoevo", role) for role in (
        "solver", "rubric_generator", "judge:criteria", "judge:gold_rubric", "structural_auditor",
        "contrastive_auditor", "generator_rewriter")} | {("test", "solver"), ("test", "judge:gold_rubric")}
    assert set(_counts(_test_size(), ExpectedPath(unmet_criteria=False))) == observed
    assert set(_counts(_test_size())) == observed | {("decoevo", "solver_rewriter")}
    # That run, counted: 57 calls (solver 7, rubric_generator 9, judge:criteria 34, ...); its
    # path here: 60 (the generator gate's near-ties, 2 judge calls and a blind verdict, were
    # none in the run: n_frozen 0, no readable pair of distinct rollouts).
    assert sum(_counts(_test_size(), ExpectedPath(unmet_criteria=False)).values()) == 60


def test_the_shipped_tiny_run_has_the_rows_of_its_real_run():
    # examples/decoevo_tiny.yaml as shipped, run on the embedded model on 2026-12-03: 206 calls
    # (the default path's estimate: 212), in these rows.
    config = _example("decoevo_tiny.yaml")
    observed = {("decoevo", role) for role in (
        "solver", "rubric_generator", "judge:criteria", "judge:gold_rubric", "structural_auditor",
        "contrastive_auditor", "solver_rewriter", "generator_rewriter")} | {("test", "solver"),
                                                                           ("test", "judge:gold_rubric")}
    counts = _counts(config)
    assert set(counts) == observed
    assert 206 / 2 <= sum(counts.values()) <= 206 * 2


def test_methods_of_a_seed_share_their_identical_calls():
    # zero_shot asks nothing DecoEvo has not asked: its round-0 audit and its test answer
    # (S0 on test0, the audit's) are DecoEvo's, from the cache.
    assert _counts(_test_size(methods=["decoevo", "zero_shot"]), ACCEPTED) == _counts(_test_size(), ACCEPTED)
    # SkillOpt shares step 1 with DecoEvo; at step 2 its G is still G0, whose train and gate
    # rubrics step 1 wrote (cached), as it judged S1's gate answer under G0. New: the judge on
    # S1's 2 train answers under G0, the solver rewriter (another G, another rewrite S2'),
    # S2''s gate answer and its judgment; then its own test answer (S2') and grade.
    both, alone = _counts(_test_size(methods=["decoevo", "skillopt"]), ACCEPTED), _counts(_test_size(), ACCEPTED)
    extra = {key: both[key] - alone.get(key, 0) for key in both if both[key] != alone.get(key, 0)}
    assert extra == {("decoevo", "judge:criteria"): 3, ("decoevo", "solver_rewriter"): 1, ("decoevo", "solver"): 1,
                     ("test", "solver"): 1, ("test", "judge:gold_rubric"): 1}


def test_a_second_seed_asks_its_seeded_calls_again():
    one, two = _counts(_test_size()), _counts(_test_size(seeds=[0, 1]))
    assert all(two[key] >= one[key] for key in one)
    assert two[("decoevo", "solver")] == 2 * one[("decoevo", "solver")]


def test_code_scorers_ask_no_model_and_gate_samples_multiply_the_gate_answers():
    checkable = _example("decoevo_checkable.yaml")
    roles = {role for _, role in _counts(checkable)}
    assert not roles & {"judge:criteria", "structural_auditor"}  # code, not the backbone
    assert "contrastive_auditor" in roles  # its explanation stage still asks the backbone
    one, two = (_counts(_config({**yaml.safe_load((EXAMPLES / "decoevo_checkable.yaml").read_text()),
                                 "gate_samples": n, "methods": ["skillopt"], "inner_steps": 1})) for n in (1, 2))
    gate = 16  # solver-gate questions: the incumbent's and the candidate's answers
    assert two[("decoevo", "solver")] - one[("decoevo", "solver")] == 2 * gate
