"""The KL estimate of RLAC's metrics, on a tiny random transformers model (fast)."""

import copy

import pytest

from coevo.algorithms.rlac.kl import kl_estimate
from coevo.llm.base import user
from coevo.core.types import Message


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

    assert kl_estimate(tiny, tiny, [user("Say hi.")], ["Hello there!"]) == pytest.approx(0.0, abs=1e-5)
    other = copy.copy(tiny)
    other.model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    assert kl_estimate(tiny, other, [user("Say hi.")], ["Hello there!"]) > 1e-3
    assert kl_estimate(other, tiny, [user("Say hi.")], ["Hello there!"]) > 1e-3


def test_kl_is_positive_on_every_single_sample_of_a_changed_model(tiny):
    """The plain log-ratio estimate goes negative on single samples; this one is the exact
    next-token KL summed along the sample, so any change of the model shows as > 0."""
    import torch

    other = copy.copy(tiny)
    other.model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    prompts = [user("Say hi."), user("Name a colour."), user("Count to three.")]
    samples = ["Hello there!", "Blue", "one two three"]
    for prompt, sample in zip(prompts, samples):
        assert kl_estimate(other, tiny, [prompt], [sample]) > 0.0


def test_the_kl_is_of_the_conversation_as_asked_system_message_included(tiny):
    """RLAC's paper prompts have a system message: the KL must score y after it, as the
    generator was sampled, not after the user message alone."""
    import torch

    other = copy.copy(tiny)
    other.model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for p in other.model.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    with_system = [Message(role="system", content="You write biographies of exactly four sentences."),
                   Message(role="user", content="Say hi.")]
    assert kl_estimate(other, tiny, [with_system], ["Hello there!"]) != pytest.approx(
        kl_estimate(other, tiny, [user("Say hi.")], ["Hello there!"]), rel=1e-4)
