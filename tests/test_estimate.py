"""`coevo plan`'s cost estimate (coevo/plan/estimate.py): the calls each stage makes, counted from
the config as the loop makes them; seconds from a calibration, dollars from prices. The
estimate against a real run's counted cost is checked where the run is made
(tests/algorithms/test_taiscore_e2e.py: within 2x at test size); BENCHMARKS.md has the
example configs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coevo.plan.calibration import (
    Calibration,
    EngineRate,
    TrainingRate,
    calibration_path,
    load_calibration,
    machine,
    targets,
)
from coevo.plan.estimate import FILL, RunEstimate, TrainingEstimate, call_estimate, finish
from coevo.plan.estimate_check import compare_rows, compare_totals, ratio_text
from coevo.llm.pricing import Price
from coevo.run.runner import plan_experiment

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _calls(plan) -> dict[tuple[str, str], int]:
    return {(c.stage, c.role): c.calls for c in plan.estimate.calls}


def test_taiscore_tiny_counts_every_call_the_loop_makes():
    plan = plan_experiment(EXAMPLES / "taiscore_tiny.yaml")
    calls = _calls(plan)
    # 2 held-out prompts: y0 and a revision each (4 actor), a critique each, gold rubric on y0
    # and y1 (4); the audit on 2 items: the reward judge scores the real item, 7 master keys
    # (no empty one for taiscore), padding, injection and a retest: 2 x 11 = 22; the pairwise
    # judge 2 x (real + 8 keys + padding + injection) in both orders + 2 retests = 46; the gold
    # judge 2 x (8 keys + padding + injection + retest) = 22 (its real items: the evaluation's, cached).
    assert {k: v for k, v in calls.items() if k[0] == "coevolution/round0/eval"} == {
        ("coevolution/round0/eval", "actor"): 4, ("coevolution/round0/eval", "critic"): 2,
        ("coevolution/round0/eval", "judge:gold_rubric"): 4 + 22, ("coevolution/round0/eval", "judge:taiscore"): 22,
        ("coevolution/round0/eval", "judge:pairwise"): 46}
    # Round 1 over pool 0 (5 queries): y0 of each; GRPO 2 steps x 1 prompt x 2 critiques, a
    # revision and a judgment each; one critique, revision, verdict per pooled query; the
    # round's evaluation adds the win rate, 2 prompts in both orders.
    assert calls[("coevolution/round1/y0", "actor")] == 5
    assert calls[("coevolution/round1/grpo", "actor")] == calls[("coevolution/round1/grpo", "judge:taiscore")] == 4
    assert [calls[("coevolution/round1/pool0", role)] for role in ("critic", "actor", "judge:pairwise")] == [5, 5, 5]
    assert calls[("coevolution/round1/eval", "judge:pairwise")] == 4 + 46
    assert ("coevolution/round2/pool1", "critic") in calls  # round 2 reads the second pool
    assert [(t.stage, t.kind, t.steps) for t in plan.estimate.training] == [
        ("coevolution/round1/critic", "grpo", 2), ("coevolution/round1/actor", "dpo", 2),
        ("coevolution/round2/critic", "grpo", 2), ("coevolution/round2/actor", "dpo", 2)]
    # The reward-hacking monitor's anchor (a python: function: no judge call) on 2 held-out
    # prompts: their y0 once, then at 2 checks (before the 2 GRPO steps and after) a critique
    # and a revision of each.
    assert calls[("coevolution/round1/monitor_y0", "actor")] == 2
    assert calls[("coevolution/round1/monitor", "critic")] == calls[("coevolution/round1/monitor", "actor")] == 4
    total = plan.estimate.total
    assert total["calls"] == sum(calls.values()) and total["training_steps"] == 8
    assert total["seconds"] is None or total["seconds"] > 0  # None without this machine's calibration


def test_a_second_judge_anchor_is_counted_under_its_own_model():
    calls = _calls(plan_experiment(EXAMPLES / "taiscore_tiny.yaml", ["monitor.anchors=[judge:smollm2]",
                                                                     "monitor.every=1"]))
    # 3 checks (before training and after each of its 2 steps) x 2 held-out prompts.
    assert calls[("coevolution/round1/monitor", "judge:taiscore")] == 6
    assert ("coevolution/round1/monitor", "critic") in calls and not any(
        stage.endswith("monitor") for stage, _ in _calls(plan_experiment(EXAMPLES / "taiscore_tiny.yaml",
                                                                           ["monitor.enabled=false"])))


def test_a_critique_s_tokens_follow_its_limit_and_a_prompt_its_template():
    small = plan_experiment(EXAMPLES / "taiscore_tiny.yaml", ["roles.critic.sampling.max_tokens=100"])
    large = plan_experiment(EXAMPLES / "taiscore_tiny.yaml", ["roles.critic.sampling.max_tokens=300"])
    row = {(c.stage, c.role): c for c in small.estimate.calls}[("coevolution/round1/pool0", "critic")]
    assert row.completion_tokens == 5 * round(100 * FILL)
    bigger = {(c.stage, c.role): c for c in large.estimate.calls}[("coevolution/round1/pool0", "critic")]
    assert bigger.completion_tokens == 3 * row.completion_tokens and bigger.prompt_tokens == row.prompt_tokens
    # The revision reads the critique: its prompt grows with the critique's limit.
    revise = {(c.stage, c.role): c for c in large.estimate.calls}[("coevolution/round1/pool0", "actor")]
    assert revise.prompt_tokens > {(c.stage, c.role): c for c in small.estimate.calls}[
        ("coevolution/round1/pool0", "actor")].prompt_tokens


def test_the_paper_config_is_counted_without_its_data_and_says_so():
    plan = plan_experiment(EXAMPLES / "taiscore_full.yaml")
    assert plan.estimate.total["calls"] > 100_000  # 3 rounds of 3,000 queries, judged and audited
    assert any("pools of data.pool_size" in note for note in plan.estimate.notes)
    assert any("not on this machine" in note for note in plan.estimate.notes)


def test_seconds_come_from_the_calibration_and_dollars_from_prices():
    calibration = Calibration(machine="m", measured="now",
                              engines=[EngineRate(engine="llamacpp", spec="smollm2", prompt_tokens_per_s=400.0,
                                                  completion_tokens_per_s=100.0)],
                              training=[TrainingRate(spec="smollm2", tokens_per_s=50.0)])
    calls = [call_estimate("s", "judge:pairwise", "smollm2", 2, filled=400, completion=100),
             call_estimate("s", "actor", "smollm2", 1, filled=800, completion=0)]
    training = [TrainingEstimate(stage="t", kind="grpo", role="critic", spec="smollm2", steps=1, tokens=500,
                                 sampled_tokens=200)]
    done = finish(calls, training, [], engines={"judge": "llamacpp", "actor": "llamacpp", "critic": "llamacpp"},
                  prices={"judge": Price(input=1.0, output=10.0)}, calibration=calibration)
    judge, actor = done.calls
    assert judge.seconds == pytest.approx(800 / 400 + 200 / 100) and actor.seconds == pytest.approx(2.0)
    assert done.training[0].seconds == pytest.approx(500 / 50 + 200 / 100)  # trained + sampled on the engine
    assert judge.dollars == pytest.approx((800 * 1.0 + 200 * 10.0) / 1e6) and actor.dollars is None
    assert done.total["seconds"] == pytest.approx(4.0 + 2.0 + 12.0)
    unknown = finish(calls, training, [], engines={}, prices={}, calibration=None)
    assert unknown.total["seconds"] is None and any("--calibrate" in n for n in unknown.notes)
    served = finish([call_estimate("s", "judge", "openai:gpt@http://h/v1", 1, filled=10, completion=1)], [], [],
                    engines={"judge": "server"}, prices={}, calibration=calibration)
    assert served.total["seconds"] is None
    assert any("no seconds for openai:gpt@http://h/v1 on server" in n for n in served.notes)


def test_a_calibration_is_this_machine_s_or_none(tmp_path, monkeypatch):
    monkeypatch.setenv("COEVO_HOME", str(tmp_path))
    assert load_calibration() is None
    rate = EngineRate(engine="llamacpp", spec="smollm2", prompt_tokens_per_s=1.0, completion_tokens_per_s=1.0)
    calibration_path().write_text(json.dumps(Calibration(machine=machine(), measured="x", engines=[rate]).model_dump()))
    assert load_calibration().engines == [rate]
    calibration_path().write_text(json.dumps(Calibration(machine="another box", measured="x").model_dump()))
    assert load_calibration() is None  # measured elsewhere: its rates say nothing of this machine


def test_calibrate_measures_each_engine_and_trained_model_of_the_plan():
    from coevo.settings.config import read_yaml
    from coevo.run.runner import resolve_config

    plan = plan_experiment(EXAMPLES / "taiscore_tiny.yaml")
    _, config = resolve_config(read_yaml(EXAMPLES / "taiscore_tiny.yaml"), "x")
    engines, trained = targets(plan, config.roles)
    assert [(engine, spec) for engine, spec, _ in engines] == [("llamacpp", "smollm2")]  # one engine serves all three
    assert [spec for spec, _ in trained] == ["smollm2"]


def test_estimate_beside_the_counted_cost():
    estimate = RunEstimate(calls=[call_estimate("s", "actor", "m", 4, filled=10, completion=5)],
                           total={"calls": 4, "prompt_tokens": 40, "completion_tokens": 20, "training_steps": 0,
                                  "seconds": 100.0})
    cost = {"calls": [{"stage": "s", "role": "actor", "calls": 6, "cache_hits": 2, "prompt_tokens": 80,
                       "completion_tokens": 10}, {"stage": "other", "role": "judge:x", "calls": 1, "prompt_tokens": 1,
                                                 "completion_tokens": 1}],
            "total": {"calls": 7, "cache_hits": 2, "prompt_tokens": 81, "completion_tokens": 11, "training_steps": 0}}
    sides = compare_totals(estimate, cost, duration_s=150.0)
    assert sides["calls"].ratio == pytest.approx(7 / 4)  # the cache's answers cost no call
    assert sides["seconds"].ratio == pytest.approx(1.5) and ratio_text(sides["seconds"]) == "100 → 150 (1.50×)"
    rows = {(r["stage"], r["role"]): r for r in compare_rows(estimate, cost)}
    assert rows[("s", "actor")]["calls"] == 6 and rows[("s", "actor")]["cache_hits"] == 2
    assert rows[("other", "judge:x")]["calls_est"] is None


@pytest.mark.slow
def test_calibration_times_whole_prompts_on_an_engine_that_keeps_prefixes(monkeypatch):
    # llama.cpp keeps the previous prompt's shared blocks: were the calibration's calls to share
    # their prompt, the second would evaluate a few tokens and the prompt rate would be a fiction.
    from coevo.plan.calibration import measure_engine
    from coevo.llm import specs
    from coevo.llm.embedded import gguf_path
    from coevo.llm.llamacpp import LlamaCppModel

    model = LlamaCppModel(gguf_path(), n_ctx=2048, n_threads=2)
    evaluated: list[int] = []
    inner = model._prefix._eval
    model._prefix._eval = lambda tokens: (evaluated.append(len(tokens)), inner(tokens))[1]
    monkeypatch.setattr(specs, "load_model", lambda spec, **options: model)
    rate = measure_engine("llamacpp", "smollm2", {})
    prompt_evals = [n for n in evaluated if n > 1]
    assert len(prompt_evals) == 3 and min(prompt_evals) > 300  # every call's whole prompt (~420 tokens)
    assert rate.prompt_tokens_per_s > 0 and rate.completion_tokens_per_s > 0


def test_a_calibration_measured_elsewhere_is_read_when_named_and_a_bad_file_is_refused(tmp_path):
    from coevo.plan.calibration import read_calibration

    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(Calibration(machine="a GPU node", measured="then").model_dump()))
    assert read_calibration(path).machine == "a GPU node"  # another machine's: read all the same
    with pytest.raises(ValueError, match="no such calibration file"):
        read_calibration(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{"engines": 3}')
    with pytest.raises(ValueError, match="is not a coevo calibration"):
        read_calibration(tmp_path / "bad.json")


def test_batched_rates_time_what_a_call_decodes_together():
    rate = EngineRate(engine="transformers", spec="m", prompt_tokens_per_s=1000.0, completion_tokens_per_s=10.0,
                      batched_completion_tokens_per_s={8: 80.0, 32: 320.0})
    assert [rate.completion_rate(b) for b in (1, 4, 8, 16, 32, 64)] == [10.0, 10.0, 80.0, 80.0, 320.0, 320.0]
    calibration = Calibration(machine="m", measured="x", engines=[rate],
                              training=[TrainingRate(spec="m", tokens_per_s=100.0)])
    # transformers' calls decode 8 prompts together (LocalModel's batch); GRPO's samples a step's worth.
    done = finish([call_estimate("s", "actor", "m", 8, filled=100, completion=100)],
                  [TrainingEstimate(stage="t", kind="grpo", role="critic", spec="m", steps=1, tokens=1000,
                                    sampled_tokens=3200, sampling_batch=32)],
                  [], engines={"actor": "transformers", "critic": "transformers"}, prices={}, calibration=calibration)
    assert done.calls[0].seconds == pytest.approx(800 / 1000 + 800 / 80)
    assert done.training[0].seconds == pytest.approx(1000 / 100 + 3200 / 320)


def test_untimed_server_calls_leave_a_lower_bound_and_the_rates_source_is_named():
    from coevo.plan.estimate import estimate_lines

    calibration = Calibration(machine="an H200 node", measured="today", engines=[EngineRate(
        engine="transformers", spec="m", prompt_tokens_per_s=100.0, completion_tokens_per_s=10.0,
        note="extrapolated from smaller models")])
    done = finish([call_estimate("s", "actor", "m", 1, filled=100, completion=10),
                   call_estimate("s", "judge", "openai:g@http://h/v1", 5, filled=10, completion=1)], [], [],
                  engines={"actor": "transformers", "judge": "server"}, prices={}, calibration=calibration)
    assert done.total["seconds"] is None and done.total["timed_seconds"] == pytest.approx(2.0)
    assert done.total["untimed_calls"] == 5
    assert "at least 2 s (5 calls not timed)" in estimate_lines(done)[-1]
    assert any("rates of an H200 node, measured today" in note for note in done.notes)
    assert any(note == "rates for m: extrapolated from smaller models" for note in done.notes)


def test_the_paper_config_is_timed_with_the_gpu_calibration_each_condition_on_its_own_engine():
    # The calibration benchmarks/gpu_scaling.py wrote from the H200 runs (BENCHMARKS.md, "GPU").
    from coevo.plan.calibration import read_calibration

    calibration = read_calibration(Path(__file__).resolve().parents[1] / "benchmarks" / "results"
                                   / "gpu_round_h200_calibration.json")
    # The H200 runs measured transformers only: the full config's vLLM copies set back to it.
    plan = plan_experiment(EXAMPLES / "taiscore_full.yaml", ["actor_engine=transformers", "critic_engine=transformers"],
                           calibration=calibration)
    rows = {(c.stage, c.role): c for c in plan.estimate.calls}
    trained_critic = rows[("coevolution/round1/pool0", "critic")]
    assert trained_critic.engine == "transformers" and trained_critic.seconds > 0
    assert rows[("off_the_shelf/round1/pool0", "critic")].engine == "server"  # gpt-oss on its server
    stages = {t.stage: t for t in plan.estimate.training}
    assert stages["coevolution/round1/critic"].seconds > stages["coevolution/round1/actor"].seconds > 0
    assert any("extrapolated" in note for note in plan.estimate.notes)
