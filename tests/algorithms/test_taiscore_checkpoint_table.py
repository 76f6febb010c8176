"""`coevo eval checkpoints`: TAIScore's Table 1 over a finished run's saved actors — which
checkpoints are rows, how a cell is made of output sets, what is refused, and (tiny model)
the command end to end on a real run, resumed without generating again."""

import json
import shutil

import pytest

from coevo.algorithms.taiscore.checkpoint_table import (
    TABLE_TITLE,
    BenchmarkSet,
    Checkpoint,
    TableError,
    _cell,
    _distinct_names,
    benchmark_set,
    saved_checkpoints,
    score_checkpoints,
)

WRITINGBENCH = [{"index": i, "domain1": "A", "domain2": "B", "lang": "en", "query": query,
                 "checklist": [{"name": "Depth", "criteria_description": "Goes beyond the obvious."}]}
                for i, query in enumerate(["Outline a paper on tides.", "Write a poem about rain.",
                                           "Draft a memo on a budget cut."])]
HELLOBENCH = [{"id": f"open_ended_qa_{i}", "instruction": question, "category": "Science",
               "checklists": ["Does it explain the mechanism?"], "num_checklist": 1}
              for i, question in enumerate(["Why do cats purr?", "How do tides work?"])]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_rows_are_the_base_once_then_every_condition_and_seeds_actor_after_each_round():
    single = {"condition": "coevolution", "rounds": [
        {"round": 1, "checkpoints": {"actor": "checkpoints/coevolution/round1/actor/final"}},
        {"round": 2, "checkpoints": {"actor": "checkpoints/coevolution/round2/actor/final"}}]}
    assert saved_checkpoints(single, seed=0) == [
        Checkpoint("π_0 (base)", "base", 0, 0, None),
        Checkpoint("coevolution π_1", "coevolution", 0, 1, "checkpoints/coevolution/round1/actor/final"),
        Checkpoint("coevolution π_2", "coevolution", 0, 2, "checkpoints/coevolution/round2/actor/final")]
    several = {"conditions": [
        {"condition": "taiscore", "seed": 3, "tag": "taiscore/seed3",
         "rounds": [{"round": 1, "checkpoints": {"actor": "a1"}}]},
        {"condition": "static", "seed": 3, "tag": "static/seed3",
         "rounds": [{"round": 1, "checkpoints": {"actor": None}}]}]}  # no preferred revision: π_1 = π_0
    rows = saved_checkpoints(several, seed=3)
    assert [(c.label, c.seed, c.path) for c in rows] == [
        ("π_0 (base)", 3, None), ("taiscore/seed3 π_1", 3, "a1"), ("static/seed3 π_1", 3, None)]


def test_a_cell_is_the_mean_and_sd_of_the_output_sets_means_with_the_items_per_set():
    cell = _cell([{"gold_score": 6.0, "gold_score_n": 4}, {"gold_score": 8.0, "gold_score_n": 4},
                  {"gold_score": 7.0, "gold_score_n": 4}], "gold_score")
    assert (cell.mean, cell.sd, cell.sets, cell.n) == (7.0, 1.0, 3, 4)
    assert cell.text() == "7.000 ± 1.000 (n=4, 3 sets)"
    one = _cell([{"gold_score": 5.0, "gold_score_n": 2}, {"gold_score": None, "gold_score_n": 0}], "gold_score")
    assert (one.mean, one.sd, one.sets) == (5.0, None, 1) and one.text() == "5.000 (n=2, 1 set)"
    assert _cell([{"kpr": None}], "kpr").text() == "—"


def test_sets_are_named_by_their_file_or_by_name_and_a_set_nothing_can_score_is_refused(tmp_path):
    wb = write(tmp_path / "wb.jsonl", WRITINGBENCH)
    assert benchmark_set(f"writingbench:{wb}", None).name == "wb"
    named = benchmark_set(f"OEQA=hellobench:{write(tmp_path / 'hb.jsonl', HELLOBENCH)}", 1)
    assert (named.name, len(named.samples)) == ("OEQA", 1)
    bare = write(tmp_path / "bare.jsonl", [{"prompt": "Say hi."}])
    with pytest.raises(TableError, match="none of its 1 samples has a gold rubric"):
        benchmark_set(str(bare), None)
    with pytest.raises(TableError, match="both named wb"):
        _distinct_names([BenchmarkSet("wb", "a", []), BenchmarkSet("wb", "b", [])])


def test_a_folder_that_is_not_a_taiscore_run_is_refused_naming_it(tmp_path):
    from coevo.rundir.store import RunStore

    wb = f"writingbench:{write(tmp_path / 'wb.jsonl', WRITINGBENCH)}"
    with pytest.raises(TableError, match="is not a run folder"):
        score_checkpoints(tmp_path / "nothing", [wb])
    assert not (tmp_path / "nothing").exists()  # refused before a store is made there
    store = RunStore(tmp_path / "decoevo")
    store.set_meta("config", {"algorithm": "decoevo"})
    store.close()
    with pytest.raises(TableError, match="this run is decoevo"):
        score_checkpoints(tmp_path / "decoevo", [wb])


@pytest.mark.slow
@pytest.mark.tiny_model
def test_every_saved_actor_is_scored_on_two_benchmark_sets_and_a_rerun_generates_nothing(
        tmp_path, taiscore_tiny_llama_run):
    """A finished TAIScore run (tiny random model, Python judges): π_0 and π_1 on WritingBench-
    and HelloBench-format files, 2 output sets each; the table lands beside the run and on its
    page; with the checkpoints gone, the rerun still makes the same table (every cell stored)."""
    from typer.testing import CliRunner

    from coevo.cli import app
    from coevo.rundir.store import RunStore
    from coevo.view.context import RunRef
    from coevo.view.run_page import run_page_context

    run = tmp_path / "run"
    shutil.copytree(taiscore_tiny_llama_run.out, run)
    args = ["eval", "checkpoints", str(run), "--data", f"writingbench:{write(tmp_path / 'wb.jsonl', WRITINGBENCH)}",
            "--data", f"OEQA=hellobench:{write(tmp_path / 'hb.jsonl', HELLOBENCH)}", "--output-sets", "2", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    table = json.loads((run / "table1.json").read_text())
    assert table["columns"] == ["wb", "OEQA"] and table["output_sets"] == 2
    assert [(r["checkpoint"], r["round"]) for r in table["rows"]] == [("π_0 (base)", 0), ("coevolution π_1", 1)]
    for row in table["rows"]:
        assert (row["cells"]["wb"]["sets"], row["cells"]["wb"]["n"]) == (2, 3)
        assert (row["cells"]["OEQA"]["sets"], row["cells"]["OEQA"]["n"]) == (2, 2)
    assert "| coevolution π_1 |" in (run / "table1.md").read_text()
    page = run_page_context(RunStore(run, read_only=True), RunRef(id="run", path=run))
    assert TABLE_TITLE in [t["title"] for t in page["tables"]]

    shutil.rmtree(run / "checkpoints")  # nothing left to generate with: every cell must be read back
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads((run / "table1.json").read_text()) == table
