"""`python:` specs: a user's own Python function standing where a judge model goes.

    python:FILE.py:FUNCTION          a function in a file (imported from its path)
    python:package.module:FUNCTION   a function in an importable module
    python:FILE.py | python:package.module
                                     a module whose functions are named by judge kind:
                                     reward, pairwise, gold, grader (each one the run needs)

One signature per judge kind (`SIGNATURES`). A place that needs several kinds (TAIScore's
`roles.judge.model` is its reward, its pairwise judge and its gold judge) takes the module form;
a place that needs one takes either. Everything that can be wrong with a function (a bad
path, a missing function, a wrong signature, a function that raises or returns the wrong
type on a probe call) is found by `check_python_spec` before a run starts, as a ModelError
naming the spec.

Only the user's own file is imported, named by their own config: model output is never
executed. Calls are cached in the run store by (the module's source hash, the function's
name, the arguments), so a resumed run calls nothing it already called.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import math
import sys
import types
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from coevo.llm.base import ModelError

PREFIX = "python:"

#: Judge kind -> the signature its function has (documented in docs/models.md, listed by `coevo models`).
SIGNATURES = {
    "reward": "reward(x, y0, critique, y1) -> float | None   (TAIScore / outcome_gain / critique_quality "
              "reward; y1 is None for critique_quality; None = unreadable: the run's invalid_reward)",
    "pairwise": 'pairwise(x, a, b) -> "a" | "b" | "tie"',
    "gold": "gold(x, response, rubric) -> float   (rubric: {criteria: [{name, description, weight}]} or None)",
    "grader": "grader(question, answer, rubric) -> float in [0, 1]   (DecoEvo's gold grader)",
}

#: The prompt of every probe call (a function may recognise it: it is no user's data).
PROBE_PROMPT = "Write a haiku about rain."
_PROBE_RUBRIC = {"criteria": [{"name": "clarity", "description": "Is it clear?", "weight": 1.0}]}
#: The probe call of each kind: plain, short inputs of the types a run passes.
_PROBES: dict[str, tuple[Any, ...]] = {
    "reward": (PROBE_PROMPT, "Rain falls down.", "Mention the sound of the rain.",
               "Rain taps on the roof."),
    "pairwise": (PROBE_PROMPT, "Rain falls down.", "Rain taps on the roof, softly."),
    "gold": (PROBE_PROMPT, "Rain taps on the roof.", _PROBE_RUBRIC),
    "grader": (PROBE_PROMPT, "Rain taps on the roof.", _PROBE_RUBRIC),
}

#: The store's record kind of cached calls.
RECORD_KIND = "python_judgment"
#: coevo's own checkable scorers that moved: a config that names the old module is told the new one.
MOVED_MODULES = {"coevo.learning.rewards": "coevo.eval.checkable",
                 "coevo.learning.graders": "coevo.eval.checkable_graders"}


def is_python_spec(spec: Any) -> bool:
    """Whether `spec` names a Python function (or module) rather than a model."""
    return isinstance(spec, str) and spec.strip().startswith(PREFIX)


def parse_python_spec(spec: str) -> tuple[str, str | None]:
    """(module: a .py path or a dotted module name, function name or None for the module form)."""
    rest = spec.strip()[len(PREFIX):].strip()
    if not rest:
        raise ModelError(f"{spec!r}: name a function, as python:FILE.py:FUNCTION or python:package.module:FUNCTION")
    if rest.endswith(".py"):
        return rest, None
    module, sep, function = rest.rpartition(":")
    if not sep:
        return rest, None
    if not function.isidentifier():
        raise ModelError(f"{spec!r}: {function!r} is not a Python function name")
    return module, function


class PythonFunction:
    """The module a `python:` spec names, and (with a run store) its cached calls by kind."""

    def __init__(self, spec: str, module: ModuleType, source_hash: str, function: str | None,
                 store: Any = None):
        self.spec, self.module, self.source_hash, self.function, self.store = spec, module, source_hash, function, store
        self.model_id = spec  # where a model's id is shown (logs, cost tables)

    def bound(self, store: Any) -> PythonFunction:
        """The same function, its calls cached in `store` (a RunStore)."""
        return PythonFunction(self.spec, self.module, self.source_hash, self.function, store)

    def name_for(self, kind: str) -> str:
        """The function serving `kind`: the one named, else the module's function named `kind`."""
        return self.function or kind

    def get(self, kind: str) -> Callable[..., Any]:
        """The callable serving `kind` (a ModelError naming the spec when there is none)."""
        name = self.name_for(kind)
        function = getattr(self.module, name, None)
        if not callable(function):
            raise ModelError(f"{self.spec!r}: the module defines no function {name!r}; the {kind} judge "
                             f"needs {SIGNATURES[kind].split('   ')[0]}")
        return function

    def call(self, kind: str, *args: Any) -> tuple[Any, bool]:
        """(the function's answer for `args`, whether it came from the store's cache)."""
        key = None
        if self.store is not None:
            payload = json.dumps({"source": self.source_hash, "function": self.name_for(kind), "kind": kind,
                                  "args": args}, sort_keys=True, default=str)
            key = hashlib.sha256(payload.encode()).hexdigest()
            found = self.store.get_record(RECORD_KIND, key)
            if found is not None:
                return found["value"], True
        value = self.get(kind)(*args)
        if key is not None:
            self.store.put_record(RECORD_KIND, key, {"spec": self.spec, "kind": kind, "value": value})
        return value, False


def function_as_python(function: Callable[..., Any], name: str, arguments: tuple[str, ...],
                       store: Any = None) -> PythonFunction:
    """A plain Python function as the module a `python:` spec would load, serving `name`
    (reward, pairwise, gold): the same unreadable-answer handling and, with a store, the same
    call cache as a function named by a spec. TypeError when it cannot take `arguments`."""
    label = getattr(function, "__name__", name)
    try:
        inspect.signature(function).bind(*arguments)
    except TypeError as exc:
        raise TypeError(f"{label} takes ({', '.join(arguments)}); {exc}") from None
    except ValueError:  # a builtin without a signature: its first call tells
        pass
    try:  # the cache key follows the function's code: an edited function is asked again
        source = inspect.getsource(function)
    except (OSError, TypeError):
        source = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', label)}"
    module = types.ModuleType(f"coevo_function_{label}")
    setattr(module, name, function)
    return PythonFunction(f"python:<function {label}>", module, hashlib.sha256(source.encode()).hexdigest(), name,
                          store)


def load_python_function(spec: str) -> PythonFunction:
    """Import the module a `python:` spec names (a file by its path) and check the function
    exists; ModelError naming the spec and the fix otherwise. Kinds are checked by
    `check_python_spec`."""
    module_name, function = parse_python_spec(spec)
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser().resolve()
        if not path.is_file():
            raise ModelError(f"{spec!r}: no Python file at {module_name}")
        source = path.read_bytes()
        digest = hashlib.sha256(source).hexdigest()
        # A name of its own per source, so two scorer files named alike never collide.
        name = f"coevo_scorer_{path.stem}_{digest[:12]}"
        module = sys.modules.get(name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise ModelError(f"{spec!r}: {path} cannot be imported as a Python module")
            module = importlib.util.module_from_spec(loader_spec)
            try:
                loader_spec.loader.exec_module(module)
            except Exception as exc:  # the user's module failed to import: say where
                raise ModelError(f"{spec!r}: importing {path} failed: {type(exc).__name__}: {exc}") from exc
            sys.modules[name] = module
    else:
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:
            moved = MOVED_MODULES.get(module_name)
            if moved:
                raise ModelError(f"{spec!r}: module {module_name!r} is now {moved!r}; write "
                                 f"{spec.replace(module_name, moved, 1)!r}") from None
            raise ModelError(f"{spec!r}: cannot import module {module_name!r} ({type(exc).__name__}: {exc}); "
                             "give a FILE.py path or an importable package.module") from exc
        file = getattr(module, "__file__", None)
        source = Path(file).read_bytes() if file and Path(file).is_file() else module_name.encode()
        digest = hashlib.sha256(source).hexdigest()
    loaded = PythonFunction(spec, module, digest, function)
    if function is not None and not callable(getattr(module, function, None)):
        raise ModelError(f"{spec!r}: module {module_name} defines no function {function!r}")
    return loaded


def check_python_spec(spec: str, kinds: tuple[str, ...] | list[str], where: str = "") -> PythonFunction:
    """Load the spec and probe the function of every kind in `kinds` once: it must take that
    kind's arguments, not raise, and return that kind's type. ModelError (one line naming
    the spec, the kind and the fix) otherwise. `where` names the config place, for errors."""
    loaded = load_python_function(spec)
    place = f" ({where})" if where else ""
    if loaded.function is not None and len(kinds) > 1:
        raise ModelError(
            f"{spec!r}{place} names one function, but this place serves {len(kinds)} judge kinds: "
            + "; ".join(SIGNATURES[k].split("   ")[0] for k in kinds)
            + f". Name a module defining {', '.join(k + '()' for k in kinds)} instead: "
            f"python:{parse_python_spec(spec)[0]}")
    for kind in kinds:
        function = loaded.get(kind)
        args = _PROBES[kind]
        try:
            inspect.signature(function).bind(*args)
        except TypeError as exc:
            raise ModelError(f"{spec!r}{place}: {loaded.name_for(kind)} does not take the {kind} arguments "
                             f"({exc}); it must be {SIGNATURES[kind].split('   ')[0]}") from exc
        except ValueError:  # a builtin without a signature: the probe call tells
            pass
        try:
            value = function(*args)
        except Exception as exc:
            raise ModelError(f"{spec!r}{place}: {loaded.name_for(kind)}{args!r} raised "
                             f"{type(exc).__name__}: {exc} on a probe call; fix it before the run") from exc
        problem = answer_problem(kind, value)
        if problem:
            raise ModelError(f"{spec!r}{place}: {loaded.name_for(kind)} {problem} on a probe call; "
                             f"it must be {SIGNATURES[kind].split('   ')[0]}")
    return loaded


def answer_problem(kind: str, value: Any) -> str | None:
    """What is wrong with `value` as an answer of `kind` (None: nothing)."""
    if kind == "pairwise":
        return None if pairwise_answer(value) is not None else f'returned {value!r}, not "a", "b" or "tie"'
    if kind == "reward" and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"returned {value!r}, not a finite number"
    if kind == "grader" and not 0.0 <= value <= 1.0:
        return f"returned {value!r}, outside [0, 1]"
    return None


def pairwise_answer(value: Any) -> str | None:
    """"a", "b" or "tie" (case and spaces forgiven), else None."""
    answer = value.strip().lower() if isinstance(value, str) else None
    return answer if answer in ("a", "b", "tie") else None
