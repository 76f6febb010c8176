"""The import rule of docs/architecture.md, read from the code: every `import` and `from ...
import` in coevo/ (at module level, inside functions, under `if TYPE_CHECKING:`) is an arrow
from the module that holds it to the coevo module it names. A lazy or typing-only import
breaks nothing at run time, but it is still a tie: the module cannot be read, moved or tested
without the one it names, so lazy arrows count like the others.

Guarded: llm/ never reaches up into train/; train/distributed.py (the message layer
every rank runs) names nothing above train/ but leaf modules; and no circle anywhere in
coevo/ (an algorithm's audit or evaluation that needs the loop's type names it as a Protocol).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import coevo

PACKAGE = Path(coevo.__file__).parent


def _in(prefixes: tuple[str, ...]):
    return lambda module: any(module == p or module.startswith(p + ".") for p in prefixes)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """The coevo modules a module's source names, wherever its import statements stand.
    `from pkg import x` names the submodule `pkg.x` where there is one, else `pkg` itself
    (whose __init__ holds x)."""
    found: set[str] = set()
    here = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: `from . import x`, `from ..y import z`
                anchor = here.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return {target for target in found if target in known and target != name}


def with_packages_run(name: str, targets: set[str], known: set[str]) -> set[str]:
    """Importing `coevo.train.trainable` from outside coevo.train first runs
    coevo/train/__init__.py, and whatever that imports: an arrow too. (Not the root package,
    which every module shares, nor a package the importer is inside, which is already running.)"""
    found = set(targets)
    for target in targets:
        parts = target.split(".")
        for end in range(2, len(parts)):
            package = ".".join(parts[:end])
            if package in known and not (name == package or name.startswith(package + ".")):
                found.add(package)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    graph = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[name] = with_packages_run(name, imported(tree, name, path.name == "__init__.py", known), known)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def arrows(graph: dict[str, set[str]], source, target) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in graph.items() if source(a) for b in targets if target(b))


def test_the_walk_sees_lazy_typing_only_and_relative_imports():
    source = (
        "from typing import TYPE_CHECKING\n"
        "import coevo.store\n"
        "from coevo.train import distributed\n"
        "from . import base\n"
        "if TYPE_CHECKING:\n    from coevo.roles.base import Role\n"
        "def f():\n    from coevo.config import ModelRoles\n"
    )
    known = {"coevo.store", "coevo.train", "coevo.train.distributed", "coevo.llm", "coevo.llm.base",
             "coevo.roles.base", "coevo.config", "coevo.llm.specs"}
    assert imported(ast.parse(source), "coevo.llm.specs", False, known) == {
        "coevo.store", "coevo.train.distributed", "coevo.llm.base", "coevo.roles.base", "coevo.config"}


def test_an_import_from_outside_a_package_runs_its_init_first():
    known = {"coevo.config", "coevo.train", "coevo.train.trainable", "coevo.train.common"}
    assert with_packages_run("coevo.config", {"coevo.train.trainable"}, known) == {
        "coevo.train.trainable", "coevo.train"}
    assert with_packages_run("coevo.train.common", {"coevo.train.trainable"}, known) == {"coevo.train.trainable"}


def test_the_circle_finder_finds_a_circle_and_only_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_llm_imports_nothing_from_train():
    assert arrows(import_graph(), _in(("coevo.llm",)), _in(("coevo.train",))) == []


def test_the_message_layer_of_many_processes_names_nothing_above_train():
    """The trainers import train/distributed.py; it may import train/ and leaf modules only
    (the loop the other ranks run, which loads models and trains, is coevo/ranks.py)."""
    graph = import_graph()
    leaves = {name for name, targets in graph.items() if not targets}
    outside = [m for m in graph["coevo.train.distributed"] if not _in(("coevo.train",))(m) and m not in leaves]
    assert outside == []


def test_tasks_sit_below_roles_validators_and_the_algorithms():
    """Data loading asks no judge and runs no validator: a task's data is read the same
    whatever the run does with it (the query filter, which asks a judge, is roles/'s)."""
    above = _in(("coevo.roles", "coevo.validators", "coevo.algorithms", "coevo.train", "coevo.audit",
                 "coevo.eval", "coevo.view", "coevo.learning"))
    graph = import_graph()
    upward = {m: sorted(t for t in targets if above(t)) for m, targets in graph.items() if _in(("coevo.tasks",))(m)}
    assert {m: t for m, t in upward.items() if t} == {}


def test_no_circle_anywhere():
    assert circles(import_graph()) == []
