"""scripts/random_llama.py: the model gpu_smoke.sh builds from a config on a machine with no
network. It must load as `hf:FOLDER`, chat, and take a real DPO step that changes weights."""

import importlib.util
from pathlib import Path

import torch

from coevo.llm.base import Sampling
from coevo.llm.specs import load_model
from coevo.train import DPOSettings, train_dpo
from coevo.core.types import Message, PreferencePair

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "random_llama.py"


def _script():
    spec = importlib.util.spec_from_file_location("random_llama", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_random_llama_from_a_config_loads_chats_and_trains(tmp_path):
    folder = _script().build(tmp_path / "llama", layers=2, hidden=64, intermediate=128, heads=4, kv_heads=2,
                             vocab_size=600)
    policy = load_model(f"hf:{folder}", trainable=True)
    assert policy.model.config.num_hidden_layers == 2
    [[answer]] = policy.generate([[Message(role="user", content="hi")]], Sampling(temperature=0.0, max_tokens=4))
    assert answer.completion_tokens == 4  # nothing trained it to stop
    before = policy.model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    pairs = [PreferencePair(prompt="Say hello.", chosen="Hello!", rejected="No.")] * 2
    result = train_dpo(policy, pairs, DPOSettings(max_steps=1, learning_rate=1e-3, max_length=64,
                                                  max_prompt_length=32), tmp_path / "dpo")
    assert result.steps == 1
    assert not torch.equal(before, policy.model.model.layers[0].self_attn.q_proj.weight)


def test_named_shapes_have_their_published_sizes_and_a_filled_vocabulary():
    script = _script()
    counts = {name: script.parameter_count(**shape) for name, shape in script.SHAPES.items()}
    # SmolLM2-135M 134.5M, Llama-3.2-1B 1.24B, Llama-3.2-3B 3.21B, Qwen3-8B 8.19B (their model cards).
    assert round(counts["smollm2-135m"] / 1e6, 1) == 134.5
    assert round(counts["llama3.2-1b"] / 1e9, 2) == 1.24 and round(counts["llama3.2-3b"] / 1e9, 2) == 3.21
    assert round(counts["qwen3-8b"] / 1e9, 2) == 8.19
    tokenizer = script.build_tokenizer(60_000)
    assert len(tokenizer) == 60_000  # the repository's text yields ~16k merges; placeholders fill the rest
    assert tokenizer.decode([59_999]).startswith("fill")
    assert max(tokenizer("def load_model(spec)")["input_ids"]) < 30_000  # text never encodes to a placeholder
