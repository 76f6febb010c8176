"""JSON Schemas of the RLAC critic's answers (the judges' schemas are in schemas.py).

The critic's answer goes to a validator, not a judge, but the reason for a schema is the
same: a 135M critic left free rarely writes the paper's <testcase> tag or three-line form,
and an unreadable proposal teaches nothing. The schemas fix the form only; which sentence,
which claim and which arguments stay the model's choice.
"""

from __future__ import annotations

from typing import Any

from coevo.roles.schemas import REASON_LIMIT, score_range

#: The paper asks for "a brief clause (no more than 8 words)"; 80 characters holds that.
FACT_LIMIT = 80
#: Room for a short literal argument without letting one string eat the token budget.
TEXT_ARGUMENT_LIMIT = 40
#: Longest list a critic may pass: enough for an edge case, not an endless one.
LIST_LIMIT = 8


def fact_proposal(sentences: int) -> dict[str, Any]:
    """RLAC facts critic: {"sentence": 1..n of THIS output, "error_fact": ..., "reason": ...}.

    The sentence comes first and the claim next, so the claim is written with its sentence
    chosen (the validator checks the claim is in that sentence); the reason comes last, where
    a cut-off answer loses the least.
    """
    return {"type": "object",
            "properties": {"sentence": score_range(1, max(1, sentences)),
                           "error_fact": {"type": "string", "minLength": 1, "maxLength": FACT_LIMIT},
                           "reason": {"type": "string", "maxLength": REASON_LIMIT}},
            "required": ["sentence", "error_fact", "reason"], "additionalProperties": False}


def quoted_fact_proposal(sentences: list[str]) -> dict[str, Any]:
    """`fact_proposal` whose claim quotes the sentence it names: 3 to 8 consecutive words of
    sentence N (all of it when shorter), one anyOf branch per sentence.

    For a critic that cannot yet keep its claim and its sentence number together (the 135M
    model names sentence 2 and then writes words of its own): a claim the output never made
    is an invalid proposal anyway (the validator's authenticity stage), so the quote form
    removes only answers that could not count. Which sentence, which words and the reason
    stay the model's; whether the quoted claim is true is still the validator's to decide.
    """
    branches = []
    for number, sentence in enumerate(sentences, 1):
        # xgrammar cannot match a quote or a backslash inside a JSON string pattern; the
        # word without them still quotes the sentence for the validator's overlap test.
        words = [w for w in (re_word.replace('"', "").replace("\\", "") for re_word in sentence.split()) if w]
        if not words:
            continue
        branches.append({"type": "object", "required": ["sentence", "error_fact", "reason"],
                         "additionalProperties": False,
                         "properties": {"sentence": {"const": number},
                                        "error_fact": {"type": "string", "pattern": _span_pattern(words)},
                                        "reason": {"type": "string", "maxLength": REASON_LIMIT}}})
    return {"anyOf": branches} if branches else fact_proposal(len(sentences))


#: The paper's "no more than 8 words"; at least 3, so a quote holds a claim ("He was" does not).
QUOTE_WORDS = (3, 8)


def _span_pattern(words: list[str]) -> str:
    """A regular expression matching any run of QUOTE_WORDS consecutive `words`."""
    low, high = min(QUOTE_WORDS[0], len(words)), QUOTE_WORDS[1]
    runs = []
    for start in range(len(words) - low + 1):
        run = [_literal(w) for w in words[start:start + high]]
        optional = ""
        for word in reversed(run[low:]):  # each further word only after the one before it
            optional = f"( {word}{optional})?"
        runs.append(" ".join(run[:low]) + optional)
    return "^(" + "|".join(runs) + ")$"


def _literal(word: str) -> str:
    # Only the metacharacters: escapes such as `\-` or `\#` (re.escape writes them) are not
    # understood by every grammar engine a schema goes to (xgrammar, llama.cpp). A period is
    # written `[.]`: llama.cpp's grammar parser rejects `\.` ("unknown escape") and its
    # process then crashes, which took down a facts critic quoting "Dr. Smith".
    return "".join("[.]" if c == "." else "\\" + c if c in "^$|?*+()[]{}" else c for c in word)


def call_arguments(parameters: list[tuple[str, dict[str, Any], bool]]) -> dict[str, Any]:
    """RLAC code critic on a function: one key per parameter (name, value schema, required),
    in signature order. The call is built from it, as a tool call is built from a function's
    argument schema, so it always names the function under test with arguments of the right
    count and types (a wrong one fails on the reference: an invalid test, not a found bug)."""
    return {"type": "object",
            "properties": {name: schema for name, schema, _ in parameters},
            "required": [name for name, _, required in parameters if required],
            "additionalProperties": False}


def parameter_value(annotation: str | None, examples: list[Any]) -> dict[str, Any]:
    """The schema of one argument: its annotation's type when that says what the values
    are ("List[float]"), else the type of the values the problem's own example calls pass
    (HumanEval leaves most parameters unannotated), else a plain value."""
    typed = python_value(annotation)
    if examples and _vague(typed):
        return literal_value(examples)
    return typed


def call_text(entry_point: str) -> dict[str, Any]:
    """RLAC code critic where the signature cannot be read: {"call": "entry_point(...)"}."""
    import re

    return {"type": "object", "required": ["call"], "additionalProperties": False,
            "properties": {"call": {"type": "string", "pattern": rf"^{re.escape(entry_point)}\(.*\)$"}}}


def stdin_input() -> dict[str, Any]:
    """RLAC code critic on a program that reads standard input: {"stdin": "..."}."""
    # No maxLength: a counted string may not hold escapes, and input needs "\n" for its lines.
    return {"type": "object", "required": ["stdin"], "additionalProperties": False,
            "properties": {"stdin": {"type": "string"}}}


_SCALAR: dict[str, Any] = {"anyOf": [{"type": "number"}, {"type": "string", "maxLength": TEXT_ARGUMENT_LIMIT},
                                     {"type": "boolean"}]}
_ANY: dict[str, Any] = {"anyOf": [*_SCALAR["anyOf"], {"type": "array", "items": _SCALAR, "maxItems": LIST_LIMIT}]}
_SIMPLE = {"int": {"type": "integer"}, "float": {"type": "number"}, "complex": {"type": "number"},
           "bool": {"type": "boolean"}, "str": {"type": "string", "maxLength": TEXT_ARGUMENT_LIMIT},
           "None": {"type": "null"}, "NoneType": {"type": "null"},
           "list": {"type": "array", "items": _SCALAR, "maxItems": LIST_LIMIT},
           "tuple": {"type": "array", "items": _SCALAR, "maxItems": LIST_LIMIT},
           "set": {"type": "array", "items": _SCALAR, "maxItems": LIST_LIMIT},
           "dict": {"type": "object", "additionalProperties": _SCALAR, "maxProperties": LIST_LIMIT}}
_SEQUENCES = {"list", "List", "Sequence", "Iterable", "Collection", "tuple", "Tuple", "set", "Set"}


def python_value(annotation: str | None) -> dict[str, Any]:
    """The JSON Schema of a value of a Python annotation ("List[float]", "Optional[str]").

    JSON has no tuples or sets: they are arrays (the call passes a list). What JSON cannot
    spell, or an annotation that is missing, becomes a plain value: number, short string,
    boolean or a short list of those.
    """
    import ast

    if not annotation:
        return _ANY
    try:
        return _annotation_schema(ast.parse(annotation, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return _ANY


def literal_value(values: list[Any]) -> dict[str, Any]:
    """The JSON Schema of the type the literals `values` share (ints and floats: numbers;
    lists: arrays of their elements' type; dicts: objects; mixed: anyOf)."""
    if len(values) > 1 and all(isinstance(v, (list, tuple, set, frozenset)) for v in values):
        # Lists of one argument across calls: one array of all their elements' type.
        return {"type": "array", "items": literal_value([x for v in values for x in v]), "maxItems": LIST_LIMIT}
    schemas = []
    for value in values:
        schema = _literal_schema(value)
        if schema not in schemas:
            schemas.append(schema)
    if {"type": "integer"} in schemas and {"type": "number"} in schemas:
        schemas.remove({"type": "integer"})
    if not schemas:
        return _SCALAR
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}


def _literal_schema(value: Any) -> dict[str, Any]:
    if value is None:
        return _SIMPLE["None"]
    if isinstance(value, bool):
        return _SIMPLE["bool"]
    if isinstance(value, int):
        return _SIMPLE["int"]
    if isinstance(value, float):
        return _SIMPLE["float"]
    if isinstance(value, str):
        return _SIMPLE["str"]
    if isinstance(value, (list, tuple, set, frozenset)):
        return {"type": "array", "items": literal_value(list(value)), "maxItems": LIST_LIMIT}
    if isinstance(value, dict):
        return {"type": "object", "additionalProperties": literal_value(list(value.values())),
                "maxProperties": LIST_LIMIT}
    return _ANY


def _vague(schema: dict[str, Any]) -> bool:
    """A schema that says nothing about what the values hold: any value, or a container
    of any values."""
    return (schema is _ANY or schema.get("items") in (_SCALAR, _ANY)
            or schema.get("additionalProperties") in (_SCALAR, _ANY))


def _annotation_schema(node: Any) -> dict[str, Any]:
    import ast

    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        return python_value(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return _SIMPLE["None"]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | Y
        return {"anyOf": [_annotation_schema(node.left), _annotation_schema(node.right)]}
    name = _type_name(node.value if isinstance(node, ast.Subscript) else node)
    if not isinstance(node, ast.Subscript):
        return _SIMPLE.get(name or "", _ANY)
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if name == "Optional":
        return {"anyOf": [_annotation_schema(args[0]), _SIMPLE["None"]]}
    if name == "Union":
        return {"anyOf": [_annotation_schema(a) for a in args]}
    if name in ("tuple", "Tuple") and not (len(args) == 2 and isinstance(args[1], ast.Constant)
                                           and args[1].value is Ellipsis):
        items = [_annotation_schema(a) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if name in _SEQUENCES:
        return {"type": "array", "items": _annotation_schema(args[0]), "maxItems": LIST_LIMIT}
    if name in ("dict", "Dict", "Mapping") and len(args) == 2:
        return {"type": "object", "additionalProperties": _annotation_schema(args[1]),
                "maxProperties": LIST_LIMIT}
    return _ANY


def _type_name(node: Any) -> str | None:
    import ast

    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):  # typing.List
        return node.attr
    return None
