"""Memory a training process hands back to the system, between its stages and its steps.

glibc keeps the heap pages a process frees for its own later use, in one arena per thread that
allocated (up to 8 a core): a finished stage's optimizer state, a step's activations and logits
go on counting in the resident set after they are freed, and the next allocation of another
thread does not reuse them. Both are handed back here; each is a no-op off glibc.
"""

from __future__ import annotations

import functools
from typing import Any

#: glibc's mallopt parameter for the most arenas it creates (malloc.h: M_ARENA_MAX).
_M_ARENA_MAX = -8
#: Arenas a training process needs: its main thread and one for the threads beside it (torch's
#: intra-op threads, llama.cpp's, tokenizers'); more only hold freed pages apart.
ARENAS = 2


@functools.lru_cache(maxsize=1)
def _libc() -> Any:
    import ctypes
    import ctypes.util

    try:
        return ctypes.CDLL(ctypes.util.find_library("c"))
    except (OSError, TypeError):
        return None


def give_back_freed_memory() -> None:
    """Hand the heap pages Python and torch have freed back to the system (glibc keeps them
    otherwise: a finished stage's optimizer state would go on counting in the resident set of
    every stage after it). A no-op off glibc."""
    libc = _libc()
    try:
        libc.malloc_trim(0)
    except AttributeError:
        pass
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass


def limit_heap_arenas(arenas: int = ARENAS) -> None:
    """Let glibc create at most `arenas` heap arenas from now on (a run calls it before its
    models load and its threads start)."""
    libc = _libc()
    try:
        libc.mallopt(_M_ARENA_MAX, arenas)
    except AttributeError:
        pass
