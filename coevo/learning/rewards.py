"""Python rewards whose answer is checkable: the bundled writing prompts' constraints.

The loops' learning curves train on these (the embedded 135M judge is noise for fine
distinctions: test-retest Spearman 0.03), and any config or command can name them where a
judge goes:

    python:coevo.learning.rewards:concise_critique             a TAIScore reward (critic)
    python:coevo.learning.rewards:names_broken_constraint      a TAIScore reward (critic)
    python:coevo.learning.rewards:fewer_broken_constraints     a pairwise judge (actor)
    python:coevo.learning.graders:constraint_grader            a gold judge / DecoEvo grader

They know a prompt's constraints by its text (the bundled `writing` set's, `constraints_for`);
another prompt raises UnknownPrompt, which a run counts as that item's invalid judgment.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from coevo.eval.constraints import check, count_words
from coevo.llm.python_functions import PROBE_PROMPT

#: Where the constraints are looked up (a judge is called with the prompt's text only).
SOURCE = "bundled:writing"


class UnknownPrompt(LookupError):
    """A prompt that is not one of the bundled writing prompts: its constraints are unknown."""


def _normal(text: str) -> str:
    # Whitespace only: a prompt re-wrapped by a loader is still the same prompt.
    return " ".join(text.split())


@functools.lru_cache(maxsize=1)
def constraints_by_prompt() -> dict[str, list[dict[str, Any]]]:
    """Normalised prompt text -> its constraint records, for every bundled writing prompt."""
    from coevo.eval.constraints import constraints_of
    from coevo.tasks.loaders import load_samples

    return {_normal(s.prompt): constraints_of(s) for s in load_samples(SOURCE)}


def constraints_for(prompt: str) -> list[dict[str, Any]]:
    """The constraint records of a bundled writing prompt, found by its text; UnknownPrompt
    for any other (a run judging it marks that item invalid, its error kept). The runner's
    start-of-run probe prompt is the one exception: it has none, so the probe passes."""
    found = constraints_by_prompt().get(_normal(prompt))
    if found is None:
        if _normal(prompt) == _normal(PROBE_PROMPT):
            return []
        raise UnknownPrompt(f"{prompt[:80]!r} is not one of the {SOURCE} prompts, so its constraints are unknown; "
                            f"these rewards and graders are for data.source: {SOURCE}")
    return found


def broken(prompt: str, response: str) -> list[dict[str, Any]]:
    """The prompt's constraints `response` does not meet."""
    return [c for c in constraints_for(prompt) if not check(response, c)]


#: Words a critique uses when it points at a constraint of each kind (besides the
#: constraint's own values: its number, its words, its phrase).
_CUES: dict[str, tuple[str, ...]] = {
    "max_words": ("word limit", "word count", "too long", "shorten", "shorter", "exceed", "cut ", "trim"),
    "min_words": ("word count", "too short", "longer", "expand", "more words"),
    "paragraphs": ("paragraph",),
    "bullets": ("bullet",),
    "title": ("title",),
    "no_commas": ("comma",),
    "postscript": ("p.s", "postscript"),
    "end_with": ("end with", "ending", "final sentence", "last sentence"),
    "include_words": (),
    "forbidden_words": (),
}


def names(critique: str, constraint: dict[str, Any]) -> bool:
    """Whether `critique` points at `constraint`: its cue words, its number, or its words."""
    text = critique.lower()
    kind = constraint["kind"]
    values = [str(constraint["value"])] if "value" in constraint else []
    values += [w.lower() for w in constraint.get("words", [])]
    values += [constraint["phrase"].lower()] if "phrase" in constraint else []
    if any(re.search(rf"\b{re.escape(v)}\b", text) for v in values):
        return True
    return any(cue in text for cue in _CUES.get(kind, ()))


def names_broken_constraint(x: str, y0: str, critique: str, y1: str | None = None) -> float:
    """A critic's reward: the share of the constraints y0 breaks that the critique names,
    less half the share of those y0 meets that it names anyway (a checklist of everything
    the prompt asked is not a diagnosis). 0 when y0 breaks none: no critique can be right
    about a failure that is not there, and a constant group teaches GRPO nothing."""
    wanted = constraints_for(x)
    failed = [c for c in wanted if not check(y0, c)]
    if not failed:
        return 0.0
    met = [c for c in wanted if c not in failed]
    recall = sum(names(critique, c) for c in failed) / len(failed)
    false_alarms = sum(names(critique, c) for c in met) / len(met) if met else 0.0
    return recall - 0.5 * false_alarms


def fewer_broken_constraints(x: str, a: str, b: str) -> str:
    """A pairwise judge: the response that breaks fewer of the prompt's constraints; on a
    tie in that, "tie" (the judge never prefers by anything it cannot check)."""
    broken_a, broken_b = len(broken(x, a)), len(broken(x, b))
    return "tie" if broken_a == broken_b else ("a" if broken_a < broken_b else "b")


def concise_critique(x: str, y0: str, critique: str, y1: str | None = None) -> float:
    """A critic's reward for the concision Table 6 asks of it ("provide concise feedback"):
    1 at 25 words or fewer, falling linearly to 0 at 60. A property the embedded critic
    can learn in a few GRPO steps, so the default of the taiscore-critic learning curve."""
    words = count_words(critique)
    return 1.0 if words <= 25 else max(0.0, 1.0 - (words - 25) / 35)
