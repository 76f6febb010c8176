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

A span that calls a function with arguments (`run_stage(store, name, train, restore)`,
`Template.messages(**values)`, `Validator.check(sample, output, proposal) -> Verdict`,
`train/stages.py:run_stage(store, name, train, restore)`) is also held to the function's
definition in coevo/ (a class: its `__init__`, else its fields, bases' first): every argument
name it gives is a parameter of that function, a positional one at its position (a literal,
`run_stage(".../actor")`, takes a position without naming it), `name=` a parameter it takes
by keyword (or it takes `**kwargs`), `*args` / `**kwargs` under their own names; no more
positional arguments than it takes; and the names of a `-> Type` are in its return
annotation. `name(...)` and `name()` only say that it exists. Where several definitions share
the name (`evaluate`, or a bare `run_stage`), one that fits is enough; a name that is only a
parameter (`restore(checkpoint)`: a function `run_stage` is given) has no definition to check.

And each ```python block's classes must exist, with the methods and fields it shows, and each
method it shows with parameters takes them as it shows them (the same rule); in any
other fenced block, paths with a folder (`view/run_page.py`) and dotted modules are looked up.
What is not a reference (a command, `8/10`, a config key such as `data.source`) is left alone.
A span may wrap onto the next line (`Backend.model(roles, role,` / `trainable=True)`), never
past a blank one.
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
#: `name(args)`, optionally `-> Type` after it.
CALL = re.compile(rf"(?P<head>{IDENT}(?:\.{IDENT})*)\((?P<args>.*)\)(?:\s*->\s*(?P<returns>.+))?")
PATH = re.compile(r"(?P<path>[\w./*-]*\w\.py)(?::(?P<name>" + IDENT + r"(?:\." + IDENT + r")*))?"
                  r"(?:\((?P<args>.*)\)(?:\s*->\s*(?P<returns>.+))?)?")
#: A code span: within one paragraph (it may wrap to the next line, never past a blank one).
SPAN = re.compile(r"`((?:(?!\n[ \t]*\n)[^`])+)`")
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
    defs: dict[str, list[tuple[str, ast.AST]]] = field(default_factory=dict)  # def / class name -> (module, def)
    trees: dict[str, ast.Module] = field(default_factory=dict)  # dotted name -> parsed module

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
        found.trees[name] = tree
        found.top[name] = _top_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                found.classes.setdefault(node.name, []).append(node)
                found.fields.update(item.target.id for item in node.body
                                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.defs.setdefault(node.name, []).append((name, node))
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
    """Why the backticked `span` names nothing in the code, or calls it with arguments its
    definition does not take; None where it fits (or is not a reference to code)."""
    span = " ".join(span.split())
    return _existence_problem(span) or _signature_problem(span)


def _existence_problem(span: str) -> str | None:
    code = index()
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


# -- signatures: the arguments a span gives a function, against its definition --------------


@dataclass
class Signature:
    """A definition's parameters, as a call sees them (`self` / `cls` left out)."""

    where: str  # "run_stage in coevo/train/stages.py", for the message
    positional: list[str]  # positional-only and positional-or-keyword, in order
    keyword: list[str]  # the names a call may pass by keyword
    varargs: str | None = None
    kwargs: str | None = None
    returns: str | None = None  # the return annotation, as written

    def listed(self) -> str:
        names = self.positional + [f"*{self.varargs}"] * bool(self.varargs)
        names += [n for n in self.keyword if n not in self.positional] + [f"**{self.kwargs}"] * bool(self.kwargs)
        return ", ".join(names) or "none"


def _function_signature(node: ast.FunctionDef | ast.AsyncFunctionDef, where: str) -> Signature:
    args = node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    by_keyword = [a.arg for a in args.args if a.arg not in ("self", "cls")] + [a.arg for a in args.kwonlyargs]
    return Signature(where, positional, by_keyword, args.vararg.arg if args.vararg else None,
                     args.kwarg.arg if args.kwarg else None,
                     ast.unparse(node.returns) if node.returns is not None else None)


def _base_name(base: ast.expr) -> str | None:
    """A base class's name as written (`Role`, `pydantic.BaseModel` -> `BaseModel`)."""
    return base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None


def _class_defs(name: str, member: str, seen: frozenset[str] = frozenset()) -> list[ast.AST]:
    """The definitions of `member` in the classes named `name`, or else in their bases."""
    code = index()
    found = [item for node in code.classes.get(name, []) for item in node.body
             if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and item.name == member]
    if found:
        return found
    for node in code.classes.get(name, []):
        for base_name in map(_base_name, node.bases):
            if base_name and base_name not in seen and base_name != name:
                found += _class_defs(base_name, member, seen | {name})
    return found


def _fields(node: ast.ClassDef, seen: frozenset[str] = frozenset()) -> list[str]:
    """A class's fields in the order a dataclass or pydantic model takes them: its bases'
    first, then its own class-level annotated names (not `ClassVar`s, not `_private` ones)."""
    names: list[str] = []
    for base_name in map(_base_name, node.bases):
        if base_name and base_name not in seen and base_name != node.name:
            for base_node in index().classes.get(base_name, [])[:1]:
                names += [n for n in _fields(base_node, seen | {node.name}) if n not in names]
    for item in node.body:
        if (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                and not item.target.id.startswith("_") and "ClassVar" not in ast.unparse(item.annotation)):
            names = [n for n in names if n != item.target.id] + [item.target.id]
    return names


def _signatures(node: ast.AST, where: str) -> list[Signature]:
    """How `node` is called: a function by its parameters, a class by its `__init__` (else by
    its fields)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [_function_signature(node, where)]
    assert isinstance(node, ast.ClassDef)
    inits = _class_defs(node.name, "__init__")
    if inits:
        return [_function_signature(init, where) for init in inits if not isinstance(init, ast.ClassDef)]
    fields = _fields(node)
    return [Signature(where, fields, fields, returns=node.name)]


def _module_defs(module: str, chain: list[str]) -> list[ast.AST]:
    """The definitions `chain` names in `module` (a function, a class, a class's method)."""
    code = index()
    if not chain:
        return []
    top = [n for n in code.trees[module].body
           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == chain[0]]
    if not top:
        if f"{module}.{chain[0]}" in code.modules:
            return _module_defs(f"{module}.{chain[0]}", chain[1:])
        # bound here by an import (a re-export): the definitions of that name anywhere
        top = [node for _, node in code.defs.get(chain[0], [])] if chain[0] in code.top[module] else []
    if len(chain) == 1:
        return top
    return [d for node in top if isinstance(node, ast.ClassDef) for d in _class_defs(node.name, chain[1])
            ] if len(chain) == 2 else []


def definitions(head: str, path: str | None = None) -> list[tuple[str, ast.AST]]:
    """(where, definition) for each function or class the call's `head` may name: in the file
    `path` when given (`train/stages.py:run_stage`), else `Class.method`, `module.name`
    (`judging.rollout_judge`, `coevo.run.runner.run_experiment`) or a bare name (every
    definition of it in coevo/)."""
    code = index()
    chain = head.split(".")
    by_file = {f: m for m, f in code.modules.items()}
    if path is not None:
        relative = path.removeprefix("coevo/")
        files = [f for f in (ROOT / path, PACKAGE / relative) if f.is_file()] or [
            f for f in code.modules.values() if f.as_posix().endswith("/" + relative)]
        modules = [by_file[f] for f in files if f in by_file]
        return [(f"{head} in {m}", d) for m in modules for d in _module_defs(m, chain)]
    if len(chain) == 1:
        return [(f"{head} in {m}", d) for m, d in code.defs.get(head, [])]
    if len(chain) == 2 and chain[0] in code.classes:
        return [(head, d) for d in _class_defs(chain[0], chain[1])]
    for cut in range(len(chain) - 1, 0, -1):
        prefix = ".".join(chain[:cut])
        modules = code.short_modules(prefix) if chain[0] != "coevo" else [prefix] if prefix in code.modules else []
        if modules:
            return [(f"{head} in {m}", d) for m in modules for d in _module_defs(m, chain[cut:])]
    return []


def _name(node: ast.expr) -> str | None:
    """The name an argument gives (`store`), or None for a literal (`".../actor"`)."""
    return node.id if isinstance(node, ast.Name) else None


def call_problem(signature: Signature, call: ast.Call, returns: str | None = None) -> str | None:
    """Why `call` (the doc's arguments) does not fit `signature`, or None."""
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            if signature.varargs is None:
                return f"{signature.where} takes no *args (its parameters: {signature.listed()})"
            if _name(arg.value) not in (None, signature.varargs):
                return f"{signature.where} takes *{signature.varargs}, not *{_name(arg.value)}"
            break  # past a *args, positions are not the doc's to say
        if position >= len(signature.positional):
            if _name(arg) is not None and _name(arg) not in signature.positional + signature.keyword:
                return f"{signature.where} has no parameter {_name(arg)} (its parameters: {signature.listed()})"
            if signature.varargs is None:
                return (f"{signature.where} takes {len(signature.positional)} positional arguments, not "
                        f"{len(call.args)} (its parameters: {signature.listed()})")
            break
        given, expected = _name(arg), signature.positional[position]
        if given is not None and given != expected:
            if given in signature.positional:
                return (f"{signature.where}: {given} is its parameter {signature.positional.index(given) + 1}, "
                        f"not {position + 1} (its parameters: {signature.listed()})")
            return f"{signature.where} has no parameter {given} (its parameters: {signature.listed()})"
    for keyword in call.keywords:
        if keyword.arg is None:  # **values
            if signature.kwargs is None:
                return f"{signature.where} takes no **kwargs (its parameters: {signature.listed()})"
            if _name(keyword.value) not in (None, signature.kwargs):
                return f"{signature.where} takes **{signature.kwargs}, not **{_name(keyword.value)}"
        elif keyword.arg not in signature.keyword and signature.kwargs is None:
            return f"{signature.where} has no parameter {keyword.arg} (its parameters: {signature.listed()})"
    if returns and signature.returns is not None:
        missing = [w for w in re.findall(IDENT, returns) if w not in re.findall(IDENT, signature.returns)]
        if missing:
            return f"{signature.where} returns {signature.returns}, not {returns}"
    return None


def _signature_problem(span: str) -> str | None:
    """Why the arguments `span` gives a function do not fit its definition; None where they
    fit, where it gives none (`f()`, `f(...)`) or where no definition is found."""
    if match := PATH.fullmatch(span):  # `train/stages.py:run_stage(store, name, train, restore)`
        if match["args"] is None or not match["name"]:
            return None
        path, head = match["path"], match["name"]
    elif match := CALL.fullmatch(span):
        path, head = None, match["head"]
    else:
        return None
    args = match["args"].strip()
    if args in ("", "...", "…"):
        return None
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError:
        return None  # not Python (`f(x, y0, c, y1)` reads as Python; prose in brackets does not)
    if not isinstance(call, ast.Call):
        return None
    signatures = [signature for where, node in definitions(head, path) for signature in _signatures(node, where)]
    why = [w for signature in signatures if (w := call_problem(signature, call, match["returns"])) is not None]
    return None if len(why) < len(signatures) or not why else "; or ".join(dict.fromkeys(why))


def _def_as_call(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.Call:
    """The call a doc's `def` stands for: its parameters as the arguments."""
    args = node.args
    positional = [a.arg for a in args.posonlyargs + args.args]
    if positional and positional[0] in ("self", "cls"):
        positional = positional[1:]
    call = ast.Call(func=ast.Name("f"), args=[ast.Name(n) for n in positional], keywords=[])
    if args.vararg:
        call.args.append(ast.Starred(ast.Name(args.vararg.arg)))
    call.keywords += [ast.keyword(arg=a.arg, value=ast.Constant(None)) for a in args.kwonlyargs]
    if args.kwarg:
        call.keywords.append(ast.keyword(arg=None, value=ast.Name(args.kwarg.arg)))
    return call


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
            elif isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += _def_problems(node.name, item)
    return found


def _def_problems(cls: str, item: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """A method a ```python block shows takes the parameters it shows (none shown: unchecked)."""
    call = _def_as_call(item)
    if not call.args and not call.keywords:
        return []
    returns = ast.unparse(item.returns) if item.returns is not None else None
    real = [sig for d in _class_defs(cls, item.name) for sig in _signatures(d, f"{cls}.{item.name}")]
    why = [w for sig in real if (w := call_problem(sig, call, returns)) is not None]
    return [why[0]] if real and len(why) == len(real) else []


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
    for span in SPAN.findall(prose):
        if (why := problem(span)) is not None:
            found.append(f"`{' '.join(span.split())}`: {why}")
    return found


def test_every_name_the_architecture_doc_gives_is_in_the_code():
    assert problems(DOC.read_text(encoding="utf-8")) == []


def test_the_check_reports_what_the_code_does_not_have():
    """The names the review of issue 42 found wrong, and made-up ones, are each reported;
    their right spellings are not."""
    wrong = ["runner.EXPERIMENTS", "view/runlist.py", "train/modelcards.py", "coevo/view/runlist.py",
             "coevo.view.runlist", "coevo.train.modelcards", "FrobnicatedSummary", "RoleSet.frobnicate",
             "frobnicate_the_widgets", "frobnicate(x)", "train/stages.py:frobnicate", "coevo.frobnicate.*",
             "algorithms/*/frobnicate.py", "runner.frobnicate(config)"]
    right = ["runner._experiments", "coevo/view/runinfo.py", "view/runinfo.py", "train/modelcard.py", "coevo.view.runinfo",
             "coevo.train.stages", "LocalModel", "RoleSet.load", "run_stage(store, name, train, restore)",
             "train/stages.py:run_stage", "taiscore/evaluation.py", "coevo.llm.*", "algorithms/*/loop.py",
             "judging.rollout_judge", "Template.messages(**values)", "data.source", "coevo run", "8/10"]
    assert [span for span in wrong if problem(span) is None] == []
    assert {span: problem(span) for span in right if problem(span) is not None} == {}
    block = "```python\nclass Role:\n    def ask(self): ...\n    def frobnicate(self): ...\n```\n"
    assert problems(block + "`FrobnicatedSummary`\n") == ["Role has no frobnicate",
                                                          "`FrobnicatedSummary`: no name FrobnicatedSummary in the code"]
    mapped = "```\nview/   pages (view/run_page.py, view/runlist.py), coevo.view.app, coevo.view.runlist\n```\n"
    assert problems(mapped) == ["view/runlist.py (in a ``` block): no file view/runlist.py",
                                "coevo.view.runlist (in a ``` block): coevo.view.runlist names nothing in the code"]


def test_the_check_reports_arguments_a_function_does_not_take():
    """A span that calls a function is held to its definition: a wrong argument name, a
    right one in the wrong place, one too many, a wrong `*args` / `**kwargs` or return, and a
    ```python block's method shown with a parameter the real one lacks, are each reported;
    the right spellings, a literal in a parameter's place, and `f(...)` are not."""
    wrong = {
        "MethodRun.evolve(skill, policy, step)":  # the review's find: the parameter is `name`
            "MethodRun.evolve has no parameter skill (its parameters: name, policy, step)",
        "run_stage(store, name, train, frobnicate)": "has no parameter frobnicate",
        "coevo/train/stages.py:run_stage(name, store, train, restore)": "name is its parameter 2, not 1",
        "train/stages.py:run_stage(store, name, train, restore, kind, round, x)": "takes 4 positional arguments, not 7",
        "Template.messages(**frobnicate)": "takes **values, not **frobnicate",
        "Template.messages(*values)": "takes no *args",
        "judging.rollout_judge(name, model, sampling, frobnicate=1)": "has no parameter frobnicate",
        "Backend.model(roles, role, trainable=True, frobnicate=True)": "has no parameter frobnicate",
        "Validator.check(sample, output, proposal) -> Frobnicated": "returns Verdict, not Frobnicated",
        "Scorer.score(rollouts, samples_by_id)": "has no parameter samples_by_id",
        "RoundRecord(round, frobnicated, metrics)": "has no parameter frobnicated",
        "Judgment(frobnicated=False)": "has no parameter frobnicated",
    }
    for span, why in wrong.items():
        assert why in (problem(span) or ""), (span, problem(span))
    right = ["MethodRun.evolve(name, policy, step)", "run_stage(store, name, train, restore)",
             "coevo/train/stages.py:run_stage(store, name, train, restore)", "Template.messages(**values)",
             "judging.rollout_judge(name, model, sampling)", "Backend.model(roles, role, trainable=True)",
             "Validator.check(sample, output, proposal) -> Verdict", "Scorer.score(rollouts, samples)",
             "RoundRecord(round, checkpoints, metrics)", "Judgment(valid=False)", 'run_stage(".../actor")',
             'improve("generator", r, pairs)', "RoundEvaluator.evaluate(r, actor, critic, training)",
             "judge(...)", "default_backend()", "restore(checkpoint)", "stages_for(schedule, n_shards)"]
    assert {span: problem(span) for span in right if problem(span) is not None} == {}
    block = ("```python\nclass ScoringRole(Role):\n"
             "    def ask(self, prompts, answer_schemas=None, sampling=None) -> list[Completion]: ...\n"
             "    def scoring_sampling(self, frobnicate): ...\n```\n")
    assert problems(block) == ["ScoringRole.scoring_sampling has no parameter frobnicate (its parameters: **update)"]
    wrapped = "the seam (`Backend.model(roles, role,\n  frobnicate=True)`) and\n"
    assert problems(wrapped) == ["`Backend.model(roles, role, frobnicate=True)`: Backend.model has no parameter "
                                 "frobnicate (its parameters: roles, role, trainable, store)"]
