"""The solver gate's noise, measured before delta: the initial skill's gate score under
several sampling seeds, judged as the gate judges, and delta = 2 sd of the gain between two
identical skills (never under its floor)."""

import statistics

import pytest
from decoevo_fakes import GENERATOR, SHORT_ANSWER, SOLVER, checkable_rules, checkable_run_config

from coevo.algorithms.decoevo import DecoEvoConfig
from coevo.algorithms.decoevo.gate_noise import FIRST_SEED, SEED_STRIDE, draw_scores, measure_gate_noise
from coevo.algorithms.decoevo.rules import noise_delta
from coevo.llm.replay import ReplayModel
from coevo.tasks.loaders import load_samples

#: An answer holding every word any bundled prompt requires: it meets every required-words criterion.
EVERY_REQUIRED_WORD = " ".join(sorted({w for s in load_samples("bundled:writing")
                                       for c in s.meta.get("constraints", []) if c["kind"] == "include_words"
                                       for w in c["words"]}))


class SeededSolver(ReplayModel):
    """Replay answers, but the solver's depend on the sampling seed and the question, as a
    sampled answer does: under some seeds a question gets every required word, else none."""

    def generate(self, conversations, sampling, n=1):
        out = super().generate(conversations, sampling, n)
        for conversation, group in zip(conversations, out):
            prompt = conversation[-1].content
            if SOLVER in prompt and (len(prompt) + (sampling.seed or 0)) % 3 == 0:
                for completion in group:
                    completion.text = EVERY_REQUIRED_WORD
        return out


def _config(tmp_path):
    return DecoEvoConfig.model_validate(checkable_run_config(tmp_path))


def test_noise_delta_is_k_sd_of_the_gain_between_identical_skills():
    means = [0.60, 0.70, 0.65, 0.55]
    found = noise_delta(means, k=2.0, floor=0.01)
    # Over all pairs of draws, the mean squared gain is twice the draws' variance.
    gains = found["gains"]
    assert len(gains) == 6 and sum(g * g for g in gains) / len(gains) == pytest.approx(2 * statistics.variance(means))
    assert found["gain_sd"] == pytest.approx(statistics.stdev(means) * 2 ** 0.5)
    assert found["delta"] == pytest.approx(2 * found["gain_sd"])
    assert noise_delta([0.5, 0.5, 0.5], floor=0.01)["delta"] == 0.01  # a gate that never moved: the floor
    with pytest.raises(ValueError, match="at least 2 draws"):
        noise_delta([0.5])


def test_each_draw_is_a_new_sample_judged_under_the_same_rubrics(tmp_path):
    config = _config(tmp_path)
    model = SeededSolver(rules=checkable_rules())
    ids, scores = draw_scores(config, model, draws=3)
    assert len(ids) == len(config_gate(config)) and len(scores) == 3
    assert all(len(row) == len(ids) and None not in row for row in scores)
    assert len({tuple(row) for row in scores}) > 1  # the seeds changed the answers, so the scores
    rubric_calls = [c for c in model.calls if GENERATOR in c[-1].content]
    assert len(rubric_calls) == len(ids)  # one rubric per gate question, shared by every draw


def config_gate(config):
    from coevo.algorithms.decoevo.data import make_partitions
    from coevo.roles.query_filter import load_data

    return make_partitions(load_data(config.data), config.partitions)["solver_gate"]


def test_the_measured_margin_sits_above_the_noise(tmp_path):
    config = _config(tmp_path)
    noisy = measure_gate_noise(config, None, draws=4, model=SeededSolver(rules=checkable_rules()))
    assert noisy["seeds"] == [FIRST_SEED + n * SEED_STRIDE for n in range(4)] and not set(noisy["seeds"]) & set(config.seeds)
    assert noisy["gain_sd"] > 0 and noisy["delta"] == pytest.approx(2 * noisy["gain_sd"])
    assert max(abs(g) for g in noisy["gains"]) > 0 and noisy["n_questions"] == len(config_gate(config))
    assert noisy["judge"] == "python:coevo.eval.checkable_graders:criterion_met"
    # The same skill answering the same way under every seed: no noise, the floor.
    still = measure_gate_noise(config, None, draws=3, floor=0.02, model=ReplayModel(rules=checkable_rules()))
    assert still["gain_sd"] == 0 and still["delta"] == 0.02


def test_the_gate_scores_a_question_by_the_mean_of_its_gate_samples(tmp_path):
    def scores(first_answers, samples):
        rules = checkable_rules()
        rules[0] = {"match": SOLVER, "completions": first_answers}  # the solver's rule comes first
        config = DecoEvoConfig.model_validate(checkable_run_config(tmp_path, gate_samples=samples))
        return draw_scores(config, ReplayModel(rules=rules), draws=1)[1][0]

    short, every = scores([SHORT_ANSWER], 1), scores([EVERY_REQUIRED_WORD], 1)
    both = scores([SHORT_ANSWER, EVERY_REQUIRED_WORD], 2)
    assert short != every  # some gate question's rubric checks its required words
    assert both == pytest.approx([(a + b) / 2 for a, b in zip(short, every)])
    assert scores([SHORT_ANSWER, EVERY_REQUIRED_WORD], 1) == short  # one sample: the first answer
