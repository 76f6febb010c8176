"""Small pieces every backend shares: stop-string cutting, content hashes for model ids,
a chat turn's token count (`chat_tokens`: the roles' prompt budget and GRPO's length check).

Model ids are cache keys, so they name *content*, not places: the same weights in another
folder (or on another machine) keep their cached answers, and weights retrained in place do
not inherit stale ones.
"""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

from coevo.core.types import Completion

# (path, size, mtime_ns) -> sha256 hex; hashing a 500 MB safetensors file takes about a
# second, and several roles load the same model.
_digests: dict[tuple[str, int, int], str] = {}
_digest_lock = threading.Lock()

# Files that define what a model answers; logs, READMEs and optimizer states do not.
_MODEL_SUFFIXES = (".json", ".safetensors", ".bin", ".model", ".jinja", ".txt", ".gguf", ".tiktoken")


def file_digest(path: str | Path) -> str:
    """sha256 of a file, memoised on (path, size, mtime) within this process."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _digest_lock:
        if key in _digests:
            return _digests[key]
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            sha.update(block)
    with _digest_lock:
        _digests[key] = sha.hexdigest()
    return _digests[key]


def folder_digest(folder: str | Path) -> str:
    """Short content hash of a model folder (weights, config, tokenizer, chat template)."""
    folder = Path(folder)
    sha = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in _MODEL_SUFFIXES and not path.name.startswith("."):
            sha.update(str(path.relative_to(folder)).encode() + b"\0")
            sha.update(file_digest(path).encode())
    return sha.hexdigest()[:16]


def truncate_at_stop(text: str, stop: tuple[str, ...] | list[str]) -> str:
    """Cut at the earliest stop string, which is not included (OpenAI semantics)."""
    cut = len(text)
    for s in stop:
        if s:
            pos = text.find(s)
            if pos != -1:
                cut = min(cut, pos)
    return text[:cut]


def copies(completion: Completion, n: int) -> list[Completion]:
    """n independent copies: greedy decoding gives one answer, so it is computed once."""
    return [completion.model_copy() for _ in range(n)]


def thinking_tag(thinking: bool | None) -> str:
    """What a model id gains from a role's `thinking` switch: the same weights answer
    otherwise with thinking on or off, so the call cache must keep the two apart."""
    return "" if thinking is None else f"+thinking={'on' if thinking else 'off'}"


def chat_tokens(tokenizer: Any, conversation: list[dict[str, str]]) -> int:
    """Tokens of `conversation` as the model is fed it (LocalModel, TRL's GRPO): the chat
    template applied with the generation prompt, then tokenized without further special
    tokens (the template wrote them all)."""
    rendered = tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    return len(tokenizer(rendered, add_special_tokens=False)["input_ids"])
