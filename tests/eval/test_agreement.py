"""Judge agreement (TAIScore D.1) against hand-computed values, and the scores reader."""

import pytest

from coevo.eval.agreement import judge_agreement, pairwise_agreement, read_scores_jsonl, top1_overlap
from coevo.tasks.loaders import DataError

# Hand-worked example (ties included):
#   g1  A: x=3 y=2 z=2 (w only in A)   B: x=2 y=3 z=1
#       tops {x} vs {y}: no overlap. pairs: xy disagree, xz agree, yz tied by A.
#   g2  A: x=1 y=1 z=0 (v null in B)   B: x=1 y=0 z=0
#       tops {x,y} vs {x}: overlap. pairs: xy tied by A, xz agree, yz tied by B.
#   g3  single shared candidate: overlap, no pairs.
#   g4 only in A, g5 only in B: ignored.
A = {
    "g1": {"x": 3, "y": 2, "z": 2, "w": 10},
    "g2": {"x": 1, "y": 1, "z": 0, "v": 5},
    "g3": {"x": 5},
    "g4": {"p": 1, "q": 2},
}
B = {
    "g1": {"x": 2, "y": 3, "z": 1},
    "g2": {"x": 1, "y": 0, "z": 0, "v": None},
    "g3": {"x": 4},
    "g5": {"p": 1},
}


def test_top1_overlap_hand_computed():
    result = top1_overlap(A, B)
    assert (result.n_groups, result.n_overlapping) == (3, 2)
    assert result.overlap == pytest.approx(2 / 3)


def test_pairwise_agreement_hand_computed():
    result = pairwise_agreement(A, B)
    assert (result.n_pairs, result.n_agree, result.n_tied) == (3, 2, 3)
    assert result.agreement == pytest.approx(2 / 3)


def test_metrics_are_symmetric_and_combined():
    assert pairwise_agreement(B, A) == pairwise_agreement(A, B)
    assert top1_overlap(B, A) == top1_overlap(A, B)
    both = judge_agreement(A, B)
    assert (both.overlap, both.n_groups) == (pytest.approx(2 / 3), 3)
    assert (both.agreement, both.n_pairs, both.n_agree, both.n_tied) == (pytest.approx(2 / 3), 3, 2, 3)


def test_identical_and_reversed_judges():
    a = {"g": {"1": 1, "2": 2, "3": 3, "4": 4}}
    same = judge_agreement(a, a)
    assert (same.overlap, same.agreement, same.n_pairs) == (1.0, 1.0, 6)
    flipped = judge_agreement(a, {"g": {k: -v for k, v in a["g"].items()}})
    assert (flipped.overlap, flipped.agreement) == (0.0, 0.0)


def test_nothing_shared_gives_none():
    result = judge_agreement({"g": {"x": 1}}, {"h": {"x": 1}})
    assert (result.overlap, result.n_groups, result.agreement, result.n_pairs) == (None, 0, None, 0)
    all_tied = pairwise_agreement({"g": {"x": 1, "y": 1}}, {"g": {"x": 2, "y": 1}})
    assert (all_tied.agreement, all_tied.n_pairs, all_tied.n_tied) == (None, 0, 1)


def test_nan_score_counts_as_missing():
    result = top1_overlap({"g": {"x": 9, "y": 1}}, {"g": {"x": float("nan"), "y": 1}})
    assert (result.n_groups, result.overlap) == (1, 1.0)


def test_read_scores_jsonl(tmp_path):
    path = tmp_path / "judge.jsonl"
    path.write_text(
        '{"group": 1, "candidate": "a", "score": 7}\n'
        "\n"
        '{"group": "1", "candidate": "b", "score": 8.5}\n'
        '{"group": 2, "candidate": 0, "score": null}\n'
    )
    read = read_scores_jsonl(path)
    assert read.scores == {"1": {"a": 7.0, "b": 8.5}}
    assert (read.n_valid, read.n_invalid) == (2, 1)


@pytest.mark.parametrize("text, message", [
    ('{"group": 1, "candidate": "a", "score": 1}\n{oops\n', r"line 2 is not valid JSON"),
    ('{"group": 1, "score": 1}\n', r"line 1 lacks \['candidate'\]"),
    ('{"group": 1, "candidate": "a", "score": "8/10"}\n', r"line 1: score must be a finite number"),
    ('{"group": 1, "candidate": "a", "score": 1}\n{"group": "1", "candidate": "a", "score": 2}\n',
     r"line 2 repeats group '1' candidate 'a' \(first on line 1\)"),
    ('[1, 2]\n', r"line 1 is a JSON list, not an object"),
])
def test_read_scores_jsonl_errors(tmp_path, text, message):
    path = tmp_path / "judge.jsonl"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_scores_jsonl(path)


def test_read_scores_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such scores file"):
        read_scores_jsonl(tmp_path / "none.jsonl")
