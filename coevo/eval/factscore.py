"""FactScore-style evaluation (Min et al., 2023), the RLAC facts metric (§4.1).

A biography is split into atomic facts by an LLM (`split_atomic_facts`), each fact is
verified against the knowledge source (`factscore`: BM25 passages + entailment judgment, the
facts validator's stage 2), and the biography gets #correct, #incorrect and precision =
correct / (correct + incorrect); `summarize` averages over biographies.
Splitting every output this way is also what *enumerative* verification costs: one
validator call per atomic fact (FactTune-FS), the baseline RLAC is compared against.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from coevo.llm.base import ChatModel, user
from coevo.llm.call_tags import tagged
from coevo.prompts import load_template
from coevo.roles.parsing import extract_json_object
from coevo.tasks.bios import split_sentences
from coevo.core.types import Sampling
from coevo.validators.facts import FactValidator, content_words, overlap

MAX_FACTS = 16
#: The splitter's answer shape: a bounded list of short strings (keeps a 135M model in form).
FACTS_SCHEMA = json.dumps({
    "type": "object", "required": ["facts"], "additionalProperties": False,
    "properties": {"facts": {"type": "array", "minItems": 1, "maxItems": MAX_FACTS,
                             "items": {"type": "string", "minLength": 8, "maxLength": 160}}},
})
SPLIT_SAMPLING = Sampling(temperature=0.0, max_tokens=384)


@dataclass
class FactScoreResult:
    entity: str
    facts: list[tuple[str, bool]] = field(default_factory=list)

    @property
    def correct(self) -> int:
        return sum(ok for _, ok in self.facts)

    @property
    def incorrect(self) -> int:
        return len(self.facts) - self.correct

    @property
    def precision(self) -> float | None:
        return self.correct / len(self.facts) if self.facts else None


def split_atomic_facts(model: ChatModel | None, entity: str, texts: Sequence[str], *,
                       mode: str = "llm", sampling: Sampling = SPLIT_SAMPLING) -> list[list[str]]:
    """Atomic facts per text (one batched call). `mode="sentences"` splits by sentence
    instead (no model); an LLM answer with no usable fact falls back to the sentences too,
    so an empty split never makes a biography look perfect."""
    if mode not in ("llm", "sentences"):
        raise ValueError(f"atomic fact mode must be 'llm' or 'sentences', got {mode!r}")
    fallback = [split_sentences(t) for t in texts]
    if mode == "sentences" or not texts:
        return fallback
    if model is None:
        raise ValueError("splitting atomic facts with an LLM needs a model (or mode='sentences')")
    template = load_template("atomic_facts")
    with tagged(role="judge", step="atomic_facts"):  # filed under the judge in the run's cost rows
        answers = model.generate([user(template.render(entity=entity, text=t)) for t in texts],
                                 sampling.model_copy(update={"json_schema": FACTS_SCHEMA}), n=1)
    out = []
    ignore = content_words(entity)
    for completions, text, sentences in zip(answers, texts, fallback):
        # A small splitter copies facts from the prompt's example; a fact must come from
        # the biography, so one sharing too few words with it is dropped.
        facts = [f for f in _facts(completions[0].text if completions else "")
                 if (overlap(f, text, ignore) or 0.0) >= 0.5]
        out.append(facts or sentences)
    return out


def _facts(raw: str) -> list[str]:
    obj = extract_json_object(raw, ["facts"]) or {}
    items = obj.get("facts")
    if not isinstance(items, list):
        items = re.findall(r"^\s*[-*•]\s*(.+)$", raw, re.M)
    seen, facts = set(), []
    for item in items:
        text = str(item).strip()
        if len(text) >= 8 and text.lower() not in seen:
            seen.add(text.lower())
            facts.append(text)
    return facts[:MAX_FACTS]


def factscore(validator: FactValidator, items: Sequence[tuple[str, Sequence[str]]]) -> list[FactScoreResult]:
    """Verify every atomic fact of each (entity, atomic facts) item against the knowledge
    source. The split is the caller's (`split_atomic_facts`), so one split can serve both
    FactScore and the enumerative cost count, as RLAC's facts domain does with its cache."""
    results = []
    for entity, facts in items:
        verdicts = validator.verify_many(entity, list(facts)) if facts else []
        results.append(FactScoreResult(entity, [(f, ok) for f, (ok, _, _) in zip(facts, verdicts)]))
    return results


def summarize(results: Sequence[FactScoreResult]) -> dict[str, float | None]:
    """Means over biographies: precision, #correct, #incorrect (the paper's Table 1 columns)."""
    if not results:
        return {"factscore_precision": None, "facts_correct": None, "facts_incorrect": None}
    scored = [r.precision for r in results if r.precision is not None]
    return {
        "factscore_precision": sum(scored) / len(scored) if scored else None,
        "facts_correct": sum(r.correct for r in results) / len(results),
        "facts_incorrect": sum(r.incorrect for r in results) / len(results),
    }
