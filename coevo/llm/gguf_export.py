"""A trained Llama-architecture model's current weights as a GGUF file, for llama.cpp.

Trained roles train in transformers, which generates at ~16 tokens/s here; llama.cpp
generates the same 135M model at ~100. So a trained role's generations outside its own
optimizer step (and, in GRPO, its samples: `train/rollout.py`) run on llama.cpp from a GGUF
written from its weights as they are now: F16 matrices, F32 norms, the metadata and tokenizer
of the GGUF the weights came from (`template`, the embedded model's by default).

Only the Llama architecture (SmolLM2) is written; other models generate where they train, or
on vLLM (`actor_engine: vllm`, TRL's `use_vllm` on GPUs). The Q and K projections are
permuted into llama.cpp's rotary layout, as llama.cpp's own converter does.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

#: transformers' per-layer names -> llama.cpp's.
_LAYER = {"input_layernorm.weight": "attn_norm.weight", "self_attn.q_proj.weight": "attn_q.weight",
          "self_attn.k_proj.weight": "attn_k.weight", "self_attn.v_proj.weight": "attn_v.weight",
          "self_attn.o_proj.weight": "attn_output.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
          "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
          "mlp.down_proj.weight": "ffn_down.weight"}
_TOP = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
        "lm_head.weight": "output.weight"}
_LAYER_NAME = re.compile(r"model\.layers\.(\d+)\.(.+)")


class ExportError(ValueError):
    """The model cannot be written as a llama.cpp GGUF (another architecture)."""


def exportable(model: Any) -> bool:
    """Whether `model` (a transformers model, PEFT-wrapped or not) is a Llama we can write."""
    config = getattr(getattr(model, "get_base_model", lambda: model)(), "config", None)
    return getattr(config, "model_type", None) == "llama"


def _permute(weights: Any, heads: int) -> Any:
    """transformers' rotary halves -> llama.cpp's interleaved pairs (its converter's permute)."""
    return (weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def gguf_name(name: str) -> str | None:
    """llama.cpp's name of a transformers weight (None: not a weight llama.cpp reads)."""
    if name in _TOP:
        return _TOP[name]
    found = _LAYER_NAME.fullmatch(name)
    if found and found.group(2) in _LAYER:
        return f"blk.{found.group(1)}.{_LAYER[found.group(2)]}"
    return None


def export_gguf(model: Any, path: str | Path, template: str | Path | None = None) -> Path:
    """Write `model`'s weights now (a LoRA adapter merged in for the copy, the model itself left
    as it was) to `path`, with `template`'s metadata and tokenizer. Returns `path`."""
    import gguf
    import numpy as np
    import torch

    from coevo.llm.embedded import gguf_path

    template = str(template or gguf_path())
    refusal = _model_refusal(model, template)
    if refusal:
        raise ExportError(refusal)
    reader = _template_reader(template)
    config = getattr(model, "get_base_model", lambda: model)().config
    heads, kv_heads = config.num_attention_heads, config.num_key_value_heads
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(path), arch="llama")
    _copy_metadata(reader, writer)
    with torch.no_grad(), _merged(model) as weights:
        tied = getattr(config, "tie_word_embeddings", False)
        for name, tensor in weights.items():
            target = gguf_name(name)
            if target is None or (tied and target == "output.weight"):
                continue
            array = tensor.detach().float().cpu().numpy()
            if target.endswith("attn_q.weight"):
                array = _permute(array, heads)
            elif target.endswith("attn_k.weight"):
                array = _permute(array, kv_heads)
            # Norms stay F32 (llama.cpp reads them so); matrices F16, half the bytes of F32.
            writer.add_tensor(target, array.astype(np.float32 if array.ndim == 1 else np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


#: The template's shape against the model's: the copy takes the template's metadata and tokenizer.
_SHAPE = {"llama.block_count": "num_hidden_layers", "llama.embedding_length": "hidden_size",
          "llama.attention.head_count": "num_attention_heads", "llama.attention.head_count_kv": "num_key_value_heads",
          "llama.feed_forward_length": "intermediate_size"}


@functools.lru_cache(maxsize=2)
def _template_reader(template: str) -> Any:
    """The template, read once per process (it is the embedded model's GGUF, never rewritten):
    parsing its 49,152-token vocabulary took ~4.5 s here, and every copy of the weights (each
    GRPO step's rollout copy, each role's copy per round) and every GRPO stage's check asks."""
    import gguf

    return gguf.GGUFReader(template)


def _model_refusal(model: Any, template: str) -> str | None:
    """Why `model`'s weights cannot be written with `template`'s metadata and vocabulary, or
    None: not a Llama, or a Llama of another shape than the template (the embedded SmolLM2),
    whose header would make the copy a broken model."""
    if not exportable(model):
        return (f"{type(model).__name__} is not a Llama-architecture transformers model: llama.cpp cannot take "
                "its weights")
    reader = _template_reader(template)
    found = {key: reader.fields[key].contents() for key in _SHAPE if key in reader.fields}
    found["vocabulary"] = len(reader.fields["tokenizer.ggml.tokens"].data)
    config = getattr(model, "get_base_model", lambda: model)().config
    wanted = {key: getattr(config, attr, None) for key, attr in _SHAPE.items()} | {"vocabulary": config.vocab_size}
    differ = [f"{key} {wanted[key]} vs {value}" for key, value in found.items() if wanted[key] != value]
    if differ:
        return (f"the model's shape is not its GGUF template's ({'; '.join(differ)}): only a model of the embedded "
                "SmolLM2's shape is written for llama.cpp")
    return None


def _engine_missing() -> str | None:
    import importlib.util

    from coevo.llm.specs import llama_cpp_available

    if not llama_cpp_available() or importlib.util.find_spec("gguf") is None:
        return "llama.cpp (or gguf, which writes the copy) is not installed here (pip install 'coevo[llamacpp]')"
    return None


def copy_refusal(model: Any, template: str | Path | None = None) -> str | None:
    """Why llama.cpp cannot generate from a copy of `model` here, or None where it can. Asked
    before a run leans on copies (GRPO's rollouts), so that it says once that it samples with
    transformers instead, rather than failing mid-stage: llama.cpp or gguf not installed (a GPU
    image), or a model `export_gguf` refuses."""
    from coevo.llm.embedded import gguf_path

    return _engine_missing() or _model_refusal(model, str(template or gguf_path()))


def llamacpp_copy(local: Any, path: str | Path, **options: Any) -> Any:
    """A llama.cpp model on a trained `local` model's weights as they are now (written to
    `path`); its model id names the file's content, so it names these weights. ExportError
    with `copy_refusal`'s reasons where there can be none (no llama.cpp on a GPU image, say):
    the role then generates where it trains."""
    from coevo.llm.llamacpp import LlamaCppModel

    missing = _engine_missing()  # export_gguf refuses the models it cannot write
    if missing:
        raise ExportError(missing)

    allowed = {k: v for k, v in options.items() if k in ("n_ctx", "n_threads")}
    return LlamaCppModel(export_gguf(getattr(local, "model", local), path), **allowed)


def discard_copy(copy: Any) -> None:
    """Close a `llamacpp_copy` and remove the GGUF it was written to: the file holds weights
    that no longer are the model's, and ~270 MB for the embedded one."""
    getattr(copy, "close", lambda: None)()
    path = getattr(copy, "path", None)
    if path is not None:
        Path(path).unlink(missing_ok=True)


def _copy_metadata(reader: Any, writer: Any) -> None:
    """Every key of the template but the file's own bookkeeping and its quantisation."""
    import gguf

    skip = {"general.architecture", "general.file_type", "general.quantization_version"}
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in skip:
            continue
        kind = field.types[0]
        value = field.contents()
        if kind == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, value, kind, sub_type=field.types[1])
        else:
            writer.add_key_value(key, value, kind)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)


class _merged:
    """The model's weights with a LoRA adapter merged in (and unmerged on exit)."""

    def __init__(self, model: Any):
        self.model = model
        self.peft = hasattr(model, "merge_adapter") and hasattr(model, "get_base_model")

    def __enter__(self) -> dict[str, Any]:
        if self.peft:
            self.model.merge_adapter()
            base = self.model.get_base_model()
            return {name.replace(".base_layer", ""): tensor for name, tensor in base.state_dict().items()
                    if "lora_" not in name}
        return self.model.state_dict()

    def __exit__(self, *exc: Any) -> None:
        if self.peft:
            self.model.unmerge_adapter()
