"""Several annotators' pairwise labels merged as the TAIScore paper does (Appendix E): the label
at least two of three chose, "no majority" otherwise, and Fleiss' kappa checked by hand."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from coevo.eval.annotators import (
    fleiss_kappa,
    merge_annotators,
    merge_files,
    read_annotator_file,
    read_annotator_files,
    write_merge,
)
from coevo.tasks.loaders import DataError

# Four pairs (y0 vs y1), three annotators. "tie" = both texts equally good.
VOTES = {
    "p1": ("y1", "y1", "y1"),   # unanimous: y1
    "p2": ("y1", "y1", "y0"),   # two of three: y1
    "p3": ("y0", "y0", "y0"),   # unanimous: y0
    "p4": ("y0", "y1", "tie"),  # three different labels: no majority
}
# Fleiss' kappa by hand over categories (y0, y1, tie), n = 3 ratings per pair:
#   counts p1 (0,3,0) p2 (1,2,0) p3 (3,0,0) p4 (1,1,1)
#   P_i = sum n_ij (n_ij - 1) / (3 * 2): 1, 1/3, 1, 0  -> P-bar = 7/12
#   p_j: y0 5/12, y1 6/12, tie 1/12 -> P_e = (25 + 36 + 1) / 144 = 31/72
#   kappa = (7/12 - 31/72) / (1 - 31/72) = (11/72) / (41/72) = 11/41
KAPPA = Fraction(11, 41)


def _score_lines(votes: dict[str, str], reverse: bool = False) -> str:
    lines = []
    for group, winner in votes.items():
        candidates = ("y1", "y0") if reverse else ("y0", "y1")  # the order lines come in must not matter
        for c in candidates:
            score = 0.5 if winner == "tie" else float(winner == c)
            lines.append(json.dumps({"group": group, "candidate": c, "score": score, "stage": "controls"}))
    return "\n".join(lines) + "\n"


def _record_lines(votes: dict[str, str], annotator: str | None) -> str:
    # The viewer's stored record form; old records have no annotator field.
    return "".join(json.dumps({"pair": g, "stage": "controls", "kind": "revision", "candidates": ["y0", "y1"],
                               "left": "y0", "right": "y1", "label": "A", "winner": w,
                               **({"annotator": annotator} if annotator else {})}) + "\n"
                   for g, w in votes.items())


def _three_files(tmp_path: Path, votes=VOTES) -> list[Path]:
    a, b, c = tmp_path / "alice.jsonl", tmp_path / "bob.jsonl", tmp_path / "carol.jsonl"
    a.write_text(_score_lines({g: v[0] for g, v in votes.items()}))
    b.write_text(_score_lines({g: v[1] for g, v in votes.items()}, reverse=True))
    c.write_text(_record_lines({g: v[2] for g, v in votes.items()}, annotator="carol"))
    return [a, b, c]


def test_three_annotators_majority_no_majority_and_hand_computed_kappa(tmp_path):
    result = merge_files(_three_files(tmp_path), n_boot=500)
    assert result.annotators == ["alice", "bob", "carol"]
    winners = {i.group: i.winner for i in result.items}
    assert winners == {"p1": "y1", "p2": "y1", "p3": "y0", "p4": None}
    assert result.no_majority == ["p4"]
    assert result.counts == {"first": 1, "second": 2, "tie": 0, "no_majority": 1}  # first = y0, as listed
    assert result.items[1].votes == {"alice": "y1", "bob": "y1", "carol": "y0"}
    agreement = result.agreement
    assert agreement.kappa == pytest.approx(float(KAPPA), abs=1e-12)
    assert agreement.observed == pytest.approx(7 / 12, abs=1e-12)
    assert (agreement.n_items, agreement.n_annotators) == (4, 3)
    lo, hi = agreement.ci
    assert -1 <= lo <= hi <= 1 and lo < hi
    again = merge_files(_three_files(tmp_path), n_boot=500)
    assert again.agreement.ci == agreement.ci  # seeded: the same labels, the same interval
    assert result.n_partial == 0 and result.note is None


def test_fleiss_kappa_matches_the_worked_example():
    # The worked example of Fleiss' kappa on Wikipedia (10 subjects, 14 raters, 5 categories):
    # P-bar = 0.378, P_e = 0.213, kappa = 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=5e-5)
    assert fleiss_kappa([[3, 0, 0], [3, 0, 0]]) is None  # every label one category: kappa is 0/0


def test_written_files_feed_eval_agreement(tmp_path):
    result = merge_files(_three_files(tmp_path), n_boot=0)
    assert result.agreement.ci is None
    paths = write_merge(result, tmp_path / "out")
    majority = [json.loads(line) for line in Path(paths["majority"]).read_text().splitlines()]
    assert [(m["group"], m["winner"]) for m in majority] == [("p1", "y1"), ("p2", "y1"), ("p3", "y0"), ("p4", None)]
    assert majority[0]["stage"] == "controls"
    human = [json.loads(line) for line in Path(paths["human"]).read_text().splitlines()]
    assert {(h["group"], h["candidate"]): h["score"] for h in human} == {
        ("p1", "y0"): 0.0, ("p1", "y1"): 1.0, ("p2", "y0"): 0.0, ("p2", "y1"): 1.0,
        ("p3", "y0"): 1.0, ("p3", "y1"): 0.0}  # p4, no majority, is left out
    # The majority labels read back as one annotator's labels.
    assert {g: lab.winner for g, lab in read_annotator_file(paths["human"]).labels.items()} == \
        {"p1": "y1", "p2": "y1", "p3": "y0"}


def test_pairs_not_everyone_labelled_are_left_out_and_counted(tmp_path):
    a, b, c = _three_files(tmp_path)
    c.write_text(_record_lines({"p1": "y1", "p2": "y0", "p3": "y0"}, annotator="carol"))  # carol skipped p4
    a.write_text(a.read_text() + _score_lines({"p5": "tie"}))  # only alice saw p5
    result = merge_files([a, b, c], n_boot=0)
    assert [i.group for i in result.items] == ["p1", "p2", "p3"]
    assert result.n_partial == 2 and result.missing == {"alice": 0, "bob": 1, "carol": 2}
    assert "2 of 5 pairs are not labelled by every annotator" in result.note
    assert "merged over the 3 pairs all 3 labelled" in result.note
    assert result.agreement.n_items == 3


def test_errors_name_the_problem(tmp_path):
    a, b, c = _three_files(tmp_path)
    with pytest.raises(DataError, match=r"annotator file .*nobody\.jsonl does not exist"):
        merge_files([a, b, tmp_path / "nobody.jsonl"])
    with pytest.raises(DataError, match="at least two annotators.*got 1"):
        merge_files([a])
    other = tmp_path / "other.jsonl"
    other.write_text(_score_lines({"q1": "y0", "q2": "y1"}))
    with pytest.raises(DataError, match="no pair is labelled by all 2 annotators.*alice: 4, other: 2"):
        merge_files([a, other])
    three = tmp_path / "three.jsonl"
    three.write_text(_score_lines({"p1": "y0"}) + json.dumps({"group": "p1", "candidate": "y2", "score": 0}) + "\n")
    with pytest.raises(DataError, match=r"pair 'p1' has 3 candidate\(s\)"):
        read_annotator_file(three)
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(a.read_text().replace('"y0"', '"z0"'))
    with pytest.raises(DataError, match=r"pair 'p1' has candidates \['y0', 'y1'\] for alice but"):
        merge_files([a, renamed])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"group": "p1", "candidate": "y0", "score": "high"}) + "\n")
    with pytest.raises(DataError, match="line 1: score must be a number"):
        read_annotator_file(bad)
    two = tmp_path / "two.jsonl"
    two.write_text(_record_lines({"p1": "y0"}, "alice") + _record_lines({"p2": "y0"}, "bob"))
    with pytest.raises(DataError, match="several annotators .alice, bob.: give one file per annotator"):
        read_annotator_file(two)
    with pytest.raises(DataError, match="given twice"):
        read_annotator_files([a, a])


def test_old_viewer_records_are_the_default_annotator(tmp_path):
    old = tmp_path / "records.jsonl"
    old.write_text(_record_lines({"p1": "y1"}, annotator=None))
    assert read_annotator_file(old).name == "annotator1"
    # Two files of one stem are told apart by their paths.
    (tmp_path / "x").mkdir(), (tmp_path / "y").mkdir()
    for folder in ("x", "y"):
        (tmp_path / folder / "human.jsonl").write_text(_score_lines({"p1": "y1"}))
    names = [a.name for a in read_annotator_files([tmp_path / "x" / "human.jsonl", tmp_path / "y" / "human.jsonl"])]
    assert names == [str(tmp_path / "x" / "human.jsonl"), str(tmp_path / "y" / "human.jsonl")]


def test_majority_needs_more_than_half_of_the_annotators():
    from coevo.eval.annotators import AnnotatorLabels, Label

    def annotator(name, winner):
        return AnnotatorLabels(name, name, {"p": Label(("y0", "y1"), winner)})

    two_two = [annotator("a", "y0"), annotator("b", "y0"), annotator("c", "y1"), annotator("d", "y1")]
    assert merge_annotators(two_two, n_boot=0).items[0].winner is None  # 2 of 4 is no majority
    three_one = [annotator("a", "y0"), annotator("b", "y0"), annotator("c", "y0"), annotator("d", "tie")]
    assert merge_annotators(three_one, n_boot=0).items[0].winner == "y0"


# ─── the command ────────────────────────────────────────────────────────────────────


def coevo(*args):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COEVO_QUIET": "1"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_eval_annotations_merges_three_annotators_files(tmp_path):
    files = _three_files(tmp_path)
    proc = coevo("eval", "annotations", *files, "--json", "--out", tmp_path / "merged")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["counts"] == {"first": 1, "second": 2, "tie": 0, "no_majority": 1}
    assert report["no_majority"] == ["p4"]
    assert report["agreement"]["kappa"] == pytest.approx(float(KAPPA), abs=1e-12)
    assert report["agreement"]["n_items"] == 4 and report["agreement"]["n_annotators"] == 3
    assert Path(report["majority"]).is_file() and Path(report["human"]).is_file()

    proc = coevo("eval", "annotations", *files)  # no --out: printed only
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "majority vote" in text and "no majority: p4" in text
    assert "first 1, second 2, tie 0, no majority 1" in text
    assert f"Fleiss' kappa {float(KAPPA):.3f}, 95% CI [" in text and "n = 4 pairs x 3 annotators" in text
    p2 = next(line for line in text.splitlines() if "p2" in line)
    assert p2.count("y1") == 3 and p2.count("y0") == 1  # alice y1, bob y1, carol y0; majority y1


def test_eval_annotations_errors_name_the_problem(tmp_path):
    a, b, c = _three_files(tmp_path)
    proc = coevo("eval", "annotations", a, b, tmp_path / "missing.jsonl")
    assert proc.returncode == 2 and "missing.jsonl does not exist" in proc.stderr
    proc = coevo("eval", "annotations", a)
    assert proc.returncode == 2 and "at least two annotators" in proc.stderr
    proc = coevo("eval", "annotations", a, b, "--stage", "controls")
    assert proc.returncode == 2 and "--stage picks a run's labels" in proc.stderr
    proc = coevo("eval", "annotations", tmp_path, a)
    assert proc.returncode == 2 and "not both" in proc.stderr
