"""The KL estimate of RLAC's metrics, on a tiny random transformers model (fast)."""

import copy

import pytest

from coevo.algorithms.rlac import kl_estimate


@pytest.fixture(scope="module")
def tiny():
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from coevo.llm.embedded import hf_dir
    from coevo.llm.local import LocalModel

    tokenizer = AutoTokenizer.from_pretrained(str(hf_dir()))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2)
    return LocalModel.from_loaded(LlamaForCausalLM(config).eval(), tokenizer, model_id="tiny")


def test_kl_of_a_model_with_itself_is_zero_and_a_changed_copy_differs(tiny):
    import torch

    assert kl_estimate(tiny, tiny, ["Say hi."], ["Hello there!"]) == pytest.approx(0.0, abs=1e-5)
    other = copy.copy(tiny)
    other.model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    assert kl_estimate(tiny, other, ["Say hi."], ["Hello there!"]) > 1e-3
    assert kl_estimate(other, tiny, ["Say hi."], ["Hello there!"]) > 1e-3


def test_kl_is_positive_on_every_single_sample_of_a_changed_model(tiny):
    """The plain log-ratio estimate goes negative on single samples; this one is the exact
    next-token KL summed along the sample, so any change of the model shows as > 0."""
    import torch

    other = copy.copy(tiny)
    other.model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    prompts = ["Say hi.", "Name a colour.", "Count to three."]
    samples = ["Hello there!", "Blue", "one two three"]
    for prompt, sample in zip(prompts, samples):
        assert kl_estimate(other, tiny, [prompt], [sample]) > 0.0
