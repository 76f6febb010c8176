"""DecoEvo end to end on the real embedded model (SmolLM2-135M through llama.cpp).

Test-sized: one seed, DecoEvo only, two inner steps with one outer step between them, one
or two questions per partition, short answers, gold rubrics cut to two criteria so the
grader's answer stays short (~25 model calls, ~30 more for the two judge audits). Then the
whole loop again in the same folder, answered entirely from the cache.
"""

import json
import os
import sqlite3

import pytest
from real_runs import decoevo_test_size

from coevo.run.runner import run_experiment
from coevo.tasks.loaders import load_samples

pytestmark = pytest.mark.slow


def _small_gold_data(path, n=16):
    with open(path, "w") as f:
        for sample in load_samples("bundled:writing", limit=n):
            row = sample.model_dump(mode="json")
            row["rubric"]["criteria"] = row["rubric"]["criteria"][:2]
            f.write(json.dumps(row) + "\n")
    return path


def test_decoevo_tiny_on_the_embedded_model(tmp_path, monkeypatch):
    monkeypatch.setenv("COEVO_QUIET", "1")
    # Two llama.cpp threads where there are two cores: 134 s against 172 s with one (2026-12-03).
    config = decoevo_test_size(str(_small_gold_data(tmp_path / "data.jsonl")),
                               {"n_threads": min(2, os.cpu_count() or 1)})
    run = tmp_path / "run"
    summary = run_experiment(None, run, data=config)

    assert set(summary["methods"]) == {"decoevo"}
    assert "test_mean" in summary["methods"]["decoevo"]
    versions = summary["skill_versions"]
    assert versions["solver"][0]["version"] == 0 and versions["rubric_generator"][0]["version"] == 0
    assert summary["step_cost"]["inner"]["steps"] == 2
    assert summary["step_cost"]["outer"]["steps"] == 1  # after step 1; never after the last
    assert (run / "skills" / "decoevo" / "seed0" / "solver_v0.md").is_file()
    assert "Skill history" in (run / "report.html").read_text()
    # Audited on the initial skills and after the outer step, on the real model's answers.
    assert [(r["round"], r["judge_role"], r["kind"]) for r in summary["audit"]] == [
        ("decoevo/seed0/round0", "grader", "gold_rubric"), ("decoevo/seed0/round1", "grader", "gold_rubric")]
    assert all(r.get("error") is None and r["n_items"] == 1 for r in summary["audit"])

    # Forget the finished steps so the whole loop runs again: every call must be a cache hit.
    with sqlite3.connect(run / "run.sqlite") as db:
        db.execute("DELETE FROM steps")
    again = run_experiment(None, run, data=config, resume=True)
    assert again["methods"] == summary["methods"]
    assert again["llm_cache"]["misses"] == 0
