"""`replay:FILE` — answers read from a JSONL file, for tests and for re-scoring runs.

Each line is one rule, tried in file order:
  {"messages": [...], "completions": ["...", ...]}  exact conversation (a recorded call)
  {"match": "substring", "completions": ["...", ...]}  last user turn contains substring
  {"match": ["a", "b"], "completions": [...]}          ... contains every one of them
  {"completions": ["..."]}                             fallback for anything else
`"completion": "..."` may stand for a one-element list. Sample index i of a call gets
completion i modulo the list's length, so answers are deterministic and n>1 calls can be
given distinct answers. A completion may also be an object {"text": ..., "tokens": [...],
"top_logprobs": [{token: logprob, ...}, ...]} to replay token log-probabilities.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from coevo.core.jsonl import iter_jsonl
from coevo.llm.base import ModelError
from coevo.core.types import Completion, Conversation, Sampling


class ReplayModel:
    def __init__(self, path: str | Path | None = None, rules: list[dict[str, Any]] | None = None):
        if rules is None:
            if path is None:
                raise ModelError("replay model needs a file: replay:PATH.jsonl")
            rules = _read_rules(Path(path))
        self.rules = [_normalise(rule, i) for i, rule in enumerate(rules, 1)]
        self.model_id = f"replay:{path or 'inline'}"
        # Only a file that recorded log-probabilities can answer with them.
        self.supports_logprobs = any(isinstance(c, dict) and "top_logprobs" in c
                                     for rule in self.rules for c in rule["completions"])
        self.calls: list[Conversation] = []  # what was asked, for tests that check prompts

    def _answers(self, conversation: Conversation) -> list[str]:
        asked = [m.model_dump() for m in conversation]
        last = conversation[-1].content if conversation else ""
        for rule in self.rules:
            if "messages" in rule:
                if rule["messages"] == asked:
                    return rule["completions"]
            elif "match" in rule:
                needles = rule["match"] if isinstance(rule["match"], list) else [rule["match"]]
                if all(needle in last for needle in needles):
                    return rule["completions"]
            else:
                return rule["completions"]
        raise ModelError(f"replay file has no answer for a prompt starting {last[:80]!r}")

    def generate(
        self, conversations: list[Conversation], sampling: Sampling, n: int = 1
    ) -> list[list[Completion]]:
        out = []
        for conversation in conversations:
            self.calls.append(conversation)
            answers = self._answers(conversation)
            out.append([self._completion(answers[i % len(answers)], conversation, sampling)
                        for i in range(n)])
        return out

    @staticmethod
    def _completion(answer: str | dict[str, Any], conversation: Conversation, sampling: Sampling) -> Completion:
        recorded = answer if isinstance(answer, dict) else {"text": answer}
        text = recorded["text"]
        return Completion(
            text=text,
            prompt_tokens=sum(len(m.content.split()) for m in conversation),
            completion_tokens=len(text.split()),
            tokens=recorded.get("tokens") if sampling.logprobs else None,
            top_logprobs=recorded.get("top_logprobs") if sampling.logprobs else None,
        )


def _read_rules(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise ModelError(f"replay file {path} does not exist")
    lines = path.read_text(encoding="utf-8").splitlines()
    return [rule for _, rule in iter_jsonl(lines, str(path), ModelError)]


def _normalise(rule: dict[str, Any], index: int) -> dict[str, Any]:
    rule = dict(rule)
    if "completion" in rule:
        rule["completions"] = [rule.pop("completion")]
    if not rule.get("completions"):
        raise ModelError(f"replay rule {index} has no 'completions'")
    return rule
