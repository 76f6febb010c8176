"""A reward-hacking monitor's anchor named in words (docs/monitor.md, `monitor.anchors`).

An anchor is configured by a spec that loads it: `python:coevo.eval.checkable:checkable_taiscore`,
`python:my_anchors.py:short`, `judge:MODEL`, or the loops' own `gold` and `audit`. A spec is how
the run found its anchor, not what the anchor measures, so the page names it by what it is: a
Python anchor by its function's docstring (read from the source, never imported: the viewer
runs no code of the run's), a judge by its model, the loops' anchors and the degeneracy
statistics by their definitions.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import lru_cache
from importlib.machinery import PathFinder
from pathlib import Path

#: Characters of an anchor's short name (a plot panel's title).
SHORT = 60

#: The loops' own anchors (coevo/monitor/rounds.py).
LOOP_ANCHORS = {
    "gold": ("held-out gold score", "The loop's own held-out gold measure per item (RLAC: pass@1 or FactScore "
             "precision; DecoEvo: the gold grade per diagnostic question)."),
    "audit": ("judge audit: 1 − fooled rate", "Per master key of the round's judge audit, the share of held-out "
              "items it did not fool the grading on (0–1): the grading should not get easier to fool as its "
              "proxy rises."),
}


def anchor_words(spec: str) -> dict[str, str]:
    """{"spec", "title", "short", "about"} of an anchor (or a flag's `degeneracy:<statistic>`):
    its name in words, that name cut for a panel title, and what it measures."""
    title, about = _words(spec)
    short = title if len(title) <= SHORT else title[: SHORT - 1].rstrip(" ,;:(") + "…"
    return {"spec": spec, "title": title, "short": short, "about": about}


def _words(spec: str) -> tuple[str, str]:
    if spec in LOOP_ANCHORS:
        return LOOP_ANCHORS[spec]
    if spec.startswith("degeneracy:"):
        from coevo.monitor.degeneracy import THRESHOLDS

        threshold = THRESHOLDS.get(spec.removeprefix("degeneracy:"))
        what = threshold.why if threshold is not None else spec.removeprefix("degeneracy:").replace("_", " ")
        return what, f"A degeneracy statistic of the policy's outputs: {what}."
    if spec.startswith("judge:"):
        model = spec.removeprefix("judge:")
        return f"second judge ({model})", (f"The reward as a second judge model, {model}, scores the policy's "
                                           "outputs on held-out prompts: a reward gamed against the first judge "
                                           "should not fool a second one.")
    if spec.startswith("python:") and spec.count(":") >= 2:
        source, _, function = spec.removeprefix("python:").rpartition(":")
        doc = _docstring(source, function)
        named = function.replace("_", " ")
        if not doc:
            return named, f"The Python function {function} (its source gives no docstring to say what it measures)."
        first = " ".join(doc.split("\n\n", 1)[0].split())
        # Its first clause, asides in brackets left out: "A checkable TAIScore on the constraints y0 breaks".
        plain = " ".join(re.sub(r"\s*\([^()]*\)", "", first).split())
        sentence = re.split(r"(?<=[.:;])\s", plain, maxsplit=1)[0].rstrip(".:;")
        return sentence or named, first
    return spec, "An anchor this viewer has no words for."


@lru_cache(maxsize=64)
def _docstring(source: str, function: str) -> str | None:
    """The docstring of `function` in `source` (a module path or a .py file), read with `ast`."""
    path = Path(source) if source.endswith(".py") else _module_file(source)
    if path is None or not path.is_file():
        return None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == function:
            return ast.get_docstring(node)
    return None


def _module_file(module: str) -> Path | None:
    """The source file of a dotted module, found without importing it or its packages
    (PathFinder only looks at folders); a top-level package already loaded (coevo itself,
    installed in editable mode through a finder of its own) is looked up where it was loaded."""
    top, *rest = module.split(".")
    loaded = sys.modules.get(top)
    if loaded is not None and getattr(loaded, "__path__", None):
        search: list[str] = list(loaded.__path__)
        origin: str | None = getattr(loaded, "__file__", None)
    else:
        spec = PathFinder.find_spec(top, sys.path)
        if spec is None:
            return None
        search, origin = list(spec.submodule_search_locations or []), spec.origin
    for part in rest:
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search, origin = list(spec.submodule_search_locations or []), spec.origin
    return Path(origin) if origin else None
