"""Reading judges' answers: lenient about form, strict about meaning.

Models wrap JSON in code fences, add prose around it, use single quotes, write `8/10` or
`"8"` for a score, or nest it as `{"score": 8, "reason": ...}`: all of that is accepted.
What is not accepted is an answer whose *meaning* is unclear — a required key that is
missing, a score that is not a number, a number outside the scale, two different answers
in one reply. Those become `Parsed(valid=False, error=...)`, with the error naming the key
and the reason, so a run can count them instead of training on a guess.

Nothing here raises on model output, and nothing evaluates it: JSON goes through
`json_repair`, numbers through regular expressions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import json_repair

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?\d+(?:\.\d+)?"
_SCORE_TEXT = re.compile(
    rf"^\s*({_NUMBER})\s*(?:(?:/|out\s+of)\s*({_NUMBER}))?\s*\.?\s*$", re.IGNORECASE
)
# A number standing alone, not part of a word such as "y1" or "B2".
_ANSWER_TOKEN = re.compile(
    r"(?<![\w.])([-+]?\d+(?:\.\d+)?)(?![\w]|\.\d)|\b(tie)\b", re.IGNORECASE
)
_ANSWER_LABEL = re.compile(
    r"^(?:final\s+answer|answer|score|output|verdict|winner|preference|result|response)"
    r"\s*[:=\-]?\s*",
    re.IGNORECASE,
)
_SCORE_KEYS = ("score", "rating", "value")
_REASON_KEYS = ("reason", "justification", "rationale", "explanation")


@dataclass
class Parsed:
    """What a parser read from one answer; `scores` only holds the values that were valid."""

    scores: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    valid: bool = True
    error: str | None = None
    data: Any = None

    @classmethod
    def invalid(cls, error: str, **kwargs: Any) -> "Parsed":
        return cls(valid=False, error=error, **kwargs)


def strip_reasoning(text: str) -> str:
    """Drop `<think>...</think>` blocks that reasoning models put before their answer.

    A lone `</think>` closes reasoning whose opening tag the chat template wrote (Qwen3
    does): everything before it is reasoning, as in the TAIScore authors' `strip_think`.
    An unclosed `<think>` means the answer was cut off mid-thought, so nothing after it is
    an answer.
    """
    text = _THINK_BLOCK.sub("", text or "")
    closed = text.lower().rfind("</think>")
    if closed >= 0:
        text = text[closed + len("</think>"):]
    opened = text.lower().find("<think>")
    if opened >= 0:
        text = text[:opened]
    return text.strip()


def normalise_key(key: object) -> str:
    """`"Main-Issue Adherence"` -> `"main_issue_adherence"`: models re-case and re-space keys."""
    return re.sub(r"[^a-z0-9]+", "_", str(key).lower()).strip("_")


def extract_json_object(text: str, expected_keys: Iterable[str] = ()) -> dict[str, Any] | None:
    """Find the JSON object in an answer, tolerating fences, prose and broken JSON.

    Every object found (in fenced blocks, in the brace span, in the whole text, and nested
    inside those) is a candidate; the one holding most of `expected_keys` wins. On a tie
    the outermost wins, then the later one, because a model that echoes the requested
    format answers after it. Keys are returned normalised (see `normalise_key`). `None`
    when no object is found.
    """
    text = strip_reasoning(text)
    if not text:
        return None
    sources = [m.group(1) for m in _FENCE.finditer(text)]
    first, last = text.find("{"), text.rfind("}")
    if 0 <= first < last:
        sources.append(text[first : last + 1])
    sources.append(text)
    expected = {normalise_key(k) for k in expected_keys}
    best: dict[str, Any] | None = None
    best_rank = (-1, 0)
    for source in sources:
        for depth, candidate in _dicts_within(_repair(source)):
            rank = (len(expected & candidate.keys()), -depth)
            if rank >= best_rank:
                best, best_rank = candidate, rank
        if expected and best_rank[0] == len(expected):
            break  # fenced JSON holding every key beats anything the prose might contain
    return best


def parse_score(
    value: Any, low: float, high: float, *, integer: bool = True
) -> tuple[float | None, str | None]:
    """Read one score: `8`, `"8"`, `8.0`, `"8/10"`, `"8 out of 10"`, `{"score": 8, ...}`.

    Returns `(score, None)` or `(None, error)`; the error says why, not which key (the
    caller knows the key). A fraction must be over the scale's top (`8/10` on 1–10);
    `integer=True` rejects `7.5` since the papers' rubrics ask for integers.
    """
    for _ in range(3):  # models sometimes nest {"score": {"score": 8}}
        if not isinstance(value, Mapping):
            break
        inner = {normalise_key(k): v for k, v in value.items()}
        found = next((k for k in _SCORE_KEYS if k in inner), None)
        if found is None:
            return None, "has no 'score'"
        value = inner[found]
    if isinstance(value, bool) or value is None:
        return None, f"{value!r} is not a number"
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        match = _SCORE_TEXT.match(value)
        if not match:
            return None, f"{_short(value)!r} is not a number"
        number = float(match.group(1))
        if match.group(2) is not None and float(match.group(2)) != high:
            return None, f"{value.strip()!r} is not on the {_scale(low, high)} scale"
    else:
        return None, f"{_short(repr(value))} is not a number"
    if not math.isfinite(number):
        return None, f"{value!r} is not a finite number"
    if integer and number != int(number):
        return None, f"{number:g} is not an integer"
    if not low <= number <= high:
        return None, f"{number:g} is outside {_scale(low, high)}"
    return number, None


def reason_of(value: Any) -> str:
    """The free-text reason attached to a score object, or `""`."""
    if isinstance(value, Mapping):
        inner = {normalise_key(k): v for k, v in value.items()}
        for key in _REASON_KEYS:
            if isinstance(inner.get(key), str):
                return inner[key]
    return ""


def parse_scored_dimensions(
    text: str,
    dimensions: Iterable[str],
    *,
    low: float = 1,
    high: float = 10,
    integer: bool = True,
    aliases: Mapping[str, str] | None = None,
) -> Parsed:
    """Read a JSON answer holding one score per dimension (Tables 8, 9, 14).

    Every dimension is required; extra keys are ignored. `aliases` maps other spellings a
    model may use (normalised) to the dimension name. `data` holds the object found.
    """
    dimensions = list(dimensions)
    aliases = {normalise_key(k): v for k, v in (aliases or {}).items()}
    data = extract_json_object(text, list(dimensions) + list(aliases))
    if data is None:
        return Parsed.invalid("no JSON object found in the answer")
    for alias, name in aliases.items():
        if alias in data and name not in data:
            data[name] = data[alias]
    parsed = Parsed(data=data)
    errors = []
    for name in dimensions:
        if name not in data:
            errors.append(f"missing key {name!r}")
            continue
        score, error = parse_score(data[name], low, high, integer=integer)
        if error:
            errors.append(f"key {name!r}: {error}")
            continue
        parsed.scores[name] = score
        if reason := reason_of(data[name]):
            parsed.reasons[name] = reason
    if errors:
        parsed.valid, parsed.error = False, "; ".join(errors)
    return parsed


def parse_single_answer(
    text: str, allowed: Mapping[Any, Any], *, words: Iterable[str] = ()
) -> tuple[Any, str | None]:
    """Read a one-token answer (`1` / `0.5` / `0`, or `1` / `2` / `tie`) from a reply.

    `allowed` maps a float (numeric tokens: `"1.0"` reads as `1.0`) or a lower-case word to
    the value returned. The answer may carry a label (`Answer: 1`), markdown or a trailing
    explanation: the first or last line standing alone decides; otherwise every token in
    the reply must agree. Two different answers, or a number outside `allowed`, is invalid.
    """
    words = {w.lower() for w in words}
    text = strip_reasoning(text)
    lines = [_clean_answer_line(line) for line in text.splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return None, "empty answer"
    standalone = []
    for line in dict.fromkeys([lines[0], lines[-1]]):
        key = _token_key(line, words)
        if key is not None and key in allowed:
            standalone.append(allowed[key])
    if len(set(map(repr, standalone))) == 1:
        return standalone[0], None
    if len(standalone) > 1:
        return None, f"ambiguous answer: first line says {lines[0]!r}, last line {lines[-1]!r}"
    keys = []
    for match in _ANSWER_TOKEN.finditer(text):
        key = float(match.group(1)) if match.group(1) else match.group(2).lower()
        if isinstance(key, str) and key not in words:
            continue
        keys.append(key)
    if not keys:
        return None, f"no answer among {_describe(allowed)} in {_short(text)!r}"
    outside = [k for k in keys if k not in allowed]
    if outside:
        return None, f"{_fmt(outside[0])} is not one of {_describe(allowed)}"
    distinct = list(dict.fromkeys(keys))
    if len(distinct) > 1:
        return None, (
            f"ambiguous answer: both {_fmt(distinct[0])} and {_fmt(distinct[1])} appear"
        )
    return allowed[distinct[0]], None


def _repair(source: str) -> Any:
    try:
        return json_repair.loads(source)
    except Exception:  # json_repair is robust, but a crash here must not end a run
        return None


def _dicts_within(value: Any, depth: int = 0) -> list[tuple[int, dict[str, Any]]]:
    """Every dict in a parsed value with its nesting depth, keys normalised."""
    if depth > 4:
        return []
    found: list[tuple[int, dict[str, Any]]] = []
    if isinstance(value, Mapping):
        normalised = {normalise_key(k): v for k, v in value.items()}
        found.append((depth, normalised))
        children: Iterable[Any] = normalised.values()
    elif isinstance(value, list):
        children = value
    else:
        return found
    for child in children:
        if isinstance(child, (Mapping, list)):
            found.extend(_dicts_within(child, depth + 1))
    return found


def _clean_answer_line(line: str) -> str:
    line = line.strip().strip("*_`#>\"' \t").strip()
    line = _ANSWER_LABEL.sub("", line).strip("*_`\"' \t")
    return line.rstrip(".!").strip()


def _token_key(line: str, words: set[str]) -> Any:
    if line.lower() in words:
        return line.lower()
    if re.fullmatch(r"[-+]?\d+(?:\.\d+)?", line):
        return float(line)
    return None


def _describe(allowed: Mapping[Any, Any]) -> str:
    return ", ".join(_fmt(k) for k in allowed)


def _fmt(key: Any) -> str:
    return f"{key:g}" if isinstance(key, float) else str(key)


def _scale(low: float, high: float) -> str:
    return f"{low:g}–{high:g}"


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
