"""docs/architecture.md names only what the code has (issue 42).

Every span in backticks that reads as a reference to code is looked up in coevo/'s source
(parsed, never imported, so a module's heavy dependencies do not matter):

- a file path (`coevo/train/stages.py`, `train/stages.py`, `taiscore/evaluation.py`,
  `algorithms/*/loop.py`, `tests/...`), with an optional `:name` (`train/stages.py:run_stage`);
- a dotted module (`coevo.view.comparison`, `coevo.llm.*`), optionally followed by names in it;
- a module's short name and a name in it (`runner._experiments`, `judging.rollout_judge`);
- a class and one of its members (`RoleSet.load`, `Template.messages(**values)`);
- a class or constant (`LocalModel`, `RESULT_FILE`), a function called (`run_stage(...)`), or
  another snake_case name (`train_dpo`, `win_rate_vs_round0`).

And each ```python block's classes must exist, with the methods and fields it shows; in any
other fenced block, paths with a folder (`view/run_page.py`) and dotted modules are looked up.
What is not a reference (a command, `8/10`, a config key such as `data.source`) is left alone.
Where the check is loose: a lone snake_case name passes as a word of any string in the code
(metric names are written as strings), and prose claims ("X imports Y") are not read at all;
tests/test_import_layers.py holds the layer table to the imports.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "coevo"
DOC = ROOT / "docs" / "architecture.md"
#: The repository's other folders a path may start from (a path may also start with coevo/,
#: with one of coevo/'s folders, or be the tail of a path in coevo/: `taiscore/evaluation.py`).
OTHER_FOLDERS = ("tests/", "docs/", "benchmarks/", "examples/")

IDENT = r"[A-Za-z_]\w*"
CHAIN = re.compile(rf"{IDENT}(?:\.{IDENT})*")
CALL = re.compile(rf"(?P<head>{IDENT}(?:\.{IDENT})*)\((?P<args>.*)\)")
PATH = re.compile(r"(?P<path>[\w./*-]*\w\.py)(?::(?P<name>" + IDENT + r"(?:\." + IDENT + r")*))?(?:\(.*\))?")
GLOB = re.compile(rf"coevo(?:\.{IDENT})*\.\*")
#: `summary.json`, `run.sqlite`: files a run writes, not names in the code.
FILE_SUFFIXES = {"json", "jsonl", "sqlite", "html", "yaml", "yml", "md", "txt", "lock", "log", "gguf", "parquet"}


@dataclass
class Index:
    """What coevo/'s source defines and mentions."""

    modules: dict[str, Path] = field(default_factory=dict)  # dotted name -> file
    top: dict[str, set[str]] = field(default_factory=dict)  # module -> names bound at its top level
    classes: dict[str, list[ast.ClassDef]] = field(default_factory=dict)  # class name -> definitions
    callables: set[str] = field(default_factory=set)  # every def and class name, every parameter
    fields: set[str] = field(default_factory=set)  # every class-level annotated name (config keys)
    identifiers: set[str] = field(default_factory=set)  # every name the source binds or uses
    words: set[str] = field(default_factory=set)  # every word of a string (metric names, keys)

    def members(self, cls: str, seen: frozenset[str] = frozenset()) -> set[str]:
        """Methods, class-level fields and `self.x` attributes of every class named `cls`,
        with those of its bases (looked up by name)."""
        found: set[str] = set()
        for node in self.classes.get(cls, []):
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item in node.body:
                    found.add(item.name)
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item in node.body:
                    found.add(item.target.id)
                elif isinstance(item, ast.Assign) and item in node.body:
                    found.update(t.id for t in item.targets if isinstance(t, ast.Name))
                elif (isinstance(item, ast.Attribute) and isinstance(item.value, ast.Name)
                      and item.value.id == "self" and isinstance(item.ctx, ast.Store)):
                    found.add(item.attr)
            for base in node.bases:
                name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
                if name and name not in seen and name != cls:
                    found |= self.members(name, seen | {cls})
        return found

    def short_modules(self, prefix: str) -> list[str]:
        """The modules whose dotted name ends with `prefix` (`runner`, `taiscore.loop`)."""
        return [m for m in self.modules if m == prefix or m.endswith("." + prefix)]


def _top_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    stack: list[ast.stmt] = list(tree.body)
    while stack:  # into `if TYPE_CHECKING:` / try blocks, never into functions or classes
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign):
            names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for part in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, part, []):
                    stack.extend(child.body if isinstance(child, ast.ExceptHandler) else [child])
    return names


@functools.cache
def index() -> Index:
    found = Index()
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        found.modules[name] = path
        found.top[name] = _top_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.classes.setdefault(node.name, []).append(node)
                found.fields.update(item.target.id for item in node.body
                                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.callables.add(node.name)
                found.identifiers.add(node.name)
            elif isinstance(node, ast.Name):
                found.identifiers.add(node.id)
            elif isinstance(node, ast.Attribute):
                found.identifiers.add(node.attr)
            elif isinstance(node, ast.arg):  # `train()`: a function run_stage is given
                found.identifiers.add(node.arg)
                found.callables.add(node.arg)
            elif isinstance(node, ast.keyword) and node.arg:
                found.identifiers.add(node.arg)
            elif isinstance(node, ast.alias):
                found.identifiers.update((node.asname or node.name).split("."))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                found.words.update(re.findall(r"\w+", node.value))
    return found


def _in_module(module: str, chain: list[str]) -> bool:
    """`chain` names something in `module`: a top-level name, then a member of that class."""
    code = index()
    if not chain:
        return True
    if chain[0] not in code.top[module]:
        return f"{module}.{chain[0]}" in code.modules and _in_module(f"{module}.{chain[0]}", chain[1:])
    return len(chain) == 1 or chain[0] not in code.classes or chain[1] in code.members(chain[0])


def _resolve_dotted(chain: list[str]) -> bool | None:
    """True: `a.b.c` names code; False: it starts as code and then names nothing;
    None: it does not start with a module or class name."""
    code = index()
    if chain[0] in code.classes:
        return len(chain) == 1 or chain[1] in code.members(chain[0])
    for cut in range(len(chain), 0, -1):
        modules = code.short_modules(".".join(chain[:cut])) if chain[0] != "coevo" else (
            [".".join(chain[:cut])] if ".".join(chain[:cut]) in code.modules else [])
        if modules:
            return any(_in_module(m, chain[cut:]) for m in modules)
    return None


def _is_config_key(chain: list[str]) -> bool:
    return len(chain) > 1 and all(part in index().fields for part in chain)


def _path_problem(path: str, name: str | None) -> str | None:
    code = index()
    relative = path.removeprefix("coevo/")
    if "*" in path:
        files = list(ROOT.glob(path)) + list(PACKAGE.glob(relative))
        modules = [f for f in files if f.is_relative_to(PACKAGE)]
    else:
        files = [f for f in (ROOT / path, PACKAGE / relative) if f.is_file()]
        if not files and "/" in relative and not path.startswith(OTHER_FOLDERS):
            # `taiscore/evaluation.py`: the tail of a path inside coevo/
            files = [f for f in code.modules.values() if f.as_posix().endswith("/" + relative)]
        modules = [f for f in files if f.is_relative_to(PACKAGE)]
    if not files:
        return f"no file {path}"
    if name:
        by_file = {f: m for m, f in code.modules.items()}
        if not any(_in_module(by_file[f], name.split(".")) for f in modules):
            return f"{path} has no {name}"
    return None


def problem(span: str) -> str | None:
    """Why the backticked `span` names nothing in the code, or None (it does, or it is not a
    reference to code)."""
    code = index()
    span = span.strip()
    if match := PATH.fullmatch(span):
        return _path_problem(match["path"], match["name"])
    if span.startswith(("coevo/", *OTHER_FOLDERS)) and re.fullmatch(r"[\w./*-]+", span):
        return None if list(ROOT.glob(span)) else f"no file {span}"
    if GLOB.fullmatch(span):
        package = span[:-2]
        ok = package in code.modules and code.modules[package].name == "__init__.py"
        return None if ok else f"no package {package}"
    called = CALL.fullmatch(span)
    head = called["head"] if called else span
    if not CHAIN.fullmatch(head) or head.rpartition(".")[2] in FILE_SUFFIXES:
        return None  # a command, an expression, a placeholder, a file a run writes: not a name
    chain = head.split(".")
    if len(chain) > 1 or chain[0] == "coevo":
        resolved = _resolve_dotted(chain)
        if resolved or (resolved is False and _is_config_key(chain)):
            return None
        if resolved is False:
            return f"{head} names nothing in the code"
        return f"no class {chain[0]}" if chain[0][:1].isupper() else None  # else a config key
    name = chain[0]
    if called:
        return None if name in code.callables else f"no function or class {name}"
    if name[:1].isupper() and len(name) > 1:  # a class or a constant: named in the source
        return None if name in code.identifiers else f"no name {name} in the code"
    if "_" in name.strip("_"):  # a function, or a metric or key the code writes as a string
        return None if name in code.identifiers or name in code.words else f"no name {name} in the code"
    return None  # a plain word (`valid`, `local`): not a claim about code


def python_block_problems(source: str) -> list[str]:
    """A ```python block's classes must exist with every method and field it shows."""
    code = index()
    found = []
    for node in ast.parse(source).body:
        if not isinstance(node, ast.ClassDef):
            continue
        if node.name not in code.classes:
            found.append(f"no class {node.name}")
            continue
        members = code.members(node.name)
        for item in node.body:
            name = (item.name if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    else item.target.id if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    else None)
            if name and name not in members:
                found.append(f"{node.name} has no {name}")
    return found


def problems(markdown: str) -> list[str]:
    """Every reference to code in `markdown` that the code does not have."""
    found: list[str] = []
    fences = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
    for block in fences.finditer(markdown):
        if block[1] == "python":
            found += python_block_problems(block[2])
        else:  # a map or a shell line: its paths with a folder and its dotted modules
            for token in re.findall(r"[\w./*-]+/[\w.*-]+\.py\b|\bcoevo(?:\.\w+)+", block[2]):
                if (why := problem(token)) is not None:
                    found.append(f"{token} (in a ``` block): {why}")
    prose = fences.sub("", markdown)
    for span in re.findall(r"`([^`\n]+)`", prose):
        if (why := problem(span)) is not None:
            found.append(f"`{span}`: {why}")
    return found


def test_every_name_the_architecture_doc_gives_is_in_the_code():
    assert problems(DOC.read_text(encoding="utf-8")) == []


def test_the_check_reports_what_the_code_does_not_have():
    """The names the review of issue 42 found wrong, and made-up ones, are each reported;
    their right spellings are not."""
    wrong = ["runner.EXPERIMENTS", "view/runinfo.py", "train/modelcard.py", "coevo/view/runinfo.py",
             "coevo.view.runinfo", "coevo.train.modelcard", "FrobnicatedSummary", "RoleSet.frobnicate",
             "frobnicate_the_widgets", "frobnicate(x)", "train/stages.py:frobnicate", "coevo.frobnicate.*",
             "algorithms/*/frobnicate.py", "runner.frobnicate(config)"]
    right = ["runner._experiments", "coevo/runinfo.py", "runinfo.py", "modelcard.py", "coevo.runinfo",
             "coevo.train.stages", "LocalModel", "RoleSet.load", "run_stage(store, name, train, restore)",
             "train/stages.py:run_stage", "taiscore/evaluation.py", "coevo.llm.*", "algorithms/*/loop.py",
             "judging.rollout_judge", "Template.messages(**values)", "data.source", "coevo run", "8/10"]
    assert [span for span in wrong if problem(span) is None] == []
    assert {span: problem(span) for span in right if problem(span) is not None} == {}
    block = "```python\nclass Role:\n    def ask(self): ...\n    def frobnicate(self): ...\n```\n"
    assert problems(block + "`FrobnicatedSummary`\n") == ["Role has no frobnicate",
                                                          "`FrobnicatedSummary`: no name FrobnicatedSummary in the code"]
    mapped = "```\nview/   pages (view/run_page.py, view/runinfo.py), coevo.view.app, coevo.view.runinfo\n```\n"
    assert problems(mapped) == ["view/runinfo.py (in a ``` block): no file view/runinfo.py",
                                "coevo.view.runinfo (in a ``` block): coevo.view.runinfo names nothing in the code"]
