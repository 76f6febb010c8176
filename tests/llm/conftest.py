"""Fixtures for the backend tests: the real embedded model, in process and behind a server.

Loading is session-scoped: the GGUF loads in under a second, the converted transformers
folder in a few (its one-time conversion, on a fresh machine, takes about 40 s).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from coevo.llm.base import user
from coevo.llm.embedded import gguf_path, hf_dir


def free_port() -> int:
    """A TCP port nobody listens on right now (bound, read, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def dead_url() -> str:
    """A base URL on 127.0.0.1 where no server listens: connections are refused."""
    return f"http://127.0.0.1:{free_port()}/v1"


@pytest.fixture(scope="session")
def gguf() -> Path:
    return gguf_path()


@pytest.fixture(scope="session")
def local_model():
    from coevo.llm.local import LocalModel

    return LocalModel(hf_dir(), batch_size=4)


@pytest.fixture(scope="session")
def llama_model(gguf):
    from coevo.llm.llamacpp import LlamaCppModel

    return LlamaCppModel(gguf, n_ctx=2048, n_threads=2)


@pytest.fixture(scope="session")
def prompts():
    return [user("What is 2+2?"), user("Name one color and describe it in a sentence.")]


@pytest.fixture(scope="session")
def llama_server(gguf, tmp_path_factory):
    """A real `python -m llama_cpp.server` on a free port; yields its /v1 base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer in 90 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()
