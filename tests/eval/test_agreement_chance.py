"""What comes with a pairwise agreement: its n, a Wilson interval, the chance level of two
independent raters with the same marginals, Cohen's kappa, and the groups left out, each
against values worked out by hand here; and `coevo eval agreement` printing them."""

import json
import math

import pytest
from typer.testing import CliRunner

from coevo.cli import app
from coevo.eval.agreement import judge_agreement, pairwise_agreement, unmatched

# Four pairs, each oriented (a, b):
#   A prefers a in g1, g2; b in g3, g4         -> P_A(a first) = 1/2
#   B prefers a in g1;     b in g2, g3, g4     -> P_B(a first) = 1/4
#   agree on g1, g3, g4, not g2                -> observed 3/4
#   chance = 1/2 * 1/4 + 1/2 * 3/4 = 1/2       -> kappa = (3/4 - 1/2) / (1 - 1/2) = 1/2
A = {"g1": {"a": 1, "b": 0}, "g2": {"a": 1, "b": 0}, "g3": {"a": 0, "b": 1}, "g4": {"a": 0, "b": 1},
     "only_a": {"a": 1, "b": 0}}
B = {"g1": {"a": 5, "b": 2}, "g2": {"a": 2, "b": 5}, "g3": {"a": 2, "b": 5}, "g4": {"a": 1, "b": 9},
     **{f"only_b{i}": {"a": 1, "b": 0} for i in range(5)}}


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_chance_agreement_and_kappa_by_hand():
    result = pairwise_agreement(A, B)
    assert (result.n_pairs, result.n_agree) == (4, 3)
    assert result.agreement == pytest.approx(0.75)
    assert result.chance_agreement == pytest.approx(0.5)
    assert result.kappa == pytest.approx(0.5)
    lo, hi = _wilson(3, 4)
    assert (result.agreement_lo, result.agreement_hi) == (pytest.approx(lo), pytest.approx(hi))
    assert result.agreement_lo < 0.75 < result.agreement_hi


def test_raters_who_always_pick_one_side_agree_by_chance_only():
    # Both always prefer the first candidate: full agreement, all of it chance, kappa undefined.
    always = {f"g{i}": {"a": 1, "b": 0} for i in range(6)}
    result = pairwise_agreement(always, always)
    assert (result.agreement, result.chance_agreement, result.kappa) == (1.0, 1.0, None)
    # One always a, the other always b: no agreement, no chance agreement either.
    flipped = {g: {"a": 0, "b": 1} for g in always}
    result = pairwise_agreement(always, flipped)
    assert (result.agreement, result.chance_agreement, result.kappa) == (0.0, 0.0, 0.0)
    assert result.agreement_lo == 0.0 and result.agreement_hi == pytest.approx(_wilson(0, 6)[1])


def test_no_pair_gives_no_interval_and_no_chance():
    result = pairwise_agreement({"g": {"a": 1, "b": 1}}, {"g": {"a": 2, "b": 1}})
    assert (result.agreement, result.agreement_lo, result.chance_agreement, result.kappa) == (None, None, None, None)


def test_groups_only_one_side_holds_are_counted_and_named():
    left_out = unmatched(A, B)
    assert (left_out.unmatched_a, left_out.unmatched_b) == (1, 5)
    assert left_out.unmatched_a_examples == ["only_a"]
    assert left_out.unmatched_b_examples == ["only_b0", "only_b1", "only_b2"]  # a few, sorted
    both = judge_agreement(A, B)
    assert (both.unmatched_a, both.unmatched_b, both.n_groups, both.kappa) == (1, 5, 4, pytest.approx(0.5))


def _write(path, scores):
    path.write_text("".join(json.dumps({"group": g, "candidate": c, "score": s}) + "\n"
                            for g, cands in scores.items() for c, s in cands.items()))
    return str(path)


def test_the_command_reports_n_chance_interval_and_what_it_left_out(tmp_path):
    a, b = _write(tmp_path / "human.jsonl", A), _write(tmp_path / "judge.jsonl", B)
    report = json.loads(CliRunner().invoke(app, ["eval", "agreement", "--a", a, "--b", b, "--json"]).stdout)
    assert (report["n_pairs"], report["unmatched_a"], report["unmatched_b"]) == (4, 1, 5)
    assert report["chance_agreement"] == pytest.approx(0.5) and report["kappa"] == pytest.approx(0.5)
    assert report["agreement_lo"] == pytest.approx(_wilson(3, 4)[0])
    assert report["unmatched_b_examples"] == ["only_b0", "only_b1", "only_b2"]
    table = CliRunner().invoke(app, ["eval", "agreement", "--a", a, "--b", b])
    assert table.exit_code == 0, table.output
    text = " ".join(table.output.split())
    assert "pairwise agreement │ 0.750 │ too few to tell │ 4 pairs" in text  # n < 5: no interval shown
    assert "chance agreement │ 0.500" in text and "Cohen's kappa │ 0.500" in text
    assert f"left out: 1 group only in {a} (only_a)" in text
    assert f"left out: 5 groups only in {b} (only_b0, only_b1, only_b2, ... (2 more))" in text


def test_the_command_shows_the_interval_from_five_pairs(tmp_path):
    scores = {f"g{i}": {"a": 1, "b": 0} for i in range(8)}
    other = {g: ({"a": 0, "b": 1} if i < 2 else {"a": 1, "b": 0}) for i, g in enumerate(scores)}
    a, b = _write(tmp_path / "a.jsonl", scores), _write(tmp_path / "b.jsonl", other)
    text = " ".join(CliRunner().invoke(app, ["eval", "agreement", "--a", a, "--b", b]).output.split())
    lo, hi = _wilson(6, 8)
    assert f"pairwise agreement │ 0.750 │ [{lo:.3f}, {hi:.3f}] │ 8 pairs" in text
    assert "left out:" not in text
