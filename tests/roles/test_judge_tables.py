"""The judge tables are derived from what each judge declares (roles/judges.py): a judge
reads the fields it declares, and the tables agree with those declarations."""

from __future__ import annotations

import pytest

from coevo.roles.judging import judge_as_reward
from coevo.llm.replay import ReplayModel
from coevo.roles.judges import JUDGE_NAMES, JUDGES, KIND_OF_JUDGE, REWARD_JUDGES, judge_reads
from coevo.core.types import Rollout, Sampling


def test_the_tables_follow_the_declarations():
    assert JUDGE_NAMES == ("taiscore", "critique_quality", "adherence", "outcome_gain", "pairwise", "gold_rubric")
    assert "query_filter" in JUDGES and "query_filter" not in JUDGE_NAMES  # grades queries, not rollouts
    assert set(REWARD_JUDGES) == {"taiscore", "outcome_gain", "critique_quality"}
    assert KIND_OF_JUDGE == {"taiscore": "reward", "critique_quality": "reward", "outcome_gain": "reward",
                             "pairwise": "pairwise", "gold_rubric": "gold"}
    assert [n for n in JUDGE_NAMES if judge_reads(n, "c")] == ["taiscore", "critique_quality", "adherence"]
    assert [n for n in JUDGE_NAMES if judge_reads(n, "y1")] == ["taiscore", "adherence", "outcome_gain", "pairwise"]


@pytest.mark.parametrize("name", ["taiscore", "critique_quality", "adherence", "outcome_gain", "pairwise"])
def test_a_judge_shows_the_fields_it_declares_and_no_others(name):
    """What a judge's prompt holds is what it declares: a critique-blind judge never sees the
    critique, and a judge that reads no revision never sees one."""
    model = ReplayModel(rules=[{"completions": ["{}"]}])
    judge = JUDGES[name](model, Sampling(max_tokens=8), reask=0)
    rollout = Rollout(sample_id="s", x="PROMPT-TEXT", y0="FIRST-RESPONSE", c="CRITIQUE-TEXT", y1="REVISED-TEXT")
    judge.score([rollout])
    shown = "\n".join(m.content for call in model.calls for m in call)
    assert ("CRITIQUE-TEXT" in shown) == judge_reads(name, "c")
    assert ("REVISED-TEXT" in shown) == judge_reads(name, "y1")
    assert "PROMPT-TEXT" in shown


def test_a_reward_judge_that_reads_no_revision_scores_a_rollout_without_one():
    model = ReplayModel(rules=[{"completions": ['{"specificity": {"score": 7}}']}])
    judge = JUDGES["critique_quality"](model, Sampling(max_tokens=8), reask=0)
    rollout = Rollout(sample_id="s", x="x", y0="y0", c="a critique")  # no y1
    [reward] = judge_as_reward([rollout], judge, "critique_quality", needs_revision=judge_reads("critique_quality", "y1"))
    assert rollout.judgments["critique_quality"].error is None or "revision" not in rollout.judgments["critique_quality"].error
    assert len(model.calls) == 1  # asked, not skipped for a missing revision
