"""DecoEvo against its paper: the departures of the example configs, `plan` without a model,
the CI over matched runs beside the pooled one, and the grader that is the backbone."""

import json
import shutil
from pathlib import Path

import pytest
from decoevo_fakes import replay_run_config

from coevo.algorithms.decoevo import DecoEvoConfig
from coevo.algorithms.decoevo.paper import departures, plan
from coevo.algorithms.decoevo.summary import run_ci
from coevo.core.strict import ConfigError
from coevo.settings.config import apply_overrides, read_yaml, validate
from coevo.eval.stats import t_quantile
from coevo.run.runner import resolve_config, run_experiment
from coevo.rundir.store import RunStore

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name, *overrides):
    return resolve_config(apply_overrides(read_yaml(EXAMPLES / name), list(overrides)), name)[1]


def writingbench_file(path, n=40):
    """n WritingBench-format rows (index, domains, query, per-query checklist)."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({
                "index": i + 1, "domain1": "Literature & Arts", "domain2": "Poetry", "lang": "en",
                "query": f"Write poem {i} about the harbour at dawn.",
                "checklist": [{"name": "Imagery", "criteria_description": "Concrete images of the harbour.",
                               "1-2": "none", "3-4": "few", "5-6": "some", "7-8": "many", "9-10": "vivid"},
                              {"name": "Form", "criteria_description": "Keeps a poem's form.",
                               "1-2": "prose", "9-10": "clear form"}]}) + "\n")
    return f"writingbench:{path}"


# ---------------------------------------------------------------- the roles block
def test_old_models_and_sampling_blocks_are_refused_with_their_new_places():
    old = {"algorithm": "decoevo", "models": {"backbone": "x"},
           "sampling": {"generator": {"temperature": 0.3, "max_tokens": 100}}}
    with pytest.raises(ConfigError) as refused:
        validate(DecoEvoConfig, old)
    message = str(refused.value)
    assert "models.backbone -> roles.backbone.model" in message
    assert "sampling.generator -> roles.rubric_generator.sampling" in message


def test_an_optimisation_role_has_no_model_of_its_own():
    with pytest.raises(ConfigError, match=r"roles: solver\.model: .*one frozen LLM; set roles\.backbone\.model"):
        validate(DecoEvoConfig, {"algorithm": "decoevo", "roles": {"solver": {"model": "x"}}})


# ---------------------------------------------------------------- departures
#: What no coevo setting changes yet: the final grade's prompt is coevo's, not each benchmark's.
UNAVOIDABLE = ["roles.grader.prompt"]


def settable(config) -> list:
    """The departures a setting could remove (the full config has none)."""
    return [d for d in departures(config) if d.settable]


def test_full_config_is_the_paper(tmp_path):
    assert [d.setting for d in departures(load("decoevo_full.yaml"))] == UNAVOIDABLE  # as shipped
    config = load("decoevo_full.yaml", f"data.source={writingbench_file(tmp_path / 'wb.jsonl')}")
    assert settable(config) == [] and not departures(config)[0].settable


def test_coevo_plan_json_of_the_full_config(tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    source = writingbench_file(tmp_path / "wb.jsonl", n=40)
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "decoevo_full.yaml"), "--set", f"data.source={source}",
                                      "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.output)
    assert made["algorithm"] == "decoevo" and [d["setting"] for d in made["departures"]] == UNAVOIDABLE
    assert sum(made["data"]["sizes"].values()) == 40 and made["data"]["held_out"] == made["data"]["partitions"]["test"]


def test_tiny_config_lists_each_of_its_departures():
    found = {d.setting: d for d in departures(load("decoevo_tiny.yaml"))}
    assert set(found) == {*UNAVOIDABLE, "roles.backbone.model", "roles.grader.model", "data.source", "partitions.sizes", "seeds",
                          "roles.judge.sampling.scoring", "roles.auditor.sampling.scoring",
                          "roles.grader.sampling.scoring"}
    assert found["roles.grader.model"].here == "smollm2 (the backbone)"
    assert found["seeds"].here == [0, 1]
    assert all(d.why for d in found.values())


def test_one_changed_setting_is_one_departure(tmp_path):
    source = writingbench_file(tmp_path / "wb.jsonl")
    config = load("decoevo_full.yaml", f"data.source={source}", "seeds=[0,1,2]", "roles.backbone.model=hf:Qwen/Qwen3-4B")
    assert [d.setting for d in settable(config)] == ["seeds"]  # Qwen3-4B is one of the paper's
    for grader in ("vllm:Qwen/Qwen3-8B", "hf:Qwen/Qwen3-8B"):  # the backbone, on any engine
        same = load("decoevo_full.yaml", f"data.source={source}", f"roles.grader.model={grader}")
        assert [d.setting for d in settable(same)] == ["roles.grader.model"], grader


def test_healthbench_graded_on_1_to_10_grades_is_a_departure(tmp_path):
    rows = [{"prompt_id": f"p{i}", "prompt": [{"role": "user", "content": f"Question {i}?"}],
             "rubrics": [{"criterion": "Answers safely.", "points": 5}, {"criterion": "Invents a dose.", "points": -5}]}
            for i in range(10)]
    path = tmp_path / "hb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    graded = load("decoevo_full.yaml", f"data.source=healthbench:{path}")
    assert [d.setting for d in settable(graded)] == ["roles.grader.kind"]
    assert settable(load("decoevo_full.yaml", f"data.source=healthbench:{path}", "roles.grader.kind=healthbench")) == []


# ---------------------------------------------------------------- plan
def test_plan_of_the_full_config_without_a_model(tmp_path):
    config = load("decoevo_full.yaml", f"data.source={writingbench_file(tmp_path / 'wb.jsonl', n=40)}")
    made = plan(config)
    parts = made.data["partitions"]
    ids = [i for group in parts.values() for i in group]
    assert len(ids) == len(set(ids)) == made.data["total"] == 40  # disjoint, nothing lost
    assert made.data["sizes"] == {name: len(group) for name, group in parts.items()}
    assert made.data["held_out"] == parts["test"] and made.data["lacking_gold_rubric"] == []
    assert {r.role: (r.engine, r.trained) for r in made.roles} == {
        "backbone": ("vllm", False), "grader": ("vllm", False)}
    assert [d.setting for d in made.departures] == UNAVOIDABLE
    # Every row of the paper's table is in `settings`; how the judges answer is one the paper
    # does not state (its copy has no prompts), so it is no departure.
    rows = {row.setting: row for row in made.settings}
    assert [name for name, row in rows.items() if row.departs] == UNAVOIDABLE and "roles.judge.output" in rows
    assert {"roles.grader.scale", "roles.backbone.thinking", "roles.grader.thinking"} <= set(rows)
    assert rows["roles.judge.output"].paper.startswith("not stated") and "roles.grader.model" in rows
    names = [s.name for s in made.stages]
    # 5 seeds x (zero_shot: diag, test; skillopt: inner, diag, test; sc_coevo / decoevo: + outer).
    assert len(names) == 5 * (2 + 3 + 4 + 4)
    assert names[:2] == ["seed0/zero_shot/diagnostic", "seed0/zero_shot/test"]
    assert "seed4/decoevo/outer" in names and "seed0/skillopt/outer" not in names
    inner = next(s for s in made.stages if s.name == "seed0/decoevo/inner")
    assert inner.items == 8 and "delta=0.02" in inner.note


def test_plan_of_the_tiny_config_names_its_departures_and_sizes():
    made = plan(load("decoevo_tiny.yaml"))
    assert made.data["sizes"]["test"] == 2 and made.data["sizes"]["train"] == 2
    assert {d.setting for d in made.departures} >= {"roles.backbone.model", "roles.grader.model"}
    assert any("roles.grader.model is unset" in note for note in made.notes)
    assert len([s for s in made.stages if s.name.endswith("/test")]) == 2 * 4  # 2 seeds x 4 methods


def test_plan_says_which_samples_lack_a_gold_rubric(tmp_path):
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps({"id": f"b{i}", "prompt": f"p{i}"}) + "\n" for i in range(30)))
    made = plan(load("decoevo_tiny.yaml", f"data.source={bare}", "partitions.sizes={}"))
    assert sorted(made.data["lacking_gold_rubric"]) == sorted(
        made.data["partitions"]["test"] + made.data["partitions"]["diagnostic"])
    assert any("no gold rubric" in note for note in made.notes)


# ---------------------------------------------------------------- the CI over runs
def _result(method, seed, scores):
    from coevo.algorithms.decoevo.summary import MethodResult, ScoringModes
    from coevo.core.types import Skill

    skill = Skill(name="solver", version=0, text="s")
    return MethodResult(method=method, seed=seed, test_scores=scores, test_ids=[f"t{i}" for i in range(len(scores))],
                        test_mean=None, test_scores_sampled=scores, test_mean_sampled=None,
                        scoring=ScoringModes(judge="sampled", auditor="sampled", grader="sampled"),
                        solver=skill, rubric_generator=skill.model_copy(update={"name": "rubric_generator"}),
                        trajectory=[], costs=[], invalid={})


def test_run_ci_is_a_t_interval_over_per_seed_differences():
    # Per-seed differences 0.1, 0.3, 0.2 (a question unreadable for one method is left out).
    results = {"decoevo/seed0": _result("decoevo", 0, [0.5, 0.7]), "skillopt/seed0": _result("skillopt", 0, [0.4, 0.6]),
               "decoevo/seed1": _result("decoevo", 1, [0.9, None]), "skillopt/seed1": _result("skillopt", 1, [0.6, 0.1]),
               "decoevo/seed2": _result("decoevo", 2, [0.6, 0.6]), "skillopt/seed2": _result("skillopt", 2, [0.4, 0.4])}
    ci = run_ci(results, [0, 1, 2], "decoevo", "skillopt")
    assert ci.level == "run" and ci.n_runs == 3
    assert ci.per_run == pytest.approx({"seed0": 0.1, "seed1": 0.3, "seed2": 0.2})
    half = 4.302653 * 0.1 / 3 ** 0.5  # t(0.975, df=2) x sd / sqrt(n)
    assert (ci.mean_diff, ci.low, ci.high) == pytest.approx((0.2, 0.2 - half, 0.2 + half), abs=1e-6)
    assert "t-interval" in ci.method


def test_t_quantile_matches_the_tables():
    assert [round(t_quantile(0.975, df), 3) for df in (1, 4, 30)] == [12.706, 2.776, 2.042]


@pytest.fixture(scope="module")
def two_seed_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("decoevo_paper")
    config = replay_run_config(tmp)
    return tmp, config, run_experiment(None, tmp / "run", data=config)


def test_summary_has_both_cis_with_their_levels(two_seed_run):
    tmp, _, summary = two_seed_run
    run, pooled = summary["decoevo_minus_skillopt_run_ci"], summary["decoevo_minus_skillopt_ci"]
    assert run["level"] == "run" and run["n_runs"] == 2 and set(run["per_run"]) == {"seed0", "seed1"}
    assert pooled["level"] == "pooled" and pooled["n_pairs"] == 6
    assert run["mean_diff"] == pytest.approx(pooled["mean_diff"])  # equal test sets: same mean
    assert run["low"] <= run["mean_diff"] <= run["high"]
    store = RunStore(tmp / "run")
    try:
        [shown] = [t for name, t in store.get_meta("tables").items() if name.startswith("DecoEvo − SkillOpt")]
    finally:
        store.close()
    assert [row["level"] for row in shown["rows"]] == ["run", "pooled"] and shown["rows"][0]["n"] == "2 runs"


def test_backbone_grader_is_a_departure_and_a_warning(two_seed_run):
    tmp, _, summary = two_seed_run
    assert "roles.grader.model" in [d["setting"] for d in summary["departures"]]
    store = RunStore(tmp / "run")
    try:
        warnings = store.get_meta("warnings")
    finally:
        store.close()
    assert any("roles.grader.model is unset" in w and "official grader" in w for w in warnings)


def test_one_seed_gives_no_run_interval_and_a_grader_gives_no_warning(tmp_path):
    config = replay_run_config(tmp_path, seeds=[0], methods=["skillopt", "decoevo"])
    grader = tmp_path / "grader.jsonl"  # the same answers under another spec: a separate grader
    shutil.copy(config["roles"]["backbone"]["model"].removeprefix("replay:"), grader)
    config["roles"] = {**config["roles"], "grader": {"model": f"replay:{grader}"}}
    summary = run_experiment(None, tmp_path / "run", data=config)
    run = summary["decoevo_minus_skillopt_run_ci"]
    assert run["n_runs"] == 1 and run["low"] is None and run["high"] is None
    assert "n=1" in run["note"] and run["mean_diff"] is not None
    assert "roles.grader.model" not in [d["setting"] for d in summary["departures"]]
    store = RunStore(tmp_path / "run")
    try:
        assert not any("roles.grader.model" in w for w in store.get_meta("warnings") or [])
    finally:
        store.close()
