"""The facts validator of RLAC (Appendix B.1): is the critic's claimed error real?

The critic answers in the paper's three lines (reason / sentence number / error_fact).
Validation runs in two stages, as the paper's:

1. **Authenticity** — the claimed fact must be stated by the named sentence of the
   biography. Without this stage a critic earns reward by *injecting* a false fact that
   the biography never said. A cheap lexical gate (most of the fact's content words must
   occur in the sentence) runs first, then an LLM entailment judgment.
2. **Verification** — BM25 retrieves passages about the entity from the knowledge source
   and an LLM judge decides whether they support the fact (FactScore's retrieve-then-judge).

Verdicts: `caught` (authentic and not supported: a real wrong fact; critic reward 1),
`survived` (authentic and supported: the output was right), `invalid` (unparseable answer,
bad sentence number, fact not in the sentence, or an entity the knowledge source lacks).
`calls` counts validator calls (one per checked proposal, the paper's cost unit);
`llm_calls` counts the entailment judgments behind them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from coevo.llm.base import ChatModel, user
from coevo.llm.call_tags import tagged
from coevo.prompts import load_template
from coevo.roles import schemas
from coevo.roles.parsing import extract_json_object, strip_reasoning
from coevo.tasks.bios import BUNDLED_CORPUS, load_corpus, split_sentences
from coevo.core.types import Proposal, Sample, Sampling, Verdict

MODES = ("llm", "lexical", "hybrid")
#: Constrained decoding for the judge: one field, yes or no (a 135M judge answers in form).
ANSWER_SCHEMA = schemas.as_text({"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}},
                                 "required": ["answer"], "additionalProperties": False})
JUDGE_SAMPLING = Sampling(temperature=0.0, max_tokens=16)

_STOP = set("""a an the of in on at to for from by with and or but as is was were are be been being
his her their its he she they him them it this that these those who whom which what when where
also later then there into over under after before during about than not no up out one""".split())


def content_words(text: str) -> set[str]:
    """Lower-cased content words with a light plural/possessive strip, for overlap tests."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'s", ""))
    return {w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in _STOP}


def overlap(claim: str, text: str, ignore: set[str] = frozenset()) -> float | None:
    """Share of the claim's content words (minus `ignore`) found in `text`; None if none."""
    words = content_words(claim) - ignore
    if not words:
        return None
    return len(words & content_words(text)) / len(words)


def parse_fact_proposal(text: str) -> dict[str, Any] | None:
    """Read the critic's answer; None when the sentence number or the fact is missing.

    The JSON object of `critic_schemas.fact_proposal` (a critic decoding under it) or the paper's
    three lines. Lenient about form (markdown bold, "Sentence 2", "[2]", any line order);
    strict about meaning: a number and a non-empty fact must both be there.
    """
    text = strip_reasoning(text)
    keyed = _json_fact_proposal(text)
    if keyed is not None:
        return keyed
    text = text.replace("**", "")
    number = re.search(r"sentence\s*(?:number)?\s*[:#=-]?\s*\[?(\d+)", text, re.I)
    fact = re.search(r"error[_ ]?fact\s*[:=-]\s*(.+)", text, re.I)
    if not number or not fact or not fact.group(1).strip(" .\"'"):
        # Small critics answer in the paragraph's own form, "[3] <clause>": that still names
        # a sentence and a claim (the meaning), so it is read as one; authenticity then
        # checks the claim against that sentence like any other.
        quoted = re.search(r"^[ \t]*\[(\d+)\][ \t]*(\S.*)$", text, re.M)
        if quoted and len(quoted.group(2).split()) >= 3:
            return {"reason": "", "sentence": int(quoted.group(1)),
                    "error_fact": quoted.group(2).strip(), "format": "numbered"}
        return None
    reason = re.search(r"reason\s*[:=-]\s*(.+)", text, re.I)
    return {"reason": reason.group(1).strip() if reason else "",
            "sentence": int(number.group(1)), "error_fact": fact.group(1).strip().strip("\"'")}


def _json_fact_proposal(text: str) -> dict[str, Any] | None:
    """{"sentence": 2, "error_fact": "...", "reason": "..."} (json-repair reads a cut-off one)."""
    if "{" not in text:
        return None
    answer = extract_json_object(text, ["sentence", "error_fact", "reason"]) or {}
    number = answer.get("sentence")
    if isinstance(number, str) and number.strip().isdigit():
        number = int(number)
    fact = answer.get("error_fact")
    if isinstance(number, bool) or not isinstance(number, int) or not isinstance(fact, str) \
            or not fact.strip(" .\"'"):
        return None
    reason = answer.get("reason")
    return {"reason": reason.strip() if isinstance(reason, str) else "", "sentence": number,
            "error_fact": fact.strip().strip("\"'"), "format": "json"}


@dataclass(frozen=True)
class Passage:
    title: str
    text: str
    score: float = 0.0


class KnowledgeSource:
    """Paragraph passages of a {title, text} corpus, searchable with BM25 (`bm25s`)."""

    def __init__(self, docs: Sequence[dict[str, str]]):
        self.passages = [Passage(d["title"], p.strip()) for d in docs
                         for p in re.split(r"\n\s*\n", d["text"]) if p.strip()]
        self.titles = {d["title"].lower(): d["title"] for d in docs}
        self._index = None

    @classmethod
    def load(cls, source: str | Path = BUNDLED_CORPUS) -> KnowledgeSource:
        """The bundled corpus (`bundled:bios`) or a user's JSONL of {title, text}."""
        return cls(load_corpus(source))

    def resolve(self, entity: str) -> str | None:
        """The corpus title for an entity name (case-insensitive), or None."""
        return self.titles.get(entity.strip().lower())

    def _bm25(self):
        if self._index is None:
            import bm25s

            self._index = bm25s.BM25()
            # Titles are indexed with their passage: "born in Ulm" alone matches any birth.
            self._index.index(bm25s.tokenize([f"{p.title}. {p.text}" for p in self.passages],
                                             show_progress=False), show_progress=False)
        return self._index

    def retrieve(self, entity: str, query: str, k: int = 3) -> list[Passage]:
        """Top-k passages for `query`, restricted to the entity's own page when it has one.

        FactScore retrieves within the entity's Wikipedia page; a corpus without that page
        falls back to a global search over "entity + query".
        """
        import bm25s

        index = self._bm25()
        tokens = bm25s.tokenize([f"{entity} {query}"], show_progress=False)
        docs, scores = index.retrieve(tokens, k=len(self.passages), show_progress=False)
        ranked = [(self.passages[int(i)], float(s)) for i, s in zip(docs[0], scores[0])]
        title = self.resolve(entity)
        if title is not None:
            ranked = [(p, s) for p, s in ranked if p.title == title]
        return [Passage(p.title, p.text, s) for p, s in ranked[:k]]


class EntailmentJudge:
    """Yes/no entailment judgments by an LLM (batched, constrained to {"answer": yes|no}).

    `mode="lexical"` answers by content-word overlap instead (no model): a cheap, reproducible
    stand-in for tests. `mode="hybrid"` asks the LLM only when the overlap test passes and
    needs both to agree: a tiny judge (the embedded 135M model answers "yes" to nearly every
    claim) then cannot call an unrelated claim supported, and a strong judge still vetoes
    claims that share words with the evidence but say something else.
    """

    def __init__(self, model: ChatModel | None, sampling: Sampling = JUDGE_SAMPLING, *,
                 mode: str = "llm", threshold: float = 0.75, free: bool = False):
        """`free`: the answer is generated freely and read after (yes/no/true/false anywhere
        in it), as FactScore's judge answers, instead of under the answer's schema."""
        if mode not in MODES:
            raise ValueError(f"entailment mode must be one of {MODES}, got {mode!r}")
        if mode != "lexical" and model is None:
            raise ValueError(f"a {mode!r} entailment judge needs a model (or use mode='lexical')")
        self.model, self.mode, self.threshold = model, mode, threshold
        self.sampling = sampling.model_copy(update={"json_schema": None if free else ANSWER_SCHEMA})
        self.calls = 0

    def judge(self, template: str, items: list[dict[str, str]], premise_key: str) -> list[tuple[bool, str]]:
        """(entailed, raw answer) per item; an unreadable answer counts as not entailed."""
        if not items:
            return []
        self.calls += len(items)
        out: list[tuple[bool, str]] = []
        for it in items:
            share = overlap(it["fact"], it[premise_key], content_words(it["entity"]))
            out.append((share is not None and share >= self.threshold, f"overlap={share}"))
        if self.mode == "lexical":
            return out
        ask = [i for i, (ok, _) in enumerate(out) if ok or self.mode == "llm"]
        if ask:
            prompt = load_template(template)
            # Tagged as the judge's (llm/call_tags.py): the run's cost rows file these calls
            # under a role, as they do every role's calls.
            with tagged(role="judge", step=template):
                answers = self.model.generate([user(prompt.render(**items[i])) for i in ask], self.sampling, n=1)
            for i, completions in zip(ask, answers):
                raw = completions[0].text if completions else ""
                out[i] = (_yes(raw), raw)
        return out


def _yes(raw: str) -> bool:
    obj = extract_json_object(raw, ["answer"]) or {}
    value = str(obj.get("answer", "")).strip().lower()
    if not value:
        m = re.search(r"\b(yes|no|true|false|supported|not supported)\b", raw.lower())
        value = m.group(1) if m else ""
    return value in ("yes", "true", "supported")


class FactValidator:
    """RLAC's two-stage facts validator over a knowledge source. See the module docstring."""

    name = "facts"

    def __init__(self, knowledge: KnowledgeSource, judge: EntailmentJudge, *, k: int = 3,
                 min_overlap: float = 0.5):
        self.knowledge, self.judge, self.k, self.min_overlap = knowledge, judge, k, min_overlap
        self.calls = 0

    @property
    def llm_calls(self) -> int:
        return self.judge.calls

    def check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict:
        """R(s, a, c): caught / survived / invalid for one critic proposal on one output."""
        [verdict] = self.check_many([(sample, output, proposal)])
        return verdict

    def check_many(self, items: Sequence[tuple[Sample, str, Proposal]]) -> list[Verdict]:
        """`check` over many proposals (one validator call each), the judge asked once per
        stage for all of them: every authenticity question in one batch, then every
        verification. Verdicts come back in the items' order."""
        start = time.perf_counter()
        self.calls += len(items)
        verdicts: list[Verdict | None] = [None] * len(items)
        claims, problems = zip(*(self._claim(*item) for item in items)) if items else ((), ())

        def settle(i: int, kind: str, reason: str) -> None:
            verdicts[i] = Verdict(verdict=kind, reason=reason, details=claims[i],
                                  seconds=(time.perf_counter() - start) / max(len(items), 1))

        for i, problem in enumerate(problems):
            if problem:
                settle(i, "invalid", problem)
        # Stage 1, authenticity: the claimed fact must be in the named sentence.
        pending = [i for i, v in enumerate(verdicts) if v is None]
        checked = self.authentic_many([(claims[i]["entity"], claims[i]["sentence_text"], claims[i]["error_fact"])
                                       for i in pending])
        for i, (authentic, why) in zip(pending, checked):
            claims[i]["authenticity"] = why
            if not authentic:
                settle(i, "invalid", f"fact not in sentence {claims[i]['sentence']}: {why}")
        # Stage 2, verification against the knowledge source.
        pending = [i for i, v in enumerate(verdicts) if v is None]
        supported = self._verify_pairs([(claims[i]["entity"], claims[i]["error_fact"]) for i in pending])
        for i, (ok, passages, raw) in zip(pending, supported):
            claims[i].update(passages=[p.text[:300] for p in passages], judge_answer=raw)
            if ok:
                settle(i, "survived", "the knowledge source supports the fact")
            else:
                settle(i, "caught", "the knowledge source does not support the fact")
        return verdicts  # type: ignore[return-value]

    def _claim(self, sample: Sample, output: str, proposal: Proposal) -> tuple[dict[str, Any], str | None]:
        """The proposal's claim (entity, sentence, fact) and what makes it invalid, if anything."""
        entity = str(sample.meta.get("entity") or "")
        parsed = proposal.parsed or parse_fact_proposal(proposal.text) or {}
        details: dict[str, Any] = {"entity": entity, **parsed}
        if not parsed.get("error_fact") or parsed.get("sentence") is None:
            return details, "unparseable: the answer needs 'sentence: N' and 'error_fact: F'"
        sentences = split_sentences(output)
        number = int(parsed["sentence"])
        if not 1 <= number <= len(sentences):
            return details, f"bad sentence number {number}: the output has {len(sentences)}"
        details["sentence_text"] = sentences[number - 1]
        if not entity:
            return details, "the sample names no entity (meta.entity) to verify against"
        return details, None

    def authentic(self, entity: str, sentence: str, fact: str) -> tuple[bool, str]:
        """Stage 1: lexical gate, then LLM entailment (sentence entails fact)."""
        [result] = self.authentic_many([(entity, sentence, fact)])
        return result

    def authentic_many(self, claims: Sequence[tuple[str, str, str]]) -> list[tuple[bool, str]]:
        """Stage 1 for many (entity, sentence, fact) claims: the lexical gate, then one
        batched entailment call for the claims that pass it."""
        results: list[tuple[bool, str]] = []
        ask = []
        for i, (entity, sentence, fact) in enumerate(claims):
            share = overlap(fact, sentence, content_words(entity))
            if share is None or share < self.min_overlap:
                results.append((False, f"lexical overlap {share if share is None else round(share, 2)} "
                                       f"< {self.min_overlap}"))
            else:
                results.append((True, ""))
                ask.append(i)
        judged = self.judge.judge("fact_authenticity", [
            {"entity": claims[i][0], "sentence": claims[i][1], "fact": claims[i][2]} for i in ask], "sentence")
        for i, (ok, raw) in zip(ask, judged):
            results[i] = (ok, f"entailment judge: {raw.strip()[:80]}")
        return results

    def verify(self, entity: str, fact: str) -> tuple[bool, list[Passage], str]:
        """Stage 2: BM25 passages about the entity + entailment judgment (supported?)."""
        [(ok, passages, raw)] = self.verify_many(entity, [fact])
        return ok, passages, raw

    def verify_many(self, entity: str, facts: list[str]) -> list[tuple[bool, list[Passage], str]]:
        """Stage 2 for several facts of one entity, in one batched judge call (FactScore)."""
        return self._verify_pairs([(entity, f) for f in facts])

    def _verify_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[tuple[bool, list[Passage], str]]:
        """Stage 2 for (entity, fact) pairs: BM25 passages each, one batched judge call."""
        retrieved = [self.knowledge.retrieve(entity, f, self.k) for entity, f in pairs]
        items = [{"entity": entity, "fact": f, "passages": "\n\n".join(p.text for p in ps)}
                 for (entity, f), ps in zip(pairs, retrieved)]
        judged = self.judge.judge("fact_support", items, "passages")
        return [(ok, ps, raw) for (ok, raw), ps in zip(judged, retrieved)]


def build_fact_validator(judge_model: ChatModel | None, *, corpus: str | Path = BUNDLED_CORPUS,
                         mode: str = "llm", k: int = 3, min_overlap: float = 0.5,
                         sampling: Sampling = JUDGE_SAMPLING) -> FactValidator:
    """A FactValidator over a corpus, judged by `judge_model` (or lexically)."""
    return FactValidator(KnowledgeSource.load(corpus),
                         EntailmentJudge(judge_model, sampling, mode=mode), k=k, min_overlap=min_overlap)
