"""One request of the OpenAI backend against a scripted client, no server: the request's
fields, retries with backoff (Retry-After believed), URL failover, a refused request not
retried, the json_object schema form learnt from a refusal, and the one-line final error
(the same against a real server behind a fault proxy: test_llm_faults.py, slow)."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import httpx
import openai
import pytest

from coevo.llm import openai_backend
from coevo.llm.base import ModelError
from coevo.llm.openai_backend import OpenAIModel
from coevo.core.types import Sampling

MESSAGES = [{"role": "user", "content": "hi"}]


def status(code: int, message: str = "boom", retry_after: str | None = None) -> openai.APIStatusError:
    response = httpx.Response(code, headers={"retry-after": retry_after} if retry_after else {},
                              request=httpx.Request("POST", "http://x/v1/chat/completions"))
    return {429: openai.RateLimitError, 400: openai.BadRequestError}.get(code, openai.APIStatusError)(
        message, response=response, body=None)


def answer(text: str = "hello") -> SimpleNamespace:
    choice = SimpleNamespace(index=0, message=SimpleNamespace(content=text), logprobs=None)
    return SimpleNamespace(choices=[choice], usage=SimpleNamespace(prompt_tokens=3, completion_tokens=2))


class Client:
    """A client whose create() plays `script` in turn: an exception is raised, else returned."""

    def __init__(self, url: str, script: list):
        self.base_url, self.script, self.asked = url, script, []
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    async def create(self, **params):
        self.asked.append(json.loads(json.dumps(params)))
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


@pytest.fixture
def slept(monkeypatch):
    waits: list[float] = []

    async def sleep(seconds):
        waits.append(seconds)

    monkeypatch.setattr(openai_backend.asyncio, "sleep", sleep)
    monkeypatch.setattr(openai_backend.random, "uniform", lambda lo, hi: 1.0)
    return waits


def request(model: OpenAIModel, clients: list[Client], sampling: Sampling, n: int = 1, seed: int | None = None):
    limits = [asyncio.Semaphore(1) for _ in clients]
    return asyncio.run(model._request(clients, limits, MESSAGES, sampling, n, seed))


def test_the_request_holds_only_the_fields_its_sampling_sets(slept):
    client = Client("http://a/v1", [answer(), answer()])
    model = OpenAIModel("m", ["http://a/v1"], extra_body={"top_k": 0})
    [completion] = request(model, [client], Sampling(temperature=0.5, top_p=0.9, max_tokens=7))
    assert completion.text == "hello" and completion.prompt_tokens == 3 and completion.completion_tokens == 2
    assert client.asked[0] == {"model": "m", "messages": MESSAGES, "temperature": 0.5, "top_p": 0.9,
                               "max_tokens": 7, "extra_body": {"top_k": 0}}
    schema = {"type": "object"}
    request(model, [client], Sampling(max_tokens=7, stop=["\n"], logprobs=3, json_schema=json.dumps(schema)),
            n=2, seed=5)
    asked = client.asked[1]
    assert {k: asked[k] for k in ("n", "seed", "stop", "logprobs", "top_logprobs")} == {
        "n": 2, "seed": 5, "stop": ["\n"], "logprobs": True, "top_logprobs": 3}
    assert asked["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    assert slept == []


def test_a_failure_is_retried_on_the_next_url_after_a_backoff_or_the_retry_after(slept):
    a = Client("http://a/v1", [status(503), status(429, retry_after="3")])
    b = Client("http://b/v1", [status(502), answer("late")])
    model = OpenAIModel("m", ["http://a/v1", "http://b/v1"], backoff=0.5, max_backoff=30.0)
    [completion] = request(model, [a, b], Sampling(max_tokens=4))
    assert completion.text == "late" and len(a.asked) == len(b.asked) == 2
    assert slept == [0.5, 1.0, 3.0]  # 0.5 x 2^attempt, then the server's Retry-After: 3 where longer


def test_a_refused_request_is_not_retried(slept):
    client = Client("http://a/v1", [status(400, "unknown model")])
    with pytest.raises(ModelError, match=r"http://a/v1 refused model 'm': HTTP 400 unknown model") as refused:
        request(OpenAIModel("m", ["http://a/v1"]), [client], Sampling(max_tokens=4))
    assert refused.value.status == 400 and len(client.asked) == 1 and slept == []


def test_a_server_refusing_the_json_schema_form_is_asked_again_at_once_in_the_json_object_form(slept):
    client = Client("http://a/v1", [status(500, "'response_format' is not supported"), answer("{}")])
    model = OpenAIModel("m", ["http://a/v1"])
    [completion] = request(model, [client], Sampling(max_tokens=4, json_schema='{"type": "object"}'))
    assert completion.text == "{}" and slept == []
    assert [asked["response_format"]["type"] for asked in client.asked] == ["json_schema", "json_object"]
    assert client.asked[1]["response_format"]["schema"] == {"type": "object"}
    assert model._schema_form == "json_object"  # learnt for the model's later requests


def test_a_spent_budget_is_one_line_naming_each_url_and_failure_once(slept):
    malformed = ValueError("not JSON")
    client = Client("http://a/v1", [status(503), status(503), malformed])
    with pytest.raises(ModelError) as failed:
        request(OpenAIModel("m", ["http://a/v1"], max_retries=2, backoff=1.0, max_backoff=1.5), [client],
                Sampling(max_tokens=4))
    assert str(failed.value) == ("model 'm' failed after 3 attempts (http://a/v1 (HTTP 503); http://a/v1 (malformed "
                                 "response: ValueError)); check the server, or allow more with the model options "
                                 "max_retries / backoff")
    assert slept == [1.0, 1.5]  # none after the last attempt; max_backoff caps the second
