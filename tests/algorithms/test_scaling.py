"""`algorithm: scaling` (TAIScore's controlled zero-shot analysis, Fig. 1 / Table 5) on replay
models and a Python gold scorer: the grid runs, one y0 reaches every cell, the deltas and
their CIs are the paired ones, a resumed run redoes no finished stage, a bad config is one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coevo.algorithms.scaling import loop
from coevo.algorithms.scaling.cells import Cell, Comparison, comparisons, grid_cells
from coevo.algorithms.scaling.deltas import delta_row, figure_rows
from coevo.algorithms.scaling.figure import figure_dict
from coevo import cli
from coevo.core.strict import ConfigError
from coevo.settings.config import read_yaml
from coevo.eval.stats import paired_bootstrap_ci
from coevo.run.runner import plan_experiment, resolve_config, run_experiment
from coevo.rundir.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CQ, ADHERENCE = "evaluator of writing critiques", "evaluator of response refinement"


def _dims(names: list[str], score: int) -> str:
    return json.dumps({name: {"score": score, "reason": "r"} for name in names})


CQ_DIMS = ["specificity", "actionability", "priority", "faithfulness", "coverage", "constructiveness"]
ADH_DIMS = ["main_issue_adherence", "completeness_of_adoption", "faithful_implementation",
            "non_superficial_revision"]


def _models(tmp_path: Path) -> dict[str, str]:
    """Replay models: each "size" writes its own critiques and revisions; the judge scores a
    large critique 8 and a small one 6, adherence to a large revision 9 and a small one 5."""
    def write(name: str, rules: list[dict]) -> str:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(rule) for rule in rules) + "\n")
        return f"replay:{path}"

    def model(size: str) -> str:
        return write(size, [{"match": "Your Critique:", "completion": f"{size} critique: fix the ending"},
                            {"match": "Revised Response:", "completion": f"{size} revision text"},
                            {"completion": f"{size} draft"}])

    judge = write("judge", [{"match": [CQ, "large critique"], "completion": _dims(CQ_DIMS, 8)},
                            {"match": [CQ, "critique"], "completion": _dims(CQ_DIMS, 6)},
                            {"match": [ADHERENCE, "large revision"], "completion": _dims(ADH_DIMS, 9)},
                            {"match": [ADHERENCE], "completion": _dims(ADH_DIMS, 5)}])
    gold = tmp_path / "gold.py"
    # S: a draft 2, a small model's revision 4, a large one's 7 (+ the prompt's length, so examples differ).
    gold.write_text("def gold(x, response, rubric):\n"
                    "    base = 7.0 if 'large revision' in response else 4.0 if 'revision' in response else 2.0\n"
                    "    return base + len(x) % 3\n")
    return {"small": model("small"), "medium": model("medium"), "large": model("large"), "judge": judge,
            "gold": f"python:{gold}:gold"}


def _config(m: dict[str, str], **blocks) -> dict:
    blocks = blocks or {
        "critic_scaling": [{"setting": "small actor", "actor": m["small"], "critics": [m["small"], m["large"]]}],
        "refiner_scaling": [{"y0_from": m["small"], "critique_from": m["large"],
                             "refiners": [m["small"], m["large"]]}]}
    return {"algorithm": "scaling", "data": {"source": "bundled:writing", "limit": 6},
            "roles": {"judge": {"model": m["judge"]}, "gold": {"model": m["gold"]}}, **blocks}


def test_the_two_blocks_give_table_5s_rows_with_paired_deltas(tmp_path):
    m = _models(tmp_path)
    summary = run_experiment(None, tmp_path / "run", data=_config(m))
    critic, refiner = summary["table"]["rows"]
    # Critic scaling: a better critique (8 vs 6), the same self-refiner writing the same revision.
    assert critic["delta_critique_quality"] == pytest.approx(2.0) and critic["delta_critique_quality_n"] == 6
    assert critic["delta_adherence"] == pytest.approx(0.0) and critic["delta_gain"] == pytest.approx(0.0)
    # Refiner scaling: the critique is fixed; the larger refiner adheres (9 vs 5) and gains 3 more.
    assert refiner["delta_critique_quality"] == "fixed"
    assert refiner["delta_adherence"] == pytest.approx(4.0) and refiner["delta_gain"] == pytest.approx(3.0)
    assert refiner["delta_gain_lo"] == pytest.approx(3.0) and refiner["delta_gain_n"] == 6
    assert refiner["scaling"] == "small.jsonl → large.jsonl"
    figure = (tmp_path / "run" / summary["figure_file"]).read_text()
    assert "#9ca3af" in figure and "#2563eb" in figure  # gray critic bars, blue refiner bars
    cells = {(r["critic"], r["refiner"]): r for r in summary["cells"]["rows"]}
    assert cells[("large.jsonl", "large.jsonl")]["S_y1_n"] == 6


def test_one_y0_reaches_every_cell_and_each_stage_runs_once(tmp_path):
    m = _models(tmp_path)
    run_experiment(None, tmp_path / "run", data=_config(m))
    store = RunStore(tmp_path / "run")
    stages = dict(store.rollout_stages())
    assert [s for s in stages if s.startswith("y0[")] == [f"y0[{m['small']}]"]  # one y0 for both blocks
    y0 = {r.sample_id: r.y0 for r in store.rollouts(f"y0[{m['small']}]")}
    revise = [s for s in stages if s.startswith("revise[")]
    assert len(revise) == 3  # (small critic, small), (large critic, small) shared by both blocks, (large, large)
    for stage in revise:
        assert {r.sample_id: r.y0 for r in store.rollouts(stage)} == y0


def test_a_grid_computes_every_cell_and_reports_the_listed_pairs(tmp_path):
    m = _models(tmp_path)
    grid = {"critic_scaling": [{"actors": [m["small"], m["medium"]], "critics": [m["small"], m["medium"], m["large"]],
                                "pairs": [[m["small"], m["large"]]]}]}
    summary = run_experiment(None, tmp_path / "run", data=_config(m, **grid))
    assert len(summary["cells"]["rows"]) == 6            # 2 actors x 3 critics
    assert [r["setting"] for r in summary["table"]["rows"]] == ["small.jsonl", "medium.jsonl"]
    assert all(r["delta_critique_quality"] == pytest.approx(2.0) for r in summary["table"]["rows"])
    bars = {(b["scaling"], b["metric"]): b for b in summary["figure"]["rows"]}
    assert bars[("critic", "Δ critique quality")]["n"] == 12 and bars[("critic", "Δ gain")]["comparisons"] == 2


def test_deltas_and_cis_on_a_constructed_case():
    small, large = Cell("a", "s", "a"), Cell("a", "l", "a")
    smaller = {str(i): {"critique_quality": 5.0, "adherence": 5.0, "gain": 0.0} for i in range(8)}
    larger = {str(i): {"critique_quality": 5.0 + i, "adherence": 5.0, "gain": 1.0} for i in range(8)}
    larger["7"]["critique_quality"] = None  # unreadable in one cell: that example leaves the pair
    comparison = Comparison("critic", "a", small, large)
    row = delta_row(comparison, {small: smaller, large: larger})
    mean, low, high = paired_bootstrap_ci([5.0 + i for i in range(7)], [5.0] * 7, n_resamples=5000)
    assert row["delta_critique_quality"] == pytest.approx(3.0) == pytest.approx(mean)
    assert (row["delta_critique_quality_lo"], row["delta_critique_quality_hi"]) == pytest.approx((low, high))
    assert row["delta_critique_quality_n"] == 7 and row["delta_gain_n"] == 8
    assert row["delta_gain"] == pytest.approx(1.0) and row["delta_adherence"] == pytest.approx(0.0)
    # Under 5 pairs the figure draws no interval.
    few = {k: v for k, v in list(larger.items())[:3]}
    bars = figure_rows([comparison], {small: smaller, large: few})
    trace = figure_dict(bars)["data"][0]
    assert trace["error_y"]["visible"] is False and "not drawn" in trace["customdata"][0][2]


def test_a_resumed_run_redoes_no_finished_stage(tmp_path, monkeypatch):
    m = _models(tmp_path)
    config = _config(m)
    done: list[str] = []
    original = loop._revise_work

    def failing_second(cell, models, critiques):
        work = original(cell, models, critiques)

        def run(batch):
            if done:  # the second revision stage fails once one has finished
                raise RuntimeError("killed")
            done.append(cell.revise_stage)
            return work(batch)
        return run

    monkeypatch.setattr(loop, "_revise_work", failing_second)
    with pytest.raises(RuntimeError, match="killed"):
        run_experiment(None, tmp_path / "run", data=config)
    monkeypatch.setattr(loop, "_revise_work", original)
    worked: list[str] = []
    real_stage = loop.run_stage

    def spy(store, name, samples, work, batch_size):
        return real_stage(store, name, samples, lambda batch: worked.append(name) or work(batch), batch_size)

    monkeypatch.setattr(loop, "run_stage", spy)
    summary = run_experiment(None, tmp_path / "run", data=config, resume=True)
    assert not any(s.startswith(("y0[", "critique[")) for s in worked) and done[0] not in worked
    assert len(set(worked)) == 2 and summary["table"]["rows"][1]["delta_gain"] == pytest.approx(3.0)


@pytest.mark.parametrize("change, words", [
    ({"critic_scaling": [{"actor": "smollm2", "critics": ["smollm2"]}]}, "critics"),
    ({"critic_scaling": [{"actor": "smollm2", "critics": ["smollm2", "smollm2"], "critic": "x"}]}, "critic"),
    ({"critic_scaling": [{"actor": "smollm2", "critics": ["smollm2", "smollm2"], "pairs": [["a", "smollm2"]]}]},
     "not among"),
    ({"roles": {"actor": {"model": "smollm2"}}}, "roles.actor.model"),
    ({"critic_scaling": []}, "at least one comparison"),  # refused by the run's preflight
])
def test_a_bad_config_ends_in_one_line(tmp_path, change, words, monkeypatch, capsys):
    config = {"algorithm": "scaling", "critic_scaling": [{"actor": "smollm2", "critics": ["smollm2", "smollm2"]}],
              **change}
    if change != {"critic_scaling": []}:
        with pytest.raises(ConfigError, match=words) as error:
            resolve_config(config, "scaling.yaml")
        assert "\n" not in str(error.value)
    path = tmp_path / "bad.yaml"
    path.write_text(json.dumps(config))
    monkeypatch.setattr(sys, "argv", ["coevo", "run", str(path), "--out", str(tmp_path / "run")])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert ended.value.code == 2 and len(lines) == 1 and words in lines[0], lines
    assert not (tmp_path / "run").exists()


def test_the_example_configs_validate_and_plan():
    for name in ("scaling_tiny.yaml", "scaling_full.yaml"):
        _, config = resolve_config(read_yaml(EXAMPLES / name), name)
        assert comparisons(config) and grid_cells(config)
    full = plan_experiment(EXAMPLES / "scaling_full.yaml")
    # Table 5's nine rows; only what no setting changes departs (WritingBench's own evaluator).
    assert len(full.data["comparisons"]) == 9
    assert [d.setting for d in full.departures] == ["roles.gold.model"]
    tiny = plan_experiment(EXAMPLES / "scaling_tiny.yaml")
    assert {d.setting for d in tiny.departures} >= {"data.source", "critic_scaling", "refiner_scaling"}
    assert [s.name for s in tiny.stages] == ["y0[smollm2]", "critique[smollm2 | smollm2]",
                                             "revise[smollm2 | smollm2 | smollm2]"]


def test_a_python_judge_is_refused_before_the_run_starts(tmp_path):
    m = _models(tmp_path)
    config = _config(m)
    config["roles"]["judge"] = {"model": m["gold"]}  # adherence has no Python stand-in: only the gold may be one
    with pytest.raises(ConfigError, match="roles.gold.model"):
        run_experiment(None, tmp_path / "run", data=config)
    assert not (tmp_path / "run").exists()


def test_y0_read_from_a_data_column_is_what_every_refiner_revises(tmp_path):
    m = _models(tmp_path)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"r{i}", "prompt": f"Write poem {i}.", "y0": f"given draft {i}"}) + "\n"
                            for i in range(5)))
    config = _config(m, refiner_scaling=[{"y0_column": "y0", "critique_from": m["large"],
                                          "refiners": [m["small"], m["large"]]}])
    config["data"] = {"source": str(data)}
    summary = run_experiment(None, tmp_path / "run", data=config)
    store = RunStore(tmp_path / "run")
    for stage, _ in store.rollout_stages():
        assert {r.sample_id: r.y0 for r in store.rollouts(stage)} == {f"r{i}": f"given draft {i}" for i in range(5)}
    assert summary["table"]["rows"][0]["delta_gain"] == pytest.approx(3.0)
    missing = _config(m, refiner_scaling=[{"y0_column": "draft", "critique_from": m["large"],
                                           "refiners": [m["small"], m["large"]]}])
    missing["data"] = {"source": str(data)}
    with pytest.raises(ConfigError, match="y0_column 'draft'"):
        run_experiment(None, tmp_path / "run2", data=missing)


def test_the_plan_counts_each_shared_stage_once():
    """One y0 and one critique serve both cells of a block: the estimate counts the calls the
    loop makes (the tiny run made 29 calls against these 28: one unreadable answer asked again)."""
    made = plan_experiment(EXAMPLES / "scaling_tiny.yaml")
    rows = {(c.stage, c.role): c.calls for c in made.estimate.calls}
    assert rows == {("y0[smollm2]", "actor"): 4, ("y0[smollm2]", "judge:gold_rubric"): 4,
                    ("critique[smollm2 | smollm2]", "critic"): 4,
                    ("critique[smollm2 | smollm2]", "judge:critique_quality"): 4,
                    ("revise[smollm2 | smollm2 | smollm2]", "actor"): 4,
                    ("revise[smollm2 | smollm2 | smollm2]", "judge:adherence"): 4,
                    ("revise[smollm2 | smollm2 | smollm2]", "judge:gold_rubric"): 4}
    assert made.estimate.training == []
