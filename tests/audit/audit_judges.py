"""Judges and writers for the audit tests (imported by the tests and by conftest.py):
replay files (a gullible judge, a position-biased judge, a writer) and a `python:` module
of judges that read the content."""

import json

import pytest

DIMENSIONS = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness", "specificity",
              "actionability", "priority", "faithfulness", "coverage", "constructiveness")
#: Always the top score, in the format TaiScoreJudge and CritiqueQualityJudge read.
ALWAYS_TEN = json.dumps({**{d: {"score": 10, "reason": "excellent"} for d in DIMENSIONS}, "score": 10})
#: Two real answers: the writer's n=2 call (pairwise) gets both, every other call the first.
ANSWERS = ["The rain on the roof sounds like thunder.", "Clouds gather and rain falls on the roof."]

CONTENT_JUDGES = '''
import re

KEYWORDS = {"rain", "roof", "thunder", "clouds", "cloud"}


def content(text):
    """How much of the expected content a text carries: the topic's words, nothing else."""
    return sum(word in KEYWORDS for word in re.findall(r"[a-z]+", (text or "").lower()))


def reward(x, y0, critique, y1):
    # len(x) / 1000 keeps different prompts apart, as a real judge's scores differ by item.
    return content(critique) + content(y1) + len(x) / 1000


def gold(x, response, rubric):
    return content(response) + len(x) / 1000


def pairwise(x, a, b):
    ca, cb = content(a), content(b)
    return "a" if ca > cb else "b" if cb > ca else "tie"
'''


@pytest.fixture
def files(tmp_path):
    """Paths: data (6 prompts with rubrics), writer, always_ten, first (always "1"), content."""
    data = tmp_path / "data.jsonl"
    rubric = {"criteria": [{"name": "vivid", "description": "Concrete images.", "weight": 1}]}
    data.write_text("".join(json.dumps({"id": f"p{i}", "prompt": f"Describe a storm{' slowly' * i}.",
                                        "rubric": rubric}) + "\n" for i in range(6)))
    writer = tmp_path / "writer.jsonl"
    writer.write_text(json.dumps({"completions": ANSWERS}) + "\n")
    always_ten = tmp_path / "always_ten.jsonl"
    always_ten.write_text(json.dumps({"completion": ALWAYS_TEN}) + "\n")
    first = tmp_path / "first.jsonl"
    first.write_text(json.dumps({"completion": "1"}) + "\n")
    content = tmp_path / "content_judges.py"
    content.write_text(CONTENT_JUDGES)
    return {"data": data, "writer": writer, "always_ten": always_ten, "first": first, "content": content}
