"""`python:` scorers: a user's function standing for each judge kind, cached, probed at start."""

import pytest

from coevo.algorithms.decoevo.data import gold_scores
from coevo.algorithms.taiscore import make_reward_fn
from coevo.algorithms.taiscore.pairs import select_pairs
from coevo.llm.base import ModelError
from coevo.llm.python_functions import check_python_spec, load_python_function
from coevo.llm.replay import ReplayModel
from coevo.llm.specs import check_spec, load_model
from coevo.roles.actor import Actor
from coevo.roles.judges import order_swapped
from coevo.roles.python_scorers import grader_for, judge_for
from coevo.rundir.store import RunStore
from coevo.core.types import Judgment, Rollout, Rubric, Sample, Sampling

SCORERS = '''
CALLS = []

def reward(x, y0, critique, y1):
    """Rewards critiques that say "because"; None (unreadable) for ones that say "???"."""
    CALLS.append(critique)
    if "???" in critique:
        return None
    return 1.0 + critique.count("because") + (0.5 if y1 is None else 0.0)

def pairwise(x, a, b):
    """The longer response wins; equal lengths tie."""
    return "tie" if len(a) == len(b) else ("a" if len(a) > len(b) else "b")

def gold(x, response, rubric):
    return float(len(response.split())) + (len(rubric["criteria"]) if rubric else 0) / 10

def grader(question, answer, rubric):
    return min(1.0, len(answer) / 100)

def always_a(x, a, b):
    return "a"

def wrong_arity(x, a):
    return "a"

def explodes(x, a, b):
    raise RuntimeError("boom")

def says_maybe(x, a, b):
    return "maybe"

def reward_in_words(x, y0, critique, y1):
    return "high"
'''


@pytest.fixture
def scorers(tmp_path):
    path = tmp_path / "scorers.py"
    path.write_text(SCORERS)
    return path


def _rollouts(*critiques):
    return [Rollout(sample_id=f"s{i}", x="Write.", y0="old", c=c, y1="new") for i, c in enumerate(critiques)]


def test_reward_function_scores_rollouts_as_python_judgments(scorers):
    judge = judge_for("taiscore", load_python_function(f"python:{scorers}:reward"), Sampling())
    judgments = judge.score(_rollouts("bad because because", "fine because", "???"))
    assert [j.score for j in judgments] == [3.0, 2.0, None]
    assert [j.valid for j in judgments] == [True, True, False]
    assert {j.source for j in judgments} == {"python"} and {j.judge for j in judgments} == {"taiscore"}
    assert "returned None" in judgments[2].error


def test_none_reward_is_the_invalid_reward_inside_its_grpo_group(scorers):
    actor = Actor(ReplayModel(rules=[{"completion": "revised"}]), Sampling())
    judge = judge_for("taiscore", load_python_function(f"python:{scorers}"), Sampling())  # module form
    seen = []
    reward_fn = make_reward_fn(actor, judge, "taiscore", invalid_reward=-1.0, on_scored=seen.extend)
    critiques = ["because", "???", "", "because because"]
    rewards = reward_fn(prompts=[[]] * 4, completions=[[{"role": "assistant", "content": c}] for c in critiques],
                        x=["x"] * 4, y0=["y0"] * 4, sample_id=["s"] * 4)
    assert rewards == [2.0, -1.0, -1.0, 3.0]  # None and the empty critique: invalid_reward, still in the group
    assert [r.judgments["taiscore"].reward for r in seen] == rewards
    assert seen[1].judgments["taiscore"].source == "python" and not seen[1].judgments["taiscore"].valid


def test_critique_quality_reward_gets_no_revision(scorers):
    actor_model = ReplayModel(rules=[{"completion": "revised"}])
    judge = judge_for("critique_quality", load_python_function(f"python:{scorers}:reward"), Sampling())
    reward_fn = make_reward_fn(Actor(actor_model, Sampling()), judge, "critique_quality")
    assert reward_fn(prompts=[[]], completions=["because"], x=["x"], y0=["y"], sample_id=["s"]) == [2.5]
    assert actor_model.calls == []  # y1 stays None: the function sees critique alone


def test_pairwise_function_is_shown_both_orders_and_mapped_back(scorers):
    ids = [f"item{i}" for i in range(16)]
    assert {order_swapped(i, 3) for i in ids} == {True, False}  # both orders occur
    rollouts = [Rollout(sample_id=i, x="x", y0="short", y1="a longer revision") for i in ids]
    judge = judge_for("pairwise", load_python_function(f"python:{scorers}:pairwise"), Sampling(), order_seed=3)
    verdicts = judge.score(rollouts)
    assert {tuple(v.shown_order) for v in verdicts} == {("y0", "y1"), ("y1", "y0")}
    assert all(v.winner == "y1" and v.score == 1.0 and v.source == "python" for v in verdicts)
    for rollout, verdict in zip(rollouts, verdicts):
        rollout.judgments["pairwise"] = verdict
    chosen, counts = select_pairs(rollouts, 4, seed=0)
    assert counts.y1_wins == 16 and len(chosen) == 4
    # A function with a position bias picks whichever is shown first: measured, as a model's is.
    biased = judge_for("pairwise", load_python_function(f"python:{scorers}:always_a"), Sampling(), order_seed=3)
    for verdict in biased.score(rollouts):
        assert verdict.winner == verdict.shown_order[0]
    tie = judge.judge(["x"], ["same"], ["same"], labels=("first", "second"))[0]
    assert (tie.winner, tie.score) == ("tie", 0.5)


def test_gold_and_grader_functions_read_the_samples_rubric(scorers):
    rubric = Rubric.model_validate({"criteria": [{"name": "a", "weight": 1}, {"name": "b", "weight": 1}]})
    samples = [Sample(id="q", prompt="Write.", rubric=rubric), Sample(id="r", prompt="Write.")]
    gold = judge_for("gold_rubric", load_python_function(f"python:{scorers}:gold"), Sampling())
    judged = gold.score([Rollout(sample_id="q", x="Write.", y0="one two", y1="one two three"),
                         Rollout(sample_id="r", x="Write.", y0="one")], {s.id: s for s in samples})
    assert [j.score for j in judged] == [3.2, 1.0] and judged[0].source == "python"
    grader = grader_for(load_python_function(f"python:{scorers}"), Sampling())
    graded = gold_scores(grader, samples, ["x" * 50, "x" * 300])
    assert [g for g, _ in graded] == [0.5, 1.0]  # already in [0, 1]: not rescaled from 1-10


def test_calls_are_cached_in_the_run_store_by_source_and_arguments(tmp_path, scorers):
    store = RunStore(tmp_path / "run")
    function = load_model(f"python:{scorers}:reward", store=store)
    judge = judge_for("taiscore", function, Sampling())
    calls = function.module.CALLS  # one module per source: other tests' calls are in it too
    before = len(calls)
    first = judge.score(_rollouts("because"))
    again = judge.score(_rollouts("because"))
    assert len(calls) == before + 1 and (first[0].cached, again[0].cached) == (False, True)
    assert again[0].score == first[0].score == 2.0
    # Another source is another function: nothing it did not compute is reused.
    scorers.write_text(SCORERS.replace("1.0 + critique", "10.0 + critique"))
    changed = judge_for("taiscore", load_model(f"python:{scorers}:reward", store=store), Sampling())
    assert changed.score(_rollouts("because"))[0].score == 11.0


def test_a_function_that_fails_mid_run_makes_that_item_invalid(scorers):
    judge = judge_for("pairwise", load_python_function(f"python:{scorers}:explodes"), Sampling())
    (verdict,) = judge.judge(["x"], ["a"], ["b"])
    assert not verdict.valid and "RuntimeError: boom" in verdict.error and verdict.winner is None


def test_old_judgments_read_as_model_judgments():
    assert Judgment.model_validate({"judge": "taiscore", "score": 7}).source == "model"


@pytest.mark.parametrize("target, kinds, message", [
    ("absent.py:reward", ["reward"], "no Python file at"),
    ("{path}:nope", ["reward"], "defines no function 'nope'"),
    ("{path}", ["reward", "pairwise", "gold", "grader"], None),  # the module form serves every kind
    ("{path}:reward", ["reward", "pairwise"], "names one function, but this place serves 2"),
    ("{path}:wrong_arity", ["pairwise"], "does not take the pairwise arguments"),
    ("{path}:explodes", ["pairwise"], "raised RuntimeError: boom on a probe call"),
    ("{path}:says_maybe", ["pairwise"], "returned 'maybe'"),
    ("{path}:reward_in_words", ["reward"], "returned 'high', not a finite number"),
    ("{path}:gold", ["grader"], "outside [0, 1]"),
    ("no_such_package.module:f", ["reward"], "cannot import module 'no_such_package.module'"),
    # a scorer module of coevo's that moved: the error names its new place
    ("coevo.learning.graders:criterion_met", ["grader"],
     "write 'python:coevo.eval.checkable_graders:criterion_met'"),
])
def test_a_bad_spec_is_refused_naming_it(scorers, target, kinds, message):
    spec = "python:" + target.format(path=scorers)
    if message is None:
        assert check_python_spec(spec, kinds).function is None
        return
    with pytest.raises(ModelError) as err:
        check_python_spec(spec, kinds)
    assert repr(spec) in str(err.value) and message in str(err.value)


def test_check_spec_and_load_model_know_the_form(scorers):
    check_spec(f"python:{scorers}:reward")
    with pytest.raises(ModelError, match="no function 'nope'"):
        check_spec(f"python:{scorers}:nope")
    with pytest.raises(ModelError, match="cannot be trained"):
        load_model(f"python:{scorers}:reward", trainable=True)
    # A package module works too (its file's source keys the cache).
    assert load_python_function("python:json:dumps").get("reward") is __import__("json").dumps
