"""The import rule of docs/architecture.md, read from the code: every `import` and `from ...
import` in coevo/ (at module level, inside functions, under `if TYPE_CHECKING:`) is an arrow
from the module that holds it to the coevo module it names. A lazy or typing-only import
breaks nothing at run time, but it is still a tie: the module cannot be read, moved or tested
without the one it names, so lazy arrows count like the others.

The layers are read from the doc's one layer table (its rows name modules, `coevo.settings.config`, or
packages with all they hold, `coevo.llm.*`): every module of coevo/ sits in exactly one row,
every row names at least one module, and no arrow runs from a layer to a higher one.
Also guarded: llm/ never reaches up into train/; train/distributed.py (the message layer
every rank runs) names nothing above train/ but leaf modules; tasks/ sits below what asks a
model; and no circle anywhere in coevo/ (an algorithm's audit or evaluation that needs the
loop's type names it as a Protocol).
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import coevo

PACKAGE = Path(coevo.__file__).parent
DOC = PACKAGE.parent / "docs" / "architecture.md"


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
        "import coevo.rundir.store\n"
        "from coevo.train import distributed\n"
        "from . import base\n"
        "if TYPE_CHECKING:\n    from coevo.roles.base import Role\n"
        "def f():\n    from coevo.settings.config import ModelRoles\n"
    )
    known = {"coevo.rundir.store", "coevo.train", "coevo.train.distributed", "coevo.llm", "coevo.llm.base",
             "coevo.roles.base", "coevo.settings.config", "coevo.llm.specs"}
    assert imported(ast.parse(source), "coevo.llm.specs", False, known) == {
        "coevo.rundir.store", "coevo.train.distributed", "coevo.llm.base", "coevo.roles.base", "coevo.settings.config"}


def test_an_import_from_outside_a_package_runs_its_init_first():
    known = {"coevo.settings.config", "coevo.train", "coevo.train.trainable", "coevo.train.common"}
    assert with_packages_run("coevo.settings.config", {"coevo.train.trainable"}, known) == {
        "coevo.train.trainable", "coevo.train"}
    assert with_packages_run("coevo.train.common", {"coevo.train.trainable"}, known) == {"coevo.train.trainable"}


def test_the_circle_finder_finds_a_circle_and_only_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_llm_imports_nothing_from_train():
    assert arrows(import_graph(), _in(("coevo.llm",)), _in(("coevo.train",))) == []


def test_the_message_layer_of_many_processes_names_nothing_above_train():
    """The trainers import train/distributed.py; it may import train/ and leaf modules only
    (the loop the other ranks run, which loads models and trains, is coevo/run/ranks.py)."""
    graph = import_graph()
    leaves = {name for name, targets in graph.items() if not targets}
    outside = [m for m in graph["coevo.train.distributed"] if not _in(("coevo.train",))(m) and m not in leaves]
    assert outside == []


def test_tasks_sit_below_roles_validators_and_the_algorithms():
    """Data loading asks no judge and runs no validator: a task's data is read the same
    whatever the run does with it (the query filter, which asks a judge, is roles/'s)."""
    above = _in(("coevo.roles", "coevo.validators", "coevo.algorithms", "coevo.train", "coevo.audit",
                 "coevo.eval", "coevo.view", "learning"))
    graph = import_graph()
    upward = {m: sorted(t for t in targets if above(t)) for m, targets in graph.items() if _in(("coevo.tasks",))(m)}
    assert {m: t for m, t in upward.items() if t} == {}


def test_no_circle_anywhere():
    assert circles(import_graph()) == []


# -- the layer table of docs/architecture.md ------------------------------------------------


def layer_table(markdown: str) -> list[tuple[int, str, list[str]]]:
    """(layer number, layer name, module patterns) per row of the doc's one markdown table
    whose header names `layer` and `modules`; the patterns are the modules cell's backticked
    spans. Anything else (no such table, two of them, a row without a number) is an error."""
    blocks: list[list[str]] = [[]]
    for line in markdown.splitlines():
        if line.startswith("|"):
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    tables = [b for b in blocks if b and [c.strip() for c in b[0].strip("|").split("|")][:2] == ["layer", "modules"]]
    assert len(tables) == 1, f"{len(tables)} layer tables (a markdown table headed | layer | modules |); want one"
    rows = []
    for line in tables[0][2:]:  # past the header and its |---| line
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        number = re.match(r"(\d+)\s+(.*)", cells[0])
        assert number, f"a layer row must start with its number: {line[:80]}"
        rows.append((int(number[1]), number[2], re.findall(r"`([^`]+)`", cells[1])))
    return rows


def matches(pattern: str, module: str) -> bool:
    """`coevo.llm.*`: the package and everything under it; any other pattern: that module."""
    if pattern.endswith(".*"):
        return module == pattern[:-2] or module.startswith(pattern[:-1])
    return module == pattern


def place(rows: list[tuple[int, str, list[str]]], names: set[str]) -> tuple[dict[str, int], dict[str, list[str]]]:
    """Each module's layer, and what is wrong: modules no row or several rows match, and
    patterns that match no module."""
    layer: dict[str, int] = {}
    wrong: dict[str, list[str]] = {"in no layer": [], "in several rows": [], "rows naming no module": []}
    patterns = [(number, pattern) for number, _, found in rows for pattern in found]
    for name in sorted(names):
        hits = [(number, pattern) for number, pattern in patterns if matches(pattern, name)]
        if not hits:
            wrong["in no layer"].append(name)
        elif len(hits) > 1:
            wrong["in several rows"].append(f"{name}: {[p for _, p in hits]}")
        else:
            layer[name] = hits[0][0]
    wrong["rows naming no module"] = [p for _, p in patterns if not any(matches(p, n) for n in names)]
    return layer, wrong


def upward(graph: dict[str, set[str]], layer: dict[str, int]) -> list[str]:
    """Every arrow from a module to one in a higher layer."""
    return sorted(f"{a} (layer {layer[a]}) -> {b} (layer {layer[b]})"
                  for a, targets in graph.items() for b in targets
                  if a in layer and b in layer and layer[b] > layer[a])


@functools.cache
def doc_layers() -> tuple[list[tuple[int, str, list[str]]], dict[str, int], dict[str, list[str]]]:
    rows = layer_table(DOC.read_text(encoding="utf-8"))
    return (rows, *place(rows, set(import_graph())))


def test_the_layer_table_is_read_and_checked_as_the_doc_says():
    text = ("| layer | modules | what |\n|---|---|---|\n"
            "| 2 top | `coevo.cli`, `coevo.view.*` | x |\n| 1 bottom | `coevo.rundir.store`, `coevo.gone` | y |\n")
    rows = layer_table("# A doc\n\n" + text + "\nmore prose\n")
    assert rows == [(2, "top", ["coevo.cli", "coevo.view.*"]), (1, "bottom", ["coevo.rundir.store", "coevo.gone"])]
    names = {"coevo.cli", "coevo.view", "coevo.view.app", "coevo.viewer", "coevo.rundir.store"}
    layer, wrong = place(rows + [(1, "again", ["coevo.view.app"])], names)
    assert wrong == {"in no layer": ["coevo.viewer"], "in several rows": ["coevo.view.app: ['coevo.view.*', 'coevo.view.app']"],
                     "rows naming no module": ["coevo.gone"]}
    assert upward({"coevo.rundir.store": {"coevo.cli"}, "coevo.cli": {"coevo.rundir.store"}}, layer) == [
        "coevo.rundir.store (layer 1) -> coevo.cli (layer 2)"]
    try:
        layer_table(text + "\n" + text)
    except AssertionError as exc:
        assert "2 layer tables" in str(exc)
    else:
        raise AssertionError("two layer tables were read as one")


def test_the_layers_are_numbered_once_each_from_1():
    rows, _, _ = doc_layers()
    assert sorted(number for number, _, _ in rows) == list(range(1, len(rows) + 1))


def test_every_module_sits_in_exactly_one_layer():
    _, _, wrong = doc_layers()
    assert wrong == {"in no layer": [], "in several rows": [], "rows naming no module": []}


def test_no_import_runs_up_the_layers():
    """Lazy and typing-only imports included; an import from outside a package counts as
    one into its __init__.py too (`with_packages_run`)."""
    _, layer, _ = doc_layers()
    assert upward(import_graph(), layer) == []
