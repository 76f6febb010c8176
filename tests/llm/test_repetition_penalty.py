"""`Sampling.repetition_penalty` reaches every engine, and leaves the cache keys of runs made
before it existed as they were."""

from __future__ import annotations

from coevo.llm.base import user
from coevo.llm.cache import call_key, call_request
from coevo.core.types import Sampling


def test_off_it_leaves_the_call_key_as_it_was_and_on_it_changes_it():
    conversation = user("Write a haiku.")
    plain = call_request(conversation, Sampling(max_tokens=8))
    assert "repetition_penalty" not in plain["sampling"]  # the key a run made before the setting had
    penalised = call_request(conversation, Sampling(max_tokens=8, repetition_penalty=1.2))
    assert penalised["sampling"]["repetition_penalty"] == 1.2
    assert call_key("m", plain) != call_key("m", penalised)


def test_a_server_gets_it_in_extra_body_only_when_set():
    from coevo.llm.openai_backend import OpenAIModel

    model = OpenAIModel("m", ["http://127.0.0.1:9/v1"], extra_body={"top_k": 0})
    messages = [{"role": "user", "content": "hi"}]
    assert model._params(messages, Sampling(), 1, None)["extra_body"] == {"top_k": 0}
    asked = model._params(messages, Sampling(repetition_penalty=1.3), 1, None)["extra_body"]
    assert asked == {"top_k": 0, "repetition_penalty": 1.3} and model.extra_body == {"top_k": 0}


def test_grpo_samples_with_it_in_trl_and_on_llama_cpp(tmp_path, monkeypatch):
    from coevo.llm import gguf_export
    from coevo.train.grpo import GRPOSettings, grpo_config
    from coevo.train.rollout import rollout_for

    settings = GRPOSettings(repetition_penalty=1.2, max_steps=1, rollout_engine="llamacpp")
    assert grpo_config(settings, tmp_path).repetition_penalty == 1.2
    monkeypatch.setattr(gguf_export, "copy_refusal", lambda model: None)  # any policy will do here
    policy = type("Policy", (), {"model": None})()
    assert rollout_for(policy, settings, tmp_path).repetition_penalty == 1.2
    assert rollout_for(policy, GRPOSettings(rollout_engine="llamacpp"), tmp_path).repetition_penalty == 1.0
    # Its context holds a whole prompt and a whole completion, no more (each token is KV cache).
    short = GRPOSettings(rollout_engine="llamacpp", max_prompt_length=700, max_completion_length=100)
    assert rollout_for(policy, short, tmp_path).n_ctx == 800
