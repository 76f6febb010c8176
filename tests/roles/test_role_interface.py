"""One role interface: every judge a config can name is a `Scorer` with one call signature."""

import json

import pytest

from coevo.core.strict import ConfigError
from coevo.roles.judging import JUDGE_NAMES, rollout_judge
from coevo.llm.call_tags import current_tags
from coevo.llm.replay import ReplayModel
from coevo.roles.base import Role, Scorer
from coevo.roles.decoevo import CriterionJudge, RubricGenerator, Solver, StructuralAuditor
from coevo.core.types import Criterion, Rollout, Rubric, Sample

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


class _TagRecordingReplay(ReplayModel):
    """Answers "{}" to everything; keeps (call tags, batch size) of each `generate` call."""

    def __init__(self):
        super().__init__(rules=[{"completions": ["{}"]}])
        self.seen: list[tuple[str | None, int]] = []

    def generate(self, conversations, sampling, n=1):
        self.seen.append((current_tags().get("role"), len(conversations)))
        return super().generate(conversations, sampling, n)


def test_decoevo_roles_tag_their_calls_with_their_names(judge_sampling):
    # Catches a DecoEvo role that talks to its model around `Role.ask` / `Role.call_tags`
    # (its calls untagged, so the viewer files them under no role) or under another role's
    # name, and one that asks question by question instead of in one batched call.
    questions = [Sample(id=f"q{i}", prompt=f"QUESTION {i}") for i in range(2)]
    rubrics = [Rubric(criteria=[Criterion(name="c1", description="Clear", weight=2.0)])] * 2
    calls = {
        "solver": lambda model: Solver(model, judge_sampling).solve(questions, "SKILL"),
        "rubric_generator": lambda model: RubricGenerator(model, judge_sampling).generate(questions, "SKILL"),
        "judge:criteria": lambda model: CriterionJudge(model, judge_sampling).judge(questions, ["A", "B"], rubrics),
        "structural_auditor": lambda model: StructuralAuditor(model, judge_sampling, spec="SPEC").audit(
            questions, rubrics),
    }
    for role, call in calls.items():
        model = _TagRecordingReplay()
        call(model)
        assert model.seen == [(role, 2)], role
