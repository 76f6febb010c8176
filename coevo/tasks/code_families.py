"""Procedurally generated code problems: small function families with hidden tests.

`bundled:code_easy` has 60 hand-written problems; a miniature that tunes on them needs
problems nobody tuned on to be believed, and more of them than 40 to give an interval that
can exclude 0. Each family here is one short function whose constant varies (add 7, keep the
words longer than 4 letters, ...): a seed draws the constants, the reference is written from
them, and the tests' expected values come from running the same rule in Python here, on
seeded inputs, so a problem is correct by construction (tests/tasks/test_code_families.py
also runs every reference against its tests in the sandbox).

    python -m coevo.tasks.code_families --seed 1 --per-family 12 --out heldout.jsonl

Rows are in the `bundled:code_easy` format (`id`, `prompt`, `entry_point`, `reference`,
`tests`, `difficulty`), so any code source (`data.source`, `data.heldout_source`,
`benchmarks/miniature.py --heldout`) reads them. Nothing here runs model-written code.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WORDS = ["apple", "sky", "river", "to", "banana", "code", "a", "mountain", "sun", "test", "green", "moon",
         "bird", "elephant", "cup", "hello", "world", "is", "tree", "python"]
LETTERS = "abcdehilmnorst"
NUMBER_WORDS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine"}


@dataclass(frozen=True)
class Family:
    """One function family: `make(k)` gives (name, signature, docstring, body, rule) for the
    constant `k`; `inputs(rng)` draws one argument tuple; `difficulty` 1-3 as code_easy's."""

    name: str
    constants: Callable[[random.Random], Any]
    make: Callable[[Any], tuple[str, str, str, str, Callable[..., Any]]]
    inputs: Callable[[random.Random], tuple]
    difficulty: int


def _ints(rng: random.Random, n: int | None = None) -> list[int]:
    return [rng.randint(-9, 20) for _ in range(n if n is not None else rng.randint(0, 6))]


def _word_list(rng: random.Random) -> list[str]:
    return rng.sample(WORDS, rng.randint(0, 5))


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.sample(WORDS, rng.randint(1, 6)))


def _letters(rng: random.Random) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 9)))


FAMILIES: list[Family] = [
    Family("add_k", lambda r: r.randint(2, 19), lambda k: (
        f"add_{k}", "(x: int) -> int", f"Return x plus {k}.", f"return x + {k}", lambda x: x + k),
        lambda r: (r.randint(-50, 50),), 1),
    Family("times_k", lambda r: r.randint(2, 9), lambda k: (
        f"times_{NUMBER_WORDS[k]}", "(x: int) -> int", f"Return x multiplied by {k}.", f"return x * {k}",
        lambda x: x * k), lambda r: (r.randint(-30, 30),), 1),
    Family("is_multiple", lambda r: r.randint(2, 9), lambda k: (
        f"is_multiple_of_{k}", "(x: int) -> bool", f"Return True if x is divisible by {k}, else False.",
        f"return x % {k} == 0", lambda x: x % k == 0), lambda r: (r.randint(-40, 60),), 1),
    Family("repeat", lambda r: r.randint(2, 5), lambda k: (
        f"repeat_{NUMBER_WORDS[k]}_times", "(s: str) -> str", f"Return the string s repeated {k} times.",
        f"return s * {k}", lambda s: s * k), lambda r: (_letters(r),), 1),
    Family("count_char", lambda r: r.choice(LETTERS), lambda c: (
        f"count_{c}", "(s: str) -> int", f"Return how many times the letter '{c}' occurs in s.",
        f"return s.count({c!r})", lambda s: s.count(c)), lambda r: (_letters(r),), 1),
    Family("ends_with", lambda r: r.choice(LETTERS), lambda c: (
        f"ends_with_{c}", "(s: str) -> bool", f"Return True if the string s ends with the letter '{c}'.",
        f"return s.endswith({c!r})", lambda s: s.endswith(c)), lambda r: (_letters(r),), 1),
    Family("sum_greater", lambda r: r.randint(0, 9), lambda k: (
        f"sum_greater_than_{k}", "(numbers: list) -> int",
        f"Return the sum of the numbers in the list that are greater than {k} (0 if none).",
        f"return sum(n for n in numbers if n > {k})", lambda ns: sum(n for n in ns if n > k)),
        lambda r: (_ints(r),), 2),
    Family("count_greater", lambda r: r.randint(0, 9), lambda k: (
        f"count_greater_than_{k}", "(numbers: list) -> int",
        f"Return how many numbers in the list are greater than {k}.",
        f"return sum(1 for n in numbers if n > {k})", lambda ns: sum(1 for n in ns if n > k)),
        lambda r: (_ints(r),), 2),
    Family("keep_divisible", lambda r: r.randint(2, 5), lambda k: (
        f"keep_multiples_of_{k}", "(numbers: list) -> list",
        f"Return a list of the numbers in the list that are divisible by {k}, in their order.",
        f"return [n for n in numbers if n % {k} == 0]", lambda ns: [n for n in ns if n % k == 0]),
        lambda r: (_ints(r),), 2),
    Family("add_to_each", lambda r: r.randint(1, 9), lambda k: (
        f"add_{k}_to_each", "(numbers: list) -> list", f"Return a new list with {k} added to every number.",
        f"return [n + {k} for n in numbers]", lambda ns: [n + k for n in ns]), lambda r: (_ints(r),), 1),
    Family("first_chars", lambda r: r.randint(2, 5), lambda k: (
        f"first_{NUMBER_WORDS[k]}_chars", "(s: str) -> str",
        f"Return the first {k} characters of s (all of s if it is shorter).", f"return s[:{k}]",
        lambda s: s[:k]), lambda r: (_letters(r),), 1),
    Family("replace_char", lambda r: tuple(r.sample(LETTERS, 2)), lambda ab: (
        f"replace_{ab[0]}_with_{ab[1]}", "(s: str) -> str",
        f"Return s with every letter '{ab[0]}' replaced by '{ab[1]}'.", f"return s.replace({ab[0]!r}, {ab[1]!r})",
        lambda s: s.replace(ab[0], ab[1])), lambda r: (_letters(r),), 1),
    Family("long_words", lambda r: r.randint(2, 5), lambda k: (
        f"words_longer_than_{k}", "(sentence: str) -> list",
        f"Return the words of the sentence (split on spaces) that have more than {k} letters, in order.",
        f"return [w for w in sentence.split() if len(w) > {k}]",
        lambda s: [w for w in s.split() if len(w) > k]), lambda r: (_sentence(r),), 2),
    Family("clamp", lambda r: (r.randint(-5, 3), r.randint(5, 15)), lambda lh: (
        f"clamp_{lh[0]}_{lh[1]}".replace("-", "minus"), "(x: int) -> int",
        f"Return x limited to the range {lh[0]} to {lh[1]}: {lh[0]} if x is smaller, {lh[1]} if x is larger.",
        f"return min(max(x, {lh[0]}), {lh[1]})", lambda x: min(max(x, lh[0]), lh[1])),
        lambda r: (r.randint(-20, 30),), 2),
    Family("join_with", lambda r: r.choice(["-", ", ", "+", "_", " | "]), lambda sep: (
        "join_with_" + {"-": "dash", ", ": "comma", "+": "plus", "_": "underscore", " | ": "bar"}[sep],
        "(words: list) -> str", f"Return the words joined into one string with {sep!r} between them.",
        f"return {sep!r}.join(words)", lambda ws: sep.join(ws)), lambda r: (_word_list(r),), 2),
    Family("max_plus", lambda r: r.randint(1, 9), lambda k: (
        f"largest_plus_{k}", "(numbers: list) -> int",
        f"Return the largest number in the non-empty list plus {k}.", f"return max(numbers) + {k}",
        lambda ns: max(ns) + k), lambda r: (_ints(r, r.randint(1, 6)),), 2),
    Family("index_first_greater", lambda r: r.randint(0, 9), lambda k: (
        f"index_of_first_above_{k}", "(numbers: list) -> int",
        f"Return the index of the first number greater than {k} in the list, or -1 if there is none.",
        f"for i, n in enumerate(numbers):\n        if n > {k}:\n            return i\n    return -1",
        lambda ns: next((i for i, n in enumerate(ns) if n > k), -1)), lambda r: (_ints(r),), 3),
    Family("count_words_with", lambda r: r.choice(LETTERS), lambda c: (
        f"count_words_with_{c}", "(sentence: str) -> int",
        f"Return how many words of the sentence (split on spaces) contain the letter '{c}'.",
        f"return sum(1 for w in sentence.split() if {c!r} in w)",
        lambda s: sum(1 for w in s.split() if c in w)), lambda r: (_sentence(r),), 3),
]


def problem(family: Family, constant: Any, rng: random.Random, index: int, tests: int = 5) -> dict[str, Any]:
    """One problem row of `family` with `constant`: the docstring shows one worked example,
    and `tests` seeded calls (distinct where the inputs allow) make the hidden check."""
    name, signature, doc, body, rule = family.make(constant)
    calls: list[tuple] = []
    for _ in range(200):
        args = family.inputs(rng)
        if args in calls:
            continue
        calls.append(args)
        if len(calls) == tests + 1:
            # A check every call of which expects the same value passes a constant: redraw
            # the last call until some answer differs.
            if len({repr(rule(*a)) for a in calls}) > 1:
                break
            calls.pop()
    example, hidden = calls[0], calls[1:]
    shown = ", ".join(repr(a) for a in example)
    prompt = (f"def {name}{signature}:\n    \"\"\"{doc}\n    >>> {name}({shown})\n    {rule(*example)!r}\n"
              f"    \"\"\"\n")
    asserts = "".join(f"    assert candidate({', '.join(repr(a) for a in args)}) == {rule(*args)!r}\n"
                      for args in [example, *hidden])
    return {"id": f"code_families/{family.name}/{index}", "prompt": prompt, "entry_point": name,
            "reference": prompt + f"    {body}\n", "tests": f"def check(candidate):\n{asserts}",
            "difficulty": family.difficulty, "family": family.name}


def generate(seed: int = 0, per_family: int = 12) -> list[dict[str, Any]]:
    """`per_family` problems of every family, constants and inputs drawn from `seed`; a
    constant is not repeated within a family while its range allows (the same seed always
    gives the same rows)."""
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for family in FAMILIES:
        seen: list[Any] = []
        for index in range(per_family):
            constant = family.constants(rng)
            for _ in range(20):  # a small range repeats: draw again, then allow it
                if constant not in seen:
                    break
                constant = family.constants(rng)
            seen.append(constant)
            rows.append(problem(family, constant, rng, index))
    # Ids unique within a seed; a seed's prefix keeps two seeds' files apart.
    for row in rows:
        row["id"] = f"{row['id']}@{seed}"
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="draws the constants and the test inputs")
    parser.add_argument("--per-family", type=int, default=12, help=f"problems per family ({len(FAMILIES)} families)")
    parser.add_argument("--out", required=True, help="the .jsonl file to write")
    args = parser.parse_args(argv)
    if args.per_family < 1:
        parser.error(f"--per-family must be at least 1, got {args.per_family}")
    rows = generate(args.seed, args.per_family)
    Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"{len(rows)} problems ({len(FAMILIES)} families x {args.per_family}) -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
