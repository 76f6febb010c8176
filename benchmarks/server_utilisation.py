"""How busy coevo keeps N OpenAI-compatible servers during one GRPO reward batch (issue 57, 3c).

Why: a TAIScore critic step spends its reward time in model calls (the actor's revisions,
then the judge's scores) on servers the run pays for. If the client sends them one at a
time, or sends them unevenly, the servers sit idle and the step waits on the client. This
benchmark measures how much of the wall time the servers are actually working.

What it runs: the real reward function (`coevo.algorithms.taiscore.rewards.make_reward_fn`)
with an `Actor` and the `taiscore` judge, both on `openai:` models
(`openai:actor@URL1,...,URLn` and `openai:judge@URL1,...,URLn`, loaded with
`coevo.llm.specs.load_model(spec, concurrency=C)`), over a batch of B rollouts: B revision
requests, then B judge requests. The URLs are N stand-in servers this script starts on
127.0.0.1 (one process each, on a port the server picks itself) and stops by PID at the end.

The stand-in server (`serve`, aiohttp) answers `/v1/chat/completions` after an asyncio sleep of
`answer_tokens x seconds_per_token` (answer_tokens capped by the request's max_tokens), so
any number of requests are served at once, as vLLM batches them: the only thing that can
leave it idle is the client. It answers a judge prompt with a TAIScore JSON the judge's
parser accepts (score 7), with per-token log-probabilities when asked (the judge asks, to
score by expectation), and anything else with filler text; it reports `usage`. It records
each request's [start, end] on the machine's monotonic clock, read back through `/stats`.

The numbers:
- utilisation (the target): for each server, the fraction of the batch's wall time during
  which it had at least one request in flight (the union of its request intervals, clipped
  to the batch's window, / wall time); averaged over the N servers (`least_busy_server`: the
  lowest single server's). "At least one in flight" is the right notion for a server that
  batches: it is working. It does not see how full the batch is, and the stand-in has no
  batch limit, so a small C costs nothing here; on vLLM it means smaller batches (occupancy).
- occupancy: mean requests in flight per server (sum of interval lengths / (N x wall)), how
  full the servers' batches were; `ideal_s`: the wall time with no client overhead,
  2 phases x ceil(B / (N x C)) waves x one request's sleep; `efficiency` = ideal_s / wall.
- requests/s: 2B / wall; the wall's split: revision phase (batch start to the last revision's
  end), gap (to the first judge request: the client reading revisions and rendering judge
  prompts), judge phase; client CPU ms/request: this process's CPU time / 2B (the client's
  cost per request, whatever else the machine runs).
`concurrency` C is per URL (coevo's backend keeps one semaphore per URL), so C x N requests
can be in flight at once, spread round-robin.

Both judge scorings are swept: `expected` (coevo's default, 20 top log-probabilities per
generated token, which the client must parse) and `sampled` (none).

    .venv/bin/python benchmarks/server_utilisation.py [--servers 1 2 4] [--concurrency 4 16 64]
        [--judge-scoring expected sampled] [--batch 64] [--answer-tokens 64] [--ms-per-token 2]
        [--repeats 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results" / "server_utilisation.json"
JUDGE_SCORE = 7
JUDGE_ANSWER = json.dumps({
    "critique_quality": {"score": JUDGE_SCORE, "reason": "Specific and actionable."},
    "critique_uptake": {"score": JUDGE_SCORE, "reason": "Response B follows it."},
    "quality_gain": {"score": JUDGE_SCORE, "reason": "The targeted issue is fixed."},
    "prompt_faithfulness": {"score": JUDGE_SCORE, "reason": "Stays on the prompt."},
    "score": JUDGE_SCORE,
})
REVISION_ANSWER = "A revised answer that follows the critique and keeps to the prompt."

# --------------------------------------------------------------------------- stand-in server


def answer_text(body: dict[str, Any]) -> str:
    """The judge's JSON for a judge prompt (it asks for a schema, or says JSON), else filler."""
    last = str((body.get("messages") or [{}])[-1].get("content", ""))
    return JUDGE_ANSWER if body.get("response_format") or "Return valid JSON" in last else REVISION_ANSWER


def token_logprobs(text: str, top: int) -> dict[str, Any]:
    """`logprobs.content` spelling `text` exactly: each piece sure of itself, with `top`
    alternatives (other digits where the piece is a digit, so a score has neighbours)."""
    content = []
    for piece in re.findall(r"\d|\w+|\s+|[^\w\s]", text):
        others = [str(d) for d in range(10) if str(d) != piece] if piece.isdigit() else [f" alt{i}" for i in range(top)]
        alternatives = [{"token": piece, "logprob": -0.05, "bytes": None}]
        alternatives += [{"token": o, "logprob": -6.0 - i, "bytes": None} for i, o in enumerate(others[:max(top - 1, 0)])]
        content.append({"token": piece, "logprob": -0.05, "bytes": None, "top_logprobs": alternatives})
    return {"content": content}


def completion_body(body: dict[str, Any], answer_tokens: int) -> dict[str, Any]:
    """An OpenAI chat completion answering `body`: n choices, usage, logprobs if asked."""
    text = answer_text(body)
    want_logprobs = bool(body.get("logprobs"))
    choice = {"finish_reason": "stop", "message": {"role": "assistant", "content": text},
              "logprobs": token_logprobs(text, int(body.get("top_logprobs") or 0)) if want_logprobs else None}
    n = int(body.get("n") or 1)
    prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
    return {"id": "stand-in", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "stand-in"),
            "choices": [dict(choice, index=i) for i in range(n)],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": answer_tokens * n,
                      "total_tokens": prompt_tokens + answer_tokens * n}}


def make_app(seconds_per_token: float, answer_tokens: int) -> Any:
    """The aiohttp app: chat completions after an async sleep, and the request log."""
    from aiohttp import web

    intervals: list[list[Any]] = []  # [start, end, "judge" | "revision"]

    async def chat(request: web.Request) -> web.Response:
        started = time.monotonic()
        body = await request.json()
        tokens = min(answer_tokens, int(body.get("max_tokens") or answer_tokens))
        await asyncio.sleep(tokens * seconds_per_token)
        answer = completion_body(body, tokens)
        kind = "judge" if answer["choices"][0]["message"]["content"] == JUDGE_ANSWER else "revision"
        intervals.append([started, time.monotonic(), kind])
        return web.json_response(answer)

    async def stats(_request: web.Request) -> web.Response:
        return web.json_response({"intervals": intervals})

    async def reset(_request: web.Request) -> web.Response:
        intervals.clear()
        return web.json_response({"ok": True})

    async def models(_request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "stand-in", "object": "model"}]})

    app = web.Application()
    app.add_routes([web.post("/v1/chat/completions", chat), web.get("/stats", stats),
                    web.post("/reset", reset), web.get("/v1/models", models)])
    return app


def serve(seconds_per_token: float, answer_tokens: int) -> None:
    """Run one stand-in server on 127.0.0.1, on a port it picks; print `PORT <n>` when ready."""
    import socket

    from aiohttp import web

    async def main() -> None:
        runner = web.AppRunner(make_app(seconds_per_token, answer_tokens), access_log=None)
        await runner.setup()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        await web.SockSite(runner, sock).start()
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(main())
    except ImportError:
        asyncio.run(main())


# --------------------------------------------------------------------------- server processes


def start_servers(count: int, seconds_per_token: float, answer_tokens: int) -> list[tuple[subprocess.Popen, str]]:
    """`count` stand-in servers, each its own process; (process, base URL) per server."""
    started: list[tuple[subprocess.Popen, str]] = []
    try:
        for _ in range(count):
            process = subprocess.Popen(
                [sys.executable, __file__, "serve", "--ms-per-token", str(seconds_per_token * 1000),
                 "--answer-tokens", str(answer_tokens)],
                stdout=subprocess.PIPE, text=True)
            line = process.stdout.readline() if process.stdout else ""
            if not line.startswith("PORT "):
                started.append((process, ""))
                raise RuntimeError(f"stand-in server {process.pid} did not start: {line!r}")
            started.append((process, f"http://127.0.0.1:{int(line.split()[1])}/v1"))
    except BaseException:
        stop_servers(started)
        raise
    return started


def stop_servers(servers: list[tuple[subprocess.Popen, str]]) -> None:
    """Stop each server by its PID (SIGTERM, then SIGKILL after 5 s)."""
    for process, _url in servers:
        if process.poll() is None:
            os.kill(process.pid, 15)
    for process, _url in servers:
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, 9)
            process.wait()


def _server_call(url: str, path: str, method: str = "GET") -> dict[str, Any]:
    root = url.removesuffix("/v1")
    request = urllib.request.Request(root + path, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def request_log(url: str) -> list[tuple[float, float, str]]:
    """(start, end, kind) of every request the server at `url` answered since its last reset."""
    return [(a, b, kind) for a, b, kind in _server_call(url, "/stats")["intervals"]]


def reset_server(url: str) -> None:
    _server_call(url, "/reset", "POST")


# --------------------------------------------------------------------------- measures


def busy_seconds(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Length of the union of `intervals` within [start, end]: time with >= 1 in flight."""
    clipped = sorted((max(a, start), min(b, end)) for a, b in intervals if b > start and a < end)
    total, run_start, run_end = 0.0, None, None
    for a, b in clipped:
        if run_end is None or a > run_end:
            total += (run_end - run_start) if run_end is not None else 0.0
            run_start, run_end = a, b
        else:
            run_end = max(run_end, b)
    return total + ((run_end - run_start) if run_end is not None else 0.0)


def in_flight_seconds(intervals: list[tuple[float, float]], start: float, end: float) -> float:
    """Sum of the intervals' lengths within [start, end] (request-seconds)."""
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b in intervals)


# --------------------------------------------------------------------------- the reward batch


def reward_for(urls: list[str], concurrency: int, scoring: str = "expected") -> tuple[Any, list[Any]]:
    """The TAIScore GRPO reward on `openai:` actor and judge models over `urls` (round-robin);
    `scoring` "expected" (coevo's default: the judge asks for 20 top log-probabilities per
    token) or "sampled" (no log-probabilities)."""
    from coevo.algorithms.taiscore.rewards import make_reward_fn
    from coevo.roles.judging import rollout_judge
    from coevo.llm.specs import load_model
    from coevo.roles.actor import Actor
    from coevo.core.types import JudgeSampling, Sampling

    joined = ",".join(urls)
    actor_model = load_model(f"openai:actor@{joined}", concurrency=concurrency, max_retries=0)
    judge_model = load_model(f"openai:judge@{joined}", concurrency=concurrency, max_retries=0)
    actor = Actor(actor_model, Sampling(temperature=0.8, max_tokens=512),
                  revise_sampling=Sampling(temperature=0.2, max_tokens=512))
    judge_sampling = JudgeSampling(temperature=0.7, max_tokens=512, scoring=scoring)
    judge = rollout_judge("taiscore", judge_model, judge_sampling)
    return make_reward_fn(actor, judge, "taiscore", invalid_reward=0.0), [actor_model, judge_model]


def reward_batch(size: int, seed: int) -> tuple[list[Any], list[str], dict[str, list[str]]]:
    """TRL's reward arguments for `size` critiques of `size` (x, y0) pairs; distinct per seed."""
    xs = [f"Write a short note on topic {seed}-{i}." for i in range(size)]
    y0s = [f"A first answer about topic {seed}-{i}, somewhat vague." for i in range(size)]
    critiques = [f"Name one concrete example for topic {seed}-{i} and cut the vague opening." for i in range(size)]
    prompts = [[{"role": "user", "content": f"Critique: {y}"}] for y in y0s]
    columns = {"x": xs, "y0": y0s, "sample_id": [f"s{seed}-{i}" for i in range(size)]}
    return prompts, critiques, columns


def timed_batch(reward_fn: Any, urls: list[str], size: int, seed: int) -> dict[str, Any]:
    """One reward call over a fresh batch; the servers' busy time within its wall window, and
    how the wall time splits: revision phase, the client's gap between phases, judge phase."""
    for url in urls:
        reset_server(url)
    prompts, critiques, columns = reward_batch(size, seed)
    start, cpu_start = time.monotonic(), time.process_time()
    rewards = reward_fn(prompts, critiques, **columns)
    end, cpu_end = time.monotonic(), time.process_time()
    if len(rewards) != size or any(abs(r - JUDGE_SCORE) > 0.1 for r in rewards):  # by expectation: ~6.99
        raise RuntimeError(f"the judge's answers were not read as {JUDGE_SCORE}: {sorted(set(rewards))}")
    entries = [request_log(url) for url in urls]
    logs = [[(a, b) for a, b, _kind in log] for log in entries]
    last_revision = max(b for log in entries for _a, b, kind in log if kind == "revision")
    first_judge = min(a for log in entries for a, _b, kind in log if kind == "judge")
    wall = end - start
    busy = [busy_seconds(log, start, end) / wall for log in logs]
    return {"wall_s": wall, "busy": busy, "requests": [len(log) for log in logs],
            "occupancy": sum(in_flight_seconds(log, start, end) for log in logs) / (len(urls) * wall),
            "phases_s": [last_revision - start, first_judge - last_revision, end - first_judge],
            "client_cpu_ms_per_request": (cpu_end - cpu_start) * 1000 / (2 * size)}


def measure(urls: list[str], concurrency: int, scoring: str, args: argparse.Namespace) -> dict[str, Any]:
    """One setting (N URLs, per-URL concurrency, judge scoring): a warm-up batch, then
    `repeats` timed ones."""
    reward_fn, models = reward_for(urls, concurrency, scoring)
    try:
        timed_batch(reward_fn, urls, args.batch, seed=0)  # connections opened, imports done
        runs = [timed_batch(reward_fn, urls, args.batch, seed=r + 1) for r in range(args.repeats)]
    finally:
        for model in models:
            model.close()
    request_s = min(args.answer_tokens, 512) * args.ms_per_token / 1000
    ideal = 2 * math.ceil(args.batch / (len(urls) * concurrency)) * request_s
    wall = sum(r["wall_s"] for r in runs) / len(runs)
    utilisation = [sum(r["busy"]) / len(urls) for r in runs]
    return {"judge_scoring": scoring, "servers": len(urls), "concurrency": concurrency, "batch": args.batch, "wall_s": round(wall, 4),
            "utilisation": round(sum(utilisation) / len(runs), 4), "utilisation_worst_run": round(min(utilisation), 4),
            "least_busy_server": round(min(min(r["busy"]) for r in runs), 4),
            "occupancy": round(sum(r["occupancy"] for r in runs) / len(runs), 2),
            "requests_per_s": round(2 * args.batch / wall, 1), "ideal_s": round(ideal, 4),
            "efficiency": round(ideal / wall, 3), "requests_per_server": runs[-1]["requests"],
            "client_cpu_ms_per_request": round(sum(r["client_cpu_ms_per_request"] for r in runs) / len(runs), 2),
            "phases_s": {name: round(sum(r["phases_s"][i] for r in runs) / len(runs), 4)
                         for i, name in enumerate(["revision", "gap", "judge"])}}


# --------------------------------------------------------------------------- command line


def table(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    lines = ["| judge scoring | servers | concurrency/URL | utilisation (mean, worst run) | least busy server | "
             "occupancy | wall s (revise + gap + judge) | ideal s | requests/s | client CPU ms/request |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        phases = " + ".join(f"{v:.2f}" for v in r["phases_s"].values())
        lines.append(f"| {r['judge_scoring']} | {r['servers']} | {r['concurrency']} | {r['utilisation']:.3f} ({r['utilisation_worst_run']:.3f}) | "
                     f"{r['least_busy_server']:.3f} | {r['occupancy']:.1f} | {r['wall_s']:.3f} ({phases}) | "
                     f"{r['ideal_s']:.3f} | {r['requests_per_s']:.0f} | {r['client_cpu_ms_per_request']:.1f} |")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("mode", nargs="?", choices=["sweep", "serve"], default="sweep",
                        help="sweep (default): run the benchmark; serve: one stand-in server (used by sweep)")
    parser.add_argument("--servers", type=int, nargs="+", default=[1, 2, 4], help="server counts N (default 1 2 4)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16, 64],
                        help="per-URL concurrency limits C (default 4 16 64)")
    parser.add_argument("--batch", type=int, default=64, help="rollouts per reward call (default 64)")
    parser.add_argument("--answer-tokens", type=int, default=64, help="tokens per answer (default 64)")
    parser.add_argument("--ms-per-token", type=float, default=2.0, help="server sleep per token, ms (default 2)")
    parser.add_argument("--judge-scoring", choices=["expected", "sampled"], nargs="+", default=["expected", "sampled"],
                        help="expected (coevo's default): the judge asks for 20 top log-probabilities per token; "
                             "sampled: none (default: both)")
    parser.add_argument("--repeats", type=int, default=2, help="timed batches per setting (default 2)")
    parser.add_argument("--target", type=float, default=0.8, help="utilisation to reach (default 0.8)")
    parser.add_argument("--json", type=Path, default=RESULTS, help=f"results file (default {RESULTS})")
    return parser.parse_args(argv)


def sweep(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (judge scoring, N, C) setting against the first N of max(N) stand-in servers."""
    servers = start_servers(max(args.servers), args.ms_per_token / 1000, args.answer_tokens)
    rows = []
    try:
        urls = [url for _process, url in servers]
        for scoring in args.judge_scoring:
            for n in args.servers:
                for concurrency in args.concurrency:
                    rows.append(measure(urls[:n], concurrency, scoring, args))
                    print(f"{scoring} N={n} C={concurrency}: utilisation {rows[-1]['utilisation']:.3f}",
                          file=sys.stderr, flush=True)
    finally:
        stop_servers(servers)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.mode == "serve":
        serve(args.ms_per_token / 1000, args.answer_tokens)
        return 0
    load_before = os.getloadavg()
    rows = sweep(args)
    most = max(args.servers)
    reaching = [{k: r[k] for k in ("judge_scoring", "servers", "concurrency", "utilisation", "wall_s")}
                for r in rows if r["servers"] == most and r["utilisation_worst_run"] >= args.target]
    settings = {k: v for k, v in vars(args).items() if k not in ("mode", "json")}
    result = {"benchmark": "server_utilisation", "machine": f"{platform.machine()}, {os.cpu_count()} cores",
              "python": platform.python_version(), "load_average": {"before": load_before, "after": os.getloadavg()},
              "settings": settings, "rows": rows, "reaching_target": reaching}
    print(table(rows))
    found = ", ".join(f"{r['judge_scoring']} C={r['concurrency']}" for r in reaching) or "none"
    print(f"\nutilisation >= {args.target} at N={most} in every run: {found}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
