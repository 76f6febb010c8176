"""The OpenAI backend against a real server (llama.cpp's, serving the embedded model) behind
a fault-injecting proxy (tests/llm/fault_proxy.py): every fault is survived by retrying
with backoff (Retry-After believed), a spent retry budget ends in one clear line, a server
killed and restarted mid-stage is waited for, and a run that failed on a dead server
resumes without asking again for anything that finished."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from coevo.llm.base import ModelError, user
from coevo.llm.openai_backend import OpenAIModel
from coevo.core.types import Sampling
from tests.llm.conftest import free_port
from tests.llm.fault_proxy import FaultProxy

pytestmark = pytest.mark.slow
GREEDY = Sampling(temperature=0.0, max_tokens=8)
HI = user("Say hi.")


def _model(proxy: FaultProxy, **options) -> OpenAIModel:
    return OpenAIModel("smollm2", [proxy.url], **{"backoff": 0.05, "max_retries": 3, "timeout": 60.0, **options})


@pytest.mark.parametrize("fault", ["500", "502", "503", "429", "timeout", "reset", "truncate", "malformed", "down"])
def test_each_fault_is_retried_until_the_answer_comes(llama_server, fault):
    with FaultProxy(llama_server, [fault], hold_s=30.0) as proxy:
        started = time.monotonic()
        # The read timeout is the client's: 10 s where the fault is one (the proxy holds 30 s).
        [[answer]] = _model(proxy, **({"timeout": 10.0} if fault == "timeout" else {})).generate([HI], GREEDY)
        seconds = time.monotonic() - started
    assert answer.text.strip()
    assert [f for f, _ in proxy.log] == [fault, "ok"]
    if fault == "429":
        assert seconds >= 0.95, "Retry-After: 1 was not waited for (the backoff alone is 0.05 s)"


def test_a_server_without_n_gets_one_request_per_sample(llama_server):
    with FaultProxy(llama_server, ["reject_n"]) as proxy:
        [answers] = _model(proxy).generate([HI], Sampling(temperature=0.8, max_tokens=8, seed=1), n=2)
    assert len(answers) == 2 and [f for f, _ in proxy.log] == ["reject_n", "ok", "ok"]


def test_a_spent_retry_budget_ends_in_one_line_naming_the_fix(llama_server):
    with FaultProxy(llama_server, after="503") as proxy:
        started = time.monotonic()
        with pytest.raises(ModelError) as failed:
            _model(proxy, max_retries=2).generate([HI], GREEDY)
    message = str(failed.value)
    assert "3 attempts" in message and "HTTP 503" in message and "max_retries" in message
    assert "\n" not in message and len(proxy.log) == 3 and time.monotonic() - started < 10


def test_a_server_that_takes_schemas_as_json_object_gets_them_so(llama_server):
    # llama-cpp-python's server refuses OpenAI's `json_schema` response format with a 500
    # naming `response_format`; the backend learns the `json_object` + `schema` form once.
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    model = OpenAIModel("smollm2", [llama_server], backoff=0.05, max_retries=2)
    sampling = Sampling(temperature=0.0, max_tokens=24, json_schema=json.dumps(schema))
    [[first]], [[second]] = (model.generate([user("Rate the sky from 1 to 10.")], sampling) for _ in range(2))
    assert isinstance(json.loads(first.text)["score"], int) and json.loads(second.text) == json.loads(first.text)
    assert model._schema_form == "json_object"


def _start_server(gguf, port: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
                             "--port", str(port), "--n_threads", "2", "--n_ctx", "2048"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, "llama_cpp.server exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    pytest.fail("llama_cpp.server did not start in 90 s")


def test_a_server_killed_and_restarted_mid_stage_is_waited_for(gguf):
    port = free_port()
    server = _start_server(gguf, port)
    try:
        with FaultProxy(f"http://127.0.0.1:{port}/v1") as proxy:
            model = _model(proxy, concurrency=1, max_retries=12, backoff=0.5, max_backoff=10.0, timeout=60.0)
            prompts = [user(f"Say the number {i}.") for i in range(6)]
            results: list = []
            stage = threading.Thread(target=lambda: results.append(model.generate(prompts, GREEDY)))
            stage.start()
            while not proxy.answered:  # the stage is under way
                time.sleep(0.05)
            server.kill()
            server.wait()
            time.sleep(1.0)
            server = _start_server(gguf, port)  # the same address, as a supervisor restarts it
            stage.join(timeout=120)
        assert results and len(results[0]) == 6 and all(answers[0].text for answers in results[0])
        assert any(fault == "ok" and status for fault, status in proxy.log)
    finally:
        server.kill()
        server.wait()


def test_a_run_failed_by_a_dead_server_resumes_asking_nothing_twice(llama_server, tmp_path):
    """Critique-content controls with the judge behind the proxy: the server goes down after
    three answers (the run fails with one line), comes back, and --resume asks it only what
    was never answered: the answers that arrived before the failure were kept. (The judge
    decodes under a schema: llama-cpp-python's server refuses OpenAI's `json_schema` form
    with a 500 naming `response_format`, and the backend switches to `json_object`.)"""
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import RunStore
    from tests.experiments.test_controls_replay import _setup

    config = _setup(tmp_path)
    with FaultProxy(llama_server, down_after_answers=3) as proxy:
        config["roles"]["judge"] = {"model": f"openai:smollm2@{proxy.url}",
                                    "options": {"max_retries": 1, "backoff": 0.05},
                                    "sampling": {"temperature": 0.0, "max_tokens": 48}}
        with pytest.raises(ModelError, match="2 attempts"):
            run_experiment(None, tmp_path / "run", data=config)
        assert RunStore(tmp_path / "run").get_meta("status") == "failed"
        answered_before = len(proxy.answered)
        assert answered_before >= 3  # (requests already with the server when it "went down" finish)
        proxy.down_after_answers = None  # the server is back
        summary = run_experiment(None, tmp_path / "run", data=config, resume=True)
    assert summary["table"]["rows"]
    bodies = [json.dumps(json.loads(body)["messages"], sort_keys=True) for body in proxy.answered]
    assert len(bodies) == len(set(bodies)), "a request answered before the failure was asked again"
    assert len(bodies) > answered_before
