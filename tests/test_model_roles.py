"""One role spec: `roles.<name>: {model, options, template, sampling}` in every algorithm's
config, `roles.default.options` under every role's own, and the old blocks refused with the
new place of each key."""

import json

import pytest

from coevo.algorithms.backend import Backend
from coevo.algorithms.controls import ControlsConfig
from coevo.algorithms.decoevo import DecoEvoConfig
from coevo.algorithms.refine import RefineRunConfig
from coevo.algorithms.rlac import RlacConfig
from coevo.algorithms.scaling import ScalingConfig
from coevo.algorithms.taiscore import TaiScoreConfig
from coevo.core.strict import ConfigError
from coevo.settings.config import ExperimentConfig, apply_overrides, validate
from coevo.llm import specs
from coevo.llm.base import ModelError
from coevo.settings.role_specs import RoleSet

CONFIGS = [TaiScoreConfig, RlacConfig, DecoEvoConfig, RefineRunConfig, ControlsConfig, ScalingConfig]


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_every_config_takes_default_and_per_role_options(config_class):
    roles = config_class.model_fields["roles"].annotation.role_names()
    role = roles[-1]
    data = apply_overrides({}, ["roles.default.options.n_threads=1", f"roles.{role}.options.timeout=30",
                                f"roles.{role}.options.n_threads=2"])
    specs_ = validate(config_class, data).roles
    assert specs_.options_for(role) == {"n_threads": 2, "timeout": 30}  # the role's own wins
    assert specs_.options_for(roles[0]) == {"n_threads": 1}
    with pytest.raises(ConfigError, match=r"unknown key 'roles\.nobody'"):
        validate(config_class, {"roles": {"nobody": {"options": {}}}})


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_the_critic_and_the_judge_are_the_same_role_names_everywhere(config_class):
    names = set(config_class.model_fields["roles"].annotation.model_fields)
    # DecoEvo's judge is its criterion judge; it has no critic (no critique is written there).
    assert "judge" in names and ("critic" in names or config_class is DecoEvoConfig)
    assert issubclass(config_class.model_fields["roles"].annotation, RoleSet)


@pytest.mark.parametrize(("config_class", "old", "new"), [
    (TaiScoreConfig, {"models": {"actor": "x", "options": {"default": {}, "judge": {}}}},
     ["models.actor -> roles.actor.model", "models.options.default -> roles.default.options",
      "models.options.judge -> roles.judge.options"]),
    (TaiScoreConfig, {"sampling": {"rollout": {}, "judge": {}}, "templates": {"critic": "c"}},
     ["sampling.rollout -> roles.actor.sampling.response and roles.critic.sampling",
      "sampling.judge -> roles.judge.sampling", "templates.critic -> roles.critic.template"]),
    (RefineRunConfig, {"sampling": {"revision": {}}}, ["sampling.revision -> roles.actor.sampling.revision"]),
    (ControlsConfig, {"templates": {"reviser_no_critique": "r"}},
     ["templates.reviser_no_critique -> roles.actor.template_no_critique"]),
    (DecoEvoConfig, {"model": "smollm2"}, ["roles.backbone.model"]),
    (DecoEvoConfig, {"model_options": {}}, ["roles.backbone.options"]),
    (RlacConfig, {"models": {"frozen_options": {}}}, ["models.frozen_options"]),
])
def test_old_keys_name_their_new_place(config_class, old, new):
    with pytest.raises(ConfigError) as caught:
        validate(config_class, old)
    message = str(caught.value)
    assert "\n" not in message and all(place in message for place in new), message


def test_every_experiment_refuses_moved_keys_by_the_one_shared_rule():
    """One validator (`ExperimentConfig._moved`) reads each config's `MOVED_KEYS`: a config
    with its own copy of the rule could drift from the others' messages."""
    from coevo.run.runner import _experiments

    configs = {experiment.config for experiment in _experiments().values()}
    assert configs == set(CONFIGS)
    for config_class in configs:
        assert issubclass(config_class, ExperimentConfig) and config_class.MOVED_KEYS, config_class.__name__
        before = [name for name, found in config_class.__pydantic_decorators__.model_validators.items()
                  if found.info.mode == "before"]
        assert before == ["_moved"] and "_moved" not in vars(config_class), config_class.__name__


def test_a_role_loads_its_spec_with_its_options(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(specs, "load_model", lambda spec, **kw: calls.append((spec, kw)))
    roles = validate(TaiScoreConfig, {"roles": {
        "default": {"options": {"timeout": 5}},
        "judge": {"model": "openai:m@http://127.0.0.1:9/v1", "options": {"concurrency": 64}}}}).roles
    roles.load("judge", store="S")
    roles.load("critic", spec="smollm2:vllm")
    assert calls == [
        ("openai:m@http://127.0.0.1:9/v1", {"store": "S", "trainable": False, "timeout": 5, "concurrency": 64}),
        ("smollm2:vllm", {"store": None, "trainable": False, "timeout": 5}),
    ]
    # Trainable weights load through the trainer seam, with the same options.
    trained = []
    Backend(load_trainable=lambda spec, **kw: trained.append((spec, kw))).model(roles, "actor", trainable=True)
    assert trained == [("smollm2", {"timeout": 5})]


def test_a_role_keeps_its_decoding_per_use(tmp_path):
    roles = validate(TaiScoreConfig, apply_overrides({}, [
        "roles.actor.sampling.response.max_tokens=33", "roles.critic.sampling.max_tokens=44",
        "roles.critic.template=critic_brief"])).roles
    assert roles.actor.sampling.response.max_tokens == 33 and roles.actor.sampling.revision.max_tokens == 2048
    assert roles.critic.sampling.max_tokens == 44 and roles.critic.template == "critic_brief"
    # A partial block keeps the role's own defaults (Table 12's rollout T 0.8 and top-p 0.95),
    # not the Sampling class's (T 0.7, top-p 1.0).
    assert (roles.critic.sampling.temperature, roles.critic.sampling.top_p) == (0.8, 0.95)
    assert roles.actor.sampling.response.temperature == 0.8
    assert roles.judge.sampling.temperature == 0.2  # Table 12's judge, untouched
    decoevo = validate(DecoEvoConfig, {"roles": {"solver": {"sampling": {"rollout": {"max_tokens": 5}}},
                                                 "judge": {"sampling": {"scoring": "sampled"}}}}).roles
    assert (decoevo.solver.sampling.rollout.temperature, decoevo.solver.sampling.rollout.max_tokens) == (1.0, 5)
    assert (decoevo.judge.sampling.max_tokens, decoevo.judge.sampling.temperature) == (400, 0.0)


def test_options_a_backend_does_not_take_are_named(tmp_path):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"completions": ["ok"]}) + "\n", encoding="utf-8")
    roles = validate(TaiScoreConfig, {"roles": {"judge": {"model": f"replay:{replay}",
                                                          "options": {"n_ctx": 1}}}}).roles
    with pytest.raises(ModelError, match="does not take option"):
        roles.load("judge")


def test_engine_option_picks_the_embedded_engine_and_nothing_else(monkeypatch, tmp_path):
    built = []
    specs.clear_loaded()  # a model an earlier test loaded would answer from the shared cache
    monkeypatch.setattr(specs, "_embedded", lambda spec, engine, trainable, options: built.append(engine))
    specs.load_model("smollm2", engine="llamacpp")
    specs.load_model("smollm2:vllm")
    assert built == ["llamacpp", "vllm"]
    with pytest.raises(ModelError, match="names engine 'vllm' but its options say engine='llamacpp'"):
        specs.load_model("smollm2:vllm", engine="llamacpp")
    with pytest.raises(ModelError, match="is for the embedded model"):
        specs.load_model(f"replay:{tmp_path / 'x.jsonl'}", engine="vllm")
    specs.clear_loaded()


@pytest.mark.parametrize("config_class", [TaiScoreConfig, RlacConfig, DecoEvoConfig], ids=lambda c: c.__name__)
def test_docs_config_lists_every_role_and_use(config_class):
    from pathlib import Path

    from coevo.core.types import Sampling

    page = (Path(__file__).parents[1] / "docs" / "config.md").read_text(encoding="utf-8")
    heading = {TaiScoreConfig: "### TAIScore", RlacConfig: "### RLAC", DecoEvoConfig: "### DecoEvo"}[config_class]
    page = page.split(heading, 1)[1].split("\n### ", 1)[0]  # the algorithm's own table
    role_set = config_class.model_fields["roles"].annotation
    for name, field in role_set.model_fields.items():
        if name == "default":
            continue
        assert f"| `{name}` |" in page, name
        sampling = getattr(field.default, "sampling", None)
        if sampling is not None and not isinstance(sampling, Sampling):
            row = next(line for line in page.splitlines() if line.startswith(f"| `{name}` |"))
            assert all(f"`{use}`" in row for use in type(sampling).model_fields), (name, row)
