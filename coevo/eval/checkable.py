"""Python rewards whose answer is checkable: the bundled writing prompts' constraints.

The loops' learning curves train on these (the embedded 135M judge is noise for fine
distinctions: test-retest Spearman 0.03), and any config or command can name them where a
judge goes:

    python:coevo.eval.checkable:concise_critique             a TAIScore reward (critic)
    python:coevo.eval.checkable:names_broken_constraint      a TAIScore reward (critic)
    python:coevo.eval.checkable:outcome_gain                 an outcome-gain reward (critic, reads y1)
    python:coevo.eval.checkable:checkable_taiscore           a TAIScore analogue (critic, reads y1)
    python:coevo.eval.checkable:fewer_broken_constraints     a pairwise judge (actor)
    python:coevo.eval.checkable_graders:constraint_grader            a gold judge / DecoEvo grader

They know a prompt's constraints by its text (the bundled `writing` set's, `constraints_for`);
another prompt raises UnknownPrompt, which a run counts as that item's invalid judgment.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from coevo.eval.constraints import BULLET, check, count_words, split_paragraphs, split_sentences
from coevo.llm.python_functions import PROBE_PROMPT

#: concise_critique: full reward at this many characters (whitespace runs counted as one) ...
CONCISE_CHARS = 150
#: ... and none from this many on.
ZERO_CHARS = 360

#: Where the constraints are looked up (a judge is called with the prompt's text only).
SOURCE = "bundled:writing"
#: Every bundled set whose prompts carry constraints: the rewards know the prompts of each.
CHECKABLE_SOURCES = (SOURCE, "bundled:writing_short")


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

    return {_normal(s.prompt): constraints_of(s) for source in CHECKABLE_SOURCES for s in load_samples(source)}


def constraints_for(prompt: str) -> list[dict[str, Any]]:
    """The constraint records of a bundled writing prompt, found by its text; UnknownPrompt
    for any other (a run judging it marks that item invalid, its error kept). The runner's
    start-of-run probe prompt is the one exception: it has none, so the probe passes."""
    found = constraints_by_prompt().get(_normal(prompt))
    if found is None:
        if _normal(prompt) == _normal(PROBE_PROMPT):
            return []
        raise UnknownPrompt(f"{prompt[:80]!r} is not one of the {' or '.join(CHECKABLE_SOURCES)} prompts, so its "
                            f"constraints are unknown; these rewards and graders are for data.source: "
                            f"{' or '.join(CHECKABLE_SOURCES)}")
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
    1 at 150 characters or fewer (about 25 words), falling linearly to 0 at 360 (about 60).
    Characters, not words: a word count let GRPO raise the reward with fewer, longer words
    in the same 64-token cap (every critique still ended at the cap), while
    characters fall only when the critique says less, and a 64-token critique (about 250
    characters) can reach 1 only by stopping early."""
    chars = len(" ".join(critique.split()))
    return 1.0 if chars <= CONCISE_CHARS else max(0.0, 1.0 - (chars - CONCISE_CHARS) / (ZERO_CHARS - CONCISE_CHARS))


def met_share(prompt: str, response: str) -> float:
    """The share of the prompt's constraints `response` meets (1.0 for a prompt without any)."""
    wanted = constraints_for(prompt)
    return sum(check(response, c) for c in wanted) / len(wanted) if wanted else 1.0


def outcome_gain(x: str, y0: str, critique: str, y1: str | None = None) -> float | None:
    """TAIScore's outcome-gain baseline reward (App. D.4), checkable: 1 if the revision y1 meets
    a larger share of x's constraints than y0, 0.5 if the same share, 0 if a smaller one. The
    judge never reads the critique: a critique is credited for any gain, followed or not.
    None (an unreadable answer) without a revision."""
    if y1 is None:
        return None
    before, after = met_share(x, y0), met_share(x, y1)
    return 1.0 if after > before else 0.5 if after == before else 0.0


def measured(text: str, constraint: dict[str, Any]) -> Any:
    """The quantity of `text` that `constraint` is checked on (its word count for max_words,
    its commas for no_commas, ...): what a revision that acts on the constraint changes."""
    kind = constraint["kind"]
    if kind in ("max_words", "min_words"):
        return count_words(text)
    if kind == "max_sentences":
        return len(split_sentences(text))
    if kind == "paragraphs":
        return len(split_paragraphs(text))
    if kind == "bullets":
        return len(BULLET.findall(text))
    if kind == "no_commas":
        return text.count(",")
    if kind == "end_with":
        # The ending as long as the phrase: a revision acting on it rewrites its last words.
        return text.strip().lower()[-len(constraint["phrase"].strip()):]
    if kind in ("include_words", "forbidden_words"):
        return tuple(len(re.findall(rf"(?<!\w){re.escape(w.lower())}(?!\w)", text.lower()))
                     for w in constraint["words"])
    return check(text, constraint)  # title, postscript: present or not


def checkable_taiscore(x: str, y0: str, critique: str, y1: str | None = None) -> float | None:
    """A checkable TAIScore (Targeted, Actionable, Improvement; §4.1) on the constraints y0 breaks:
    each one the critique names (Target) earns 1/3, 2/3 where y1 also changed in that
    constraint's measured quantity (Actionable: y1 differs from y0 and `measured` differs), 1
    where y1 also meets it (Improvement). The reward is the mean over the broken constraints,
    less half the share of the met ones the critique names anyway (false alarms, as in
    `names_broken_constraint`). 0 where y0 breaks none; None (unreadable) without a revision.

    Additive partial credit, not the product T·A·I: a 135M actor seldom fixes what it is told,
    so a product would be 0 for nearly every critique of a group and GRPO would see no spread;
    with partial credit naming the failure already beats naming nothing, and a critique the
    actor acts on (and better, fixes) beats one it ignores. Meeting the constraint implies a
    changed measured quantity, so the three steps are ordered. No guardrail for constraints
    y1 newly breaks: that is outcome_gain's signal, kept apart so the two rewards differ in
    what TAIScore adds, the credit for the critique's own target."""
    if y1 is None:
        return None
    wanted = constraints_for(x)
    failed = [c for c in wanted if not check(y0, c)]
    if not failed:
        return 0.0
    met = [c for c in wanted if c not in failed]
    changed = _normal(y1) != _normal(y0)
    credit = sum((1 + _acted_on(y0, y1, c, changed) + check(y1, c)) / 3 for c in failed if names(critique, c))
    false_alarms = sum(names(critique, c) for c in met) / len(met) if met else 0.0
    return credit / len(failed) - 0.5 * false_alarms


def _acted_on(y0: str, y1: str, constraint: dict[str, Any], changed: bool) -> bool:
    # A revision that differs only elsewhere did not act on this constraint.
    return changed and measured(y1, constraint) != measured(y0, constraint)
