"""Two warnings that read the run's own records: GRPO critiques that copy their input, with
the reward on copies beside the reward on real critiques (view/copy_warnings.py); and
"judge-agrees", which speaks of model judges only, never of a check in code."""

from __future__ import annotations

from coevo.monitor.copies import critique_copies
from coevo.monitor.records import run_summary
from coevo.rundir.store import RunStore
from coevo.core.types import Judgment, Rollout
from coevo.view.copy_warnings import copied_critiques
from coevo.view.warnings import agreeing_judges, run_warnings

Y0 = "The lighthouse stood on the rocks and its lantern turned all night over the dark harbour."
X = "Write a short story about a lighthouse keeper and a storm."
REAL = "The ending is rushed: show the keeper deciding to climb the tower, and cut the second adjective."


def _critique(store, stage, i, c, reward):
    judgment = Judgment(judge="taiscore", score=reward, reward=reward)
    return store.save_rollout(stage, Rollout(sample_id=f"s{i % 3}#{i}", x=X, y0=Y0, c=c, condition="grpo",
                                             judgments={"taiscore": judgment}), round=1)


def test_copied_critiques_are_named_with_their_rate_their_reward_and_the_best_paid_one(tmp_path):
    store = RunStore(tmp_path)
    stage = "coevolution/round1/grpo"
    rewards = {}
    for i in range(8):  # 2 echoes of y0 (paid 8 and 9), 6 real critiques (paid 4 and 5)
        copy = i in (2, 5)
        reward = (8.0 if i == 2 else 9.0) if copy else 4.0 + i % 3
        rewards[_critique(store, stage, i, Y0 if copy else f"{REAL} ({i})", reward)] = reward
    _critique(store, stage, 8, "", 0.0)  # an empty critique: neither a copy nor a real one
    found = critique_copies(store)
    assert (found["copies"], found["critiques"]) == (2, 9)
    assert found["reward_on_copies"] == {"mean": 8.5, "n": 2, "lo": None, "hi": None}  # under 5: no interval
    real = found["reward_on_critiques"]
    assert real["n"] == 6 and real["lo"] < real["mean"] < real["hi"]
    best = max((rid for rid, r in rewards.items() if r == 9.0))
    assert found["worst"] == {"rollout_id": best, "stage": stage, "sample_id": "s2#5", "reward": 9.0, "copies": "y0"}
    assert run_summary(store)["copies"] == found  # summary.json -> monitor -> copies
    [warning] = copied_critiques(store)
    assert warning.kind == "copies-input"
    assert warning.text.startswith(f"2 of 9 GRPO critiques (22%) in {stage} copy their input instead of critiquing")
    assert "reward on copies: 8.500 (n=2: too few to tell); on real critiques: 4.500 [" in warning.text
    assert "paid copying at least as well as critiquing" in warning.text
    assert f"rollout {best} ({stage}, reward 9, a copy of y0), on the Samples page at samples/{best}" in warning.text
    assert warning.link == f"samples/{best}" and "copies-input" in {f.kind for f in run_warnings(store)}


def test_the_run_page_links_the_warning_to_the_best_paid_copy(tmp_path):
    from fastapi.testclient import TestClient

    from coevo.view.app import create_app

    store = RunStore(tmp_path / "run")
    ids = [_critique(store, "r/round1/grpo", i, Y0 if i < 3 else f"{REAL} ({i})", 9.0 if i == 1 else 5.0)
           for i in range(6)]
    best = ids[1]  # the copy paid 9
    store.close()
    page = TestClient(create_app([tmp_path])).get("/runs/run").text
    assert 'class="warning warning-copies-input"' in page
    assert f'href="/runs/run/samples/{best}">Open it</a>' in page


def test_a_rare_copy_paid_less_than_real_critiques_is_no_warning(tmp_path):
    store = RunStore(tmp_path)
    for i in range(10):
        _critique(store, "r/round1/grpo", i, Y0 if i == 0 else f"{REAL} ({i})", 1.0 if i == 0 else 6.0)
    assert critique_copies(store)["copies"] == 1 and copied_critiques(store) == []
    # The same copy paid as much as the critiques: the judge pays for not critiquing.
    _critique(store, "r/round1/grpo", 0, Y0, 6.0)
    assert [f.kind for f in copied_critiques(store)] == ["copies-input"]
    assert critique_copies(RunStore(tmp_path / "empty")) is None


def _judged(store, name, judgment, n=5):
    for i in range(n):
        store.save_rollout("eval", Rollout(sample_id=f"{name}{i}", x="x", y0=f"answer {i}",
                                           judgments={name: judgment}))


def test_judge_agrees_never_fires_on_a_python_checker_and_still_fires_on_a_model_judge(tmp_path):
    store = RunStore(tmp_path)
    # Constraint checks in code (no source of their own) and a python: scorer, each constant.
    _judged(store, "constraints_y0", Judgment(judge="constraints", scores={"max_words": 1.0}, score=1.0))
    _judged(store, "python_gold", Judgment(judge="gold_rubric", score=7.0, source="python"))
    assert agreeing_judges(store) == []
    # A model judge that agrees with everything is still named.
    _judged(store, "gold_rubric_y0", Judgment(judge="gold_rubric", score=6.0))
    [finding] = agreeing_judges(store)
    assert finding.kind == "judge-agrees" and finding.text.startswith("judge 'gold_rubric_y0' gave the same score")
