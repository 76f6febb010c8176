"""JSON Schemas of the judges' answers, for constrained decoding.

A judge's prompt asks for a JSON shape; a schema makes backends that support structured
output (llama.cpp in process, vLLM / SGLang / llama.cpp server / OpenAI) decode only answers
of that shape. Without it a 135M judge mostly keeps writing the response it was shown. The
schema fixes the form (keys, integer range, short reasons) and never the values: the
scores are still the model's own. The parsers stay lenient for backends that ignore it.
"""

from __future__ import annotations

import json
from typing import Any

#: Long enough for a sentence of justification, short enough that a judge call stays cheap.
REASON_LIMIT = 160
REASON = {"type": "string", "maxLength": REASON_LIMIT}


def score_range(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high}


def scored_dimensions(dimensions: tuple[str, ...], final_key: str | None,
                      reason_limit: int | None = REASON_LIMIT) -> dict[str, Any]:
    """Tables 8, 9, 14: {"dim": {"score": 1-10, "reason": "..."}, ..., ["score": 1-10]}.

    `reason_limit=None` leaves the reasons free (the TAIScore authors' judge has no cap)."""
    reason = {"type": "string"} if reason_limit is None else {"type": "string", "maxLength": reason_limit}
    properties: dict[str, Any] = {
        d: {"type": "object", "properties": {"score": score_range(1, 10), "reason": reason},
            "required": ["score", "reason"], "additionalProperties": False}
        for d in dimensions
    }
    if final_key:
        properties[final_key] = score_range(1, 10)
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def choice(values: list[Any]) -> dict[str, Any]:
    """A single bare answer such as 1 / 0.5 / 0 (Table 13) or 1 / 2 / "tie"."""
    return {"enum": values}


def criteria_scores(names: list[str]) -> dict[str, Any]:
    """Gold rubric: one entry per criterion, in order, each named exactly as in the rubric."""
    entries = [
        {"type": "object", "properties": {"name": {"const": name}, "score": score_range(1, 10),
                                          "reason": REASON},
         "required": ["name", "score", "reason"], "additionalProperties": False}
        for name in names
    ]
    return {"type": "object", "required": ["criteria"], "additionalProperties": False,
            "properties": {"criteria": {"type": "array", "prefixItems": entries,
                                        "minItems": len(names), "maxItems": len(names)}}}


def query_grade() -> dict[str, Any]:
    """Table 11's shape with exactly one result (one query per call). The id is free text,
    not a constant, so every query shares one schema and the batch stays one call."""
    result = {"type": "object", "required": ["id", "score", "decision", "rationale"],
              "additionalProperties": False,
              "properties": {"id": {"type": "string", "maxLength": 80}, "score": score_range(1, 5),
                             "decision": {"enum": ["SKIP", "GRADE"]}, "rationale": REASON}}
    return {"type": "object", "required": ["results"], "additionalProperties": False,
            "properties": {"results": {"type": "array", "prefixItems": [result],
                                       "minItems": 1, "maxItems": 1}}}


def as_text(schema: dict[str, Any] | None) -> str | None:
    """Canonical JSON text: the form `Sampling.json_schema` holds (and the cache keys on)."""
    # Key order is kept: llama.cpp emits properties in schema order, and the papers put
    # the score before its reason.
    return None if schema is None else json.dumps(schema)
