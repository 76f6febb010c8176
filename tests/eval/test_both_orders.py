"""Both-orders pairwise evaluation: a position-biased judge gives ½ and is seen to be one."""

import json

import pytest

from coevo.eval.both_orders import BothOrders, combine, judge_both_orders, summarise_both_orders
from coevo.llm.python_functions import load_python_function
from coevo.llm.replay import ReplayModel
from coevo.roles.judges import PairwiseJudge
from coevo.roles.judging import judge_for
from coevo.core.types import Judgment, Sampling

PROMPTS = [f"Write about topic {i}." for i in range(6)]
PLAIN = [f"plain answer {i}" for i in range(6)]
GOOD = [f"GOOD answer {i}" for i in range(6)]


class CountingReplay(ReplayModel):
    """A replay model that counts its `generate` calls and their batch sizes."""

    def __init__(self, rules):
        super().__init__(rules=rules)
        self.batches: list[int] = []

    def generate(self, conversations, sampling, n=1):
        self.batches.append(len(conversations))
        return super().generate(conversations, sampling, n)


def _judge(rules):
    model = CountingReplay(rules)
    return PairwiseJudge(model, Sampling(temperature=0.0)), model


def test_a_judge_that_always_answers_1_gives_one_half_and_no_consistency():
    judge, model = _judge([{"completion": "1"}])
    pairs = judge_both_orders(judge, PROMPTS, PLAIN, GOOD, labels=("round0", "current"))
    assert model.batches == [12]  # both orders of every pair in ONE batched call
    assert [(a.shown_order, b.shown_order) for a, b in pairs] == [(["round0", "current"], ["current", "round0"])] * 6
    assert all(a.score == 0.0 and b.score == 1.0 for a, b in pairs)  # each verdict: whoever came first
    found = summarise_both_orders(pairs)
    assert found.n == 6 and found.n_invalid == 0
    assert found.win_rate == 0.5 and found.position_consistency == 0.0 and found.first_position_rate == 1.0
    assert found.win_rate_lo < 0.5 < found.win_rate_hi
    assert found.position_consistency_lo == 0.0 and found.position_consistency_hi < 0.5
    assert [combine(*p) for p in pairs] == [BothOrders(preference=0.5, consistent=False,
                                                      won_by=("first", "first"))] * 6


def test_a_judge_that_reads_the_content_is_consistent_in_both_orders():
    judge, _ = _judge([{"match": "Response 1:\nGOOD", "completion": "1"},
                       {"match": "Response 2:\nGOOD", "completion": "2"}])
    found = summarise_both_orders(judge_both_orders(judge, PROMPTS, PLAIN, GOOD))
    assert found.win_rate == 1.0 and found.position_consistency == 1.0 and found.first_position_rate == 0.5
    assert found.win_rate_hi == 1.0 and 0.5 < found.win_rate_lo < 1.0  # Wilson over n = 6
    reverse = summarise_both_orders(judge_both_orders(judge, PROMPTS, GOOD, PLAIN))
    assert reverse.win_rate == 0.0 and reverse.position_consistency == 1.0


def test_a_python_pairwise_scorer_is_judged_in_both_orders_too(tmp_path):
    path = tmp_path / "scorers.py"
    path.write_text('def longer(x, a, b):\n    return "tie" if len(a) == len(b) else ("a" if len(a) > len(b) else "b")\n'
                    'def always_a(x, a, b):\n    return "a"\n')
    content = judge_for("pairwise", load_python_function(f"python:{path}:longer"), Sampling())
    found = summarise_both_orders(judge_both_orders(content, ["x"] * 3, ["short"] * 3, ["a longer one"] * 3))
    assert (found.win_rate, found.position_consistency, found.first_position_rate) == (1.0, 1.0, 0.5)
    biased = judge_for("pairwise", load_python_function(f"python:{path}:always_a"), Sampling())
    found = summarise_both_orders(judge_both_orders(biased, ["x"] * 3, ["short"] * 3, ["a longer one"] * 3))
    assert (found.win_rate, found.position_consistency, found.first_position_rate) == (0.5, 0.0, 1.0)
    ties = summarise_both_orders(judge_both_orders(content, ["x"], ["same"], ["same"]))
    assert (ties.win_rate, ties.position_consistency, ties.first_position_rate) == (0.5, 1.0, 0.5)


def test_swapped_forces_the_shown_order_and_rng_or_seed_are_unused():
    judge, _ = _judge([{"completion": "1"}])
    shown = [j.shown_order for j in judge.judge(["p"] * 3, ["a"] * 3, ["b"] * 3, ids=["i", "j", "k"], seed=5,
                                                swapped=[True, False, True])]
    assert shown == [["second", "first"], ["first", "second"], ["second", "first"]]
    with pytest.raises(ValueError, match="swapped has 1 entries for 3 items"):
        judge.judge(["p"] * 3, ["a"] * 3, ["b"] * 3, swapped=[True])


def _verdict(score, shown, winner, valid=True):
    return Judgment(judge="pairwise", score=score if valid else None, valid=valid, shown_order=shown, winner=winner)


def test_unreadable_verdicts_leave_their_item_out_and_disagreements_count_half():
    straight, swapped = ["first", "second"], ["second", "first"]
    pairs = [
        (_verdict(1.0, straight, "second"), _verdict(1.0, swapped, "second")),  # consistent: second wins
        (_verdict(1.0, straight, "second"), _verdict(0.0, swapped, "first")),   # each time the one shown second
        (_verdict(0.5, straight, "tie"), _verdict(0.0, swapped, "first")),      # tie, then first: inconsistent
        (_verdict(1.0, straight, "second"), _verdict(None, swapped, None, valid=False)),  # left out
    ]
    found = summarise_both_orders(pairs)
    assert found.n == 3 and found.n_invalid == 1
    assert found.win_rate == pytest.approx((1.0 + 0.5 + 0.25) / 3)
    assert found.position_consistency == pytest.approx(1 / 3)
    # verdicts won by the shown-first response: item 1 (second, first), item 2 (second, second),
    # item 3 (tie, second) -> 1 + 0 + 0.5 of 6
    assert found.first_position_rate == pytest.approx(1.5 / 6)
    metrics = found.metrics("win_rate_vs_round0", "vs_round0")
    assert set(metrics) == {"win_rate_vs_round0", "win_rate_vs_round0_lo", "win_rate_vs_round0_hi",
                            "win_rate_vs_round0_n", "position_consistency_vs_round0",
                            "first_position_rate_vs_round0"}
    assert metrics["win_rate_vs_round0_n"] == 3.0
    empty = summarise_both_orders([])
    assert empty.n == 0 and empty.win_rate is None and empty.metrics("w", "s")["w"] is None


def test_expected_preferences_are_averaged_and_winners_come_from_the_judgment():
    # P(second original) 0.8 shown straight, 0.6 shown swapped: the same response both times
    pairs = [(_verdict(0.8, ["a", "b"], "b"), _verdict(0.6, ["b", "a"], "b"))]
    found = summarise_both_orders(pairs)
    assert found.win_rate == pytest.approx(0.7) and found.position_consistency == 1.0
    assert found.first_position_rate == 0.5
    # without `winner` (an older record), the position comes from the score
    bare = [(Judgment(judge="pairwise", score=0.0), Judgment(judge="pairwise", score=1.0))]
    assert summarise_both_orders(bare).first_position_rate == 1.0


def test_coevo_judge_pairwise_writes_both_orders_per_line(tmp_path):
    from coevo.eval.judge_file import judge_file

    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps({"id": f"r{i}", "x": "Write.", "y0": "old", "y1": "GOOD new"}) + "\n"
                                for i in range(3)))
    for name, rules, score, consistent in (("biased", [{"completion": "1"}], 0.5, False),
                                           ("reads", [{"match": "Response 1:\nGOOD", "completion": "1"},
                                                      {"match": "Response 2:\nGOOD", "completion": "2"}], 1.0, True)):
        replay = tmp_path / f"{name}.jsonl"
        replay.write_text("".join(json.dumps(r) + "\n" for r in rules))
        out = tmp_path / "scored.jsonl"
        assert judge_file("pairwise", rollouts, out, f"replay:{replay}", scoring="sampled") == {"valid": 3,
                                                                                                "invalid": 0}
        lines = out.read_text().splitlines()
        assert len(lines) == 3  # one per rollout
        for line in lines:
            judgment = json.loads(line)["judgment"]
            assert (judgment["score"], judgment["consistent"]) == (score, consistent)
            assert [o["shown_order"] for o in judgment["orders"]] == [["y0", "y1"], ["y1", "y0"]]


def test_refine_runs_judge_pairwise_in_both_orders(tmp_path):
    from coevo.run.runner import run_experiment

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "prompt": f"Write about {i}."}) + "\n" for i in range(4)))
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in [
        {"match": "Response 1:", "completion": "1"},  # a judge that only reads the order
        {"match": "Your Critique:", "completion": "Add a concrete image."},
        {"match": "Revised Response:", "completion": "Rain taps the tin roof."},
        {"completion": "Rain falls."}]))
    spec = f"replay:{replay}"
    summary = run_experiment(None, tmp_path / "run", data={
        "algorithm": "refine", "data": {"source": str(data)}, "judges": ["pairwise"],
        "roles": {"actor": {"model": spec}, "critic": {"model": spec}, "judge": {"model": spec}}})
    assert summary["table"]["columns"] == ["judge", "mean", "mean_lo", "mean_hi", "position_consistency", "valid",
                                           "invalid"]
    (row,) = summary["table"]["rows"]
    assert (row["mean"], row["position_consistency"], row["valid"]) == (0.5, 0.0, 4)
    assert row["mean_lo"] < 0.5 < row["mean_hi"]
