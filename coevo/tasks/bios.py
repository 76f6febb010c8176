"""Biographies: the RLAC factual-generation task and its knowledge corpus.

The task (RLAC §4.1): "Write a biography of NAME in exactly n sentences", scored by how
many of its facts the knowledge source supports. The bundled corpus
(`data/bio_corpus.jsonl`) was written for this project: plain, correct facts about well-known
people, a few paragraphs each. A user's own corpus (a Wikipedia dump, say) is any JSONL of
`{"title": ..., "text": ...}`; the people to write about are its titles.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from coevo.core.jsonl import iter_jsonl
from coevo.tasks.loaders import DataError
from coevo.core.types import Sample

BUNDLED_CORPUS = "bundled:bios"

_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}


def load_corpus(source: str | Path = BUNDLED_CORPUS) -> list[dict[str, str]]:
    """Documents `{"title", "text"}` from the bundled corpus or a user's JSONL file.

    Raises DataError naming the line when a row lacks a title or a text.
    """
    if str(source) == BUNDLED_CORPUS:
        text = resources.files("coevo.tasks").joinpath("data/bio_corpus.jsonl").read_text("utf-8")
        label = "bundled bio corpus"
    else:
        path = Path(source)
        if not path.is_file():
            raise DataError(f"knowledge corpus {path} does not exist; give a JSONL file of "
                            f'{{"title": ..., "text": ...}} or {BUNDLED_CORPUS}')
        text, label = path.read_text(encoding="utf-8"), str(path)
    docs = []
    for number, row in iter_jsonl(text.splitlines(), label, DataError):
        if not str(row.get("title", "")).strip() or not str(row.get("text", "")).strip():
            raise DataError(f'{label} line {number}: each row needs non-empty "title" and "text"')
        docs.append({"title": str(row["title"]).strip(), "text": str(row["text"]).strip()})
    if not docs:
        raise DataError(f"{label} holds no documents")
    return docs


def bio_prompt(entity: str, n: int) -> str:
    """The user message of the task."""
    return f"Write a biography of {entity} in exactly {n} sentences."


def bio_samples(corpus: str | Path = BUNDLED_CORPUS, *, sentences: int = 4,
                entities: list[str] | None = None, limit: int | None = None) -> list[Sample]:
    """One sample per person of the corpus (or per name in `entities`), in corpus order.

    `meta` carries what the validator and the generator prompt need: the entity and n.
    """
    if sentences < 1:
        raise DataError(f"sentences must be at least 1, got {sentences}")
    titles = [d["title"] for d in load_corpus(corpus)]
    if entities:
        known = {t.lower() for t in titles}
        unknown = [e for e in entities if e.lower() not in known]
        if unknown:
            raise DataError(f"entities not in the corpus: {unknown}; the corpus has e.g. {titles[:5]}")
        titles = list(entities)
    samples = [
        Sample(id=f"bio:{slug(t)}", prompt=bio_prompt(t, sentences),
               meta={"entity": t, "sentences": sentences})
        for t in titles
    ]
    return samples[:limit] if limit else samples


def number_word(n: int) -> str:
    """"four" for 4: the paper's generator prompt spells the sentence count out."""
    return _WORDS.get(n, str(n))


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# Abbreviations whose period does not end a sentence ("Washington, D.C.", "Jr.", "F. W.").
_ABBREV = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|vs|etc|approx|No|Mt)|\b[A-Z]|\b[A-Z]\.[A-Z])\.$")


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences: on . ! ? followed by space and a capital/digit/quote.

    Good enough for model biographies; abbreviations and initials do not end a sentence.
    Bullet and numbered-list markers are dropped so "[1] ..." style answers still count.
    """
    text = re.sub(r"^\s*(?:\[\d+\]|\d+[.)]|[-*•])\s+", "", text.strip(), flags=re.M)
    text = re.sub(r"\[\d+\]\s*", "", text)  # inline "[2]" markers of a numbered paragraph
    text = re.sub(r"\s+", " ", text).strip()
    if not text:
        return []
    pieces, start = [], 0
    for m in re.finditer(r"[.!?]+[\"')\]]?\s+(?=[A-Z0-9\"'(\[])", text):
        candidate = text[start:m.end()].strip()
        if _ABBREV.search(candidate.rstrip("\"')] ")):
            continue
        pieces.append(candidate)
        start = m.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def numbered(sentences: list[str]) -> str:
    """`[1] ...\\n[2] ...`: the numbered paragraph the paper's critic reads."""
    return "\n".join(f"[{i}] {s}" for i, s in enumerate(sentences, 1))
