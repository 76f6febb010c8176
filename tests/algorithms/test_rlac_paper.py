"""The RLAC paper's settings: the full configs are the paper, the tiny ones list how they are
not, and `plan` tells a run's data split and stages without loading a model."""

import json

import pytest
from pydantic import BaseModel

import coevo.llm.specs as specs
from coevo.algorithms.rlac.paper import PAPER_CODE, PAPER_FACTS, departures, plan, settings
from coevo.algorithms.rlac.stages import STAGE, round_stage
from coevo.settings.config import read_yaml
from coevo.settings.departures import config_value
from coevo.run.runner import resolve_config

EXAMPLES = "examples"


def load(name, **changes):
    data = read_yaml(f"{EXAMPLES}/{name}")
    for key, value in changes.items():
        node = data
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return resolve_config(data, name)[1]


@pytest.fixture
def no_model_loads(monkeypatch):
    """Any model load (or vLLM/transformers import by a load) fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("plan loaded a model")

    monkeypatch.setattr(specs, "load_model", refuse)
    monkeypatch.setattr(specs, "_build", refuse)


@pytest.mark.parametrize("name", ["rlac_bio_full.yaml", "rlac_code_full.yaml"])
def test_the_full_configs_are_the_paper(name):
    # But for what no coevo setting changes yet: Table 3's other code benchmarks, and FactScore
    # itself (coevo's reimplementation, not the package).
    found = departures(load(name))
    assert [d for d in found if d.settable] == []
    assert [d.setting for d in found] == ["evaluation.evaluator"]
    if "bio" in name:
        assert "coevo's FactScore" in str(found[0].here) and "BM25" in str(found[0].here)
    rows = {row.setting for row in settings(load(name))}
    assert {"evaluation.evaluator", "roles.generator.thinking", "roles.critic.thinking"} <= rows
    assert ("facts.judge_output" if "bio" in name else "validator.output") in rows


@pytest.mark.parametrize("name", ["rlac_bio_full.yaml", "rlac_code_full.yaml"])
def test_every_paper_setting_is_a_config_path(name):
    config = load(name)
    rows = PAPER_FACTS if config.task == "facts" else PAPER_CODE
    assert len(rows) >= 10
    for row in (r for r in rows if r.here_of is None):  # a row worked out from the config has no path
        # Each part of the path a declared field (getattr alone would take a method or a
        # property, and `departures` would then compare the paper's value with that).
        *sections, last = row.setting.split(".")
        node = config
        for part in sections:
            node = getattr(node, part)
            assert isinstance(node, BaseModel), (row.setting, part)
        assert last in type(node).model_fields, row.setting
        # The full config is the paper: the value read there is the paper's, where the row applies.
        if row.applies is None or row.applies(config):
            assert not row.departs(config_value(config, row.setting)), row.setting


def test_the_tiny_configs_list_their_departures():
    bio = {d.setting for d in departures(load("rlac_bio_tiny.yaml"))}
    assert {"roles.generator.model", "roles.critic.model", "k", "n", "data.source", "data.train", "data.heldout",
            "critic_form", "facts.judge", "iterations"} <= bio
    code = {d.setting for d in departures(load("rlac_code_tiny.yaml"))}
    assert {"roles.generator.model", "k", "data.source", "data.train", "data.heldout_source", "critic_form",
            "roles.generator.template"} <= code
    # The bundled easy set is coevo's, not the paper's AceCode-87K-hard: a departure, not a user's file.
    easy = {d.setting: d for d in departures(load("rlac_code_easy.yaml"))}
    assert easy["data.source"].here == "bundled:code_easy" and easy["data.train"].here == 16
    assert all(d.why for d in departures(load("rlac_bio_tiny.yaml")))
    # The bio generator's prompt is the paper's; the schema critic's own prompt is `critic_form`'s departure.
    assert not {"roles.generator.template", "roles.critic.template"} & bio


def test_the_full_configs_use_the_papers_templates_and_any_other_is_listed(tmp_path):
    bio, code = load("rlac_bio_full.yaml"), load("rlac_code_full.yaml")
    assert (bio.roles.generator.template, bio.roles.critic.template) == ("generator_bio", "critic_fact")
    assert (code.roles.generator.template, code.roles.critic.template) == ("generator_code", "critic_code")
    [wrapped] = settable(load("rlac_code_full.yaml", **{"roles.generator.template": "generator_code_instructed"}))
    assert (wrapped.setting, wrapped.paper, wrapped.here) == ("roles.generator.template", "generator_code",
                                                              "generator_code_instructed")
    own = tmp_path / "my_critic.md"
    own.write_text("<<system>>\nBe harsh.\n<<user>>\n{topic}: {numbered_paragraph}\n")
    [critic] = settable(load("rlac_bio_full.yaml", **{"roles.critic.template": str(own)}))
    assert critic.setting == "roles.critic.template" and critic.paper == "critic_fact"
    # The schema form brings its own critic prompt: the default follows the form.
    assert load("rlac_bio_full.yaml", critic_form="schema").roles.critic.template == "critic_fact_schema"


@pytest.mark.parametrize("name, changes, message", [
    ("rlac_bio_full.yaml", {"roles.generator.template": "generator_code"}, "is a code template"),
    ("rlac_code_full.yaml", {"roles.critic.template": "critic_code_schema"},
     "does not fit task code with critic_form paper"),
    ("rlac_bio_full.yaml", {"roles.critic.template": "critic_code"}, "does not fit task facts"),
])
def test_a_bundled_template_of_another_task_or_form_is_refused(name, changes, message):
    from coevo.core.strict import ConfigError

    with pytest.raises(ConfigError, match=message):
        load(name, **changes)


def test_an_old_shape_config_is_refused_with_the_new_place_of_each_key():
    from coevo.algorithms.rlac import RlacConfig
    from coevo.core.strict import ConfigError
    from coevo.settings.config import validate

    old = {"algorithm": "rlac", "models": {"generator": "x", "options": {"judge": {"n_threads": 1}}},
           "sampling": {"splitter": {"temperature": 0.0, "max_tokens": 96}, "eval": {"max_tokens": 32}},
           "templates": {"critic": "critic_fact"}}
    with pytest.raises(ConfigError) as caught:
        validate(RlacConfig, old)
    message = str(caught.value)
    for new in ("roles.generator.model", "roles.judge.sampling.split", "roles.generator.sampling.eval",
                "roles.critic.template", "roles.judge.options"):
        assert new in message, (new, message)
    # The new shape of the same settings is taken.
    new = validate(RlacConfig, {"algorithm": "rlac", "critic_form": "paper", "roles": {
        "generator": {"model": "x", "sampling": {"eval": {"max_tokens": 32}}},
        "judge": {"options": {"n_threads": 1}, "sampling": {"split": {"temperature": 0.0, "max_tokens": 96}}},
        "critic": {"template": "critic_fact"}}})
    assert new.roles.spec("generator") == "x" and new.roles.judge.sampling.split.max_tokens == 96
    assert new.roles.options_for("judge") == {"n_threads": 1}


def test_the_tiny_yaml_comments_name_every_departure():
    for name in ("rlac_bio_tiny.yaml", "rlac_code_tiny.yaml", "rlac_code_easy.yaml", "rlac_bio_easy.yaml"):
        text = open(f"{EXAMPLES}/{name}", encoding="utf-8").read()
        comments = "\n".join(line for line in text.splitlines() if line.lstrip().startswith("#"))
        found = departures(load(name))
        assert found and comments, name  # a small config departs: else the check below checks nothing
        missing = [d.setting for d in found if d.setting not in comments and d.settable]
        assert missing == [], f"{name}: departures not named in its comment block: {missing}"


def settable(config) -> list:
    """The departures a config could remove (not the fact judge's schema-bound answer, which
    no coevo setting changes yet)."""
    return [d for d in departures(config) if d.settable]


def test_a_baseline_switch_is_no_departure_but_another_reward_model_is():
    assert settable(load("rlac_bio_full.yaml", verification="enumerative")) == []
    assert settable(load("rlac_bio_full.yaml", verification="reward_model")) == []
    [other] = settable(load("rlac_bio_full.yaml", verification="reward_model", reward_model="hf:/models/my-rm"))
    assert other.setting == "reward_model" and other.here == "hf:/models/my-rm"
    # The paper's Table 1 grid (Qwen3-4B, four sentences) is the paper too, at Table 1's 12 rounds.
    small = {"roles.generator.model": "vllm:/m/Qwen3-4B", "roles.critic.model": "hf:Qwen/Qwen3-4B", "data.sentences": 4}
    assert settable(load("rlac_bio_full.yaml", iterations=12, **small)) == []
    [rounds] = settable(load("rlac_bio_full.yaml", **small))
    assert (rounds.setting, rounds.paper, rounds.here) == ("iterations", 12, 16)


def test_the_settings_rows_give_table_1s_rounds_for_each_backbone_and_length():
    from coevo.algorithms.rlac.paper import settings

    for model, sentences, rounds in (("Qwen3-4B", 4, 12), ("Qwen3-4B", 8, 10), ("Qwen3-8B", 4, 8), ("Qwen3-8B", 8, 16)):
        config = load("rlac_bio_full.yaml", **{"roles.generator.model": f"hf:Qwen/{model}", "data.sentences": sentences})
        [row] = [r for r in settings(config) if r.setting == "iterations"]
        assert row.paper == rounds and row.departs == (rounds != 16)


def test_the_code_baselines_say_how_they_differ_from_acecoder():
    [d] = settable(load("rlac_code_full.yaml", verification="enumerative"))
    assert d.setting == "verification" and "AceCoder-Rule" in d.paper and "2000" in d.here


def write_people(path, n):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"title": f"Person {i}", "text": f"Person {i} was born in Town {i}."}) + "\n")


def write_problems(path, n, prefix="p"):
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"{prefix}{i}", "prompt": f"def f{i}(x):\n    \"\"\"Return x.\"\"\"\n",
                                 "entry_point": f"f{i}", "reference": f"def f{i}(x):\n    return x\n",
                                 "tests": [f"assert f{i}(1) == 1"]}) + "\n")


def test_plan_of_the_full_bio_config_splits_120_and_50_people(tmp_path, no_model_loads):
    write_people(tmp_path / "people.jsonl", 170)
    config = load("rlac_bio_full.yaml", **{"data.source": str(tmp_path / "people.jsonl")})
    got = plan(config)
    assert [d.setting for d in got.departures] == ["evaluation.evaluator"] and got.algorithm == "rlac"  # FactScore
    assert got.data["train_size"] == 120 and got.data["held_out_size"] == 50
    assert len(set(got.data["train"]) | set(got.data["held_out"])) == 170  # disjoint, every person
    assert got.data["train"] != [f"bio:person-{i}" for i in range(120)]    # a seeded draw, not file order
    kinds = [s.name.rsplit("/", 1)[1] for s in got.stages if s.round == 1]
    assert kinds == ["generate", "critic", "validate", "generator", "critic_dpo", "evaluate"]
    assert len([s for s in got.stages if s.name.endswith("/generate")]) == 16
    assert [s.items for s in got.stages if s.name == round_stage(1, "critic", prefix=STAGE)] == [120 * 10 * 4]
    roles = {r.role: (r.engine, r.trained) for r in got.roles}
    # Both trained roles generate on vLLM copies of their weights (the full configs' fast path).
    assert roles == {"generator": ("vllm", True), "critic": ("vllm", True), "judge": ("vllm", False)}


def test_plan_without_the_data_says_what_to_bring(no_model_loads):
    got = plan(load("rlac_bio_full.yaml"))  # data/wikibio_170.jsonl is the user's to bring
    assert got.data["train"] == [] and got.data["train_size"] == 0
    assert any("bring" in note and "WikiBio" in note for note in got.notes)
    assert got.stages[1].items == 120 * 10  # sizes still come from the config


def test_plan_of_the_full_code_config_draws_2000_problems_and_holds_out_humaneval(tmp_path, no_model_loads):
    write_problems(tmp_path / "acecode.jsonl", 2500)
    write_problems(tmp_path / "bench.jsonl", 164, prefix="bench/")
    config = load("rlac_code_full.yaml", **{"data.source": str(tmp_path / "acecode.jsonl"),
                                            "data.heldout_source": str(tmp_path / "bench.jsonl")})
    got = plan(config)
    assert got.data["train_size"] == 2000 and got.data["held_out_size"] == 164
    assert all(i.startswith("bench/") for i in got.data["held_out"])
    assert [d.setting for d in got.departures] == ["data.heldout_source", "evaluation.evaluator"]  # not HumanEval
    assert any("MBPP" in note for note in got.notes)
    # App. B.2's count: 2,000 problems x 8 outputs x 2 proposals x 3 iterations, 2 executions each.
    assert got.data["verifications"] == {"unit": "executions", "per_proposal": 2, "total": 192_000}
    [row] = [r for r in got.settings if r.setting == "code.executions"]
    assert "2 sandboxed runs per proposal" in row.here and "192K" in str(row.paper) and not row.departs


def test_plan_of_the_tiny_configs_names_their_ids_and_embedded_models(no_model_loads):
    code = plan(load("rlac_code_tiny.yaml"))
    assert code.data["train"] == ["code_easy/0", "code_easy/1", "code_easy/10"]
    assert code.data["held_out"] == ["code_easy/2", "code_easy/20"]
    bio = plan(load("rlac_bio_tiny.yaml"))
    assert bio.data["train_size"] == 3 and bio.data["held_out_size"] == 2
    assert {r.role for r in bio.roles} == {"generator", "critic", "judge"}
    assert bio.departures and len([s for s in bio.stages if s.kind == "dpo"]) == 4  # 2 rounds x 2 roles
    # The trained roles write on llama.cpp copies of their weights (generator_engine, critic_engine).
    for tiny in (code, bio):
        assert {r.role: (r.engine, r.trained) for r in tiny.roles if r.trained} == {
            "generator": ("llamacpp", True), "critic": ("llamacpp", True)}


def test_plan_of_the_reward_model_baseline_scores_instead_of_critiquing(no_model_loads):
    got = plan(load("rlac_bio_tiny.yaml", verification="reward_model", reward_model="hf:/models/rm"))
    assert [s.name for s in got.stages if s.round == 1] == [
        round_stage(1, step, prefix=STAGE) for step in ("generate", "reward_model", "generator", "evaluate")]
    assert ("reward_model", "transformers", False) in {(r.role, r.engine, r.trained) for r in got.roles}
    assert "critic" not in {r.role for r in got.roles}
