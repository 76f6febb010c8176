"""The OpenAI-compatible backend against a real llama.cpp server started by the fixture."""

import asyncio
import time

import pytest

from coevo.llm.base import ModelError
from coevo.llm.openai_backend import OpenAIModel
from coevo.llm.specs import load_model
from coevo.core.types import Sampling

pytestmark = pytest.mark.slow

GREEDY = Sampling(temperature=0.0, max_tokens=16)


def test_batch_with_two_samples_each(llama_server, prompts):
    model = load_model(f"openai:smollm2@{llama_server}")
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=12, seed=5)
    out = model.generate(prompts, sampling, n=2)
    assert [len(row) for row in out] == [2, 2]
    assert all(c.text.strip() and c.prompt_tokens > 10 and c.completion_tokens > 0 for row in out for c in row)
    # llama.cpp's server ignores `n`; the backend noticed and asked once per sample, with
    # seeds 5 and 6, so the two samples differ.
    assert model._n_supported is False
    assert any(row[0].text != row[1].text for row in out)


def test_several_urls_and_failover_to_the_live_one(llama_server, dead_url, prompts):
    model = load_model(f"openai:smollm2@{llama_server},{dead_url},{llama_server}", backoff=0.01)
    # Round-robin sends some first attempts to the dead URL; each moves on to a live one.
    out = model.generate(prompts * 3, GREEDY, n=2)
    assert len(out) == 6 and all(row[0].text.strip() and row[0].text == row[1].text for row in out)


def test_unreachable_url_raises_naming_it_after_retries(dead_url, prompts):
    model = OpenAIModel("smollm2", [dead_url], max_retries=2, backoff=0.05)
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        model.generate(prompts[:1], GREEDY)
    assert dead_url in str(info.value) and "3 attempts" in str(info.value)
    # Two backoffs of 0.05 s and 0.1 s (times jitter in [0.5, 1]) happened, no more.
    assert 0.07 <= time.monotonic() - started < 10


def test_callable_from_inside_a_running_event_loop(llama_server, prompts):
    model = OpenAIModel("smollm2", [llama_server])

    async def caller():
        return model.generate(prompts[:1], GREEDY)

    [[completion]] = asyncio.run(caller())
    assert completion.text.strip()


def test_rejected_request_is_not_retried(llama_server, prompts):
    # A wrong path is a 404. (llama.cpp's server answers invalid fields with 500, not 4xx.)
    url = f"{llama_server}/nowhere"
    model = OpenAIModel("smollm2", [url], max_retries=3, backoff=5.0)
    started = time.monotonic()
    with pytest.raises(ModelError, match=f"{url} refused model 'smollm2': HTTP 404"):
        model.generate(prompts[:1], GREEDY)
    assert time.monotonic() - started < 5


def test_one_loop_and_one_client_per_url_for_the_model_s_lifetime(llama_server, prompts, monkeypatch):
    monkeypatch.setenv("COEVO_API_KEY", "secret-key-123")
    model = OpenAIModel("smollm2", [llama_server])
    model.generate(prompts[:1], GREEDY)
    loop, clients = model._loop, list(model._clients)
    model.generate(prompts, GREEDY)
    assert model._loop is loop and model._clients == clients and len(clients) == 1
    # The kept client never holds the key: each call's requests get it.
    assert clients[0].api_key != "secret-key-123" and "secret-key-123" not in repr(vars(model))
    model.close()
    assert model._loop is None
    [[again]] = model.generate(prompts[:1], GREEDY)  # a closed model starts afresh
    assert again.text.strip() and model._loop is not loop
    model.close()
