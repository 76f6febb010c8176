"""The bundled writing prompts: enough of them, varied, with usable gold rubrics."""

import re
from collections import Counter

import pytest

from coevo.tasks.loaders import load_samples


@pytest.fixture(scope="module")
def writing():
    return load_samples("bundled:writing")


def test_size_and_unique_ids(writing):
    assert len(writing) >= 64
    ids = [s.id for s in writing]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"wp-\d{3}", i) for i in ids)


def test_genres_varied(writing):
    genres = Counter(s.genre for s in writing)
    assert len(genres) >= 12
    # "several prompts each": no genre is a one-off.
    assert min(genres.values()) >= 3


def test_rubrics_well_formed(writing):
    for s in writing:
        assert s.rubric is not None, s.id
        criteria = s.rubric.criteria
        assert 4 <= len(criteria) <= 8, s.id
        names = [c.name for c in criteria]
        assert len(set(names)) == len(names), s.id
        for c in criteria:
            assert re.fullmatch(r"[a-z][a-z0-9_]*", c.name), (s.id, c.name)
            assert c.weight > 0, (s.id, c.name)
            assert len(c.description) >= 15, (s.id, c.name)


def test_rubrics_are_specific_not_copies(writing):
    # A gold rubric copied across prompts would not test the prompt's own constraints.
    signatures = Counter(tuple(c.description for c in s.rubric.criteria) for s in writing)
    assert max(signatures.values()) == 1
    # Length targets ("Runs roughly 350 to 450 words.") may legitimately repeat.
    descriptions = Counter(
        c.description for s in writing for c in s.rubric.criteria
        if c.name not in ("length_target", "word_limit")
    )
    assert descriptions.most_common(1)[0][1] == 1


def test_prompts_short_enough_for_a_small_model(writing):
    for s in writing:
        assert 40 <= len(s.prompt) <= 450, s.id
        # Abbreviations such as "Mr." and "p.m." end in a period but not a sentence.
        text = re.sub(r"\b(Mr|Ms|Dr|p\.m|a\.m|e\.g)\.", "", s.prompt)
        assert len(re.findall(r"[.!?](?:\s|$)", text)) <= 4, s.id


def test_limit(writing):
    assert [s.id for s in load_samples("bundled:writing", limit=5)] == [s.id for s in writing[:5]]


# ---------------------------------------------------------------- checkable constraints
NUMBERS = ("zero one two three four five six seven eight nine ten").split()


def _count(n: int) -> str:
    """`n` as the prompts may write it: a digit string or an English word."""
    return rf"(?:{n}|{NUMBERS[n]})" if n < len(NUMBERS) else str(n)


def _quoted(prompt: str, text: str) -> bool:
    return f'"{text}"' in prompt


def stated(prompt: str, c: dict) -> bool:
    """Whether the prompt's own words ask for constraint `c` (so a model can follow it)."""
    kind = c["kind"]
    if kind == "max_words":
        return f"at most {c['value']} words" in prompt or f"under {c['value'] + 1} words" in prompt
    if kind == "min_words":
        return f"at least {c['value']} words" in prompt
    if kind == "max_sentences":
        return f"at most {c['value']} sentences" in prompt
    if kind == "paragraphs":
        return re.search(rf"\b(?:exactly )?{_count(c['value'])}[- ]paragraphs?\b", prompt) is not None
    if kind == "bullets":
        return re.search(rf"exactly {_count(c['value'])} bullet points", prompt) is not None
    if kind == "include_words":
        return all(_quoted(prompt, w) for w in c["words"])
    if kind == "forbidden_words":
        return (all(_quoted(prompt, w) for w in c["words"])
                and re.search(r"do not use the words?", prompt, re.IGNORECASE) is not None)
    if kind == "no_commas":
        return "do not use any commas" in prompt.lower()
    if kind == "title":
        return "double angular brackets" in prompt and "<<" in prompt
    if kind == "end_with":
        return "end with the exact phrase" in prompt and _quoted(prompt, c["phrase"])
    if kind == "postscript":
        return 'postscript starting with "P.S."' in prompt
    raise AssertionError(f"no stated-form rule for kind {kind!r}")


def test_every_prompt_has_valid_constraints_stated_in_its_text(writing):
    from coevo.eval.constraints import constraints_of, validate

    kinds = Counter()
    for s in writing:
        constraints = constraints_of(s)
        assert 1 <= len(constraints) <= 3, s.id
        for c in constraints:
            validate(c)
            assert stated(s.prompt, c), (s.id, c)
            kinds[c["kind"]] += 1
    # Varied on purpose: word limits alone would be a length test, not instruction following.
    assert len(kinds) >= 8, kinds


def test_stated_rule_rejects_an_unstated_constraint():
    prompt = "Write a memo. Use at most 200 words."
    assert stated(prompt, {"kind": "max_words", "value": 200})
    assert not stated(prompt, {"kind": "max_words", "value": 150})
    assert not stated(prompt, {"kind": "include_words", "words": ["memo"]})  # not quoted
    assert not stated(prompt, {"kind": "no_commas"})


def test_prompts_keep_ids_genres_and_rubrics(writing):
    # The constraints were added to the prompt text; the gold rubrics did not change.
    first = next(s for s in writing if s.id == "wp-001")
    assert first.genre == "story"
    assert [c.name for c in first.rubric.criteria][:2] == ["age_appropriate_language", "fear_to_courage_arc"]
