"""benchmarks/server_utilisation.py: its stand-in servers answer coevo's real TAIScore reward
(actor revisions, then the judge, both `openai:` models) readably, round-robin spreads the
batch evenly over every server, and busy time is the union of in-flight intervals. No
assertion here depends on how long anything took."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("server_utilisation", ROOT / "benchmarks" / "server_utilisation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _script()


@pytest.fixture(scope="module")
def servers(script):
    """Four stand-in servers that answer at once (no sleep), stopped by PID afterwards."""
    started = script.start_servers(4, seconds_per_token=0.0, answer_tokens=8)
    yield started
    script.stop_servers(started)
    assert all(process.poll() is not None for process, _url in started)


@pytest.mark.parametrize("scoring", ["expected", "sampled"])
def test_the_reward_reads_the_stand_in_judge_and_round_robin_reaches_every_server(script, servers, scoring):
    urls = [url for _process, url in servers]
    assert all(url.startswith("http://127.0.0.1:") for url in urls)
    reward_fn, models = script.reward_for(urls, concurrency=3, scoring=scoring)
    try:
        for url in urls:
            script.reset_server(url)
        prompts, critiques, columns = script.reward_batch(8, seed=0)
        rewards = reward_fn(prompts, critiques, **columns)
    finally:
        for model in models:
            model.close()
    # Read by the judge's own parser: 7 as written, or its expectation over the alternatives.
    assert len(rewards) == 8 and all(abs(r - script.JUDGE_SCORE) < 0.1 for r in rewards)
    if scoring == "sampled":
        assert rewards == [7.0] * 8
    logs = [script.request_log(url) for url in urls]
    # 8 revisions then 8 judge calls, each model's round-robin from its own counter: 2 + 2 each.
    assert [sorted(kind for _a, _b, kind in log) for log in logs] == [["judge"] * 2 + ["revision"] * 2] * 4


def test_busy_time_is_the_union_of_in_flight_intervals_within_the_window(script):
    intervals = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0), (9.0, 12.0)]
    assert script.busy_seconds(intervals, 0.0, 10.0) == pytest.approx(3.0 + 1.0 + 1.0)
    assert script.busy_seconds([], 0.0, 10.0) == 0.0
    assert script.in_flight_seconds(intervals, 0.0, 10.0) == pytest.approx(2 + 2 + 1 + 1)


def test_the_judge_answer_s_logprobs_spell_it_and_give_the_score_neighbours(script):
    body = {"messages": [{"role": "user", "content": "... Return valid JSON only."}], "logprobs": True,
            "top_logprobs": 20, "n": 2, "max_tokens": 5}
    answer = script.completion_body(body, 5)
    content = answer["choices"][0]["logprobs"]["content"]
    assert "".join(t["token"] for t in content) == script.JUDGE_ANSWER
    digit = next(t for t in content if t["token"] == "7")
    assert {"6", "8"} <= {alt["token"] for alt in digit["top_logprobs"]} and len(digit["top_logprobs"]) <= 20
    assert len(answer["choices"]) == 2 and answer["usage"]["completion_tokens"] == 10


def test_help_runs(script, capsys):
    with pytest.raises(SystemExit) as exit_:
        script.parse_args(["--help"])
    assert exit_.value.code == 0 and "utilisation" in capsys.readouterr().out
