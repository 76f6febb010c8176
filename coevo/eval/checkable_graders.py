"""Checkable graders: DecoEvo's scoring roles decided by code, not a model.

    roles:
      grader:  {model: "python:coevo.eval.checkable_graders:constraint_grader"}       # the gold
      judge:   {scorer: "python:coevo.eval.checkable_graders:criterion_met"}          # the proxy
      auditor: {structural_scorer: "python:coevo.eval.checkable_graders:rubric_coverage",
                preference_scorer: "python:coevo.eval.checkable_graders:blind_preference"}

A 135M grader's rubric grades barely agree with themselves, so a learning curve measured
with one could not tell a learned behaviour from noise. The bundled writing prompts carry
machine-checkable constraints (`meta.constraints`, coevo/eval/constraints.py): the explicit
requirements each prompt states ("at most 350 words", "include the word 'lantern'").

- `constraint_grader` (the gold): the share of the question's constraints an answer meets.
- `criterion_met` (the criterion judge, the proxy): a generated rubric's criterion is judged
  on the question's constraints it refers to (`named`); a criterion that refers to none is
  passed unchecked. Why lenient: a criterion nothing can check ("Is engaging") is what an LLM
  judge passes almost always, and that slack is what the paper's score-coupled failure
  exploits: a rubric of such criteria is easier to satisfy, its proxy rises, the gold does not.
- `rubric_coverage` (the structural auditor): the share of the question's explicit
  requirements some criterion refers to, with the omitted ones as the repair. It reads what
  the question states, never an answer or a score (the paper's structural audit).
- `blind_preference` (stage 1 of the near-tie audit): the answer that breaks fewer of the
  question's requirements, without the rubric; "equivalent" when they break as many.

The three optimisation-side scorers read the question's stated requirements, which are also
the gold here: the miniature's auditors are ideal readers of the question, not LLMs.
"""

from __future__ import annotations

import re
from typing import Any

from coevo.eval.constraints import check, count_words, label
from coevo.eval.checkable import UnknownPrompt, broken, constraints_for

__all__ = ["UnknownPrompt", "blind_preference", "constraint_grader", "constraints_for", "criterion_met",
           "named", "requirement", "rubric_coverage"]

#: How a rubric criterion refers to a requirement of each kind, besides the requirement's own
#: values (its number, its words, its phrase): the words rubrics phrase them with.
CUES: dict[str, tuple[str, ...]] = {
    "max_words": ("word limit", "word count", "words or fewer", "words or less", "at most", "no more than",
                  "fewer than", "maximum", "length", "too long", "concise"),
    "min_words": ("word count", "at least", "minimum", "length", "too short"),
    "max_sentences": ("sentence",),
    "paragraphs": ("paragraph",),
    "bullets": ("bullet",),
    "title": ("title",),
    "no_commas": ("comma",),
    "postscript": ("p.s", "postscript"),
    "end_with": ("end with", "ends with", "ending", "final sentence", "last sentence", "closing line"),
    "include_words": ("required word", "keyword", "include the word", "includes the word", "uses the word"),
    "forbidden_words": ("banned word", "forbidden word", "avoid the word", "avoids the word", "not use the word",
                        "without the word"),
}
#: "300 words", "250-word", "400 to 600 words": a stated length refers to a length requirement.
_LENGTH = re.compile(r"\b\d+\s*(?:(?:-|to)\s*\d+\s*)?-?words?\b")


def constraint_grader(question: str, answer: str, rubric: dict | None = None) -> float:
    """DecoEvo grader `grader(question, answer, rubric) -> [0, 1]`: the share of the
    question's constraints `answer` meets (1.0 for a question without any). The rubric is
    ignored: the constraints are the checkable part of what the prompt asks."""
    constraints = constraints_for(question)
    if not constraints:
        return 1.0
    return sum(check(answer, c) for c in constraints) / len(constraints)


def _plain(text: str) -> str:
    # Lower case, punctuation as spaces: "the race." and "race" compare as words.
    return " ".join(re.sub(r"[^\w'’]+", " ", text.lower()).split())


def refers_to(criterion: str, constraint: dict[str, Any]) -> bool:
    """Whether the criterion's text refers to one requirement: its values or its kind's cues."""
    text, plain = criterion.lower(), f" {_plain(criterion)} "
    values = [str(constraint["value"])] if "value" in constraint else []
    values += list(constraint.get("words", []))
    values += [constraint["phrase"]] if "phrase" in constraint else []
    if any(_plain(v) and f" {_plain(v)} " in plain for v in values):
        return True
    if constraint["kind"] in ("max_words", "min_words") and _LENGTH.search(text):
        return True
    return any(cue in text for cue in CUES.get(constraint["kind"], ()))


def named(question: str, criterion: str) -> list[dict[str, Any]]:
    """The question's constraints a rubric criterion refers to ([] where it refers to none)."""
    return [c for c in constraints_for(question) if refers_to(criterion, c)]


def requirement(constraint: dict[str, Any]) -> str:
    """One constraint as a rubric criterion would state it."""
    kind = constraint["kind"]
    quoted = ", ".join(f"'{w}'" for w in constraint.get("words", []))
    return {
        "max_words": lambda: f"Uses at most {constraint.get('value')} words",
        "min_words": lambda: f"Uses at least {constraint.get('value')} words",
        "max_sentences": lambda: f"Has at most {constraint.get('value')} sentences",
        "include_words": lambda: f"Uses the word(s) {quoted}",
        "forbidden_words": lambda: f"Avoids the word(s) {quoted}",
        "paragraphs": lambda: f"Has exactly {constraint.get('value')} paragraphs separated by blank lines",
        "no_commas": lambda: "Uses no commas",
        "title": lambda: "Gives a title in double angular brackets, such as <<Title>>",
        "bullets": lambda: f"Has exactly {constraint.get('value')} bullet points",
        "end_with": lambda: f"Ends with the exact phrase '{constraint.get('phrase')}'",
        "postscript": lambda: "Adds a postscript starting with P.S.",
    }.get(kind, lambda: label(constraint))()


def criterion_met(question: str, answer: str, criterion: str) -> dict[str, Any]:
    """DecoEvo criterion judge: {"satisfied": bool, "rationale": str}. A criterion is judged
    on the question's requirements it refers to, all of which the answer must meet; one that
    refers to none is passed unchecked (see the module's docstring for why)."""
    found = named(question, criterion)
    if not found:
        return {"satisfied": True, "rationale": "refers to no checkable requirement of the task: passed unchecked"}
    failed = [c for c in found if not check(answer, c)]
    words = f" (the answer has {count_words(answer)} words)" if any(c["kind"] in ("max_words", "min_words") for c in found) else ""
    if failed:
        return {"satisfied": False, "rationale": "the answer breaks: " + "; ".join(requirement(c) for c in failed)
                + words}
    return {"satisfied": True, "rationale": "the answer meets: " + "; ".join(requirement(c) for c in found) + words}


def rubric_coverage(question: str, rubric: dict[str, Any]) -> dict[str, Any]:
    """DecoEvo structural auditor: {"adequacy": 0-1, "rationale", "repair"}, the share of
    the question's stated requirements some criterion of `rubric` ({criteria: [{name,
    description, weight}]}) refers to. A question stating none is fully covered."""
    wanted = constraints_for(question)
    if not wanted:
        return {"adequacy": 1.0, "rationale": "the task states no checkable requirement", "repair": ""}
    texts = [str(c.get("description", "")) for c in (rubric or {}).get("criteria", [])]
    omitted = [c for c in wanted if not any(refers_to(t, c) for t in texts)]
    covered = len(wanted) - len(omitted)
    rationale = f"the rubric covers {covered} of the {len(wanted)} requirements the task states"
    if not omitted:
        return {"adequacy": 1.0, "rationale": rationale, "repair": ""}
    return {"adequacy": covered / len(wanted),
            "rationale": rationale + "; it omits: " + "; ".join(requirement(c) for c in omitted),
            "repair": "turn every explicit requirement of the task (length, required or banned words, format, "
                      "ending) into its own criterion, e.g. '" + requirement(omitted[0]) + "'"}


def blind_preference(question: str, a: str, b: str) -> dict[str, str]:
    """DecoEvo's rubric-blind preference: {"preference": "a" | "b" | "equivalent",
    "rationale"}, the answer that breaks fewer of the question's requirements."""
    broken_a, broken_b = broken(question, a), broken(question, b)
    if len(broken_a) == len(broken_b):
        return {"preference": "equivalent", "rationale": f"both break {len(broken_a)} of the task's requirements"}
    better, worse = ("a", broken_b) if len(broken_a) < len(broken_b) else ("b", broken_a)
    return {"preference": better, "rationale": f"the other answer breaks more of the task's requirements: "
                                               + "; ".join(requirement(c) for c in worse)}
