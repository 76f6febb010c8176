"""`hf:PATH_OR_ID` — a transformers model in process: the only backend that trains.

Generation is batched with left padding (decoder-only models continue from the right edge,
so the padding must sit on the left where the attention mask hides it). Trainers build a
`LocalModel` around their policy with `from_loaded` to sample from the weights they train.
`Sampling.json_schema` is honoured with xgrammar's grammar mask, as in the other backends: a
trained role (RLAC's critic) then answers in a form its reader can parse.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

from coevo.core.checkpoint_identity import checkpoint_identity
from coevo.llm.base import ModelError
from coevo.llm.common import copies, folder_digest, thinking_tag, truncate_at_stop
from coevo.core.types import Completion, Conversation, Sampling


def default_device(cuda_available: bool) -> str:
    """`cuda:$LOCAL_RANK` under `accelerate launch`/torchrun, else `cuda`, else `cpu`.

    Each process of a multi-GPU launch must hold its in-process roles on its own GPU;
    plain `cuda` would stack every rank's copy on GPU 0.
    """
    if not cuda_available:
        return "cpu"
    rank = os.environ.get("LOCAL_RANK")
    return f"cuda:{int(rank)}" if rank is not None and rank.isdigit() else "cuda"


class LocalModel:
    """A causal LM + tokenizer from transformers; `.model` and `.tokenizer` are public."""

    def __init__(
        self,
        path: str | Path,
        *,
        revision: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        batch_size: int = 8,
        model_id: str | None = None,
        thinking: bool | None = None,
    ):
        """Load a model folder or hub id. dtype: "float32" (CPU default), "bfloat16", ....
        `thinking`: the chat template's `enable_thinking` (None: the template's default)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or default_device(torch.cuda.is_available())
        torch_dtype = getattr(torch, dtype) if dtype else (
            torch.bfloat16 if device.startswith("cuda") else torch.float32
        )
        local = Path(path).expanduser()
        source = str(local) if local.exists() else str(path)
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, revision=revision)
            model = AutoModelForCausalLM.from_pretrained(source, revision=revision, dtype=torch_dtype)
        except (OSError, ValueError) as exc:
            raise ModelError(f"cannot load transformers model {path!r}: {exc}") from exc
        model.to(device)
        if model_id is None:
            model_id = f"hf:{_name(path, local)}@{_revision(source, local, revision, model)}"
        self._setup(model, tokenizer, model_id, batch_size, thinking)
        self.weights_on_disk = local if local.is_dir() and revision is None else None

    @classmethod
    def from_loaded(
        cls, model: Any, tokenizer: Any, *, model_id: str | None = None, batch_size: int = 8
    ) -> LocalModel:
        """Wrap an already-loaded model (a trainer's policy) without copying its weights.

        Without `model_id` the id hashes the current weights; after training steps call
        `refresh_model_id()` so that a cache never answers with the old policy's outputs.
        """
        self = cls.__new__(cls)
        self._setup(model, tokenizer, model_id, batch_size)
        if model_id is None:
            self.refresh_model_id()
        return self

    def _setup(self, model: Any, tokenizer: Any, model_id: str | None, batch_size: int,
               thinking: bool | None = None) -> None:
        if batch_size < 1:
            raise ModelError(f"batch_size must be >= 1, got {batch_size}")
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        if not tokenizer.chat_template:
            raise ModelError(f"tokenizer of {model_id or model.name_or_path} has no chat template")
        self.model = model
        self.tokenizer = tokenizer
        self.model_id = model_id or ""
        self.batch_size = batch_size
        self.supports_logprobs = True
        #: What the chat template is applied with, here and by TRL when this model trains.
        self.chat_template_kwargs: dict[str, Any] = {} if thinking is None else {"enable_thinking": thinking}
        self.model_id += thinking_tag(thinking)
        # Roles sharing one instance may call from several threads; one forward at a time.
        self._lock = threading.Lock()
        self._grammar_compiler: Any = None  # built on the first call with a json_schema
        #: A folder whose full weights equal the model's now (its load path, or the `final/`
        #: a stage saved), or None: where a DPO reference of the policy at entry can be
        #: loaded from, which works where a copy in memory cannot (ZeRO-3's partitions).
        self.weights_on_disk: Path | None = None

    def refresh_model_id(self, saved: str | Path | None = None) -> str:
        """A new id after the weights changed in place. `saved`: the finished stage folder
        that holds them (`final/`), named by its path and the digest of the result record
        the trainer left there (`coevo/core/checkpoint_identity.py`, which costs nothing at any
        size and is right under ZeRO-3). Without it, a digest of the current weights."""
        name = Path(str(self.model.name_or_path)).name or "model"
        if saved is not None:
            folder = Path(saved)
            self.model_id = f"hf:{name}@{checkpoint_identity(folder)}" + _thinking_tag_of(self)
            # An adapter folder holds only the LoRA part of the weights.
            self.weights_on_disk = None if (folder / "adapter_config.json").exists() else folder
        else:
            self.model_id = f"hf:{name}@w{weights_digest(self.model)}" + _thinking_tag_of(self)
            self.weights_on_disk = None
        return self.model_id

    def generate(
        self, conversations: list[Conversation], sampling: Sampling, n: int = 1
    ) -> list[list[Completion]]:
        """n completions per conversation; temperature 0 is greedy (computed once, copied)."""
        import torch

        greedy = sampling.temperature <= 0
        per_conv = 1 if greedy else n
        texts = [self._prompt(conv) for conv in conversations]
        # Each conversation is repeated per sample rather than using num_return_sequences,
        # so chunking by batch_size bounds memory however large n is.
        rows = [i for i in range(len(conversations)) for _ in range(per_conv)]
        results: list[list[Completion]] = [[] for _ in conversations]
        with self._lock, torch.inference_mode():
            was_training = self.model.training
            self.model.eval()
            try:
                if sampling.seed is not None:
                    torch.manual_seed(sampling.seed)
                for start in range(0, len(rows), self.batch_size):
                    chunk = rows[start:start + self.batch_size]
                    for i, completion in zip(chunk, self._generate_batch([texts[i] for i in chunk], sampling)):
                        results[i].append(completion)
            finally:
                self.model.train(was_training)
        if greedy:
            results = [copies(r[0], n) for r in results]
        return results

    def _prompt(self, conversation: Conversation) -> str:
        messages = [m.model_dump() for m in conversation]
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                  **self.chat_template_kwargs)

    def _compute_type(self) -> Any:
        """bf16 autocast for float32 weights on a GPU (a trained model's master weights,
        specs.TRAINABLE_DTYPE): it generates in the type it trains in, at bf16's speed."""
        import torch

        if self.model.device.type == "cuda" and self.model.dtype == torch.float32:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _generate_batch(self, texts: list[str], sampling: Sampling) -> list[Completion]:
        from transformers import GenerationConfig

        # The chat template already wrote every special token the model expects.
        batch = self.tokenizer(
            texts, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False
        ).to(self.model.device)
        eos = self._eos_ids()
        settings: dict[str, Any] = dict(
            max_new_tokens=sampling.max_tokens,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=eos,
        )
        if sampling.repetition_penalty != 1.0:
            settings["repetition_penalty"] = sampling.repetition_penalty
        if sampling.temperature > 0:
            # top_k=0: transformers would otherwise apply top_k=50, which no other backend does.
            settings.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        else:
            settings.update(do_sample=False)
        extra: dict[str, Any] = {}
        if sampling.stop:
            settings["stop_strings"] = list(sampling.stop)
            extra["tokenizer"] = self.tokenizer
        if sampling.json_schema is not None:
            extra["logits_processor"] = [self._schema_mask(sampling.json_schema)]
        if sampling.logprobs:
            # Raw logits (before temperature and top-p), as the other backends report them.
            settings.update(output_logits=True, return_dict_in_generate=True)
        with self._compute_type():
            output = self.model.generate(**batch, generation_config=GenerationConfig(**settings), **extra)
        sequences = output.sequences if sampling.logprobs else output
        width = batch["input_ids"].shape[1]
        completions = []
        for b, (row, prompt_len) in enumerate(zip(sequences[:, width:].tolist(),
                                                  batch["attention_mask"].sum(dim=1).tolist())):
            end = next((k for k, tok in enumerate(row) if tok in eos), None)
            kept = row if end is None else row[:end]
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            tokens = top = None
            if sampling.logprobs:
                tokens, top = self._top_logprobs(kept, [step[b] for step in output.logits], sampling.logprobs)
                if "".join(tokens) != text:
                    tokens = top = None  # a token that decodes differently alone: no map
            completions.append(Completion(
                text=truncate_at_stop(text, sampling.stop),
                prompt_tokens=int(prompt_len),
                # Without the end-of-sequence token, as llama.cpp counts.
                completion_tokens=len(kept),
                tokens=tokens,
                top_logprobs=top,
            ))
        return completions

    def _top_logprobs(self, kept: list[int], logits: list[Any], k: int
                      ) -> tuple[list[str], list[dict[str, float]]]:
        """Each kept token's text and the top-k {token text: log-probability} at its position."""
        import torch

        texts, top = [], []
        for token, step in zip(kept, logits):
            logprobs = torch.log_softmax(step.float(), dim=-1)
            values, ids = torch.topk(logprobs, k)
            texts.append(self.tokenizer.decode([token]))
            alternatives = {self.tokenizer.decode([int(i)]): float(v) for v, i in zip(values, ids)}
            alternatives[texts[-1]] = float(logprobs[token])
            top.append(alternatives)
        return texts, top

    def _schema_mask(self, schema: str) -> Any:
        """A logits processor that lets only tokens continuing an answer of `schema` be sampled.

        xgrammar is the structured-output engine of vLLM and SGLang; its transformers processor
        keeps one matcher per row, so it serves one `generate` call and is built anew each
        time (the compiled grammar is cached by the compiler). The mask runs before
        temperature and top-p (transformers appends its own warpers after custom processors),
        so sampling only ever sees allowed tokens. Whitespace between JSON tokens is fixed:
        with free whitespace a small model can spend its whole budget on newlines.
        """
        import xgrammar
        from xgrammar.contrib.hf import LogitsProcessor

        if self._grammar_compiler is None:
            # The logits' width, not len(tokenizer): embedding matrices are often padded.
            width = self.model.get_output_embeddings().weight.shape[0]
            info = xgrammar.TokenizerInfo.from_huggingface(self.tokenizer, vocab_size=width,
                                                           stop_token_ids=self._eos_ids())
            self._grammar_compiler = xgrammar.GrammarCompiler(info)
        try:
            grammar = self._grammar_compiler.compile_json_schema(schema, any_whitespace=False)
        except (RuntimeError, ValueError) as exc:
            raise ModelError(f"cannot decode under this json_schema: {exc}") from exc
        return LogitsProcessor(grammar)

    def _eos_ids(self) -> list[int]:
        ids = self.model.generation_config.eos_token_id
        ids = list(ids) if isinstance(ids, (list, tuple)) else ([] if ids is None else [ids])
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in ids:
            ids.append(self.tokenizer.eos_token_id)
        return ids


def weights_digest(model: Any) -> str:
    """Short hash of a model's current parameters (names, dtypes and bytes)."""
    import torch

    sha = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().to("cpu").contiguous()
        sha.update(f"{name}:{data.dtype}:{tuple(data.shape)}".encode())
        sha.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    return sha.hexdigest()[:16]


def _name(path: str | Path, local: Path) -> str:
    # Local folders are named by their last component so ids do not depend on where the
    # folder lives; hub ids are already names.
    return local.resolve().name if local.exists() else str(path)


def _revision(source: str, local: Path, revision: str | None, model: Any) -> str:
    if local.exists():
        return folder_digest(local)
    commit = getattr(model.config, "_commit_hash", None)
    return commit or revision or "main"


def _thinking_tag_of(model: Any) -> str:
    """The model id's mark of the chat template's thinking switch (none where it is unset)."""
    return thinking_tag(getattr(model, "chat_template_kwargs", {}).get("enable_thinking"))
