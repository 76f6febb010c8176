"""`coevo run` with `algorithm: decoevo` on a replay model: summary, report, CLI, resume.

The replay model (`method_telling_rules`) answers by the skill text in each prompt, so the
four methods end on four different solver skills and four different test scores: a result
filed under the wrong method's name fails these tests.
"""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from decoevo_fakes import GOLD_GRADES, replay_run_config
from typer.testing import CliRunner

from coevo.cli import app
from coevo.run.runner import run_experiment


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("decoevo_runner")
    config = replay_run_config(tmp_path)
    data, model = Path(config["data"]["source"]), Path(config["roles"]["backbone"]["model"].removeprefix("replay:"))
    summary = run_experiment(None, tmp_path / "run", data=config)
    return tmp_path, config, model, data, summary


#: The final solver skill's answers of each method (see `method_telling_rules`).
FINAL_ANSWER = {"zero_shot": "answer-v0", "sc_coevo": "answer-v1", "skillopt": "answer-v3",
                "decoevo": "answer-v3h"}


def _expected_mean(method):
    return (GOLD_GRADES[FINAL_ANSWER[method]] - 1) / 9


def test_each_method_result_lands_under_its_own_name(setup):
    _, _, _, _, summary = setup
    assert set(summary["methods"]) == {"zero_shot", "skillopt", "sc_coevo", "decoevo"}
    assert len({_expected_mean(m) for m in FINAL_ANSWER}) == 4  # four distinct scores
    for method, entry in summary["methods"].items():
        assert entry["test_mean"] == pytest.approx(_expected_mean(method)), method
        assert entry["per_seed"] == pytest.approx([_expected_mean(method)] * 2), method
        assert entry["test_sd"] == 0.0
    rows = {row["method"]: row for row in summary["table"]["rows"]}
    assert {m: rows[m]["test_mean"] for m in rows} == pytest.approx({m: _expected_mean(m) for m in FINAL_ANSWER})
    # Which skills each method evolved, and what its acceptance rules decided (both seeds).
    decided = {m: (e["solver_accepted"], e["solver_candidates"], e["generator_accepted"], e["generator_candidates"])
               for m, e in summary["methods"].items()}
    assert decided == {"zero_shot": (0, 0, 0, 0), "skillopt": (6, 6, 0, 0),
                       "sc_coevo": (2, 2, 2, 2), "decoevo": (6, 6, 2, 4)}
    ci = summary["decoevo_minus_skillopt_ci"]
    assert ci["n_pairs"] == 6 and ci["mean_diff"] == pytest.approx(_expected_mean("decoevo") - _expected_mean("skillopt"))
    # The diagnostic trajectory is filed per method too: its last gold point is the final skill's.
    for method, points in summary["trajectory"].items():
        assert [p["step"] for p in points] == [0, 1, 2, 3]
        assert points[-1]["gold"] == pytest.approx(_expected_mean(method)), method


def test_summary_report_and_skill_history(setup):
    tmp_path, config, _, _, summary = setup
    assert set(summary["skill_versions"]) == {"solver", "rubric_generator"}
    assert any(v["method"] == "decoevo" and v["version"] > 0 for v in summary["skill_versions"]["solver"])
    assert [k for k in summary["skill_versions"]["solver"][0]] == [
        "method", "seed", "version", "parent", "decision", "why", "step"]
    ci = summary["decoevo_minus_skillopt_ci"]
    assert ci["low"] <= ci["mean_diff"] <= ci["high"]
    assert summary["table"]["columns"][0] == "method" and len(summary["table"]["rows"]) == 4
    assert {"inner", "outer"} <= set(summary["step_cost"])
    assert summary["scoring"] == {"judge": "sampled", "auditor": "sampled", "grader": "sampled"}
    for method in ("skillopt", "sc_coevo", "decoevo"):
        entry = summary["methods"][method]
        assert entry["gate_comparisons"] > 0 and entry["gate_ties"] == 0
    assert summary["methods"]["zero_shot"]["gate_comparisons"] == 0
    run = tmp_path / "run"
    assert (run / "skills" / "decoevo" / "seed1" / "solver_v1.md").is_file()
    assert (run / "skills" / "decoevo" / "seed0" / "rubric_generator_v0.md").is_file()
    page = (run / "report.html").read_text()
    assert "Skill history" in page and "Diagnostic trajectory" in page and "data:image/png" in page
    assert "DecoEvo: gold-rubric test score" in page


def test_repeated_run_is_answered_from_the_cache(setup):
    tmp_path, config, _, _, first = setup
    repeat = tmp_path / "repeat"
    shutil.copytree(tmp_path / "run", repeat)
    with sqlite3.connect(repeat / "run.sqlite") as db:  # forget finished steps: rerun every loop
        db.execute("DELETE FROM steps")
    again = run_experiment(None, repeat, data=config, resume=True)
    assert again["methods"] == first["methods"]
    assert again["llm_cache"]["misses"] == 0


def test_cli_show_skills_and_eval_skill(setup):
    tmp_path, config, model, data, _ = setup
    runner = CliRunner()
    shown = runner.invoke(app, ["show", str(tmp_path / "run"), "--skills"])
    assert shown.exit_code == 0, shown.output
    assert "skill history" in shown.output and "rubric_generator" in shown.output
    skill = tmp_path / "run" / "skills" / "decoevo" / "seed0" / "solver_v1.md"
    result = runner.invoke(app, ["eval", "skill", "--skill", str(skill), "--data", str(data),
                                 "--model", f"replay:{model}", "--limit", "4", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    # decoevo's v1 is "SKILL V1" (every optimising method's first accepted solver skill).
    assert report["n_samples"] == 4 and report["gold_mean"] == pytest.approx(_expected_mean("sc_coevo"))
    assert report["roles_from"] == "defaults" and report["grader"] == f"replay:{model}"
    # --run: the run's roles (its backbone, its grader, their decoding) and its store as the cache.
    again = runner.invoke(app, ["eval", "skill", "--skill", str(skill), "--data", str(data),
                                "--run", str(tmp_path / "run"), "--limit", "4", "--json"])
    assert again.exit_code == 0, again.output
    same = json.loads(again.output.strip().splitlines()[-1])
    assert same["roles_from"] == str(tmp_path / "run") and same["model"] == config["roles"]["backbone"]["model"]
    assert same["gold_mean"] == pytest.approx(report["gold_mean"])
    refused = runner.invoke(app, ["eval", "skill", "--skill", str(skill), "--data", str(data), "--run", str(tmp_path)])
    assert refused.exit_code == 2 and "not a run folder" in refused.output


def test_data_without_gold_rubrics_is_refused_with_the_fix(setup):
    tmp_path, config, _, _, _ = setup
    config = dict(config)
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"id": f"b{i}", "prompt": f"p{i}"}) + "\n" for i in range(20)))
    config["data"] = {"source": str(bare)}
    from coevo.tasks.loaders import DataError

    with pytest.raises(DataError, match="gold rubrics"):
        run_experiment(None, tmp_path / "run2", data=config)


def test_eval_skill_refuses_data_without_gold_rubrics_and_missing_files(setup, tmp_path):
    _, _, model, _, _ = setup
    from coevo.tasks.loaders import DataError

    skill = tmp_path / "skill.md"
    skill.write_text("<!-- header -->\nBe concise.\n")
    bare = tmp_path / "bare.jsonl"
    bare.write_text(json.dumps({"id": "b", "prompt": "p"}) + "\n")
    runner = CliRunner()
    result = runner.invoke(app, ["eval", "skill", "--skill", str(skill), "--data", str(bare),
                                 "--model", f"replay:{model}"])
    assert isinstance(result.exception, DataError) and "gold rubric" in str(result.exception)
    result = runner.invoke(app, ["eval", "skill", "--skill", str(tmp_path / "nope.md"), "--data", str(bare)])
    assert isinstance(result.exception, FileNotFoundError)


def test_every_final_skill_graded_on_a_transfer_set_then_averaged_with_the_source_run(setup):
    tmp_path, _, _, data, _ = setup
    runner = CliRunner()
    graded = runner.invoke(app, ["eval", "skill", "--run", str(tmp_path / "run"), "--final-skills",
                                 "--data", str(data), "--limit", "4", "--json"])
    assert graded.exit_code == 0, graded.output
    transfer = json.loads(graded.output.strip().splitlines()[-1])
    # One row per method and seed, each its final accepted solver skill (the same answers as the run's).
    rows = {(r["method"], r["seed"]): r for r in transfer["results"]}
    assert set(rows) == {(m, s) for m in FINAL_ANSWER for s in (0, 1)}
    assert all(rows[(m, s)]["gold_mean"] == pytest.approx(_expected_mean(m)) for m, s in rows)
    transfer_file = tmp_path / "transfer.json"
    transfer_file.write_text(json.dumps(transfer))
    averaged = runner.invoke(app, ["eval", "average", str(tmp_path / "run"), str(transfer_file), "--json"])
    assert averaged.exit_code == 0, averaged.output
    found = json.loads(averaged.output.strip().splitlines()[-1])
    # Two benchmarks, each method the same on both: the average is that score, over 2 runs.
    assert len(found["benchmarks"]) == 2
    for method in FINAL_ANSWER:
        entry = found["methods"][method]
        assert entry["mean"] == pytest.approx(_expected_mean(method)) and entry["n_runs"] == 2
    diff = found["decoevo_minus_skillopt"]
    assert diff["n_runs"] == 2 and diff["mean_diff"] == pytest.approx(_expected_mean("decoevo") - _expected_mean("skillopt"))
    shown = runner.invoke(app, ["eval", "average", str(tmp_path / "run"), str(transfer_file)])
    assert shown.exit_code == 0 and "DecoEvo − SkillOpt" in shown.output and "n=2 runs" in shown.output
    # A method one benchmark lacks has no average, and the output says which benchmark lacks it.
    transfer["results"] = [r for r in transfer["results"] if r["method"] != "skillopt"]
    transfer_file.write_text(json.dumps(transfer))
    partial = runner.invoke(app, ["eval", "average", str(tmp_path / "run"), str(transfer_file)])
    assert partial.exit_code == 0 and "skillopt: no average" in partial.output, partial.output


def test_average_refuses_what_is_not_a_benchmarks_scores(setup, tmp_path):
    runner = CliRunner()
    stray = tmp_path / "stray.json"
    stray.write_text("{}")
    result = runner.invoke(app, ["eval", "average", str(stray)])
    assert result.exit_code == 2 and "--final-skills --json" in result.output
    result = runner.invoke(app, ["eval", "skill", "--final-skills", "--data", "bundled:writing"])
    assert result.exit_code == 2 and "--run RUN" in result.output
