"""The soft size limits of coevo/settings/limits.py and the hard bounds every settings block has
(coevo/core/strict.py, coevo/core/types.py:Sampling): refused in one line, before anything is built."""

from __future__ import annotations

import pytest

from coevo.algorithms.taiscore.config import TaiScoreConfig
from coevo.core.strict import ConfigError
from coevo.settings.config import validate
from coevo.settings.limits import LIMITS, MOST_STAGES, check_scale
from coevo.core.types import Sampling


def taiscore(**changes) -> TaiScoreConfig:
    return validate(TaiScoreConfig, {"algorithm": "taiscore", **changes}, "test.yaml")


def test_a_setting_past_its_soft_limit_is_refused_unless_the_user_means_it():
    big = taiscore(rounds=101)
    with pytest.raises(ConfigError, match=r"test.yaml: rounds is 101, over 100: each round .* --allow-large"):
        check_scale(big, where="test.yaml")
    check_scale(big, allow_large=True)
    check_scale(taiscore(rounds=100))  # at the limit: fine


def test_settings_that_multiply_past_the_stage_limit_are_refused_with_their_product():
    config = taiscore(rounds=100, seeds=100, conditions=["taiscore", "coevolution"])
    with pytest.raises(ConfigError, match=r"rounds 100 x seeds 100 x conditions 2 make about 120,000 stages"):
        check_scale(config)
    assert 6 * 100 * 100 * 2 > MOST_STAGES


def test_every_limit_is_far_above_the_papers_values():
    papers = {"rounds": 3, "iterations": 16, "seeds": 5, "conditions": 7, "evaluation.output_sets": 3,
              "grpo.num_generations": 4, "k": 10, "n": 4, "inner_steps": 8, "audit.prompts": 16}
    assert {limit.path for limit in LIMITS} == set(papers)
    assert all(limit.most >= 5 * papers[limit.path] for limit in LIMITS)


@pytest.mark.parametrize("changes, words", [
    ({"rounds": 10**10}, "over 1,000,000,000"),
    ({"seed": -1}, "0 or more"),
    ({"invalid_reward": float("inf")}, "finite"),
    ({"roles": {"critic": {"sampling": {"max_tokens": 0}}}}, "max_tokens"),
    ({"roles": {"critic": {"sampling": {"top_p": 0}}}}, "top_p"),
    ({"roles": {"critic": {"sampling": {"temperature": float("nan")}}}}, "temperature"),
    ({"roles": {"critic": {"sampling": {"seed": 2**40}}}}, "seed"),
])
def test_numbers_are_bounded_where_the_config_is_read(changes, words):
    with pytest.raises(ConfigError, match=words):
        taiscore(**changes)


def test_sampling_bounds_leave_every_real_setting_valid():
    Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=0)
    Sampling(temperature=2.0, top_p=0.01, max_tokens=131_072, seed=2**31 - 1)
