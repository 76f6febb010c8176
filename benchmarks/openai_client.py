"""coevo's OpenAI client vs vLLM's own benchmark client, against one `vllm serve` of the embedded model.

The benchmark starts vLLM's OpenAI-compatible server on 127.0.0.1 (CPU settings as coevo's
in-process engine: bf16, eager, 1 GiB KV cache, no chunked prefill), warms it up, then
alternates, `--repeats` times each: vLLM's benchmark client (`vllm.benchmarks.serve`, random
prompts of `--input-len` tokens, exactly `--output-len` tokens out with `ignore_eos`, at most
`--concurrency` requests in flight) and coevo's `OpenAIModel` sending as many prompts of the
same length, with the same `ignore_eos`, output length and concurrency, in one `generate`
call. Reported: output tokens per second of each (mean over repeats) and their ratio (target
>= 0.9). The server is stopped by its PID at the end, also on errors.

    .venv/bin/python benchmarks/openai_client.py [--prompts 32] [--concurrency 8] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)

SERVED = "smollm2"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(model_dir: Path, port: int, log: Path) -> subprocess.Popen:
    args = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
            "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port),
            "--dtype", "bfloat16", "--enforce-eager", "--max-model-len", "2048",
            "--kv-cache-memory-bytes", str(2**30), "--no-enable-chunked-prefill",
            "--max-num-batched-tokens", "2048", "--disable-log-stats"]
    return subprocess.Popen(args, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_ready(url: str, server: subprocess.Popen, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"vllm serve exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5):
                return
        except OSError:
            time.sleep(2)
    raise SystemExit(f"vllm serve not ready after {timeout:.0f} s:\n{log.read_text()[-3000:]}")


def stop_server(server: subprocess.Popen) -> None:
    if server.poll() is None:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)


def vllm_client(port: int, model_dir: Path, args: argparse.Namespace, result_dir: Path) -> float:
    """Output tokens/s of vLLM's own benchmark client."""
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    parsed = parser.parse_args([
        "--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--host", "127.0.0.1",
        "--port", str(port), "--model", SERVED, "--tokenizer", str(model_dir), "--dataset-name", "random",
        "--random-input-len", str(args.input_len), "--random-output-len", str(args.output_len),
        "--num-prompts", str(args.prompts), "--max-concurrency", str(args.concurrency), "--ignore-eos",
        "--disable-tqdm", "--seed", "0", "--result-dir", str(result_dir)])
    return float(main(parsed)["output_throughput"])


def coevo_client(url: str, model_dir: Path, args: argparse.Namespace, seed: int) -> float:
    """Output tokens/s of coevo's OpenAIModel on prompts of the same token length."""
    from transformers import AutoTokenizer

    from coevo.llm.base import user
    from coevo.llm.openai_backend import OpenAIModel
    from coevo.core.types import Sampling

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rng = random.Random(seed)
    vocab = [t for t in range(1000, tokenizer.vocab_size)]
    prompts = [user(tokenizer.decode([rng.choice(vocab) for _ in range(args.input_len)])) for _ in range(args.prompts)]
    model = OpenAIModel(SERVED, [url], concurrency=args.concurrency, extra_body={"ignore_eos": True})
    # A fresh seed per repeat: the server's prefix cache must not answer from an earlier one.
    sampling = Sampling(temperature=1.0, top_p=1.0, max_tokens=args.output_len, seed=seed)
    started = time.perf_counter()
    out = model.generate(prompts, sampling)
    seconds = time.perf_counter() - started
    model.close()
    return sum(row[0].completion_tokens for row in out) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--input-len", type=int, default=256)
    parser.add_argument("--output-len", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    from coevo.llm import embedded

    model_dir = embedded.hf_dir()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory(prefix="coevo-openai-bench-") as tmp:
        log = Path(tmp) / "server.log"
        server = start_server(model_dir, port, log)
        try:
            wait_ready(url, server, log)
            coevo_client(url, model_dir, argparse.Namespace(**{**vars(args), "prompts": 4}), seed=99)  # warm-up
            theirs, ours = [], []
            for repeat in range(args.repeats):
                theirs.append(vllm_client(port, model_dir, args, Path(tmp)))
                ours.append(coevo_client(url, model_dir, args, seed=repeat))
        finally:
            stop_server(server)
    result = {"coevo_tokens_per_s": round(sum(ours) / len(ours), 1),
              "vllm_bench_tokens_per_s": round(sum(theirs) / len(theirs), 1),
              "ratio": round(sum(ours) / sum(theirs), 2), "coevo_runs": [round(x, 1) for x in ours],
              "vllm_bench_runs": [round(x, 1) for x in theirs], "prompts": args.prompts,
              "concurrency": args.concurrency, "input_len": args.input_len, "output_len": args.output_len,
              "machine": f"{platform.machine()}, {os.cpu_count()} CPUs"}
    report(result, args.json)


if __name__ == "__main__":
    main()
