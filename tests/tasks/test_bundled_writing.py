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
