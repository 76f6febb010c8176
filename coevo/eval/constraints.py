"""Machine-checkable instruction constraints (IFEval-style) and `constraint_pass_rate`.

A gold that is not noise: a 135M judge's rubric scores barely correlate with themselves
(test-retest rho 0.03), but "at most 120 words" or "no commas" is decided by code. Each
writing prompt may carry constraint records as plain data in `sample.meta["constraints"]`:

    [{"kind": "max_words", "value": 120}, {"kind": "include_words", "words": ["harbour"]},
     {"kind": "paragraphs", "value": 3}, {"kind": "no_commas"}]

Every kind is one plain function `check(response, **params) -> bool` in `CHECKERS`.
`IFEVAL_IDS` names the IFEval instruction a kind reproduces, where one does.

Why not the `if-verifiable` package (IFEval's and IFBench's own checkers): importing its
checkers imports nltk, langdetect and immutabledict (its package root also imports `datasets`),
none needed by coevo otherwise, and its sentence counting loads nltk's punkt data, which is a
download that cannot happen offline. The dozen checks below are a few lines each.

Text units, documented because counts depend on them:
- a *word* is a run of letters/digits, joined across inner apostrophes and hyphens
  (`WORD`): "don't" and "well-known" are one word each, "14:20" is two;
- a *sentence* ends at `.`, `!` or `?` (repeated, optionally followed by closing quotes or
  brackets) before whitespace or the end of the text (`SENTENCE_END`); a period after a
  common abbreviation (`ABBREVIATIONS`: Mr., Dr., e.g., ...) ends none; unterminated trailing
  text with a word in it is a sentence too;
- a *paragraph* is a block of text separated from the next by at least one blank line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from coevo.eval.stats import wilson_interval
from coevo.core.types import Judgment

#: The name of a constraint-check Judgment (`judge`) and of its key in a rollout's judgments.
CONSTRAINTS = "constraints"

WORD = re.compile(r"\w+(?:['’-]\w+)*")
SENTENCE_END = re.compile(r"[.!?]+[\"'’”)\]]*(?=\s|$)")
ABBREVIATIONS = re.compile(r"\b(?:Mr|Mrs|Ms|Dr|Prof|St|vs|etc|e\.g|i\.e|a\.m|p\.m|No)\.", re.IGNORECASE)
BLANK_LINE = re.compile(r"\n\s*\n")
# IFEval's bullet patterns: "* item" (not "**bold**") and "- item" at a line's start.
BULLET = re.compile(r"^\s*(?:\*[^*]|-\s)", re.MULTILINE)
TITLE = re.compile(r"<<[^\n]+>>")
POSTSCRIPT = re.compile(r"^\s*p\.\s?s\.", re.IGNORECASE | re.MULTILINE)


def count_words(text: str) -> int:
    """Words in `text` as `WORD` defines them."""
    return len(WORD.findall(text))


def split_sentences(text: str) -> list[str]:
    """`text` cut into sentences by `SENTENCE_END`, abbreviations' periods not counted."""
    masked = ABBREVIATIONS.sub(lambda m: m.group(0).replace(".", "\0"), text)
    pieces, start = [], 0
    for match in SENTENCE_END.finditer(masked):
        pieces.append(masked[start:match.end()])
        start = match.end()
    pieces.append(masked[start:])
    return [p.replace("\0", ".").strip() for p in pieces if WORD.search(p)]


def split_paragraphs(text: str) -> list[str]:
    """Non-empty blocks of `text` between blank lines."""
    return [p for p in BLANK_LINE.split(text.strip()) if p.strip()]


def _has_word(text: str, word: str) -> bool:
    # Whole words, any case; a phrase's inner spaces match any whitespace.
    pattern = r"\s+".join(re.escape(part) for part in word.split())
    return re.search(rf"(?<!\w){pattern}(?!\w)", text, re.IGNORECASE) is not None


def max_words(text: str, value: int) -> bool:
    """At most `value` words."""
    return count_words(text) <= value


def min_words(text: str, value: int) -> bool:
    """At least `value` words."""
    return count_words(text) >= value


def max_sentences(text: str, value: int) -> bool:
    """At most `value` sentences."""
    return len(split_sentences(text)) <= value


def include_words(text: str, words: Sequence[str]) -> bool:
    """Every one of `words` appears as a whole word (case-insensitive)."""
    return all(_has_word(text, w) for w in words)


def forbidden_words(text: str, words: Sequence[str]) -> bool:
    """None of `words` appears as a whole word (case-insensitive)."""
    return not any(_has_word(text, w) for w in words)


def paragraphs(text: str, value: int) -> bool:
    """Exactly `value` paragraphs separated by blank lines."""
    return len(split_paragraphs(text)) == value


def no_commas(text: str) -> bool:
    """No comma anywhere."""
    return "," not in text


def title(text: str) -> bool:
    """A title wrapped in double angular brackets, such as <<Harbour Lights>>."""
    return TITLE.search(text) is not None


def bullets(text: str, value: int) -> bool:
    """Exactly `value` markdown bullet points ("* " or "- " lines)."""
    return len(BULLET.findall(text)) == value


def end_with(text: str, phrase: str) -> bool:
    """The response ends with `phrase` exactly (case and surrounding whitespace ignored)."""
    return text.strip().lower().endswith(phrase.strip().lower())


def postscript(text: str) -> bool:
    """A postscript: a line starting with "P.S." (or "P. S.")."""
    return POSTSCRIPT.search(text) is not None


#: kind -> checker. A plain dict, no registry: adding a kind is adding a function here.
CHECKERS: dict[str, Callable[..., bool]] = {
    "max_words": max_words, "min_words": min_words, "max_sentences": max_sentences,
    "include_words": include_words, "forbidden_words": forbidden_words, "paragraphs": paragraphs,
    "no_commas": no_commas, "title": title, "bullets": bullets, "end_with": end_with,
    "postscript": postscript,
}

#: kind -> (parameter name, type); kinds absent from it take no parameter.
PARAMS: dict[str, tuple[str, type]] = {
    "max_words": ("value", int), "min_words": ("value", int), "max_sentences": ("value", int),
    "include_words": ("words", list), "forbidden_words": ("words", list), "paragraphs": ("value", int),
    "bullets": ("value", int), "end_with": ("phrase", str),
}

#: The IFEval instruction each kind reproduces. Left out: IFEval's paragraphs are split by
#: "***" (ours by blank lines), its sentence count needs punkt, and it has no max_words kind
#: distinct from "less than" (ours is "at most", inclusive).
IFEVAL_IDS: dict[str, str] = {
    "include_words": "keywords:existence", "forbidden_words": "keywords:forbidden_words",
    "no_commas": "punctuation:no_comma", "title": "detectable_format:title",
    "bullets": "detectable_format:number_bullet_lists", "end_with": "startend:end_checker",
    "postscript": "detectable_content:postscript",
}


def validate(constraint: dict[str, Any]) -> None:
    """Raise ValueError naming what is wrong with one constraint record."""
    kind = constraint.get("kind")
    if kind not in CHECKERS:
        raise ValueError(f"unknown constraint kind {kind!r}; known: {', '.join(sorted(CHECKERS))}")
    expected = PARAMS.get(kind)
    extra = set(constraint) - {"kind"} - ({expected[0]} if expected else set())
    if extra:
        raise ValueError(f"constraint {kind!r} takes no {sorted(extra)}")
    if expected is None:
        return
    name, kind_type = expected
    value = constraint.get(name)
    if not isinstance(value, kind_type) or isinstance(value, bool):
        raise ValueError(f"constraint {kind!r} needs {name!r} as {kind_type.__name__}, got {value!r}")
    if kind_type is int and value < 1:
        raise ValueError(f"constraint {kind!r} needs {name} >= 1, got {value}")
    if kind_type is list and (not value or not all(isinstance(w, str) and w.strip() for w in value)):
        raise ValueError(f"constraint {kind!r} needs a non-empty list of non-empty strings, got {value!r}")
    if kind_type is str and not value.strip():
        raise ValueError(f"constraint {kind!r} needs a non-empty {name}")


def check(response: str, constraint: dict[str, Any]) -> bool:
    """Whether `response` meets one constraint record (validated first)."""
    validate(constraint)
    params = {k: v for k, v in constraint.items() if k != "kind"}
    return CHECKERS[constraint["kind"]](response, **params)


def constraints_of(sample: Any) -> list[dict[str, Any]]:
    """The constraint records of a sample (`meta["constraints"]`), [] when it has none."""
    return list((getattr(sample, "meta", None) or {}).get("constraints") or [])


def label(constraint: dict[str, Any]) -> str:
    """A short readable name of one constraint, e.g. "max_words=120"."""
    params = [v if not isinstance(v, list) else "|".join(v) for k, v in constraint.items() if k != "kind"]
    return constraint["kind"] + ("=" + ",".join(str(p) for p in params) if params else "")


def constraint_judgment(response: str, constraints: Sequence[dict[str, Any]]) -> Judgment:
    """One response's checks as a Judgment named "constraints": `scores` maps each
    constraint's label to 1.0 (met) or 0.0, `score` is the share met, `raw` says which failed."""
    results = {label(c): float(check(response, c)) for c in constraints}
    failed = [name for name, ok in results.items() if not ok]
    return Judgment(judge=CONSTRAINTS, scores=results, score=sum(results.values()) / len(results),
                    raw="all met" if not failed else "failed: " + "; ".join(failed))


def passed(judgment: Judgment) -> list[bool]:
    """The per-constraint outcomes a constraint judgment holds."""
    return [v == 1.0 for v in judgment.scores.values()]


def pass_rate_metrics(outcomes: Sequence[Sequence[bool]], prefix: str = "constraint") -> dict[str, float | None]:
    """`constraint_pass_rate` over responses' per-constraint outcomes (responses without
    constraints left out beforehand).

    `<prefix>_pass_rate` is the share of responses meeting ALL their constraints (IFEval's
    prompt-level strict accuracy), with a Wilson 95 % interval (`_lo`, `_hi`) over
    `<prefix>_count` responses; `<prefix>_check_rate` is the share of single checks met
    (IFEval's instruction-level accuracy) over `<prefix>_checks_count` checks, no interval
    (checks of one response are not independent). With no response, the rate is None.
    """
    rows = [list(o) for o in outcomes if len(o)]
    if not rows:
        return {f"{prefix}_pass_rate": None, f"{prefix}_count": 0.0}
    rate, lo, hi = wilson_interval(sum(all(r) for r in rows), len(rows))
    checks = [ok for r in rows for ok in r]
    return {f"{prefix}_pass_rate": rate, f"{prefix}_pass_rate_lo": lo, f"{prefix}_pass_rate_hi": hi,
            f"{prefix}_count": float(len(rows)), f"{prefix}_check_rate": sum(checks) / len(checks),
            f"{prefix}_checks_count": float(len(checks))}
