"""The run's log file and a quiet terminal.

While a run lives (`coevo run`, `coevo quickstart`: `coevo.run.runner.run_experiment`),
RUN/coevo.log receives coevo's own log records (INFO and up, TRL's per-step dicts among
them, see coevo.train.reporting), the libraries' (transformers, TRL, datasets, accelerate,
peft, ...: WARNING and up) and Python's warnings (FutureWarning, UserWarning, ...).

The terminal shows coevo's progress bars, its one line per finished training stage and
coevo's own warnings; the libraries' progress bars are kept off it (transformers' ones,
"Writing model shards" among them, become one line each in the log file; datasets' map and
the hub's download bars are switched off). With COEVO_VERBOSE=1 (`coevo -v`) the terminal
also shows everything the file gets, and the libraries' bars stay on.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import logging
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

VERBOSE_ENV = "COEVO_VERBOSE"
LOG_FILE = "coevo.log"
#: Logging modules that attach their library's own terminal handler when imported.
SELF_CONFIGURING = ("transformers.utils.logging", "datasets.utils.logging")
#: Libraries whose own terminal handlers give way to the run's handlers.
LIBRARIES = ("transformers", "trl", "datasets", "accelerate", "peft", "torch", "huggingface_hub", "vllm",
             "sentence_transformers", "httpx", "openai")


def verbose() -> bool:
    """Whether the terminal shows library warnings and TRL's logs too (`coevo -v`)."""
    return os.environ.get(VERBOSE_ENV, "").strip().lower() not in ("", "0", "false", "no")


class TerminalHandler(logging.Handler):
    """Log records on coevo's console (above its live progress bars, never through them):
    everything when verbose, else only coevo's own warnings and errors."""

    def __init__(self, everything: bool):
        super().__init__(logging.INFO if everything else logging.WARNING)
        self.everything = everything
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "coevo_shown", False):  # progress.announce printed it already
            return False
        return self.everything or record.name == "coevo" or record.name.startswith("coevo.")

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from coevo.core.progress import console

            console.print(self.format(record), markup=False, highlight=False, emoji=False, soft_wrap=True)
        except Exception:  # pragma: no cover - logging must never break the run
            self.handleError(record)


@contextlib.contextmanager
def run_logging(run_dir: str | Path) -> Iterator[Path]:
    """Route logs as the module doc says while the block runs; everything is put back after
    (tests run many runs in one process). Yields the log file's path. A resumed run appends
    to the same file."""
    path = Path(run_dir) / LOG_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    loud = verbose()
    with contextlib.ExitStack() as undo:
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setLevel(logging.INFO)
        file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        undo.callback(file_handler.close)
        _add_handler(undo, file_handler)
        _add_handler(undo, TerminalHandler(loud))
        coevo_log = logging.getLogger("coevo")
        undo.callback(coevo_log.setLevel, coevo_log.level)
        coevo_log.setLevel(logging.INFO)
        _capture_warnings(undo)
        _take_over_libraries(undo, loud)
        yield path


def _add_handler(undo: contextlib.ExitStack, handler: logging.Handler) -> None:
    root = logging.getLogger()
    root.addHandler(handler)
    undo.callback(root.removeHandler, handler)


def _capture_warnings(undo: contextlib.ExitStack) -> None:
    """Python warnings become log records (logger `py.warnings`): file only, unless verbose."""
    if getattr(logging, "_warnings_showwarning", None) is not None:
        return  # someone (pytest, a caller) captures them already
    logging.captureWarnings(True)
    undo.callback(logging.captureWarnings, False)


def _take_over_libraries(undo: contextlib.ExitStack, loud: bool) -> None:
    """Remove the libraries' own terminal handlers and let their records reach ours.

    transformers and datasets attach a stderr handler (and stop propagation) when their
    logging module is first imported, which is often mid-run (when a model loads): those
    are taken over then, through an import hook, instead of importing them now (seconds
    for a run that may never need them)."""
    for name in LIBRARIES:
        _quiet_logger(undo, name)

    def imported(module: Any) -> None:
        module.get_logger()  # configures the library's logger (its handler) if not yet done
        _quiet_logger(undo, module.__name__.split(".")[0])
        if not loud:
            _library_bars_off(undo, module.__name__)

    for name in SELF_CONFIGURING:
        if name in sys.modules:
            imported(sys.modules[name])
    hook = AfterImport(SELF_CONFIGURING, imported)
    sys.meta_path.insert(0, hook)
    undo.callback(sys.meta_path.remove, hook)


def _quiet_logger(undo: contextlib.ExitStack, name: str) -> None:
    logger = logging.getLogger(name)
    for handler in list(logger.handlers):
        # Exactly StreamHandler: a terminal one (a FileHandler a user added stays).
        if type(handler) is logging.StreamHandler:
            logger.removeHandler(handler)
            undo.callback(logger.addHandler, handler)
    if not logger.propagate:
        logger.propagate = True
        undo.callback(setattr, logger, "propagate", False)


class AfterImport(importlib.abc.MetaPathFinder):
    """An import hook: `callback(module)` right after one of `names` is first imported."""

    def __init__(self, names: tuple[str, ...], callback: Callable[[Any], None]):
        self.names, self.callback = set(names), callback

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if finder is not self and hasattr(
                finder, "find_spec") else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader = _ThenCall(spec.loader, self.callback)
                return spec
            if spec is not None:
                return spec
        return None


class _ThenCall:
    """A module loader that runs the real one, puts it back in its place, then calls back."""

    def __init__(self, loader: Any, callback: Callable[[Any], None]):
        self.loader, self.callback = loader, callback

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.callback(module)


def _library_bars_off(undo: contextlib.ExitStack, module: str) -> None:
    """A library's own tqdm bars off the terminal: transformers' (shard writing, loading)
    become one line each in the log file; the hub's (downloads) and datasets' (map) are off."""
    if module == "transformers.utils.logging":
        from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
        from transformers.utils import logging as hf_logging

        previous = hf_logging.set_tqdm_hook(lambda factory, args, kwargs: LoggedBar(*args, **kwargs))
        undo.callback(hf_logging.set_tqdm_hook, previous)
        if not are_progress_bars_disabled():
            disable_progress_bars()
            undo.callback(enable_progress_bars)
    elif module == "datasets.utils.logging":
        # The module, by its full name: `datasets.utils.tqdm` is also a class of that package.
        datasets_tqdm = importlib.import_module("datasets.utils.tqdm")

        if datasets_tqdm.is_progress_bar_enabled():
            datasets_tqdm.disable_progress_bars()
            undo.callback(datasets_tqdm.enable_progress_bars)


class LoggedBar:
    """A stand-in for a library's tqdm bar: counts silently, and when it ends writes one line
    ("Writing model shards: 2/2") to the log file (logger `coevo.libraries`)."""

    _log = logging.getLogger("coevo.libraries")

    def __init__(self, iterable: Any = None, desc: str | None = None, total: int | None = None, **_: Any):
        self.iterable, self.desc, self.n, self._closed = iterable, desc or "progress", 0, False
        self.total = total if total is not None else _length(iterable)

    def __iter__(self) -> Iterator[Any]:
        for item in self.iterable:
            yield item
            self.n += 1
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._log.info("%s: %d/%s", self.desc, self.n, "?" if self.total is None else self.total)

    def __enter__(self) -> LoggedBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:  # set_description, refresh, write, ...: nothing to show
        return lambda *args, **kwargs: None


def _length(iterable: Any) -> int | None:
    try:
        return len(iterable)
    except TypeError:
        return None
