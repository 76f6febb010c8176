"""Progress bars for every long loop, and coevo's one-line announcements (a finished
training stage), on stderr so `--json` output stays clean."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

# Nothing printed here is read as markup or emoji codes: descriptions and log lines carry
# stage names, paths and model specs, which rich would rewrite (`:b:` as an emoji, `[x]` eaten).
console = Console(stderr=True, emoji=False, markup=False, highlight=False)


_active: Progress | None = None
_announce_log = logging.getLogger("coevo.core.progress")


def announce(line: str) -> None:
    """One line of coevo's own progress: on the terminal (above any live bars, unless
    COEVO_QUIET) and in the run's log file. The record is marked as already shown, so the
    terminal handler of coevo/run/logs.py does not print it a second time."""
    _announce_log.info(line, extra={"coevo_shown": True})
    if not os.environ.get("COEVO_QUIET"):
        console.print(line, markup=False, highlight=False, soft_wrap=True)


@contextmanager
def progress_bar(description: str, total: int, completed: int = 0) -> Iterator[Callable[[int], None]]:
    """Yield an `advance(k)` function. Nested bars share one live display (rich allows only
    one), so a stage inside an experiment shows as a second line, not an error."""
    global _active
    if os.environ.get("COEVO_QUIET"):
        yield lambda k=1: None
        return
    owner = _active is None
    if owner:
        columns = (TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn())
        _active = Progress(*columns, console=console, transient=False)
        _active.start()
    progress = _active
    task = progress.add_task(description, total=total, completed=completed)
    try:
        yield lambda k=1: progress.advance(task, k)
    finally:
        if owner:
            progress.stop()
            _active = None
        else:
            progress.remove_task(task)


def map_batches(fn: Callable[[list], list], items: list, batch_size: int | None, description: str) -> list:
    """Apply a batched function chunk by chunk with a progress bar; results stay in order.
    `batch_size` None: the whole list in one call (backends batch it themselves)."""
    results: list = []
    size = batch_size or max(1, len(items))
    with progress_bar(description, total=len(items)) as advance:
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            results.extend(fn(chunk))
            advance(len(chunk))
    return results
