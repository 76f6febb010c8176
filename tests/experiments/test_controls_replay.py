"""Critique-content controls on replay models: conditions, derangement, paired Δ, resume."""

import json

from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore

PROMPTS = ["Write about rivers.", "Write about stones.", "Write about wind."]
RUBRIC = {"criteria": [{"name": "clarity", "weight": 1}, {"name": "detail", "weight": 3}]}


def _gold(a, b):
    return json.dumps({"criteria": [{"name": "clarity", "score": a, "reason": "r"},
                                    {"name": "detail", "score": b, "reason": "r"}]})


def _setup(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "prompt": p, "rubric": RUBRIC}) + "\n"
                            for i, p in enumerate(PROMPTS)))
    rules = [{"match": ["Your Critique:", p], "completion": f"CRIT{i}"} for i, p in enumerate(PROMPTS)]
    rules += [
        {"match": "Revised Response:", "completion": "REVISED"},
        {"match": ["evaluation criteria", "REVISED"], "completion": _gold(7, 5)},
        {"match": ["evaluation criteria", "Y0TEXT"], "completion": "```json\n" + _gold(4, 4) + "\n```"},
        {"completion": "Y0TEXT"},
    ]
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in rules))
    spec = f"replay:{replay}"
    return {"algorithm": "controls", "data": {"source": str(data)},
            "roles": {"actor": {"model": spec}, "critic": {"model": spec}, "judge": {"model": spec}}}


def test_conditions_feedback_and_paired_delta(tmp_path):
    config = _setup(tmp_path)
    summary = run_experiment(None, tmp_path / "run", data=config)
    rows = {row["condition"]: row for row in summary["table"]["rows"]}
    assert set(rows) == {"none", "generic", "shuffled", "matched"}
    for row in rows.values():
        # S(y0) = 4; S(y1) = (7*1 + 5*3) / 4 = 5.5 under the gold rubric's weights
        assert row["S(y0)"] == 4.0 and row["S(y1)"] == 5.5 and row["delta"] == 1.5
        assert row["n_valid"] == 3 and row["n_invalid"] == 0
    store = RunStore(tmp_path / "run")
    by_condition = {}
    for rollout in store.rollouts("controls"):
        by_condition.setdefault(rollout.condition, {})[rollout.sample_id] = rollout.c
    assert by_condition["none"] == {"s0": None, "s1": None, "s2": None}
    assert by_condition["matched"] == {"s0": "CRIT0", "s1": "CRIT1", "s2": "CRIT2"}
    shuffled = by_condition["shuffled"]
    assert sorted(shuffled.values()) == ["CRIT0", "CRIT1", "CRIT2"]
    assert all(shuffled[f"s{i}"] != f"CRIT{i}" for i in range(3))
    assert len(set(by_condition["generic"].values())) == 1 and "CRIT" not in by_condition["generic"]["s0"]
    assert (tmp_path / "run" / "report.html").exists()


def test_resume_answers_everything_from_the_cache(tmp_path):
    config = _setup(tmp_path)
    first = run_experiment(None, tmp_path / "run", data=config)
    assert first["llm_cache"]["misses"] > 0
    again = run_experiment(None, tmp_path / "run", data=config, resume=True)
    assert again["llm_cache"]["misses"] == 0 and again["llm_cache"]["hits"] == first["llm_cache"]["hits"] + first["llm_cache"]["misses"]
    assert again["table"] == first["table"]


def _pairwise_setup(tmp_path, judge_rules):
    config = _setup(tmp_path)
    replay = tmp_path / "replay.jsonl"
    rules = [json.loads(line) for line in replay.read_text().splitlines()]
    replay.write_text("".join(json.dumps(r) + "\n" for r in judge_rules + rules))  # judges first
    return {**config, "evaluator": "pairwise", "conditions": ["none", "matched"]}


def test_pairwise_evaluator_judges_both_orders_so_a_position_bias_gives_one_half(tmp_path):
    config = _pairwise_setup(tmp_path, [{"match": "Response 1:", "completion": "1"}])
    summary = run_experiment(None, tmp_path / "run", data=config)
    assert summary["table"]["columns"] == ["condition", "win_rate_vs_y0", "win_rate_vs_y0_lo", "win_rate_vs_y0_hi",
                                           "position_consistency_vs_y0", "first_position_rate_vs_y0", "n_valid",
                                           "n_invalid"]
    rows = summary["table"]["rows"]
    assert [row["condition"] for row in rows] == ["none", "matched"]  # one row per condition asked for
    for row in rows:
        assert row["win_rate_vs_y0"] == 0.5 and row["position_consistency_vs_y0"] == 0.0
        assert row["first_position_rate_vs_y0"] == 1.0 and (row["n_valid"], row["n_invalid"]) == (3, 0)
        assert row["win_rate_vs_y0_lo"] < 0.5 < row["win_rate_vs_y0_hi"]
    rollouts = RunStore(tmp_path / "run").rollouts("controls")
    assert len(rollouts) == 2 * len(PROMPTS)  # every prompt under both conditions
    for rollout in rollouts:
        straight, swapped = rollout.judgments["pairwise"], rollout.judgments["pairwise_swapped"]
        assert (straight.shown_order, swapped.shown_order) == (["y0", "y1"], ["y1", "y0"])


def test_pairwise_evaluator_that_reads_the_content_is_consistent(tmp_path):
    config = _pairwise_setup(tmp_path, [{"match": "Response 1:\nREVISED", "completion": "1"},
                                        {"match": "Response 2:\nREVISED", "completion": "2"}])
    summary = run_experiment(None, tmp_path / "run", data=config)
    rows = summary["table"]["rows"]
    assert [row["condition"] for row in rows] == ["none", "matched"]  # one row per condition asked for
    for row in rows:
        assert row["win_rate_vs_y0"] == 1.0 and row["position_consistency_vs_y0"] == 1.0
        assert row["first_position_rate_vs_y0"] == 0.5
