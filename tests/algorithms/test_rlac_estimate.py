"""RLAC's cost estimate (`estimate` in rlac/paper.py, counted in rlac/estimate.py): the
calls per stage and role a run will make and its DPO stages, made from the config without
loading a model. Checked against real runs in the report of issue 25 item 4; here the
stage/role names those runs had, and counts derived by hand from small configs."""

from __future__ import annotations

import pytest

from coevo.algorithms.rlac.stages import STAGE, round_stage
from coevo.run.runner import plan_experiment

#: tests/real_runs.py's RLAC_CODE_TEST_SIZE: examples/rlac_code_tiny.yaml at test size.
CODE_TEST_SIZE = ["iterations=1", "k=2", "n=2", "validator=random", "seed=0", "kl=false",
                  "data.source=humaneval", "data.train_ids=[HumanEval/45, HumanEval/2]",
                  "data.heldout_ids=[HumanEval/53]",
                  "roles.generator.sampling.train.max_tokens=32", "roles.critic.sampling.max_tokens=40",
                  "roles.generator.sampling.eval.max_tokens=32", "dpo.max_steps=2", "dpo.save_steps=1",
                  "dpo.max_length=512", "dpo.max_prompt_length=384"]


def calls_by_stage(estimate) -> dict[tuple[str, str], int]:
    return {(c.stage, c.role): c.calls for c in estimate.calls}


@pytest.mark.parametrize("config", ["rlac_code_tiny", "rlac_bio_tiny", "rlac_code_full", "rlac_bio_full"])
def test_every_example_has_an_estimate(config):
    plan = plan_experiment(f"examples/{config}.yaml")
    estimate = plan.estimate
    assert estimate is not None and estimate.calls and estimate.training
    for call in estimate.calls:
        assert call.calls > 0 and call.prompt_tokens > 0 and call.completion_tokens > 0, call
    for stage in estimate.training:
        assert stage.steps > 0 and stage.tokens > 0, stage
    if not plan.data["train_size"]:  # the full configs' data (AceCode, Wikipedia pages) is not here
        assert any("data not on this machine" in note for note in estimate.notes)


def test_stage_and_role_names_are_the_real_runs():
    # Read off a real run of this config (`coevo run ... --set` CODE_TEST_SIZE, 2025-12-03):
    # summary.json -> cost -> calls had exactly these (stage, role) rows.
    observed = {(round_stage(0, "eval"), "generator"), (round_stage(1), "generator"), (round_stage(1), "critic"),
                (round_stage(1, "eval"), "generator")}
    estimate = plan_experiment("examples/rlac_code_tiny.yaml", CODE_TEST_SIZE).estimate
    assert set(calls_by_stage(estimate)) == observed
    # The run store's names of its DPO stages (cost.training_costs).
    assert [t.stage for t in estimate.training] == [round_stage(1, role, prefix=STAGE)
                                                    for role in ("generator", "critic")]


def test_code_tiny_counts_by_hand():
    # examples/rlac_code_tiny.yaml: 2 iterations, K=4, N=2, 3 train and 2 held-out problems,
    # kl on (the default), the code validator (a sandbox: no model calls), no audit for code.
    estimate = plan_experiment("examples/rlac_code_tiny.yaml").estimate
    expected = {
        # Each evaluation: 2 greedy outputs + 2 sampled ones for the KL.
        (round_stage(0, "eval"), "generator"): 2 + 2,
        (round_stage(1, "eval"), "generator"): 2 + 2,
        (round_stage(2, "eval"), "generator"): 2 + 2,
        # Each round: 3 problems x K=4 outputs; N=2 proposals on each of the 12 (the critic trains).
        (round_stage(1), "generator"): 3 * 4, (round_stage(1), "critic"): 3 * 4 * 2,
        (round_stage(2), "generator"): 3 * 4, (round_stage(2), "critic"): 3 * 4 * 2,
    }
    assert calls_by_stage(estimate) == expected
    # dpo.max_steps=2 bounds both stages of both rounds.
    assert [(t.stage, t.steps) for t in estimate.training] == [
        (round_stage(r, role, prefix=STAGE), 2) for r in (1, 2) for role in ("generator", "critic")]


def test_bio_tiny_counts_by_hand():
    # examples/rlac_bio_tiny.yaml: 2 iterations, K=4, N=2, 3 train and 2 held-out people,
    # kl on, the judge audit on 2 prompts (before iteration 1 and after each: 3 audits).
    # With the judge `llm` every fact and claim is asked (no word gate settles any).
    estimate = plan_experiment("examples/rlac_bio_tiny.yaml", ["facts.judge=llm"]).estimate
    counts = calls_by_stage(estimate)
    for stage in (round_stage(0, "eval"), round_stage(1, "eval"), round_stage(2, "eval")):
        assert counts[(stage, "generator")] == 2 + 2  # greedy + the KL's sampled output per person
        # The splitter on each greedy output, then 4 facts (one per sentence) each checked.
        assert counts[(stage, "judge")] == 2 + 2 * 4
    for stage in (round_stage(1), round_stage(2)):
        assert counts[(stage, "generator")] == 3 * 4  # K=4 outputs per person
        assert counts[(stage, "critic")] == 3 * 4 * 2  # N=2 proposals per output (the critic trains)
        # The splitter on each output (the enumerative count), then each proposal's
        # authenticity and support judgments.
        assert counts[(stage, "judge")] == 12 + 24 + 24
    # The audit (stage `rlac`, the runner's tag), 3 times: N=2 proposals on each of
    # min(2 x 2 prompts, 2 held-out) outputs, each judged twice; then for each of 2 confirmed
    # items 2 authenticity + 2 support judgments of the probes past the word gate.
    assert counts[("rlac", "critic")] == 3 * (2 * 2)
    assert counts[("rlac", "judge")] == 3 * (4 * 2 + 2 * (2 + 2))
    assert len(counts) == 3 * 2 + 2 * 3 + 2  # nothing else


def test_no_judge_calls_without_a_judge_model():
    # A lexical judge over sentence-split facts loads no judge model: no judge row at all,
    # and the audit is the critic's proposals alone (3 audits x 2 outputs x N=2).
    estimate = plan_experiment("examples/rlac_bio_tiny.yaml",
                               ["facts.judge=lexical", "facts.atomic_facts=sentences"]).estimate
    counts = calls_by_stage(estimate)
    assert not [key for key in counts if key[1] == "judge"]
    assert counts[("rlac", "critic")] == 3 * 2 * 2


def test_baselines_and_ablations():
    # Static critic: N=2 proposals per output as the trained one draws, and no critic DPO;
    # enumerative: no critic at all.
    static = plan_experiment("examples/rlac_code_tiny.yaml", ["critic_training=static"]).estimate
    assert calls_by_stage(static)[(round_stage(1), "critic")] == 3 * 4 * 2
    assert [t.stage for t in static.training] == [round_stage(r, "generator", prefix=STAGE) for r in (1, 2)]
    enumerative = plan_experiment("examples/rlac_code_tiny.yaml", ["verification=enumerative"]).estimate
    assert {role for _, role in calls_by_stage(enumerative)} == {"generator"}


def test_the_detection_measurement_is_counted_per_round():
    # rlac_code_tiny: 2 held-out problems, K=4, N=2, 2 iterations. The set: 3 base-generator
    # samples per held-out problem (round 0 only); every round (0, 1, 2): N proposals on each
    # of at most 4 kept outputs.
    made = plan_experiment("examples/rlac_code_tiny.yaml", ["detection.enabled=true", "detection.samples=3",
                                                            "detection.max_outputs=4"])
    counts = calls_by_stage(made.estimate)
    assert counts[(round_stage(0, "detection"), "generator")] == 2 * 3
    assert [counts[(round_stage(r, "detection"), "critic")] for r in (0, 1, 2)] == [4 * 2] * 3
    assert (round_stage(1, "detection"), "generator") not in counts
    stages = [s.name for s in made.stages if s.name.endswith("/detection")]
    assert stages == [round_stage(r, "detection", prefix=STAGE) for r in (0, 1, 2)]
    # No critic proposes in the enumerative baseline: nothing to measure.
    enumerative = plan_experiment("examples/rlac_code_tiny.yaml", ["verification=enumerative",
                                                                   "detection.enabled=true"])
    assert not [key for key in calls_by_stage(enumerative.estimate) if key[0].endswith("/detection")]


def test_the_facts_judge_calls_are_filed_under_the_judge():
    # The estimate names the splitter's and the entailment judge's calls `judge`; the run's
    # cost rows take the role from the call tags, which these calls set themselves.
    from coevo.eval.factscore import split_atomic_facts
    from coevo.llm.call_tags import current_tags
    from coevo.core.types import Completion
    from coevo.validators.facts import EntailmentJudge

    seen = []

    class Model:
        model_id = "fake"

        def generate(self, conversations, sampling, n=1):
            seen.append(current_tags().get("role"))
            return [[Completion(text='{"answer": "yes"}')] for _ in conversations]

    split_atomic_facts(Model(), "Ada Lovelace", ["Ada Lovelace was born in London."])
    EntailmentJudge(Model()).judge("fact_support", [{"entity": "Ada Lovelace", "fact": "born in London",
                                                     "passages": "Ada Lovelace was born in London."}], "passages")
    assert seen == ["judge", "judge"]
