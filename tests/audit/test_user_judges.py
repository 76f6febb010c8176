"""`audit_judge` takes the judge a TRL user holds: a plain function, a `python:` spec or a
`coevo.rewards` reward, each audited as the run's own Python judge would be."""

import pytest

from coevo.audit import audit_judge, write_items
from coevo.llm.replay import ReplayModel
from coevo.core.types import Sample

SAMPLES = [Sample(id=f"s{i}", prompt=f"Write two lines about topic {i}.") for i in range(3)]
WRITER = ReplayModel(rules=[{"match": "Revised Response", "completions": ["A revised answer with several words."]},
                            {"completions": ["A first answer, plain and short."]}])


def counts_words(x, y0, critique, y1):
    return float(len((y1 or "").split()))


def test_a_plain_reward_function_is_audited_and_a_length_judge_is_fooled():
    items = write_items("taiscore", SAMPLES, WRITER)
    audit = audit_judge("taiscore", counts_words, SAMPLES, items, n=3)
    assert audit.n_items == 3 and audit.master_keys and audit.fooled_rate.n
    assert audit.flags  # word counting cannot read content: a master key beats real revisions


def test_a_python_spec_and_a_coevo_reward_are_audited_alike(tmp_path):
    from coevo.rewards import taiscore

    scorer = tmp_path / "judge.py"
    scorer.write_text("def reward(x, y0, critique, y1):\n    return float(len((y1 or '').split()))\n")
    items = write_items("taiscore", SAMPLES, WRITER)
    from_spec = audit_judge("taiscore", f"python:{scorer}", SAMPLES, items, n=3)
    from_reward = audit_judge("taiscore", taiscore(f"python:{scorer}", WRITER), SAMPLES, items, n=3)
    assert from_spec.metrics()["fooled_rate"] == from_reward.metrics()["fooled_rate"]


def test_a_function_of_the_wrong_signature_is_refused_naming_the_one_wanted():
    items = write_items("taiscore", SAMPLES, WRITER)
    with pytest.raises(TypeError, match=r"takes \(x, y0, critique, y1\)"):
        audit_judge("taiscore", lambda x, y: 1.0, SAMPLES, items, n=3)
    with pytest.raises(TypeError, match="give a coevo judge"):
        audit_judge("taiscore", 42, SAMPLES, items, n=3)
