"""A TAIScore run whose `models.judge` is a Python module: the critic trains on the function's
rewards, DPO pairs are the pairwise function's picks, held-out scores the gold function's."""

import pytest

from coevo.algorithms.taiscore import run_taiscore
from coevo.llm.base import ModelError
from coevo.run.runner import summary_dict
from coevo.rundir.store import RunStore
from tests.algorithms.test_taiscore_logic import FakeTrainers, _config

JUDGE = '''
def reward(x, y0, critique, y1):
    # The fake trainer's critiques are CRIT-0, CRIT-1, ...: their number is the reward.
    return float(critique[-1]) if critique[-1].isdigit() else 0.0

def pairwise(x, a, b):
    return "a" if "GOOD" in a else ("b" if "GOOD" in b else "tie")

def gold(x, response, rubric):
    return float(len(response.split()))
'''


def test_a_python_judge_gives_the_rewards_pairs_and_gold_scores(tmp_path):
    module = tmp_path / "judge.py"
    module.write_text(JUDGE)
    trainers = FakeTrainers()
    config = _config(tmp_path, roles={"judge": {"model": f"python:{module}"}})
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(config, store, trainers.backend()))
    assert trainers.grpo_calls and all(call["rewards"] == [0.0, 1.0] * len(call["prompts"])
                                       for call in trainers.grpo_calls)
    # The replay actor revises to "GOOD revision": the pairwise function prefers every y1.
    assert trainers.dpo_calls and all(len(call["pairs"]) == 2 for call in trainers.dpo_calls)
    assert summary["baseline"]["gold_score"] == 2.0  # "plain initial": two words
    grpo = [r for r in store.rollouts() if "taiscore" in r.judgments]
    assert grpo and {r.judgments["taiscore"].source for r in grpo} == {"python"}
    # Resumed, nothing is recomputed: the stages restore and the function's calls come from the store.
    again = FakeTrainers()
    assert summary_dict(run_taiscore(config, store, again.backend()))["rounds"] == summary["rounds"]
    assert again.grpo_calls == [] and again.dpo_calls == []


def test_a_python_judge_missing_a_kind_the_run_needs_is_refused_before_it_starts(tmp_path):
    module = tmp_path / "judge.py"
    module.write_text(JUDGE.replace("def pairwise", "def pairwise_unused"))
    config = _config(tmp_path, roles={"judge": {"model": f"python:{module}"}})
    with pytest.raises(ModelError, match="defines no function 'pairwise'"):
        run_taiscore(config, RunStore(tmp_path / "run"), FakeTrainers().backend())
