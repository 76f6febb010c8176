"""TAIScore's deep-research domain (§5.1, Appendix C): OpenScholar queries to train on and
DeepResearch-Gym rows to evaluate on, each read from the user's local JSONL.

`openscholar:PATH` — one research question a line: the text under `query`, `input` or
`question`, an optional `id` and an optional `intent` (OpenScholar's intent label). Appendix C's
rule-based stage runs as the rows are read (`removal_rule`): a row is removed when its intent
is one the paper drops (Other, Metadata, Cannot determine), when the query is very short
(fewer than `MIN_WORDS` words), or when it does not look English. The English test is a cheap
documented heuristic, not a language model: at least 90 % of the letters are ASCII and the
query holds one of a few common English function words (`_ENGLISH_WORDS`). What each rule
removed is counted (`tasks/benchmarks.py:read_benchmark`); `coevo plan` shows the counts.
Any other column (a `quality` score, say) stays in `Sample.meta`.

`deepresearch_gym:PATH` — one query a line: the text under `query` (or `question`,
`prompt`), an optional `id` (or `query_id`), the reference `key_points` (strings, or objects
whose text is under `point_content`, `key_point`, `point` or `text`) and optional retrieved
`context` (or `documents`, `snippets`): strings or objects with `text` / `content` /
`snippet` / `body` and an optional `title` / `url`. The key points are gold: they go to
`Sample.meta["key_points"]`, which only the evaluator (`coevo/eval/deepresearch_gym.py`) reads.

Both become the one report-writing task (`REPORT_TEMPLATE`): the actor writes a research
report for the question; a DeepResearch-Gym row's retrieved materials are shown as its sources
(the paper evaluates "using the officially retrieved ClueWeb22 materials as context"), and kept
in `meta["context"]` too.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from coevo.prompts import load_template
from coevo.tasks.errors import DataError
from coevo.core.types import Sample

#: The report-writing prompt every deep-research sample is asked with (coevo/prompts/).
REPORT_TEMPLATE = "deepresearch_report"
#: OpenScholar intents Appendix C removes, compared lower-case.
UNSUPPORTED_INTENTS = ("other", "metadata", "cannot determine")
#: Fewer words than this is "very short" (App. C gives no number; a research question is longer).
MIN_WORDS = 5
#: Common English function words: a question without any of them is taken as not English.
_ENGLISH_WORDS = frozenset("the of and in to is are what how why which does do for with on can between "
                           "from by that this these their".split())
#: The rules' names, in the order they are tried (the first that holds names the removal).
RULES = ("unsupported_intent", "too_short", "not_english")

_QUERY_KEYS = ("query", "input", "question")
_GYM_QUERY_KEYS = ("query", "question", "prompt")
_POINT_KEYS = ("point_content", "key_point", "point", "text", "content")
_CONTEXT_KEYS = ("context", "documents", "snippets")
_DOC_TEXT_KEYS = ("text", "content", "snippet", "body")


class RowRemoved(Exception):
    """A row that a source's rule-based stage removes (not an error): `rule` names the rule."""

    def __init__(self, rule: str):
        super().__init__(rule)
        self.rule = rule


def looks_english(text: str) -> bool:
    """The cheap English test: ≥ 90 % of the letters ASCII and one common English function word."""
    letters = [c for c in text if c.isalpha()]
    if not letters or sum(c.isascii() for c in letters) / len(letters) < 0.9:
        return False
    return any(word in _ENGLISH_WORDS for word in re.findall(r"[a-z]+", text.lower()))


def removal_rule(query: str, intent: str | None) -> str | None:
    """The first of Appendix C's rules that removes this query (RULES), or None to keep it."""
    if intent is not None and intent.strip().lower() in UNSUPPORTED_INTENTS:
        return "unsupported_intent"
    if len(query.split()) < MIN_WORDS:
        return "too_short"
    if not looks_english(query):
        return "not_english"
    return None


def report_prompt(question: str, sources: list[str] | None = None) -> str:
    """The report-writing task for `question`, its retrieved `sources` listed when there are any."""
    if sources:
        listed = "\n\n".join(f"[{n}] {text}" for n, text in enumerate(sources, start=1))
        block = f"Sources retrieved for this question (cite them by number where you use them):\n\n{listed}"
    else:
        block = "No sources are given: write from what you know, and say where the evidence is uncertain."
    return load_template(REPORT_TEMPLATE).render(question=question.strip(), sources_block=block)


def openscholar_row(row: dict[str, Any], where: str) -> Sample:
    """One OpenScholar row as a Sample, or RowRemoved naming the rule that drops it."""
    query = _first_text(row, _QUERY_KEYS, where, "research question")
    intent = row.get("intent")
    if intent is not None and not isinstance(intent, str):
        raise DataError(f"{where}: 'intent' must be a string (OpenScholar's label, e.g. 'Summarize'), "
                        f"got {intent!r:.60}")
    rule = removal_rule(query, intent)
    if rule is not None:
        raise RowRemoved(rule)
    meta = {k: v for k, v in row.items() if k not in (*_QUERY_KEYS, "id")}
    return Sample(id=f"openscholar-{_row_id(row, ('id',), query, where)}", prompt=report_prompt(query),
                  meta={"benchmark": "openscholar", "query": query, **meta})


def deepresearch_gym_row(row: dict[str, Any], where: str) -> Sample:
    """One DeepResearch-Gym row as a Sample: the key points (gold) and context in `meta`."""
    query = _first_text(row, _GYM_QUERY_KEYS, where, "research question")
    points = row.get("key_points")
    if not isinstance(points, list) or not points:
        raise DataError(f"{where}: 'key_points' must be a non-empty list of the reference key points "
                        f"(strings or {{point_content: ...}}); the row has keys {sorted(row)}")
    key_points = [_item_text(p, _POINT_KEYS, where, f"key point {n}") for n, p in enumerate(points, start=1)]
    context_key = next((k for k in _CONTEXT_KEYS if row.get(k) is not None), None)
    documents = row.get(context_key) if context_key else []
    if not isinstance(documents, list):
        raise DataError(f"{where}: {context_key!r} must be a list of retrieved documents (strings or "
                        f"{{title, url, text}}), got {type(documents).__name__}")
    context = [_document(d, where, n) for n, d in enumerate(documents, start=1)]
    return Sample(id=f"deepresearch_gym-{_row_id(row, ('id', 'query_id'), query, where)}",
                  prompt=report_prompt(query, context),
                  meta={"benchmark": "deepresearch_gym", "query": query, "key_points": key_points,
                        "context": context})


def _first_text(row: dict[str, Any], keys: tuple[str, ...], where: str, what: str) -> str:
    for key in keys:
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    raise DataError(f"{where}: no {what}: give it as a non-empty string under "
                    f"{' or '.join(repr(k) for k in keys)}; the row has keys {sorted(row)}")


def _item_text(item: Any, keys: tuple[str, ...], where: str, what: str) -> str:
    if isinstance(item, dict):
        item = next((item[k] for k in keys if isinstance(item.get(k), str) and item[k].strip()), None)
    if not isinstance(item, str) or not item.strip():
        raise DataError(f"{where}: {what} must be a non-empty string or an object with its text under "
                        f"{' or '.join(repr(k) for k in keys)}")
    return item.strip()


def _document(item: Any, where: str, number: int) -> str:
    text = _item_text(item, _DOC_TEXT_KEYS, where, f"context document {number}")
    if isinstance(item, dict):
        head = " — ".join(str(item[k]).strip() for k in ("title", "url") if item.get(k))
        return f"{head}\n{text}" if head else text
    return text


def _row_id(row: dict[str, Any], keys: tuple[str, ...], query: str, where: str) -> str:
    value = next((row[k] for k in keys if row.get(k) not in (None, "")), None)
    if value is None:  # stable across runs and machines: a hash of the question
        return "h-" + hashlib.sha256(query.encode("utf-8")).hexdigest()[:16]
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise DataError(f"{where}: the id must be a string or an integer, got {value!r:.60}")
    return str(value)


__all__ = ["MIN_WORDS", "RULES", "RowRemoved", "UNSUPPORTED_INTENTS", "deepresearch_gym_row", "looks_english",
           "openscholar_row", "removal_rule", "report_prompt"]
