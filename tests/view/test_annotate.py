"""Pairwise human annotation in the viewer: pairs with the judge hidden, labels saved as they
are made, resumable, and exported into `coevo eval agreement` (one round trip, end to end).

The run is a real replay run of `coevo run` (controls, gold-rubric judge; replay_runs.py),
built for this module so labels never land in the run other tests look at. The expected
agreement is worked out here from the judge's scores in the store, not by the export code.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from replay_runs import build_controls

from coevo.rundir.store import RunStore
from coevo.view.annotate import COOKIE, KIND, SERVED
from coevo.view.annotate_export import export_annotations
from coevo.view.annotate_pairs import queue, stage_pairs, store_pairs
from coevo.view.app import create_app

STAGE = "controls"


@pytest.fixture(scope="module")
def controls(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("annotate")
    return build_controls(folder / "runs" / "controls", folder / "inputs")


def _client(run: Path, annotator: str | None = "annotator1") -> tuple[TestClient, str]:
    """A fresh viewer (a new app each time: what it shows comes from the store, not memory),
    in a browser that remembers `annotator` as its name (None: a browser that never gave one)."""
    app = create_app([run.parent])
    [ref] = app.state.runs.runs()
    client = TestClient(app, headers={"origin": "http://testserver"})  # a browser on the viewer's own page
    if annotator:  # as the viewer sets it, so that an `annotator=` link replaces it
        client.cookies.set(COOKIE, annotator, domain="testserver.local", path="/")
    return client, ref.id


def _rows(run: Path) -> list[dict]:
    store = RunStore(run, read_only=True)
    try:
        return store.rollout_rows(STAGE)
    finally:
        store.close()


def _records(run: Path, kind: str = KIND) -> dict[str, dict]:
    store = RunStore(run, read_only=True)
    try:
        return dict(store.get_records(kind))
    finally:
        store.close()


def _shown(page: str, run: Path | None = None) -> dict:
    """The pair on a page: its opaque id, its token, the two texts, the progress; with `run`,
    also its key and which candidate is on the left, as the server keeps them (the page says
    neither)."""
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', page))
    progress = re.search(r'id="annotate-progress" data-labelled="(\d+)" data-total="(\d+)"', page)
    key = re.search(r'<div class="pair" id="pair" data-pair="([^"]+)">', page)
    left = re.search(r'<pre id="pair-left">(.*?)</pre>', page, re.DOTALL)
    right = re.search(r'<pre id="pair-right">(.*?)</pre>', page, re.DOTALL)
    shown = {**fields, "pair": html.unescape(key.group(1)) if key else None,
             "labelled": int(progress.group(1)), "total": int(progress.group(2)),
             "left_text": html.unescape(left.group(1)) if left else None,
             "right_text": html.unescape(right.group(1)) if right else None}
    if run is not None and "token" in fields:
        serving = _records(run, SERVED)[fields["token"]]
        shown["left"], shown["key"] = serving["left"], serving["pair"]
    return shown


def _stage_rows(page: str) -> dict[tuple[str, str], dict]:
    """The overview's batches as a researcher sees them (`reveal=stages`): (stage, kind) ->
    {"batch": id, "title": what its pairs are, "pairs": n}."""
    return {(stage, kind): {"batch": batch, "title": title, "pairs": int(n)} for batch, kind, stage, title, n in
            re.findall(r'<tr data-batch="([^"]+)" data-kind="(\w+)" data-stage="([^"]+)">\s*<td class="l batch">'
                       r'[^<]*</td>\s*<td class="l stage">[^<]*</td>\s*<td class="l">([^<]*)</td>\s*<td>(\d+)</td>',
                       page)}


def _label(client: TestClient, run_id: str, token: str, label: str, **kwargs):
    return client.post(f"/runs/{run_id}/annotate/label", data={"token": token, "label": label}, **kwargs)


def _coevo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from coevo.cli import main; main()", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_stages_list_their_pairs_and_a_pair_hides_the_judge(controls):
    client, run_id = _client(controls)
    rows = _rows(controls)
    page = client.get(f"/runs/{run_id}/annotate").text
    assert "<h1>Annotate</h1>" in page and 'id="annotate-stages"' in page
    # The stages behind the batches are shown only to a researcher who asks.
    assert "data-stage=" not in page and not re.search(r"<td[^>]*>controls</td>", page)
    table = {key: row["pairs"] for key, row in _stage_rows(client.get(f"/runs/{run_id}/annotate?reveal=stages").text)
             .items()}
    revisions = sum(bool(r["rollout"].y1) for r in rows)
    assert table[(STAGE, "revision")] == revisions == 12
    # Critiques of one response: the controls' generic, shuffled and matched critiques of
    # each sample's y0 (the `none` condition has none) make 3 pairs per sample.
    responses = {(r["rollout"].x, r["rollout"].y0) for r in rows}
    assert table[(STAGE, "critique")] == 3 * len(responses)

    pair = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    for element in ("label-A", "label-B", "label-tie", "label-form", "pair-left", "pair-right", "pair-x"):
        assert f'id="{element}"' in pair, element
    assert 'keys = {a: "label-A", b: "label-B", t: "label-tie"}' in pair  # the keyboard shortcuts
    shown = _shown(pair, controls)
    assert shown["labelled"] == 0 and shown["total"] == 12
    [rollout] = [r["rollout"] for r in rows if f"{STAGE}|revision|{r['id']}" == shown["key"]]
    assert {shown["left_text"], shown["right_text"]} == {rollout.y0, rollout.y1}
    # Nothing of the judges: no scores' reasons, no condition name, no critique.
    for judgment in rollout.judgments.values():
        for reason in judgment.reasons.values():
            assert html.escape(reason) not in pair
    visible = re.sub(r"<[^>]+>", " ", pair.split("<main>")[1].split("</main>")[0])
    assert not re.search(rf"\b{rollout.condition}\b", visible)


def test_sides_are_drawn_once_per_person_and_only_the_server_knows_them(controls):
    """Each pair's sides are drawn when it is first served and kept server-side: the page and
    its source hold an opaque token, never the candidates' names, and a second visit shows
    the same sides under the same token."""
    client, run_id = _client(controls, "sides")
    pairs = stage_pairs(_rows(controls), STAGE)["revision"]
    assert [p.key for p in queue(pairs, 0)] != [p.key for p in pairs]  # pairs come shuffled
    assert [p.key for p in queue(pairs, 1)] != [p.key for p in queue(pairs, 0)]  # another seed, another order
    lefts, tokens = {}, set()
    for pair in pairs:
        # A researcher's link by stage and pair key: redirected to the pair's opaque url.
        answer = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&pair={quote(pair.key)}")
        url, page = str(answer.url), answer.text
        assert "pair=p-" in url and "batch=b-" in url and STAGE not in url.split("?")[1] and "%7C" not in url
        source = page.split("<main>")[1].split("</main>")[0] + page.split("</main>")[1]
        # No side's name anywhere in what the browser gets: not y0 / y1, no `left=` field.
        assert not re.search(r"\by[01]\b", source), re.findall(r".{40}\by[01]\b.{40}", source)
        assert "left=" not in source and 'name="left"' not in source and 'name="token"' in source
        shown = _shown(page, controls)
        assert shown["key"] == pair.key and {shown["left_text"], shown["right_text"]} == set(pair.texts)
        assert pair.key not in source and shown["pair"].startswith("p-")  # the page names the pair by its id
        assert shown["left_text"] == pair.text_of(shown["left"])  # the server's record is what was shown
        again = _shown(client.get(url).text, controls)
        assert (again["token"], again["left_text"]) == (shown["token"], shown["left_text"])  # kept, not redrawn
        lefts[pair.key] = shown["left"]
        tokens.add(shown["token"])
        assert pair.key not in shown["token"] and len(shown["token"]) >= 20  # opaque, unguessable
    assert set(lefts.values()) == {"y0", "y1"}  # the revision is not always on one side
    assert len(tokens) == len(pairs)
    # Another person gets their own draw under their own tokens.
    other, _ = _client(controls, "sides2")
    theirs = _shown(other.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&pair={quote(pairs[0].key)}").text)
    assert theirs["token"] not in tokens


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
        shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text, controls)
        assert shown["labelled"] == i and shown["key"] not in labelled
        s0, s1 = _judge_pick(controls, shown["key"])
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
        answer = _label(client, run_id, shown["token"], label, follow_redirects=False)
        assert answer.status_code == 303
        assert re.fullmatch(rf"/runs/{run_id}/annotate\?batch=b-[0-9a-f]+&annotator=annotator1",
                            answer.headers["location"])
        labelled.append(shown["key"])
    assert expected["invalid_b"] > 0 and expected["n_tied"] > 0 and 0 < expected["n_agree"] < expected["n_pairs"]
    done = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    assert 'id="annotate-done"' in done and _shown(done)["labelled"] == 12
    # The end of the batch says how these labels agree with the judge, counted here by hand.
    assert f'id="annotate-agreement" data-n="{expected["n_pairs"]}"' in done
    assert f'<strong>{expected["n_agree"]} of {expected["n_pairs"]}</strong>' in done
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
    assert {json.loads(line)["annotator"] for line in human.text.splitlines()} == {"annotator1"}
    judge_lines = [json.loads(line) for line in (out / "judge.jsonl").read_text().splitlines()]
    assert {line["judge"] for line in judge_lines} == {"gold_rubric"}

    report = _coevo("eval", "agreement", "--a", str(out / "human.jsonl"), "--b", str(out / "judge.jsonl"), "--json")
    assert report.returncode == 0, report.stderr
    agreement = json.loads(report.stdout)
    for key, value in expected.items():
        assert agreement[key] == value, (key, agreement, expected)
    assert agreement["agreement"] == pytest.approx(expected["n_agree"] / expected["n_pairs"])
    assert agreement["agreement_lo"] < agreement["agreement"] < agreement["agreement_hi"]
    assert agreement["unmatched_a"] == agreement["unmatched_b"] == 0  # one export: every group matches


def test_critique_pairs_export_each_critiques_judge_score(controls, tmp_path):
    client, run_id = _client(controls)
    rows = {r["id"]: r["rollout"] for r in _rows(controls)}
    for _ in range(3):
        page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=critique").text
        shown = _shown(page, controls)
        ra, rb = (int(x) for x in shown["key"].rsplit("|", 1)[1].split("-"))
        assert rows[ra].y0 == rows[rb].y0 and rows[ra].c != rows[rb].c  # two critiques of one response
        assert 'id="pair-context"' in page and not re.search(rf"\bc({ra}|{rb})\b", page)
        answer = client.post(f"/runs/{run_id}/annotate/label", headers={"content-type": "application/json"},
                             content=json.dumps({"token": shown["token"], "label": "B"}))
        assert answer.status_code == 200 and answer.json()["saved"]["label"] == "B"
        assert "winner" not in answer.json()["saved"]  # the reply names no side either
        assert answer.json()["saved"]["pair"] == shown["pair"]  # nor the pair's key: its id
        assert _records(controls)[shown["key"]]["winner"] not in (shown["left"], "tie")
    result = export_annotations(controls, tmp_path / "out", stage=STAGE)
    lines = [json.loads(line) for line in Path(result["judge"]).read_text().splitlines()]
    critique_lines = [line for line in lines if "|critique|" in line["group"]]
    assert len(critique_lines) == 6
    for line in critique_lines:
        judgment = rows[int(line["candidate"][1:])].judgments["gold_rubric"]  # S(y1) the critique led to
        assert line["score"] == (judgment.score if judgment.valid else None)


def test_a_label_needs_a_token_the_viewer_served(controls):
    client, run_id = _client(controls, "dora")
    url = f"/runs/{run_id}/annotate/label"
    key = stage_pairs(_rows(controls), STAGE)["revision"][0].key
    before = _records(controls)
    # What a script or a stale page could send: the pair's name and a side, but no served token.
    refused = client.post(url, data={"stage": STAGE, "kind": "revision", "pair": key, "left": "y0", "label": "A"})
    assert refused.status_code == 400 and "token" in refused.json()["detail"]
    refused = client.post(url, data={"token": "made-up-token-0123456789", "label": "A"})
    assert refused.status_code == 400
    assert "unknown pair token 'made-up-token-0123456789'" in refused.json()["detail"]
    token = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text)["token"]
    assert client.post(url, data={"token": token, "label": "C"}).status_code == 400
    assert client.post(url, data={"token": token}).status_code == 400
    assert _records(controls) == before  # nothing saved by any of them


def test_a_label_can_be_changed_reviewed_and_undone(controls):
    client, run_id = _client(controls, "erin")
    page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision")
    pair_url = str(page.url)  # the queue redirects to the pair's own url, which Back returns to
    assert "pair=" in pair_url and page.headers["cache-control"] == "no-store"
    shown = _shown(page.text, controls)
    key, right = shown["key"], "y1" if shown["left"] == "y0" else "y0"
    record = f"{key}#annotator=erin"
    assert _label(client, run_id, shown["token"], "B", follow_redirects=False).status_code == 303
    assert _records(controls)[record]["winner"] == right
    # Back to the pair: it says what was chosen, and choosing again replaces the label.
    back = client.get(pair_url).text
    assert re.search(r'id="annotate-current" data-label="B"', back) and _shown(back)["token"] == shown["token"]
    assert _label(client, run_id, shown["token"], "A", follow_redirects=False).status_code == 303
    saved = _records(controls)[record]
    assert (saved["winner"], saved["label"], saved["annotator"]) == (shown["left"], "A", "erin")
    assert [h["winner"] for h in saved["history"]] == [right]  # the earlier label, kept
    assert [k for k in _records(controls) if k.startswith(key)].count(record) == 1

    review = client.get(f"/runs/{run_id}/annotate/review").text
    rows = re.findall(r'<tr data-pair="([^"]+)">(.*?)</tr>', review, re.DOTALL)
    assert [html.unescape(k) for k, _ in rows] == [shown["pair"]] and key not in review
    cells = rows[0][1]
    preferred = re.search(r'<td class="l text choice">(.*?)</td>', cells, re.DOTALL).group(1)
    assert html.unescape(preferred) == shown["left_text"]  # the chosen text itself, not a side name
    assert "(1 earlier)" in cells and not re.search(r"\by[01]\b", cells)
    change = html.unescape(re.search(r'class="review-change" href="([^"]+)"', cells).group(1))
    assert _shown(client.get(change).text)["pair"] == shown["pair"] and "pair=p-" in change

    undone = client.post(f"/runs/{run_id}/annotate/undo", data={"pair": shown["pair"]}, follow_redirects=False)
    assert undone.status_code == 303 and record not in _records(controls)
    assert 'id="review-empty"' in client.get(f"/runs/{run_id}/annotate/review").text
    assert client.post(f"/runs/{run_id}/annotate/undo", data={"pair": shown["pair"]}).status_code == 404
    first = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text)
    assert first["pair"] == shown["pair"] and first["labelled"] == 0  # unlabelled again: it is first in the queue again


def test_the_name_is_asked_once_and_kept_with_every_label(controls):
    client, run_id = _client(controls, annotator=None)
    asked = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    assert 'id="annotate-ask"' in asked and 'id="label-form"' not in asked
    assert 'name="annotator"' in asked and 'name="batch" value="b-' in asked  # back to this batch after
    named = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&annotator=frank")
    assert named.cookies.get(COOKIE) == "frank" or client.cookies.get(COOKIE) == "frank"
    # From now on this browser is frank's without saying so.
    shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text, controls)
    assert _label(client, run_id, shown["token"], "tie").status_code == 200
    assert _records(controls)[f"{shown['key']}#annotator=frank"]["annotator"] == "frank"
    assert "as frank" in client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    assert client.get(f"/runs/{run_id}/annotate?annotator=a%20b").status_code == 400


def test_nothing_to_export_says_where_to_label(tmp_path):
    run = build_controls(tmp_path / "runs" / "fresh", tmp_path / "inputs")
    client, run_id = _client(run)
    assert client.get(f"/runs/{run_id}/annotate/export?file=human").status_code == 404
    result = _coevo("eval", "annotations", str(run), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "holds no annotation" in result.stderr and "coevo view" in result.stderr
    assert not (tmp_path / "out" / "human.jsonl").exists()


def test_judge_scores_of_pairwise_verdicts_and_grpo_groups(tmp_path):
    from coevo.core.types import Judgment, Rollout

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
        assert _shown(page)["labelled"] == 0 and f"as {name}" in page  # each their own progress
        for pair, winner in zip(pairs, winners):
            shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&pair={quote(pair.key)}"
                                      f"&annotator={name}").text, run)
            label = "tie" if winner == "tie" else "A" if shown["left"] == winner else "B"
            answer = client.post(url, data={"token": shown["token"], "label": label}, follow_redirects=False)
            assert answer.status_code == 303 and f"annotator={name}" in answer.headers["location"]
        page = client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision&annotator={name}").text
        assert _shown(page)["labelled"] == 3
    # This browser is carol's now (the last name given); annotator1's progress is its own.
    assert _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text)["labelled"] == 3
    first = _client(run)[0].get(f"/runs/{run_id}/annotate?stage={STAGE}&kind=revision").text
    assert _shown(first)["labelled"] == 3 and "as annotator1" in first
    overview = client.get(f"/runs/{run_id}/annotate").text
    assert 'id="annotator-form"' in overview and "annotator1 (3), bob (3), carol (3)" in overview

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
    for name in ("bob", "carol"):  # each one's file names who made its labels, for a later merge
        lines = [json.loads(line) for line in (tmp_path / "cli" / f"human_{name}.jsonl").read_text().splitlines()]
        assert {line["annotator"] for line in lines} == {name}


def test_an_export_replaces_its_folder_and_never_takes_other_files(tmp_path):
    run = build_controls(tmp_path / "runs" / "two", tmp_path / "inputs")
    client, run_id = _client(run, "gina")
    for kind in ("revision", "critique"):
        shown = _shown(client.get(f"/runs/{run_id}/annotate?stage={STAGE}&kind={kind}").text)
        assert _label(client, run_id, shown["token"], "A").status_code == 200
    out = tmp_path / "labels"
    first = _coevo("eval", "annotations", str(run), "--out", str(out), "--json")
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in out.iterdir()) == ["human.jsonl", "judge.jsonl"]
    (out / "judge_stale.jsonl").write_text("{}\n")  # what an earlier export (another stage, more judges) left
    (out / "human_old.jsonl").write_text("{}\n")
    again = _coevo("eval", "annotations", str(run), "--out", str(out), "--stage", STAGE)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in out.iterdir()) == ["human.jsonl", "judge.jsonl"]  # nothing stale beside them
    assert len((out / "human.jsonl").read_text().splitlines()) == 4
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".labels.")]  # no temp folder left behind

    (out / "notes.md").write_text("my notes")
    refused = _coevo("eval", "annotations", str(run), "--out", str(out), "--stage", STAGE)
    assert refused.returncode == 2 and str(out) in refused.stderr and "notes.md" in refused.stderr
    assert (out / "notes.md").read_text() == "my notes" and (out / "human.jsonl").is_file()


def test_the_pairs_behind_win_rate_vs_round0_can_be_labelled(tmp_path):
    """A TAIScore run's evaluation stages: round R's answers against round 0's for the same
    prompts, judged in both shown orders; their pairs are offered (the last round's marked as
    the headline's), and the export's judge lines are the averaged both-orders preference."""
    from coevo.core.types import Judgment, Rollout

    run = tmp_path / "runs" / "tai"
    store = RunStore(run)
    store.set_meta("algorithm", "taiscore")
    prompts = {"p0": "Name a river.", "p1": "Name a stone.", "p2": "Name a wind."}
    for sid, x in prompts.items():
        store.save_rollout("taiscore/round0/eval", Rollout(sample_id=sid, x=x, y0=f"round-0 answer to {x}",
                                                           condition="taiscore"), round=0)

    def verdicts(p: float | None, q: float | None) -> dict[str, Judgment]:
        def one(score):
            return Judgment(judge="pairwise", score=score, valid=score is not None, shown_order=["round0", "current"])
        return {"pairwise_vs_round0": one(p), "pairwise_vs_round0_swapped": one(q)}

    both = {1: {"p0": (1.0, 0.0), "p1": (1.0, 1.0), "p2": (0.0, None)},
            2: {"p0": (1.0, 1.0), "p1": (0.5, 0.0), "p2": (0.0, 0.0)}}
    for r, by_sample in both.items():
        for sid, (p, q) in by_sample.items():
            store.save_rollout(f"taiscore/round{r}/eval", Rollout(
                sample_id=sid, x=prompts[sid], y0=f"round-{r} answer to {prompts[sid]}", condition="taiscore",
                judgments=verdicts(p, q)), round=r)
    store.close()

    client, run_id = _client(run, "hal")
    overview = client.get(f"/runs/{run_id}/annotate?reveal=stages").text
    rows = {stage: row for (stage, kind), row in _stage_rows(overview).items() if kind == "vs_round0"}
    assert set(rows) == {"taiscore/round1/eval", "taiscore/round2/eval"}  # round 0 is not compared with itself
    assert "headline" in rows["taiscore/round2/eval"]["title"] and "headline" not in rows["taiscore/round1/eval"]["title"]
    link = re.search(r'id="headline-pairs-1">.*?<a href="([^"]+)"', overview, re.DOTALL)
    assert html.unescape(link.group(1)).endswith(f"batch={rows['taiscore/round2/eval']['batch']}")
    assert "round2" not in client.get(f"/runs/{run_id}/annotate").text.split("<main>")[1]  # unasked: ids only

    labelled = {}
    for _ in range(3):
        page = client.get(html.unescape(link.group(1))).text
        shown = _shown(page, run)
        x = html.unescape(re.search(r'<pre id="pair-x">(.*?)</pre>', page).group(1))
        assert {shown["left_text"], shown["right_text"]} == {f"round-0 answer to {x}", f"round-2 answer to {x}"}
        above = page.split("<main>")[1].split('<div class="pair"')[0]
        above = above.replace("taiscore/round2/eval", "").replace("win_rate_vs_round0", "")
        assert not re.search(r"round[02]\b", above)  # nothing but the texts says which is which round's
        label = "A" if shown["left"] == "round2" else "B"  # this person always prefers the later round
        assert _label(client, run_id, shown["token"], label).status_code == 200
        labelled[shown["key"]] = shown
    result = export_annotations(run, tmp_path / "out", stage="taiscore/round2/eval")
    assert result["judge_name"] == "pairwise_vs_round0"
    judge = {(j["group"], j["candidate"]): j["score"]
             for j in map(json.loads, Path(result["judge"]).read_text().splitlines())}
    # The averaged both-orders preference for round 2's answer: p0 1.0, p1 0.25, p2 0.0.
    expected = {"p0": 1.0, "p1": 0.25, "p2": 0.0}
    reader = RunStore(run, read_only=True)
    sample_of = {r["id"]: r["rollout"].sample_id for r in reader.rollout_rows("taiscore/round2/eval")}
    assert len(labelled) == 3
    for key in labelled:
        sid = sample_of[int(key.rsplit("|", 1)[1].split("-")[0])]
        assert judge[(key, "round2")] == expected[sid] and judge[(key, "round0")] == 1.0 - expected[sid]
    human = {(h["group"], h["candidate"]): h["score"]
             for h in map(json.loads, Path(result["human"]).read_text().splitlines())}
    assert all(human[(key, "round2")] == 1.0 for key in labelled)
    # Round 1's p2 has an unreadable verdict: no judge score, as win_rate_vs_round0 leaves it out.
    round1 = {reader.rollout_row(p.rollout_ids[0])["rollout"].sample_id: p.judges["pairwise_vs_round0"]
              for p in store_pairs(reader, "taiscore/round1/eval")["vs_round0"]}
    reader.close()
    assert round1 == {"p0": {"round0": 0.5, "round1": 0.5}, "p1": {"round0": 0.0, "round1": 1.0},
                      "p2": {"round0": None, "round1": None}}
