"""Per-role backend options: one `models.options` block, the same in every algorithm's config."""

import json

import pytest

from coevo.algorithms.decoevo import DecoEvoConfig
from coevo.algorithms.refine import RefineRunConfig
from coevo.algorithms.rlac import RlacConfig
from coevo.algorithms.taiscore import TaiScoreConfig
from coevo.config import ConfigError, apply_overrides, validate
from coevo.algorithms.controls import ControlsConfig
from coevo.llm import specs
from coevo.llm.base import ModelError

CONFIGS = [TaiScoreConfig, RlacConfig, DecoEvoConfig, RefineRunConfig, ControlsConfig]


@pytest.mark.parametrize("config_class", CONFIGS, ids=lambda c: c.__name__)
def test_every_config_takes_default_and_per_role_options(config_class):
    roles = config_class.model_fields["models"].annotation.role_names()
    role = roles[-1]
    data = apply_overrides({}, ["models.options.default.n_threads=1", f"models.options.{role}.timeout=30",
                                f"models.options.{role}.n_threads=2"])
    models = validate(config_class, data).models
    assert models.options_for(role) == {"n_threads": 2, "timeout": 30}  # the role's own wins
    assert models.options_for(roles[0]) == {"n_threads": 1}
    with pytest.raises(ConfigError, match=r"options for unknown role\(s\) \['nobody'\]"):
        validate(config_class, {"models": {"options": {"nobody": {}}}})


@pytest.mark.parametrize(("config_class", "old", "new"), [
    (DecoEvoConfig, {"model": "smollm2"}, "models.backbone"),
    (DecoEvoConfig, {"model_options": {}}, "models.options"),
    (RlacConfig, {"models": {"frozen_options": {}}}, "models.options"),
])
def test_moved_keys_name_their_new_place(config_class, old, new):
    with pytest.raises(ConfigError, match=f"is now '{new}"):
        validate(config_class, old)


def test_a_role_loads_its_spec_with_its_options(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(specs, "load_model", lambda spec, **kw: calls.append((spec, kw)))
    models = validate(TaiScoreConfig, {"models": {"judge": "openai:m@http://127.0.0.1:9/v1", "options": {
        "default": {"timeout": 5}, "judge": {"concurrency": 64}}}}).models
    models.load("judge", store="S")
    models.load("actor", trainable=True)
    models.load("critic", spec="smollm2:vllm")
    assert calls == [
        ("openai:m@http://127.0.0.1:9/v1", {"store": "S", "trainable": False, "timeout": 5, "concurrency": 64}),
        ("smollm2", {"store": None, "trainable": True, "timeout": 5}),
        ("smollm2:vllm", {"store": None, "trainable": False, "timeout": 5}),
    ]


def test_options_a_backend_does_not_take_are_named(tmp_path):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"completions": ["ok"]}) + "\n", encoding="utf-8")
    models = validate(TaiScoreConfig, {"models": {"judge": f"replay:{replay}", "options": {"judge": {"n_ctx": 1}}}}).models
    with pytest.raises(ModelError, match="does not take option"):
        models.load("judge")


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
