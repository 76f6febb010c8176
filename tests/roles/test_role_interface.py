"""One role interface: every judge a config can name is a `Scorer` with one call signature."""

import json

import pytest

from coevo.config import ConfigError
from coevo.judging import JUDGE_NAMES, rollout_judge
from coevo.roles.base import Role, Scorer
from coevo.roles.decoevo import CriterionJudge, RubricGenerator, Solver, StructuralAuditor
from coevo.types import Criterion, Rollout, Rubric, Sample

_DIMENSIONS = {
    "taiscore": ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness", "score"),
    "critique_quality": ("specificity", "actionability", "priority", "faithfulness", "coverage",
                         "constructiveness"),
    "adherence": ("main_issue_adherence", "completeness_of_adoption", "faithful_implementation",
                  "non_superficial_revision"),
}
#: What each judge answers in this test, and the score that answer must give.
_ANSWERS = {
    **{name: (json.dumps({d: {"score": 6, "reason": "ok"} for d in dims}), 6.0) for name, dims in _DIMENSIONS.items()},
    "outcome_gain": ("0.5", 0.5),
    "pairwise": ("tie", 0.5),
    "gold_rubric": (json.dumps({"criteria": [{"name": "Clarity", "score": 9}, {"name": "Depth", "score": 3}]}), 7.0),
}


def _rollouts():
    return [Rollout(sample_id=f"s{i}", x=f"PROMPT {i}", y0=f"Y0 {i}", c=f"CRITIQUE {i}", y1=f"Y1 {i}")
            for i in range(3)]


def _samples():
    rubric = Rubric(criteria=[Criterion(name="Clarity", weight=2.0), Criterion(name="Depth", weight=1.0)])
    return {f"s{i}": Sample(id=f"s{i}", prompt=f"PROMPT {i}", rubric=rubric) for i in range(3)}


@pytest.mark.parametrize("name", JUDGE_NAMES)
def test_every_named_judge_scores_rollouts_with_one_signature(replay, judge_sampling, name):
    answer, score = _ANSWERS[name]
    model = replay([{"completions": [answer]}])
    judge = rollout_judge(name, model, judge_sampling)
    assert isinstance(judge, Scorer) and isinstance(judge, Role)
    judgments = judge.score(_rollouts(), _samples())
    assert [j.judge for j in judgments] == [name] * 3
    assert all(j.valid for j in judgments), [j.error for j in judgments]
    assert [j.score for j in judgments] == [score] * 3
    assert len(model.batches) == 1  # the whole batch in one call


def test_gold_rubric_scorer_says_which_samples_it_lacks(replay, judge_sampling):
    judge = rollout_judge("gold_rubric", replay([{"completions": ["{}"]}]), judge_sampling)
    with pytest.raises(ValueError, match=r"s0"):
        judge.score(_rollouts(), {})


def test_unknown_judge_name_lists_the_choices(replay, judge_sampling):
    with pytest.raises(ConfigError, match="unknown judge 'nope'.*taiscore"):
        rollout_judge("nope", replay([{"completions": ["1"]}]), judge_sampling)
    with pytest.raises(ConfigError, match="unknown judge 'query_filter'"):
        rollout_judge("query_filter", replay([{"completions": ["1"]}]), judge_sampling)


def test_decoevo_roles_share_the_role_base():
    for role in (Solver, RubricGenerator, CriterionJudge, StructuralAuditor):
        assert issubclass(role, Role)
