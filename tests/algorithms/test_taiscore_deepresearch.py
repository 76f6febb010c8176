"""TAIScore's deep-research domain: DeepResearch-Gym's judges and metrics on replay models, the
OpenScholar grader in the data path, the round evaluation through the loop (fake trainers), and
`coevo plan` of the deep-research configs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from coevo.algorithms.taiscore import TaiScoreConfig, run_taiscore
from coevo.algorithms.taiscore.data import query_ratings
from coevo.algorithms.taiscore.paper import departures
from coevo.cli import app
from coevo.settings.config import apply_overrides, read_yaml, validate
from coevo.eval.deepresearch_gym import over_sets, set_metrics
from coevo.llm.replay import ReplayModel
from coevo.roles.deepresearch import QUALITY_CRITERIA, KeyPointJudge, ReportQualityJudge, parse_key_points
from coevo.run.runner import resolve_config, summary_dict
from coevo.rundir.store import RunStore
from coevo.core.types import Sample, Sampling

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def replay():
    """A replay model from (match, completion) rules that keeps each call's prompt and schema."""
    from tests.roles.conftest import CountingReplay

    return lambda rules: CountingReplay(rules)
SAMPLING = Sampling(temperature=0.2, top_p=1.0)


def _points_answer(*verdicts):
    return json.dumps({"key_points": [{"point": k, "verdict": v, "reason": "r"}
                                      for k, v in enumerate(verdicts, start=1)]})


def _quality_answer(score):
    return json.dumps({c: {"score": score, "reason": "r"} for c in QUALITY_CRITERIA})


def _gym_sample(points=3):
    return Sample(id="g", prompt="Write a report.", meta={"query": "Why do bees die?",
                                                          "key_points": [f"point {k}" for k in range(points)]})


def test_kpr_and_kpc_are_percentages_of_the_key_points():
    parsed, verdicts = parse_key_points(_points_answer("supported", "contradicted", "not_mentioned", "supported"), 4)
    assert parsed.valid and verdicts == ["supported", "contradicted", "not_mentioned", "supported"]
    assert parsed.scores == {"kpr": 50.0, "kpc": 25.0}


def test_key_point_answers_are_read_leniently_and_an_incomplete_one_is_unreadable():
    loose = 'Here you go:\n```json\n{"key_points": {"1": "Supported", "2": {"verdict": "not mentioned"}}}\n```'
    parsed, verdicts = parse_key_points(loose, 2)
    assert parsed.valid and verdicts == ["supported", "not_mentioned"] and parsed.scores["kpr"] == 50.0
    missing, _ = parse_key_points(_points_answer("supported"), 2)
    assert not missing.valid and "key point 2" in missing.error
    assert not parse_key_points("no json", 1)[0].valid


def test_the_judges_ask_once_per_report_under_a_schema_and_score_quality_on_0_to_100(replay):
    model = replay([{"match": "reference key points", "completion": _points_answer("supported", "supported",
                                                                                   "contradicted")},
                    {"match": "Score the report below", "completion": _quality_answer(7)}])
    sample = _gym_sample()
    points = KeyPointJudge(model, SAMPLING).judge([sample], ["REPORT"])[0]
    quality = ReportQualityJudge(model, SAMPLING).judge([sample], ["REPORT"])[0]
    assert points.scores == {"kpr": pytest.approx(200 / 3), "kpc": pytest.approx(100 / 3)}
    assert points.score == pytest.approx(200 / 3) and points.verdicts == ["supported", "supported", "contradicted"]
    assert quality.score == pytest.approx((7 - 1) / 9 * 100)
    asked = model.prompts()
    assert "1. point 0\n2. point 1\n3. point 2" in asked[0] and "Why do bees die?" in asked[0]
    assert all(schema is not None for schema in model.schemas)
    with pytest.raises(ValueError, match="no key points"):
        KeyPointJudge(model, SAMPLING).judge([Sample(id="x", prompt="p")], ["r"])


def test_metrics_over_reports_and_over_output_sets():
    from coevo.core.types import Judgment

    def judged(kpr, kpc, quality, valid=True):
        return {"key_points": Judgment(judge="key_points", scores={"kpr": kpr, "kpc": kpc}, score=kpr, valid=valid),
                "report_quality": Judgment(judge="report_quality", score=quality)}

    one = set_metrics([judged(50.0, 0.0, 80.0), judged(100.0, 50.0, 60.0), judged(0.0, 0.0, 70.0, valid=False)])
    assert one["kpr"] == 75.0 and one["kpc"] == 25.0 and one["kpr_n"] == 2.0 and one["report_quality_n"] == 3.0
    assert one["report_quality"] == 70.0 and one["kpr_lo"] < 75.0 < one["kpr_hi"]
    # Two reports' t-interval runs past the scale: it is held to 0-100, as no KPR can be outside.
    assert one["kpr_lo"] == 0.0 and one["kpr_hi"] == 100.0
    sets = over_sets([{"kpr": 70.0, "kpr_n": 4.0, "kpc": 1.0, "report_quality": 80.0},
                      {"kpr": 74.0, "kpr_n": 4.0, "kpc": 1.0, "report_quality": None}])
    assert sets["kpr"] == 72.0 and sets["kpr_sets"] == 2.0 and math.isclose(sets["kpr_set_sd"], 2 ** 1.5)
    assert sets["report_quality_sets"] == 1.0 and sets["kpr_n"] == 4.0


def test_openscholar_queries_are_graded_with_the_openscholar_prompt(tmp_path, replay):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps({"id": 1, "intent": "Compare", "query": "How do base and prime editing compare "
                                "in precision?"}) + "\n", encoding="utf-8")
    config = validate(TaiScoreConfig, {"algorithm": "taiscore", "data": {"source": f"openscholar:{path}",
                                                                          "filter_queries": True}})
    from coevo.tasks.loaders import load_samples

    model = replay([{"match": "research query", "completion": json.dumps(
        {"results": [{"id": "x", "score": 4, "decision": "GRADE", "rationale": "r"}]})}])
    assert query_ratings(config, load_samples(config.data.source), model) == {"openscholar-1": 4}
    assert "intent: Compare" in model.prompts()[0]


class GymFake(ReplayModel):
    """Every role of the loop on one replay model, the DeepResearch-Gym judges included."""

    def __init__(self, spec):
        from tests.algorithms.test_taiscore_logic import RULES

        # DeepResearch-Gym's own protocol (the default): each row's key points labelled in
        # order supported / omitted / contradicted, each quality criterion rated 10.
        gym = Path(__file__).resolve().parents[2] / "coevo/tasks/data/deepresearch_gym_tiny.jsonl"
        labels = ("supported", "omitted", "contradicted")
        points = [{"match": f"Key point:\n{point['point_content'] if isinstance(point, dict) else point}",
                   "completion": json.dumps({"label": labels[k % 3], "justification": "j"})}
                  for line in gym.read_text(encoding="utf-8").splitlines() if line.strip()
                  for k, point in enumerate(json.loads(line)["key_points"])]
        super().__init__(rules=[*points, {"match": "Criterion: ", "completion": json.dumps(
                                    {"rating": 10, "justification": "j"})}, *RULES])
        self.model_id, self.spec = f"fake:{spec}", spec


def test_the_round_evaluation_reports_kpr_kpc_and_quality_from_the_evaluator_judge(tmp_path):
    from tests.algorithms.test_taiscore_logic import FakeTrainers

    backend = FakeTrainers().backend()
    loaded = []
    backend.load_trainable = GymFake
    backend.load_frozen = lambda spec, **options: loaded.append(spec) or GymFake(spec)
    config = validate(TaiScoreConfig, {
        "algorithm": "taiscore", "data": {"source": "openscholar:bundled:openscholar_tiny.jsonl", "pool_size": 4},
        "rounds": 1, "pairs_per_round": 2, "grpo": {"num_generations": 2},
        "evaluation": {"data": {"source": "deepresearch_gym:bundled:deepresearch_gym_tiny.jsonl"},
                       "judge": {"model": "openai:gpt-4.1-mini@http://127.0.0.1:9/v1"}, "output_sets": 2}})
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(config, store, backend))
    base = summary["baseline"]
    assert base["kpr"] == pytest.approx(100 / 3) and base["kpc"] == pytest.approx(100 / 3)
    assert base["report_quality"] == 100.0 and base["kpr_sets"] == 2.0 and base["kpr_n"] == 4.0
    assert "openai:gpt-4.1-mini@http://127.0.0.1:9/v1" in loaded
    assert summary["data"]["rules_removed"] == {"unsupported_intent": 2, "too_short": 1, "not_english": 1}
    judged = store.rollouts("coevolution/round0/eval")[0].judgments
    assert judged["key_points"].verdicts == ["supported", "not_mentioned", "contradicted"]
    assert any(row["metric"] == "kpr" for row in summary["table"]["rows"])


def _config(name, *overrides):
    return resolve_config(apply_overrides(read_yaml(EXAMPLES / name), list(overrides)), name)[1]


def test_plan_of_the_full_deep_research_config_shows_rules_filter_pools_and_evaluator(tmp_path):
    path = tmp_path / "openscholar.jsonl"
    path.write_text((Path(__file__).resolve().parents[2] / "coevo/tasks/data/openscholar_tiny.jsonl").read_text(),
                    encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_deepresearch_full.yaml"), "--set",
                                      f"data.source=openscholar:{path}", "--json"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    data = made["data"]
    assert data["rules_removed"] == {"rows": 12, "unsupported_intent": 2, "too_short": 1, "not_english": 1,
                                     "kept": 8}
    assert data["filter_calls"] == 8 and data["filter_template"] == "openscholar_query_filter"
    assert data["evaluator"]["kind"] == "deepresearch_gym" and "gpt-4.1-mini" in data["evaluator"]["judge"]
    assert any("OpenScholar's grader" in note for note in made["notes"])
    # The paper as written, but for coevo's own filter prompt and rule thresholds, which no setting
    # changes (App. C gives DR-Tulu's prompt and the rules, not their text and numbers).
    assert [(d["setting"], d["settable"]) for d in made["departures"]] == [("data.filter_template", False),
                                                                          ("data.rules", False)]
    rows = {row["setting"]: row for row in made["settings"]}
    assert rows["evaluation.evaluator"]["departs"] is False
    assert {"data.source", "evaluation.data.source", "evaluation.judge.model"} <= set(rows)
    # With the quality column the pools are known: 4-5 rated only (App. C), in 3 pools.
    rated = tmp_path / "rated.jsonl"
    rated.write_text("".join(json.dumps({"id": i, "query": f"How does method {i} compare with the others in "
                                         "recent studies?", "quality": 5 - i % 3}) + "\n" for i in range(30)))
    made = json.loads(CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_deepresearch_full.yaml"), "--set",
                                               f"data.source=openscholar:{rated}", "--json"]).stdout)
    assert made["data"]["rated_high"] == 20 and sum(made["data"]["pool_sizes"]) == 30 - 10 + made["data"]["topped_up"]


def test_the_deep_research_rows_and_the_evaluator_row_follow_the_config():
    tiny = {d.setting: d for d in departures(_config("taiscore_deepresearch_tiny.yaml"))}
    assert tiny["evaluation.judge.model"].here == "smollm2" and "evaluation.evaluator" in tiny
    assert "data.source" not in tiny and "evaluation.data.source" not in tiny
    # The writing configs never see the deep-research rows.
    writing = {d.setting: d for d in departures(_config("taiscore_tiny.yaml"))}
    assert not set(writing) & {"evaluation.data.source", "evaluation.judge.model"}
    assert "DeepWriting" in writing["data.source"].paper  # its own domain's row: the bundled prompts depart
    other = {d.setting: d for d in departures(_config("taiscore_deepresearch_full.yaml",
                                                      "evaluation.judge.model=openai:gpt-4o@http://x/v1"))}
    assert {"evaluation.judge.model", "evaluation.evaluator"} <= set(other)


def test_the_tiny_deep_research_config_validates_and_plans():
    config = _config("taiscore_deepresearch_tiny.yaml")
    assert config.evaluation.judge is None and config.data.source.startswith("openscholar:bundled:")
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_deepresearch_tiny.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["data"]
    assert data["pool_sizes"] == [4, 4] and len(data["held_out"]) == 4
    assert data["evaluator"]["rows_with_key_points"] == 4


def test_a_bad_openscholar_file_is_one_line_and_exit_2(tmp_path):
    from tests.test_cli_errors import coevo

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": 1, "text": "no query key"}) + "\n", encoding="utf-8")
    proc = coevo("plan", EXAMPLES / "taiscore_deepresearch_full.yaml", "--set", f"data.source=openscholar:{path}")
    assert proc.returncode == 2 and "no research question" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("protocol, key_point_calls, quality_calls", [
    ("official", 4 * 3, 4 * 6),   # DeepResearch-Gym's scripts: a call per key point (3 a row), per criterion (6)
    ("single_call", 4, 4),        # one call a report for each
])
def test_the_estimate_counts_the_evaluators_calls_per_report(protocol, key_point_calls, quality_calls):
    result = CliRunner().invoke(app, ["plan", str(EXAMPLES / "taiscore_deepresearch_tiny.yaml"), "--json",
                                      "--set", f"evaluation.deepresearch_protocol={protocol}"])
    assert result.exit_code == 0, result.output
    made = json.loads(result.stdout)
    for role, n in (("judge:key_points", key_point_calls), ("judge:report_quality", quality_calls)):
        rows = [c for c in made["estimate"]["calls"] if c["role"] == role]
        # One evaluation per round (round 0 and the config's 2 rounds), each of the 4 keyed reports.
        assert [(c["stage"], c["calls"]) for c in rows] == [(f"coevolution/round{r}/eval", n) for r in range(3)]
    assert made["data"]["evaluator"]["calls_per_output_set"] == key_point_calls + quality_calls


def test_the_official_protocol_is_the_papers_and_the_single_call_variant_departs():
    def rows(*overrides):
        return {d.setting: d for d in departures(_config("taiscore_deepresearch_full.yaml", *overrides))}

    assert "evaluation.deepresearch_protocol" not in rows() and "data.top_up" not in rows()
    assert "data.top_up" in rows("data.top_up=true")  # App. C tops up DeepWriting's pools only
    single = rows("evaluation.deepresearch_protocol=single_call")["evaluation.deepresearch_protocol"]
    assert "71.1" in single.why and "74.0" in single.why


def test_the_deep_research_settings_table_names_deepresearch_gym_not_the_writing_benchmarks():
    from coevo.algorithms.taiscore.paper import PAPER
    from coevo.settings.departures import setting_rows

    found = {row.setting: row for row in setting_rows(_config("taiscore_deepresearch_full.yaml"), PAPER)}
    assert "evaluation.data" not in found  # its paper value is WritingBench / HelloBench: the writing domain's
    assert "DeepResearch-Gym" in str(found["evaluation.data.source"].paper)
    writing = {row.setting for row in setting_rows(_config("taiscore_full.yaml"), PAPER)}
    assert "evaluation.data" in writing and "evaluation.deepresearch_protocol" not in writing
