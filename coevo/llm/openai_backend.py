"""`openai:MODEL@URL[,URL2,...]` — any OpenAI-compatible server (vLLM, SGLang, llama.cpp, OpenAI).

A batch becomes concurrent requests, all of a stage in flight at once up to `concurrency`
per base URL, spread round-robin over the URLs, so several replicas of one model serve one
run. One event loop (on a background thread) and one HTTP client per URL live as long as
the model: connections are reused from call to call, and `generate` works the same from
sync code, threads or a running event loop. Retries are ours, not the client's (it is built
with max_retries=0): the count and backoff are configurable, a retry moves on to the next
URL, and the final error names every URL that failed.

The API key comes from COEVO_API_KEY or OPENAI_API_KEY (local servers accept any key) and
is read when a call starts and given to that call's requests only; the kept clients hold a
placeholder, so the key cannot reach a config dump, a log or the run store.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import re
import threading
from collections.abc import Callable
from typing import Any

from coevo.llm.base import ModelError, PerRequestSampling
from coevo.llm.common import copies, thinking_tag, truncate_at_stop
from coevo.core.types import Completion, Conversation, Sampling

_SPEC = re.compile(r"^(?P<model>[^@]+?)(?:@(?P<urls>https?://.+))?$")


class _Rejected(ModelError):
    """The server answered with a non-retryable status (bad request, auth, unknown model)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def parse_spec(rest: str) -> tuple[str, list[str]]:
    """Split `MODEL@URL[,URL2,...]` (the part after `openai:`) into the model and its URLs."""
    match = _SPEC.match(rest.strip())
    if not match:
        raise ModelError(
            f"bad openai spec {rest!r}: expected openai:MODEL or openai:MODEL@http://host:port/v1[,URL2,...]"
        )
    urls = [u.strip().rstrip("/") for u in (match["urls"] or "").split(",") if u.strip()]
    for url in urls:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ModelError(f"bad base URL {url!r} in openai spec {rest!r}")
    return match["model"], urls


class OpenAIModel(PerRequestSampling):
    """Chat completions over HTTP with bounded concurrency, round-robin URLs and retries."""

    def __init__(
        self,
        model: str,
        base_urls: list[str] | None = None,
        *,
        concurrency: int = 16,
        max_retries: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        timeout: float = 300.0,
        extra_body: dict[str, Any] | None = None,
        model_id: str | None = None,
        thinking: bool | None = None,
    ):
        """`base_urls` empty means the client's default (OPENAI_BASE_URL or api.openai.com).

        `extra_body` passes server-specific fields, e.g. {"top_k": 0, "min_p": 0} for a
        llama.cpp server, whose own defaults (top_k 40, min_p 0.05) differ from OpenAI's.
        `thinking` becomes `chat_template_kwargs: {enable_thinking: ...}` (vLLM's and SGLang's
        servers read it; the model id records it, so the cache keeps the two apart).
        """
        if concurrency < 1 or max_retries < 0:
            raise ModelError("openai backend needs concurrency >= 1 and max_retries >= 0")
        if not base_urls and not os.environ.get("OPENAI_BASE_URL") and not os.environ.get("OPENAI_API_KEY"):
            # Said at load, not after a stage's worth of retries against a hosted API with no key.
            raise ModelError(f"openai:{model} names no server (@URL), so it would go to OpenAI's hosted API, and "
                             "OPENAI_API_KEY is not set: set it, or name your server: "
                             f"openai:{model}@http://HOST:PORT/v1")
        self.model = model
        self.base_urls: list[str | None] = list(base_urls) if base_urls else [None]
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        if thinking is not None:
            kwargs = self.extra_body.setdefault("chat_template_kwargs", {})
            kwargs["enable_thinking"] = thinking
        # Named by model, not URL: replicas of one model, or a server moved to another
        # port for a resumed run, keep answering from the same cache entries.
        self.model_id = (model_id or f"openai:{model}") + thinking_tag(thinking)
        # Every server coevo targets (vLLM, SGLang, llama.cpp server, OpenAI) returns them.
        self.supports_logprobs = True
        self._next_url = itertools.count()
        # Learnt on the first n>1 call: llama.cpp's server ignores `n` and answers once.
        self._n_supported: bool | None = None
        # How the server takes an answer schema: OpenAI's `json_schema` form (vLLM, SGLang,
        # OpenAI, llama.cpp's C++ server), or `json_object` + `schema` (llama-cpp-python's
        # server, which answers the first form with an error naming `response_format`).
        self._schema_form = "json_schema"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_lock = threading.Lock()
        self._clients: list[Any] = []
        self._limits: list[asyncio.Semaphore] = []

    @classmethod
    def from_spec(cls, rest: str, **options: Any) -> OpenAIModel:
        """Build from the part of a spec after `openai:`."""
        model, urls = parse_spec(rest)
        return cls(model, urls, **options)

    def generate_each(
        self, conversations: list[Conversation], samplings: list[Sampling], n: int = 1,
        on_result: Callable[[int, list[Completion]], None] | None = None,
    ) -> list[list[Completion]]:
        """Each conversation under its own sampling; every request of the list in flight at
        once (under the per-URL concurrency limit). `on_result(i, completions)` hears of each
        conversation's answers as they arrive (from the client's thread)."""
        future = asyncio.run_coroutine_threadsafe(self._run(conversations, samplings, n, on_result),
                                                  self._event_loop())
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C (or a caller's error) stops the stage's requests too
            raise

    def close(self) -> None:
        """Close the HTTP clients and stop the loop thread (a later call starts them again)."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            clients, self._clients, self._limits = self._clients, [], []
            asyncio.run_coroutine_threadsafe(_close_all(clients), loop).result()
            loop.call_soon_threadsafe(loop.stop)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        """The model's own event loop, running on a daemon thread from the first call on."""
        with self._loop_lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name=f"coevo-{self.model_id}",
                                 daemon=True).start()
            return self._loop

    async def _run(self, conversations: list[Conversation], samplings: list[Sampling], n: int,
                   on_result: Callable[[int, list[Completion]], None] | None = None) -> list[list[Completion]]:
        from openai import AsyncOpenAI

        if not self._clients:
            # Made on the loop's thread: their connection pools belong to this loop.
            self._clients = [AsyncOpenAI(base_url=url, api_key="per-call", max_retries=0, timeout=self.timeout)
                             for url in self.base_urls]
            self._limits = [asyncio.Semaphore(self.concurrency) for _ in self.base_urls]
        key = os.environ.get("COEVO_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        # Copies that share the kept clients' connection pools, with this call's key.
        clients = [client.with_options(api_key=key) for client in self._clients]
        async def one(i: int, conv: Conversation, sampling: Sampling) -> list[Completion]:
            completions = await self._conversation(clients, self._limits, conv, sampling, n)
            if on_result is not None:
                on_result(i, completions)
            return completions

        tasks = [asyncio.ensure_future(one(i, conv, sampling))
                 for i, (conv, sampling) in enumerate(zip(conversations, samplings))]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def _conversation(self, clients, limits, conversation: Conversation, sampling: Sampling,
                            n: int) -> list[Completion]:
        messages = [m.model_dump() for m in conversation]
        if sampling.temperature <= 0:
            return copies((await self._request(clients, limits, messages, sampling, 1, sampling.seed))[0], n)
        got: list[Completion] = []
        if n > 1 and self._n_supported is not False:
            try:
                got = await self._request(clients, limits, messages, sampling, n, sampling.seed)
            except _Rejected as exc:
                if exc.status not in (400, 422):
                    raise
                got = []
            self._n_supported = len(got) >= n
        # One request per missing sample, each with its own seed so the samples differ
        # even on servers that are deterministic for a given seed.
        missing = range(len(got), n)
        extra = await asyncio.gather(*[
            self._request(clients, limits, messages, sampling, 1,
                          None if sampling.seed is None else sampling.seed + i)
            for i in missing
        ])
        return (got + [c[0] for c in extra])[:n]

    async def _request(self, clients, limits, messages, sampling: Sampling, n: int,
                       seed: int | None) -> list[Completion]:
        import openai

        params = self._params(messages, sampling, n, seed)
        start = next(self._next_url)
        failures: list[str] = []
        for attempt in range(self.max_retries + 1):
            index = (start + attempt) % len(clients)
            url = self.base_urls[index] or str(clients[index].base_url)
            asked: float | None = None  # the server's Retry-After, in seconds
            try:
                async with limits[index]:  # `concurrency` requests in flight per URL
                    response = await clients[index].chat.completions.create(**params)
                return _completions(response, sampling)
            except (openai.APIConnectionError, openai.RateLimitError) as exc:
                # Refused, reset, timed out, cut short mid-body (all APIConnectionError), 429, 5xx.
                failures.append(f"{url} ({_describe(exc)})")
                asked = _retry_after(exc)
            except openai.APIStatusError as exc:
                if _schema_form_refused(params, exc):
                    # Learnt once per model (every request of a stage may hear it at once):
                    # ask again at once, in the form this server takes.
                    self._schema_form = "json_object"
                    params["response_format"] = self._response_format(json.loads(sampling.json_schema))
                    failures.append(f"{url} (answer schema form refused: {_describe(exc)})")
                    continue
                if exc.status_code < 500:
                    raise _Rejected(
                        f"{url} refused model {self.model!r}: HTTP {exc.status_code} {exc.message}",
                        exc.status_code,
                    ) from exc
                failures.append(f"{url} ({_describe(exc)})")
                asked = _retry_after(exc)
            except (ValueError, TypeError, AttributeError, openai.APIResponseValidationError) as exc:
                # A 200 whose body is not a chat completion (malformed or truncated JSON, a
                # proxy's error page): a fault on the way, worth another try.
                failures.append(f"{url} (malformed response: {type(exc).__name__})")
            if attempt < self.max_retries:
                await self._back_off(attempt, asked)
        tried = sorted(set(failures), key=failures.index)
        raise ModelError(
            f"model {self.model!r} failed after {self.max_retries + 1} attempts ({'; '.join(tried)}); "
            "check the server, or allow more with the model options max_retries / backoff"
        )

    def _params(self, messages: list[dict[str, Any]], sampling: Sampling, n: int,
                seed: int | None) -> dict[str, Any]:
        """The chat-completions request's fields; n, seed, stop, logprobs, the answer schema
        and extra_body only where they are set."""
        params: dict[str, Any] = dict(
            model=self.model, messages=messages, temperature=sampling.temperature,
            top_p=sampling.top_p, max_tokens=sampling.max_tokens,
        )
        if n > 1:
            params["n"] = n
        if seed is not None:
            params["seed"] = seed
        if sampling.stop:
            params["stop"] = list(sampling.stop)
        if sampling.logprobs:
            params.update(logprobs=True, top_logprobs=sampling.logprobs)
        if sampling.json_schema is not None:
            params["response_format"] = self._response_format(json.loads(sampling.json_schema))
        extra = dict(self.extra_body)
        if sampling.repetition_penalty != 1.0:  # not an OpenAI field: the servers that take it read it here
            extra["repetition_penalty"] = sampling.repetition_penalty
        if extra:
            params["extra_body"] = extra
        return params

    async def _back_off(self, attempt: int, asked: float | None) -> None:
        """Wait before retry `attempt + 1`: exponential backoff, or the server's Retry-After
        (`asked`) where longer, never more than max_backoff."""
        # Jitter keeps a batch of failed requests from retrying in lockstep; a server
        # that says when to come back (Retry-After) is believed, up to max_backoff.
        delay = min(self.max_backoff, self.backoff * 2**attempt) * random.uniform(0.5, 1.0)
        await asyncio.sleep(min(self.max_backoff, max(delay, asked or 0.0)))

    def _response_format(self, schema: dict[str, Any]) -> dict[str, Any]:
        if self._schema_form == "json_object":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


def _schema_form_refused(params: dict[str, Any], exc: Any) -> bool:
    """The server rejected OpenAI's `json_schema` response format, naming it (llama-cpp-python
    answers so, with a 500): the `json_object` + `schema` form is worth one more try."""
    form = params.get("response_format") or {}
    return form.get("type") == "json_schema" and "response_format" in str(getattr(exc, "message", ""))


def _completions(response: Any, sampling: Sampling) -> list[Completion]:
    choices = sorted(response.choices, key=lambda c: c.index)
    usage = response.usage
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    total = int(getattr(usage, "completion_tokens", 0) or 0)
    # Usage is per request: n choices share it, the first takes the remainder so that the
    # per-completion counts add up to what the server billed.
    share, rest = divmod(total, max(len(choices), 1))
    return [
        Completion(
            text=truncate_at_stop(choice.message.content or "", sampling.stop),
            prompt_tokens=prompt,
            completion_tokens=share + (rest if i == 0 else 0),
            **_logprobs(choice),
        )
        for i, choice in enumerate(choices)
    ]


def _logprobs(choice: Any) -> dict[str, Any]:
    """`tokens` and `top_logprobs` from a choice's `logprobs.content`, when the server sent them."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return {}
    tokens = [entry.token for entry in content]
    if "".join(tokens) != (choice.message.content or ""):
        return {}  # tokens that do not spell the answer cannot locate a score in it
    top = []
    for entry in content:
        alternatives = {alt.token: float(alt.logprob) for alt in (entry.top_logprobs or [])}
        alternatives[entry.token] = float(entry.logprob)
        top.append(alternatives)
    return {"tokens": tokens, "top_logprobs": top}


async def _close_all(clients: list[Any]) -> None:
    for client in clients:
        await client.close()


def _retry_after(exc: Exception) -> float | None:
    """Seconds a 429 / 503 asked the client to wait (`Retry-After: 2`), if it said."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: not worth parsing, the backoff applies
        return None


def _describe(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    return f"HTTP {status}" if status else type(exc).__name__
