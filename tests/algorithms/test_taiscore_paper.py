"""TAIScore as the paper runs it: Appendix C's pools, seeded critic queries, departures, `coevo plan`."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coevo.algorithms.taiscore import TaiScoreConfig
from coevo.algorithms.taiscore.data import query_ratings, split_data
from coevo.algorithms.taiscore.paper import departures, plan
from coevo.cli import app
from coevo.core.strict import ConfigError
from coevo.settings.config import apply_overrides, read_yaml
from coevo.run.runner import resolve_config
from coevo.tasks.pools import quality_pools, sample_critic_queries
from coevo.core.types import Sample

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: The departures no coevo setting can remove yet: the benchmarks' own evaluators
#: (taiscore/paper.py); the full config has only these.
UNAVOIDABLE = ["evaluation.evaluator"]


def _samples(scores: list[int | None]) -> list[Sample]:
    return [Sample(id=f"q{i:05d}", prompt=f"Write piece {i}.", meta={} if q is None else {"quality": q})
            for i, q in enumerate(scores)]


def _paper_file(tmp_path: Path, n: int = 12000, seed: int = 3) -> tuple[Path, dict[str, int]]:
    """A 12,000-row query file with a quality column, in the paper's proportions (~41 % rated 4-5)."""
    rng = random.Random(seed)
    scores = {f"q{i:05d}": rng.choices([5, 4, 3, 2, 1], weights=[15, 26, 40, 12, 7])[0] for i in range(n)}
    path = tmp_path / "queries.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prompt": f"Write piece {i}.", "quality": q}) + "\n"
                            for i, q in scores.items()), encoding="utf-8")
    return path, scores


def _config(name: str, *overrides: str):
    return resolve_config(apply_overrides(read_yaml(EXAMPLES / name), list(overrides)), name)[1]


def test_pools_keep_every_high_rated_query_and_top_up_with_threes():
    scores = [5] * 30 + [4] * 20 + [3] * 40 + [2] * 10 + [None] * 5
    pools, report = quality_pools(_samples(scores), {s.id: s.meta.get("quality") for s in _samples(scores)},
                                  3, pool_total=60, pool_size=20, seed=0)
    ids = [s.id for pool in pools for s in pool]
    assert report.sizes == [20, 20, 20] and len(set(ids)) == 60
    assert {f"q{i:05d}" for i in range(50)} <= set(ids)            # every 4-5 query
    assert sum(s.meta["quality"] == 3 for pool in pools for s in pool) == 10  # topped up to 60
    assert all(s.meta.get("quality") not in (2, None) for pool in pools for s in pool)
    assert report.histogram == {"unreadable": 5, "5": 30, "4": 20, "3": 40, "2": 10}
    assert (report.rated_high, report.rated_three, report.topped_up, report.dropped) == (50, 40, 10, 45)


def test_without_top_up_only_the_high_rated_queries_are_pooled_and_the_rule_follows_the_domain():
    scores = [5] * 30 + [4] * 20 + [3] * 40
    pools, report = quality_pools(_samples(scores), {s.id: s.meta.get("quality") for s in _samples(scores)},
                                  3, pool_total=60, pool_size=20, seed=0, top_up=False)
    assert report.topped_up == 0 and sum(len(p) for p in pools) == 50
    assert all(s.meta["quality"] >= 4 for pool in pools for s in pool)
    # App. C tops up DeepWriting's pools (the default) and not OpenScholar's (the deep-research configs).
    assert "data.top_up" not in {d.setting for d in departures(_config("taiscore_full.yaml"))}
    assert "data.top_up" in {d.setting for d in departures(_config("taiscore_full.yaml", "data.top_up=false"))}


def test_pools_are_shuffled_not_file_order_and_seeded():
    samples = _samples([4] * 90)
    quality = {s.id: 4 for s in samples}
    pools, _ = quality_pools(samples, quality, 3, pool_total=None, pool_size=30, seed=0)
    again, _ = quality_pools(list(reversed(samples)), quality, 3, pool_total=None, pool_size=30, seed=0)
    other, _ = quality_pools(samples, quality, 3, pool_total=None, pool_size=30, seed=1)
    first = {s.id for s in pools[0]}
    assert first != {s.id for s in samples[:30]}
    assert first == {s.id for s in again[0]}          # the file's order does not matter
    assert first != {s.id for s in other[0]}          # the seed does


def test_small_data_is_dealt_into_smaller_pools_with_a_note():
    samples = _samples([None] * 11)
    pools, report = quality_pools(samples, None, 2, pool_total=9000, pool_size=3000, seed=0)
    assert sorted(report.sizes) == [5, 6] and report.dropped == 0
    assert any("cannot fill 2 pools" in note for note in report.notes)
    assert any("no quality scores" in note for note in report.notes)


def test_critic_queries_are_a_seeded_sample_not_the_first_rows():
    pool = _samples([4] * 50)
    chosen = sample_critic_queries(pool, 20, seed=0, pool_index=0)
    assert len(chosen) == 20 and [s.id for s in chosen] != [s.id for s in pool[:20]]
    assert chosen == sample_critic_queries(pool, 20, seed=0, pool_index=0)
    assert chosen != sample_critic_queries(pool, 20, seed=0, pool_index=1)
    assert sample_critic_queries(pool, None, seed=0, pool_index=0) == pool


def test_quality_column_errors_name_the_row_and_the_fix():
    config = TaiScoreConfig()
    with pytest.raises(ConfigError, match=r"'q00001'.*integer score from 1 to 5, got 'high'"):
        query_ratings(config, [Sample(id="q00000", prompt="a", meta={"quality": 4}),
                               Sample(id="q00001", prompt="b", meta={"quality": "high"})])
    with pytest.raises(ConfigError, match="1 of 2 training queries have no 'quality' score"):
        query_ratings(config, [Sample(id="a", prompt="a", meta={"quality": 4}), Sample(id="b", prompt="b")])
    assert query_ratings(config, _samples([None, None])) is None   # no column, no filtering: unrated


def test_split_data_holds_out_first_then_pools(tmp_path):
    config = TaiScoreConfig.model_validate({"rounds": 2, "data": {"pool_total": 8, "pool_size": 4},
                                            "evaluation": {"prompts": 2}})
    samples = _samples([5, 4, 3, 3, 3, 3, 3, 3, 2, 1, 5, 5])
    split = split_data(config, samples)
    held = {s.id for s in split.held_out}
    assert len(held) == 2 and not held & {s.id for pool in split.shards for s in pool}
    assert split.report.sizes == [4, 4]


def test_plan_of_the_full_config_on_12000_rated_rows(tmp_path):
    path, scores = _paper_file(tmp_path)
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_full.yaml"), "--set", f"data.source={path}",
                                      "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    pools = made["data"]["pools"]
    assert [len(p) for p in pools] == [3000, 3000, 3000]
    pooled = [i for pool in pools for i in pool]
    assert len(set(pooled)) == 9000                                           # disjoint
    assert {i for i, q in scores.items() if q >= 4} <= set(pooled)           # every 4-5 row
    assert all(scores[i] >= 3 for i in pooled)
    assert len(made["data"]["critic_queries"]) == len(pools)  # one draw per pool
    for pool, queries in zip(pools, made["data"]["critic_queries"]):
        assert len(queries) == 2000 and set(queries) <= set(pool) and queries != pool[:2000]
    assert made["data"]["filter_calls"] == 0
    # Only what no coevo setting changes yet; every row of the paper's table is in `settings`.
    assert [d["setting"] for d in made["departures"]] == UNAVOIDABLE
    assert all(not d["settable"] for d in made["departures"])
    rows = {row["setting"]: row for row in made["settings"]}
    assert {"evaluation.evaluator", "roles.judge.sampling.output", "grpo.learning_rate", "roles.actor.thinking",
            "roles.critic.thinking"} <= set(rows)
    # The full config's judges answer freely, as the paper's; the tiny one's under a schema (a departure).
    assert rows["grpo.learning_rate"]["departs"] is False and rows["roles.judge.sampling.output"]["here"] == "free"
    assert rows["roles.judge.sampling.output"]["departs"] is False and rows["roles.critic.thinking"]["departs"] is False
    assert [s["kind"] for s in made["stages"][:6]] == ["evaluate", "generate", "judge", "dpo", "evaluate", "evaluate"]
    assert any("WritingBench" in note or "evaluation data" in note for note in made["notes"])


def test_plan_without_scores_counts_the_grading_calls(tmp_path):
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps({"prompt": f"Write {i}."}) + "\n" for i in range(40)), encoding="utf-8")
    made = plan(_config("taiscore_full.yaml", f"data.source={path}"))
    assert made.data["pools"] is None and made.data["filter_calls"] == 40
    assert any("40 filter calls" in note for note in made.notes)


def test_tiny_config_lists_its_departures_and_the_full_one_none():
    tiny = {d.setting: d for d in departures(_config("taiscore_tiny.yaml"))}
    scoring = tiny["roles.judge.sampling.scoring"]
    assert scoring.paper == "sampled" and scoring.here == "expected"
    assert {"roles.actor.model", "roles.judge.model", "data.pool_size", "grpo.num_generations",
            "roles.critic.template", "roles.critic.sampling.max_tokens", "roles.judge.sampling.output"} <= set(tiny)
    assert tiny["roles.judge.sampling.output"].here == "schema" and tiny["roles.judge.sampling.output"].settable
    assert all(d.why for d in tiny.values())
    assert [d.setting for d in departures(_config("taiscore_full.yaml"))] == UNAVOIDABLE
    # Dropping a Table 4 critic from the full config's comparison is a departure.
    full = read_yaml(EXAMPLES / "taiscore_full.yaml")
    full["conditions"] = full["conditions"][:-1]
    assert [d.setting for d in departures(resolve_config(full, "x")[1]) if d.settable] == ["conditions"]


def test_plan_on_the_terminal_names_sizes_and_departures(tmp_path):
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_tiny.yaml")])
    assert result.exit_code == 0, result.output
    assert "pools: [5 ids, 5 ids]" in result.stdout and "roles.judge.sampling.scoring: paper 'sampled'" in result.stdout
    assert "llamacpp, trained" in result.stdout  # actor_engine, critic_engine: llamacpp


def test_plan_says_what_data_to_bring_and_refuses_broken_data_or_no_paper(tmp_path):
    def coevo_plan(config: Path, *args: str) -> subprocess.CompletedProcess:  # through main(): errors are one line
        return subprocess.run([sys.executable, "-m", "coevo.cli", "plan", str(config), *args],
                              capture_output=True, text=True, timeout=120)

    result = coevo_plan(EXAMPLES / "taiscore_full.yaml")   # the queries the user brings are not here
    assert result.returncode == 0 and "'my_writing_prompts.jsonl' is not on this machine" in result.stdout
    assert "--set data.source=FILE" in result.stdout and "departures from the paper (1)" in result.stdout
    assert result.stdout.count("[no coevo setting changes this yet]") == 1
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"prompt": "Write."}\n{not json\n', encoding="utf-8")
    result = coevo_plan(EXAMPLES / "taiscore_full.yaml", "--set", f"data.source={broken}")
    assert result.returncode == 2 and "broken.jsonl" in result.stderr and "Traceback" not in result.stderr
    result = coevo_plan(EXAMPLES / "refine.yaml")  # controls is Table 3b's (its own paper module); refine is none
    assert result.returncode == 2 and "reproduces no paper" in result.stderr
