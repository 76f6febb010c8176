"""Pairwise human annotation in the viewer: pairs with the judge hidden, labels saved as they
are made, resumable, and exported into `coevo eval agreement` (one round trip, end to end).

The run is a real replay run of `coevo run` (controls, gold-rubric judge; replay_runs.py),
built for this module so labels never land in the run other tests look at. The expected
agreement is worked out here from the judge's scores in the store, not by the export code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from replay_runs import build_controls

from coevo.store import RunStore
from coevo.view.annotate import (
    KIND,
    export_annotations,
    queue,
    shown_order,
    stage_pairs,
)
from coevo.view.app import create_app

STAGE = "controls"


@pytest.fixture(scope="module")
def controls(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("annotate")
    return build_controls(folder / "runs" / "controls", folder / "inputs")


def _client(run: Path) -> tuple[TestClient, str]:
    """A fresh viewer (a new app each time: what it shows comes from the store, not memory)."""
    app = create_app([run.parent])
    [ref] = app.state.runs.runs()
    return TestClient(app), ref.id


def _rows(run: Path) -> list[dict]:
    store = RunStore(run, read_only=True)
    try:
        return store.rollout_rows(STAGE)
    finally:
        store.close()


def _shown(page: str) -> dict[str, str]:
    """The pair on a page: its key, which candidate is left, the two texts, the progress."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))
    progress = re.search(r'id="annotate-progress" data-labelled="(\d+)" data-total="(\d+)"', page)
    left = re.search(r'<pre id="pair-left">(.*?)</pre>', page, re.DOTALL)
    right = re.search(r'<pre id="pair-right">(.*?)</pre>', page, re.DOTALL)
    return {**fields, "labelled": int(progress.group(1)), "total": int(progress.group(2)),
            "left_text": left.group(1) if left else None, "right_text": right.group(1) if right else None}


def _coevo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from coevo.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_stages_list_their_pairs_and_a_pair_hides_the_judge(controls):
    client, run_id = _client(controls)
    rows = _rows(controls)
    page = client.get(f"/runs/{run_id}/annotate").text
    assert "<h1>Annotate</h1>" in page and 'id="annotate-stages"' in page
    revisions = sum(bool(r["rollout"].y1) for r in rows)
    table = {(stage, kind): int(n) for stage, kind, n in re.findall(
        r'<tr data-stage="([^"]+)" data-kind="(\w+)">\s*<td class="l">[^<]*</td>\s*<td class="l">[^<]*</td>\s*<td>(\d+)</td>',
        page)}
    assert table[(STAGE, "revision")] == revisions == 12
    # Critiques of one response: the controls' generic, shuffled and matched critiques of
    # each sample's y0 (the `none` condition has none) make 3 pairs per sample.
    responses = {(r["rollout"].x, r["rollout"].y0) for r in rows}
    assert table[(STAGE, "critique")] == 3 * len(responses)

    pair = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    for element in ("label-A", "label-B", "label-tie", "label-form", "pair-left", "pair-right", "pair-x"):
        assert f'id="{element}"' in pair, element
    assert 'keys = {a: "label-A", b: "label-B", t: "label-tie"}' in pair  # the keyboard shortcuts
    shown = _shown(pair)
    assert shown["labelled"] == 0 and shown["total"] == 12
    [rollout] = [r["rollout"] for r in rows if f"{STAGE}|revision|{r['id']}" == shown["pair"]]
    import html

    assert {html.unescape(shown["left_text"]), html.unescape(shown["right_text"])} == {rollout.y0, rollout.y1}
    # Nothing of the judges: no scores' reasons, no condition name, no critique.
    for judgment in rollout.judgments.values():
        for reason in judgment.reasons.values():
            assert html.escape(reason) not in pair
    visible = re.sub(r"<[^>]+>", " ", pair.split("<main>")[1].split("</main>")[0])
    assert not re.search(rf"\b{rollout.condition}\b", visible)


def test_sides_are_shuffled_by_a_seed(controls):
    pairs = stage_pairs(_rows(controls), STAGE)["revision"]
    sides = [shown_order(p, 0)[0] for p in pairs]
    assert {"y0", "y1"} == set(sides)  # y1 is not always on one side
    assert sides == [shown_order(p, 0)[0] for p in pairs]  # and the same on every visit
    assert [shown_order(p, 1)[0] for p in pairs] != sides  # another seed, another order
    assert [p.key for p in queue(pairs, 0)] != [p.key for p in pairs]  # pairs come shuffled too


def _judge_pick(run: Path, key: str) -> tuple[float | None, float | None]:
    """S(y0), S(y1) of a revision pair from the store's gold-rubric judgments (None: unreadable)."""
    rid = int(key.rsplit("|", 1)[1])
    [row] = [r for r in _rows(run) if r["id"] == rid]
    y0, y1 = row["rollout"].judgments["gold_rubric_y0"], row["rollout"].judgments["gold_rubric"]
    return (y0.score if y0.valid else None), (y1.score if y1.valid else None)


def test_labels_are_saved_resumed_exported_and_compared_with_the_judge(controls, tmp_path):
    client, run_id = _client(controls)
    expected = {"n_pairs": 0, "n_agree": 0, "n_tied": 0, "invalid_b": 0}
    labelled: list[str] = []
    valid = 0  # pairs the judge scored both sides of, so far
    for i in range(12):
        if i == 4:  # leave and come back: a new viewer resumes where the labels stop
            client, run_id = _client(controls)
        shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text)
        assert shown["labelled"] == i and shown["pair"] not in labelled
        s0, s1 = _judge_pick(controls, shown["pair"])
        if s0 is None or s1 is None:
            label = "A"
            expected["invalid_b"] += (s0 is None) + (s1 is None)
        elif s0 == s1:  # the judge tied them: the pair says nothing about agreement
            label = "A"
            expected["n_tied"] += 1
        elif valid % 4 == 3:
            label = "tie"
            expected["n_tied"] += 1
            valid += 1
        else:
            judge_prefers = "y1" if s1 > s0 else "y0"
            agree = valid % 3 != 2
            valid += 1
            wanted = judge_prefers if agree else ("y0" if judge_prefers == "y1" else "y1")
            label = "A" if shown["left"] == wanted else "B"
            expected["n_pairs"] += 1
            expected["n_agree"] += agree
        answer = client.post(f"/runs/{run_id}/annotate/label", follow_redirects=False,
                             data={k: shown[k] for k in ("stage", "kind", "pair", "left", "seed")} | {"label": label})
        assert answer.status_code == 303 and answer.headers["location"].endswith(f"stage={STAGE}&kind=revision")
        labelled.append(shown["pair"])
    assert expected["invalid_b"] > 0 and expected["n_tied"] > 0 and 0 < expected["n_agree"] < expected["n_pairs"]
    done = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    assert 'id="annotate-done"' in done and _shown(done)["labelled"] == 12
    assert 'id="export-human"' in done and "coevo eval agreement --a" in done

    store = RunStore(controls, read_only=True)
    records = dict(store.get_records(KIND))
    store.close()
    assert sorted(records) == sorted(labelled)
    assert all(r["winner"] in ("y0", "y1", "tie") and r["left"] in ("y0", "y1") for r in records.values())

    # The export over HTTP and by the CLI are the same lines.
    human = client.get(f"/runs/{run_id}/annotate/export?stage={STAGE}&file=human")
    assert human.status_code == 200 and "attachment" in human.headers["content-disposition"]
    out = tmp_path / "labels"
    result = _coevo("eval", "annotations", str(controls), "--out", str(out), "--stage", STAGE)
    assert result.returncode == 0, result.stderr
    assert f"coevo eval agreement --a {out / 'human.jsonl'} --b {out / 'judge.jsonl'}" in result.stdout
    assert (out / "human.jsonl").read_text() == human.text
    assert len(human.text.splitlines()) == 24  # two candidates per labelled pair
    judge_lines = [json.loads(line) for line in (out / "judge.jsonl").read_text().splitlines()]
    assert {line["judge"] for line in judge_lines} == {"gold_rubric"}

    report = _coevo("eval", "agreement", "--a", str(out / "human.jsonl"), "--b", str(out / "judge.jsonl"), "--json")
    assert report.returncode == 0, report.stderr
    agreement = json.loads(report.stdout)
    for key, value in expected.items():
        assert agreement[key] == value, (key, agreement, expected)
    assert agreement["agreement"] == pytest.approx(expected["n_agree"] / expected["n_pairs"])


def test_critique_pairs_export_each_critiques_judge_score(controls, tmp_path):
    client, run_id = _client(controls)
    rows = {r["id"]: r["rollout"] for r in _rows(controls)}
    for _ in range(3):
        shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=critique").text)
        ra, rb = (int(x) for x in shown["pair"].rsplit("|", 1)[1].split("-"))
        assert rows[ra].y0 == rows[rb].y0 and rows[ra].c != rows[rb].c  # two critiques of one response
        assert 'id="pair-context"' in client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=critique").text
        answer = client.post(f"/runs/{run_id}/annotate/label", headers={"content-type": "application/json"},
                             content=json.dumps({k: shown[k] for k in ("stage", "kind", "pair", "left", "seed")}
                                                | {"label": "B"}))
        assert answer.status_code == 200 and answer.json()["saved"]["winner"] != shown["left"]
    result = export_annotations(controls, tmp_path / "out", stage=STAGE)
    lines = [json.loads(line) for line in Path(result["judge"]).read_text().splitlines()]
    critique_lines = [line for line in lines if "|critique|" in line["group"]]
    assert len(critique_lines) == 6
    for line in critique_lines:
        judgment = rows[int(line["candidate"][1:])].judgments["gold_rubric"]  # S(y1) the critique led to
        assert line["score"] == (judgment.score if judgment.valid else None)


def test_bad_labels_are_refused_and_a_second_label_replaces_the_first(controls):
    client, run_id = _client(controls)
    url = f"/runs/{run_id}/annotate/label"
    pairs = stage_pairs(_rows(controls), STAGE)["revision"]
    pair = pairs[0]
    form = {"stage": STAGE, "kind": "revision", "pair": pair.key, "left": "y0", "seed": "0"}
    assert client.post(url, data=form | {"label": "C"}).status_code == 400
    assert client.post(url, data=form | {"label": "A", "left": "y9"}).status_code == 400
    assert client.post(url, data=form | {"label": "A", "pair": "controls|revision|999"}).status_code == 404
    assert client.post(url, data={"stage": STAGE, "label": "A"}).status_code == 400
    assert client.post(url, data=form | {"label": "A", "stage": "nope"}).status_code == 404
    for label, winner in (("A", "y0"), ("B", "y1")):
        assert client.post(url, data=form | {"label": label}, follow_redirects=False).status_code == 303
        store = RunStore(controls, read_only=True)
        saved = [r for key, r in store.get_records(KIND) if key == pair.key]
        store.close()
        assert [r["winner"] for r in saved] == [winner]


def test_nothing_to_export_says_where_to_label(tmp_path):
    run = build_controls(tmp_path / "runs" / "fresh", tmp_path / "inputs")
    client, run_id = _client(run)
    assert client.get(f"/runs/{run_id}/annotate/export?file=human").status_code == 404
    result = _coevo("eval", "annotations", str(run), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "holds no annotation" in result.stderr and "coevo view" in result.stderr
    assert not (tmp_path / "out" / "human.jsonl").exists()


def test_judge_scores_of_pairwise_verdicts_and_grpo_groups(tmp_path):
    from coevo.types import Judgment, Rollout

    store = RunStore(tmp_path / "tai")
    pairwise = {"pairwise": Judgment(judge="pairwise", score=1.0, scores={"preference": 1.0},
                                     shown_order=["second", "first"], winner="second")}
    store.save_rollout("t/round1/pool0", Rollout(sample_id="p", x="x", y0="old", c="c", y1="new", judgments=pairwise))
    store.save_rollout("t/round1/pool0", Rollout(sample_id="q", x="x2", y0="old2", c="c", y1="new2", judgments={
        "pairwise": Judgment(judge="pairwise", valid=False, raw="??", shown_order=["first", "second"])}))
    for i, reward in enumerate([7.0, 3.0, 0.0]):
        valid = i < 2
        store.save_rollout("t/round1/grpo", Rollout(sample_id=f"s#{i}", x="x", y0="y0", c=f"critique {i}", y1=f"y1 {i}",
                                                    condition="grpo", judgments={"taiscore": Judgment(
                                                        judge="taiscore", valid=valid, score=reward if valid else None,
                                                        reward=reward)}))
    rows = {stage: store.rollout_rows(stage) for stage in ("t/round1/pool0", "t/round1/grpo")}
    store.close()
    pool = stage_pairs(rows["t/round1/pool0"], "t/round1/pool0")
    assert [p.judges for p in pool["revision"]] == [{"pairwise": {"y0": 0.0, "y1": 1.0}},
                                                    {"pairwise": {"y0": None, "y1": None}}]
    assert pool["critique"] == []  # one critique per response: nothing to compare
    grpo = stage_pairs(rows["t/round1/grpo"], "t/round1/grpo")
    assert len(grpo["revision"]) == 3 and len(grpo["critique"]) == 3  # 3 critiques of one y0
    ids = [row["id"] for row in rows["t/round1/grpo"]]
    scores = {}
    for pair in grpo["critique"]:
        scores.update(pair.judges["taiscore"])
    # The reward the critic trained on, an unreadable answer's invalid_reward included.
    assert scores == {f"c{ids[0]}": 7.0, f"c{ids[1]}": 3.0, f"c{ids[2]}": 0.0}


def test_several_annotators_label_under_their_names_and_the_export_merges_them(tmp_path):
    run = build_controls(tmp_path / "runs" / "three", tmp_path / "inputs")
    client, run_id = _client(run)
    url = f"/runs/{run_id}/annotate/label"
    pairs = queue(stage_pairs(_rows(run), STAGE)["revision"])[:3]
    # The first annotator's labels as saved before the viewer recorded names: no annotator field.
    store = RunStore(run)
    for pair in pairs:
        store.put_record(KIND, pair.key, {"pair": pair.key, "stage": STAGE, "kind": "revision",
                                          "candidates": ["y0", "y1"], "rollout_ids": list(pair.rollout_ids),
                                          "left": "y0", "right": "y1", "label": "B", "winner": "y1", "seed": 0})
    store.close()
    # bob: y1, y1, y0; carol: y0, tie, y0 -> majorities y1, y1, y0 (none is "no majority")
    for name, winners in (("bob", ("y1", "y1", "y0")), ("carol", ("y0", "tie", "y0"))):
        page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&annotator={name}").text
        assert _shown(page)["labelled"] == 0 and _shown(page)["annotator"] == name  # each their own progress
        for pair, winner in zip(pairs, winners):
            label = {"y0": "A", "y1": "B", "tie": "tie"}[winner]
            form = {"stage": STAGE, "kind": "revision", "pair": pair.key, "left": "y0", "seed": "0",
                    "label": label, "annotator": name}
            answer = client.post(url, data=form, follow_redirects=False)
            assert answer.status_code == 303 and f"annotator={name}" in answer.headers["location"]
        page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&annotator={name}").text
        assert _shown(page)["labelled"] == 3
    assert _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text)["labelled"] == 3
    overview = client.get(f"/runs/{run_id}/annotate").text
    assert 'id="annotator-form"' in overview and "annotator1 (3), bob (3), carol (3)" in overview
    bad = {"stage": STAGE, "kind": "revision", "pair": pairs[0].key, "left": "y0", "label": "A", "annotator": "a b"}
    assert client.post(url, data=bad).status_code == 400

    result = export_annotations(run, tmp_path / "out", stage=STAGE)
    assert set(result["annotators"]) == {"annotator1", "bob", "carol"}
    merge = result["merge"]
    assert merge["n_items"] == 3 and merge["counts"]["no_majority"] == 0
    # By hand: (y0, y1, tie) counts (1,2,0) (0,2,1) (2,1,0): P-bar 1/3, P_e 35/81, kappa -4/23.
    assert merge["agreement"]["kappa"] == pytest.approx(-4 / 23, abs=1e-12)
    majority = {m["group"]: m["winner"] for m in map(json.loads, Path(result["majority"]).read_text().splitlines())}
    assert majority == {pairs[0].key: "y1", pairs[1].key: "y1", pairs[2].key: "y0"}
    human = [json.loads(line) for line in Path(result["human"]).read_text().splitlines()]
    assert {(h["group"], h["candidate"]): h["score"] for h in human if h["score"] == 1.0} == {
        (pairs[0].key, "y1"): 1.0, (pairs[1].key, "y1"): 1.0, (pairs[2].key, "y0"): 1.0}
    one = export_annotations(run, tmp_path / "bob", stage=STAGE, annotator="bob")
    assert one["merge"] is None and len(Path(one["human"]).read_text().splitlines()) == 6
    export = client.get(f"/runs/{run_id}/annotate/export?stage={STAGE}&file=human&annotator=carol")
    assert export.status_code == 200 and "human_carol.jsonl" in export.headers["content-disposition"]
    proc = _coevo("eval", "annotations", str(run), "--out", str(tmp_path / "cli"))
    assert proc.returncode == 0, proc.stderr
    assert "Fleiss' kappa" in proc.stdout and "n = 3 pairs x 3 annotators" in proc.stdout
    assert (tmp_path / "cli" / "majority.jsonl").is_file() and (tmp_path / "cli" / "human_bob.jsonl").is_file()
