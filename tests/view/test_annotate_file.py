"""`coevo annotate FILE.jsonl`: any two systems' outputs (here two checkpoints' completions)
imported into an annotation folder, served blind by the run's annotation pages, labelled
through FastAPI's TestClient as a browser posts them, and exported by `coevo eval annotations`
exactly as a run's labels are. Malformed rows end in one line naming the line and the fix; a
second import of the same FILE keeps the labels."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from test_annotate import _label, _shown

from coevo import cli
from coevo.rundir.store import RunStore
from coevo.tasks.errors import DataError
from coevo.view.annotate import COOKIE
from coevo.view.annotate_conditions import run_comparisons
from coevo.view.annotate_file import ALGORITHM, FILE_META, file_spec, import_file, read_rows, stage_of
from coevo.view.app import create_app

NAMES = ("step500", "step1000")
PROMPTS = [f"Write one line about topic {i}." for i in range(4)]


def _rows(n: int = 4) -> list[dict]:
    # Each text says which checkpoint wrote it, so a test can tell the sides apart.
    return [{"prompt": PROMPTS[i], "a": f"early answer {i}", "b": f"late answer {i}"} for i in range(n)]


def _write(path: Path, rows: list) -> Path:
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
    return path


def _client(folder: Path, annotator: str) -> tuple[TestClient, str]:
    app = create_app([folder])
    [ref] = app.state.runs.runs()
    client = TestClient(app)
    client.cookies.set(COOKIE, annotator, domain="testserver.local", path="/")
    return client, ref.id


def _batch(client: TestClient, run_id: str) -> str:
    page = client.get(f"/runs/{run_id}/annotate").text
    batches = re.findall(r'<tr data-batch="([^"]+)"', page)
    assert len(batches) == 1, page  # one comparison: the two systems
    return batches[0]


def _label_pairs(folder: Path, annotator: str, labels: list[str]) -> list[dict]:
    """Label the next pairs as `annotator` with `labels` (A, B or tie); each pair as shown."""
    client, run_id = _client(folder, annotator)
    batch = _batch(client, run_id)
    done = []
    for label in labels:
        shown = _shown(client.get(f"/runs/{run_id}/annotate?batch={batch}").text, folder)
        assert _label(client, run_id, shown["token"], label).status_code == 200
        done.append({**shown, "label": label})
    return done


def _cli(monkeypatch, capsys, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["coevo", *argv])
    monkeypatch.setenv("COEVO_QUIET", "1")
    with pytest.raises(SystemExit) as ended:
        cli.main()
    captured = capsys.readouterr()
    return ended.value.code, captured.out, captured.err


def test_rows_become_two_systems_served_blind_in_a_random_order(tmp_path):
    file = _write(tmp_path / "completions.jsonl", _rows())
    folder = import_file(file, a_name=NAMES[0], b_name=NAMES[1])
    assert folder.path == tmp_path / "completions.annotate" and folder.created
    assert (folder.names, folder.rows, folder.labels) == (NAMES, 4, 0)
    store = RunStore(folder.path, read_only=True)
    try:
        assert store.get_meta("algorithm") == ALGORITHM and store.get_meta(FILE_META)["rows"] == 4
        assert [s for s, _ in store.rollout_stages()] == [stage_of(n) for n in NAMES]
        early = {r.sample_id: r for r in store.rollouts(stage_of("step500"))}
        assert early["line2"].x == PROMPTS[1] and early["line2"].y0 == "early answer 1"
        [(comparison, pairs)] = run_comparisons(store, file_spec(store)).values()
    finally:
        store.close()
    # Wins are counted for the first-named system; every row is a pair, matched by prompt.
    assert (comparison.first.name, comparison.second.name) == NAMES
    assert sorted(p.texts for p in pairs) == sorted((f"early answer {i}", f"late answer {i}") for i in range(4))
    client, run_id = _client(folder.path, "alice")
    batch = _batch(client, run_id)
    page = client.get(f"/runs/{run_id}/annotate?batch={batch}", follow_redirects=False)
    assert page.status_code == 303  # to the first pair not yet labelled
    shown = _shown(client.get(page.headers["location"]).text, folder.path)
    main = client.get(page.headers["location"]).text.split("<main>")[1]
    assert shown["total"] == 4 and shown["labelled"] == 0
    assert {shown["left_text"], shown["right_text"]} in [{f"early answer {i}", f"late answer {i}"} for i in range(4)]
    for hidden in (*NAMES, "round0", "/eval", "line1"):  # no page names a system, a stage or a row
        assert hidden not in main, hidden
    # The runs list and the folder's own page answer, as for a run.
    assert client.get("/").status_code == 200 and client.get(f"/runs/{run_id}").status_code == 200


def test_rows_of_named_outputs_take_their_names_and_any_key_order(tmp_path):
    rows = [{"id": 7, "prompt": "p1", "outputs": {"base": "x1", "tuned": "y1"}},
            {"id": "q2", "prompt": "p2", "outputs": {"tuned": "y2", "base": "x2"}}]
    read = read_rows(_write(tmp_path / "two.jsonl", rows))
    assert read.names == ("base", "tuned") and read.rows == [("7", "p1", "x1", "y1"), ("q2", "p2", "x2", "y2")]
    # Three systems: --a-name / --b-name pick two, the first named first.
    rows = [{"prompt": "p", "outputs": {"base": "x", "tuned": "y", "other": "z"}}]
    read = read_rows(_write(tmp_path / "three.jsonl", rows), "tuned", "base")
    assert read.names == ("tuned", "base") and read.rows == [("line1", "p", "y", "x")]


BAD_ROWS = {
    "not JSON": (['{"prompt": "p", "a": "x", "b": "y"}', "{oops"], ("line 2", "not valid JSON")),
    "no prompt": ([{"a": "x", "b": "y"}], ("line 1", "'prompt' is missing", '{"prompt"')),
    "no second output": ([{"prompt": "p", "a": "x"}], ("line 1", "'b' is missing")),
    "no outputs at all": ([{"prompt": "p", "text": "x"}], ("line 1", "needs 'a' and 'b'")),
    "an output not text": ([{"prompt": "p", "a": "x", "b": 3}], ("line 1", "'b' is a number, not text")),
    "an empty output": ([{"prompt": "p", "a": "x", "b": "  "}], ("line 1", "'b' is empty", "drop the row")),
    "three outputs": ([{"prompt": "p", "outputs": {"u": "1", "v": "2", "w": "3"}}],
                      ("line 1", "3 systems", "--a-name NAME --b-name NAME")),
    "other systems": ([{"prompt": "p", "outputs": {"u": "1", "v": "2"}},
                       {"prompt": "q", "outputs": {"u": "1", "w": "2"}}],
                      ("line 2", "the same two systems")),
    "a repeated id": ([{"id": 1, "prompt": "p", "a": "x", "b": "y"}, {"id": "1", "prompt": "q", "a": "x", "b": "y"}],
                      ("line 2", "line 1's too", "its own id")),
    "a system name with a slash": ([{"prompt": "p", "outputs": {"ckpt/500": "1", "v": "2"}}],
                                   ("line 1", "'ckpt/500' cannot name a system")),
    "no rows": ([], ("holds no rows",)),
}


@pytest.mark.parametrize("name", list(BAD_ROWS))
def test_a_malformed_row_is_refused_in_one_line_naming_it(name, tmp_path, monkeypatch, capsys):
    rows, words = BAD_ROWS[name]
    file = _write(tmp_path / "rows.jsonl", rows)
    code, _, err = _cli(monkeypatch, capsys, "annotate", str(file), "--port", "0")
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error:"), err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not (tmp_path / "rows.annotate").exists()  # nothing made from a bad file


def test_names_are_checked_before_any_row(tmp_path):
    file = _write(tmp_path / "rows.jsonl", _rows(1))
    for a, b, words in (("x", None, "give both"), ("same", "same", "two different"), ("tie", "b", "not 'tie'")):
        with pytest.raises(DataError, match=words):
            read_rows(file, a, b)


def test_a_second_import_keeps_the_labels_and_other_rows_are_refused(tmp_path):
    file = _write(tmp_path / "c.jsonl", _rows())
    out = tmp_path / "study"
    import_file(file, out, *NAMES)
    _label_pairs(out, "alice", ["A", "B"])
    again = import_file(file, out, *NAMES)
    assert not again.created and again.labels == 2
    client, run_id = _client(out, "alice")
    shown = _shown(client.get(f"/runs/{run_id}/annotate?batch={_batch(client, run_id)}").text)
    assert (shown["labelled"], shown["total"]) == (2, 4)  # it goes on at the third pair
    with pytest.raises(DataError, match="pass --a-name step500 --b-name step1000"):
        import_file(file, out)  # the same rows under the default names a / b
    _write(file, _rows(3))
    with pytest.raises(DataError, match=r"made from other rows \(4 rows of step500 vs step1000, 2 labels\)"):
        import_file(file, out, *NAMES)
    fresh = import_file(file, out, *NAMES, fresh=True)
    assert fresh.created and fresh.rows == 3 and fresh.labels == 0


def test_a_run_or_another_folder_is_never_taken_over(tmp_path):
    file = _write(tmp_path / "c.jsonl", _rows(1))
    run = RunStore(tmp_path / "run")
    run.set_meta("algorithm", "taiscore")
    run.close()
    with pytest.raises(DataError, match="is a coevo run"):
        import_file(file, tmp_path / "run", fresh=True)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(DataError, match="holds files but no run.sqlite"):
        import_file(file, tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep" and (tmp_path / "run" / "run.sqlite").exists()


def test_coevo_eval_annotations_exports_the_labels_as_for_a_run(tmp_path, monkeypatch, capsys):
    file = _write(tmp_path / "c.jsonl", _rows())
    folder = import_file(file, a_name=NAMES[0], b_name=NAMES[1]).path
    winners = {}
    for name, labels in (("alice", ["A", "B", "tie"]), ("bob", ["B", "B", "A"])):
        for shown in _label_pairs(folder, name, labels):
            right = NAMES[1 - NAMES.index(shown["left"])]
            winners[(name, shown["key"])] = {"A": shown["left"], "B": right, "tie": "tie"}[shown["label"]]
    code, out, err = _cli(monkeypatch, capsys, "eval", "annotations", str(folder), "--out", str(tmp_path / "labels"))
    assert code == 0, err
    assert "step500 vs step1000" in out and "labelled pairs" in out
    for name in ("alice", "bob"):
        lines = [json.loads(line) for line in (tmp_path / "labels" / f"human_{name}.jsonl").read_text().splitlines()]
        mine = {k: w for (who, k), w in winners.items() if who == name}
        assert len(lines) == 2 * 3 and {line["group"] for line in lines} == set(mine)
        for line in lines:  # 1 for the text preferred, 0 for the other, 0.5 each for a tie
            winner = mine[line["group"]]
            assert line["score"] == (0.5 if winner == "tie" else float(line["candidate"] == winner))
            assert line["candidate"] in NAMES
    [row] = [json.loads(line) for line in (tmp_path / "labels" / "conditions.jsonl").read_text().splitlines()]
    assert (row["first"], row["second"], row["annotators"]) == (*NAMES, ["alice", "bob"])
    assert (tmp_path / "labels" / "human.jsonl").is_file() and (tmp_path / "labels" / "conditions.md").is_file()
    # The agreement tables read them as they read a run's.
    labels = tmp_path / "labels"
    code, out, err = _cli(monkeypatch, capsys, "eval", "agreement", "--a", str(labels / "human_alice.jsonl"),
                          "--b", str(labels / "human_bob.jsonl"), "--json")
    assert code == 0, err
    assert json.loads(out)["n_groups"] == 3  # the pairs both labelled (the same queue order for everyone)
