"""Expected scores: the probability-weighted mean over a score's tokens (G-Eval, Liu et al. 2023).

A judge that writes "7" was, at that position, also willing to write "6" or "8" with some
probability. Where the backend returns the top alternatives of every generated token,
the expected score Σ p(v)·v / Σ p(v) over the valid answers v is continuous: two critiques a
small judge would both call 4 get different rewards, which is what GRPO needs.

How a score's tokens are found: the judge's raw answer is scanned for the character where
the value starts (`json_value_offsets` for JSON answers, the first visible character for
bare answers), the generated token covering that character is located, and its
alternatives are read as answers:
- an alternative that spells a whole answer ("7", " 7", "7}") counts for that answer;
- one that spells only the start of several ("1" of "1" and "10", "0" of "0" and "0.5") is
  resolved by the next position's alternatives when it is the token the judge actually
  wrote (that distribution is conditioned on it), and otherwise counts for the shortest
  answer it spells: the one approximation here, documented in docs/taiscore.md;
- alternatives that spell no answer are dropped, and the rest renormalised.
Nothing here evaluates model output: it compares strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from coevo.roles.parsing import normalise_key
from coevo.core.types import Completion

#: Alternatives asked per position: OpenAI's maximum, plenty for a 1–10 scale.
TOP_LOGPROBS = 20

_CONTINUES = re.compile(r"[0-9A-Za-z_.]")


def integer_answers(low: int, high: int) -> dict[str, float]:
    """The answers of an integer scale as the texts a judge writes: {"1": 1.0, ...}."""
    return {str(v): float(v) for v in range(low, high + 1)}


def expected_value(completion: Completion | None, char_pos: int | None,
                   answers: Mapping[str, float]) -> float | None:
    """Σ p·value over `answers` at the value starting at `char_pos` of the completion's text.

    None when the completion carries no log-probabilities, the position is unknown, or no
    alternative at that position spells an answer.
    """
    dist = answer_distribution(completion, char_pos, answers)
    if not dist:
        return None
    total = sum(dist.values())
    return sum(p * answers[a] for a, p in dist.items()) / total


def answer_distribution(completion: Completion | None, char_pos: int | None,
                        answers: Mapping[str, float]) -> dict[str, float] | None:
    """Probability of each answer at `char_pos` (unnormalised over the answers found)."""
    if completion is None or char_pos is None or not completion.tokens or not completion.top_logprobs:
        return None
    located = _token_at(completion.tokens, char_pos)
    if located is None:
        return None
    index, offset = located
    prefix = completion.tokens[index][:offset]
    dist: dict[str, float] = {}
    _spread(completion, index, prefix, "", 1.0, answers, dist)
    return {a: p for a, p in dist.items() if p > 0} or None


def _spread(completion: Completion, index: int, prefix: str, consumed: str, weight: float,
            answers: Mapping[str, float], dist: dict[str, float]) -> None:
    """Add the mass of every answer reachable from position `index` after `consumed`.

    `prefix`: the part of the written token before the value (" " of " 7"); alternatives
    must share it. `weight`: the probability of having written `consumed`.
    """
    written = completion.tokens[index]  # type: ignore[index]
    for token, logprob in completion.top_logprobs[index].items():  # type: ignore[index]
        if not token.startswith(prefix):
            continue
        p = weight * math.exp(logprob)
        text = consumed + token[len(prefix):]
        answer = _whole_answer(text, answers)
        longer = [a for a in answers if a.startswith(text) and a != text]
        if answer is None and text in answers and not longer:
            answer = text
        if answer is not None:
            dist[answer] = dist.get(answer, 0.0) + p
        elif longer and token == written and index + 1 < len(completion.top_logprobs):  # type: ignore[arg-type]
            # Conditioned on what was written: the next position says how the value goes on.
            _spread(completion, index + 1, "", text, p, answers, dist)
        elif longer:
            shortest = text if text in answers else min(longer, key=len)
            dist[shortest] = dist.get(shortest, 0.0) + p


def _whole_answer(text: str, answers: Mapping[str, float]) -> str | None:
    """The answer `text` spells completely: it is followed by a character that ends it
    (a quote, brace, comma, space) and no longer answer could still match."""
    for answer in sorted(answers, key=len, reverse=True):
        if text.startswith(answer) and len(text) > len(answer) and not _CONTINUES.match(text[len(answer)]):
            return answer
    return None


def _token_at(tokens: list[str], char_pos: int) -> tuple[int, int] | None:
    """(token index, offset inside it) of the character at `char_pos` of "".join(tokens)."""
    start = 0
    for i, token in enumerate(tokens):
        if start <= char_pos < start + len(token):
            return i, char_pos - start
        start += len(token)
    return None


def bare_answer_offset(text: str) -> int | None:
    """Where a one-token answer starts: its first non-space character."""
    match = re.search(r"\S", text)
    return match.start() if match else None


def json_value_offsets(text: str) -> dict[tuple[str | int, ...], int]:
    """Character offsets of the scalar values in a JSON answer, by path.

    `{"a": {"score": 7}, "score": 6}` -> {("a", "score"): 15, ("score",): 28}. Array items
    are numbered. Keys are kept as written. Scanning stops quietly at malformed input: the
    offsets found so far are returned (the parser, not this, decides what is valid).
    """
    offsets: dict[tuple[str | int, ...], int] = {}
    stack: list[list] = []  # frames: [kind "obj"/"arr", current key or index]
    i, n = 0, len(text)
    expecting_key = False
    while i < n:
        ch = text[i]
        if ch in " \t\r\n,:":
            if ch == "," and stack:
                frame = stack[-1]
                if frame[0] == "arr":
                    frame[1] += 1
                else:
                    expecting_key = True
            i += 1
            continue
        if ch == "{":
            stack.append(["obj", None])
            expecting_key = True
            i += 1
            continue
        if ch == "[":
            stack.append(["arr", 0])
            expecting_key = False
            i += 1
            continue
        if ch in "}]":
            if stack:
                stack.pop()
            expecting_key = False
            i += 1
            continue
        if ch == '"':
            end = _string_end(text, i)
            if end is None:
                break
            literal = text[i + 1:end]
            if stack and stack[-1][0] == "obj" and expecting_key:
                stack[-1][1] = literal
                expecting_key = False
            else:
                offsets[_path(stack)] = i
            i = end + 1
            continue
        match = re.match(r"[^\s,}\]]+", text[i:])
        if not match:
            break
        offsets[_path(stack)] = i
        i += match.end()
    return offsets


def _path(stack: list[list]) -> tuple[str | int, ...]:
    return tuple(frame[1] for frame in stack if frame[1] is not None)


def _string_end(text: str, start: int) -> int | None:
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == '"':
            return i
        i += 1
    return None


def keyed_value_offsets(raw: str) -> dict[tuple, int]:
    """`json_value_offsets` with each key normalised as the parsers read it (`normalise_key`)."""
    return {tuple(normalise_key(k) if isinstance(k, str) else k for k in path): at
            for path, at in json_value_offsets(raw).items()}
