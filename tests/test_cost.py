"""What a run cost, counted: calls, tokens, seconds, cache hits and dollars per stage and
role; each training stage's steps, seconds, memory and tokens (coevo/plan/cost.py)."""

import json

import pytest

from coevo.plan.cost import call_costs, run_cost, training_costs
from coevo.llm.base import ModelError, user
from coevo.llm.cache import CachedModel
from coevo.llm.call_tags import tagged
from coevo.llm.pricing import Price
from coevo.llm.specs import clear_loaded, load_model
from coevo.rundir.store import RunStore
from coevo.train.common import TrainResult
from coevo.core.types import Completion, Sampling


class CountingModel:
    """Answers every prompt with a fixed text, reporting 10 prompt and 4 completion tokens."""

    model_id = "counting"

    def __init__(self, price=None):
        self.asked = 0
        if price is not None:
            self.price = price

    def generate(self, conversations, sampling, n=1):
        self.asked += len(conversations) * n
        return [[Completion(text="ok", prompt_tokens=10, completion_tokens=4) for _ in range(n)]
                for _ in conversations]


def test_a_roles_price_is_hung_on_its_model_and_never_reaches_the_backend(tmp_path):
    replay = tmp_path / "r.jsonl"
    replay.write_text(json.dumps({"completion": "ok"}) + "\n", encoding="utf-8")
    clear_loaded()
    model = load_model(f"replay:{replay}", price={"input": 0.15, "output": 0.6})
    assert model.price == Price(input=0.15, output=0.6)
    other = load_model(f"replay:{replay}", price=[1, 2])
    assert other.price == Price(input=1, output=2) and model.price.input == 0.15  # one shared model, two prices
    assert load_model(f"replay:{replay}").generate([user("x")], Sampling())[0][0].text == "ok"
    assert getattr(load_model(f"replay:{replay}"), "price", None) is None
    with pytest.raises(ModelError, match="price .* per million tokens"):
        load_model(f"replay:{replay}", price={"input": -1})
    clear_loaded()


def test_calls_are_counted_per_stage_and_role_with_their_dollars_and_cache_hits(tmp_path):
    store = RunStore(tmp_path / "run")
    model = CachedModel(CountingModel(Price(input=2.0, output=10.0)), store)
    prompts = [user("a"), user("b")]
    with tagged(stage="s1", role="judge"):
        model.generate(prompts, Sampling(max_tokens=8), n=2)  # 4 completions made
        model.generate(prompts, Sampling(max_tokens=8), n=2)  # the same 4, from the cache
    with tagged(stage="s2", role="actor"):
        model.generate([user("c")], Sampling(max_tokens=8))
    assert model.inner.asked == 5
    costs = {(c.stage, c.role): c for c in call_costs(store)}
    judge = costs["s1", "judge"]
    assert (judge.calls, judge.cache_hits, judge.prompt_tokens, judge.completion_tokens) == (4, 4, 40, 16)
    assert judge.dollars == pytest.approx((40 * 2.0 + 16 * 10.0) / 1e6)
    assert costs["s2", "actor"].calls == 1 and costs["s2", "actor"].cache_hits == 0
    assert 0 <= judge.seconds < 5  # a call's time is shared by its completions, not counted per completion
    total = run_cost(store).total
    assert (total["calls"], total["cache_hits"], total["prompt_tokens"]) == (5, 4, 50)
    assert total["dollars"] == pytest.approx((50 * 2.0 + 20 * 10.0) / 1e6)


def test_an_unpriced_run_says_so_rather_than_costing_nothing(tmp_path):
    store = RunStore(tmp_path / "run")
    with tagged(stage="s", role="critic"):
        CachedModel(CountingModel(), store).generate([user("a")], Sampling())
    (cost,) = call_costs(store)
    assert cost.dollars is None and run_cost(store).total["dollars"] is None


def test_training_stages_are_counted_with_the_tokens_trl_logged(tmp_path):
    store = RunStore(tmp_path / "run")
    store.finish_step("evaluation_done")  # not a training stage: left out
    result = TrainResult(checkpoint="c", steps=3, seconds=12.5, seconds_per_step=4.2, peak_rss_mb=900.0, kind="grpo",
                         history=[{"loss": 0.1, "num_tokens": 300.0}, {"loss": 0.2, "num_tokens": 640.0},
                                  {"train_runtime": 12.5}])
    store.finish_step("coevolution/round1/grpo", result.model_dump(mode="json"))
    (stage,) = training_costs(store)
    assert (stage.stage, stage.kind, stage.steps, stage.seconds, stage.tokens) == (
        "coevolution/round1/grpo", "grpo", 3, 12.5, 640)
    assert run_cost(store).total["training_steps"] == 3


def test_a_run_summary_and_its_page_carry_the_cost(tmp_path):
    from coevo.run.runner import run_experiment
    from coevo.view.runs_display import run_header_lines
    from coevo.view.context import RunRef
    from coevo.view.run_page import run_page_context

    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(rule) + "\n" for rule in [
        {"match": "Your Critique:", "completion": "Add a concrete image."},
        {"match": "Revised Response:", "completion": "Rain taps the tin roof."},
        {"completion": "Rain falls."}]), encoding="utf-8")
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about rain {i}."}) + "\n" for i in range(3)))
    spec = f"replay:{replay}"
    config = {"algorithm": "refine", "data": {"source": str(data)}, "judges": ["outcome_gain"],
              "roles": {"actor": {"model": spec}, "critic": {"model": spec},
                        "judge": {"model": spec, "options": {"price": {"input": 1.0, "output": 1.0}}}}}
    summary = run_experiment(None, tmp_path / "run", data=config)
    cost = summary["cost"]
    by_role = {row["role"]: row for row in cost["calls"]}
    # 3 prompts: y0, a critique and a revision each; outcome gain scores y0 and y1 apart.
    assert by_role["actor"]["calls"] == 6 and by_role["critic"]["calls"] == 3
    judged = [row for role, row in by_role.items() if role.startswith("judge")]
    assert sum(row["calls"] for row in judged) == 6
    assert cost["total"]["calls"] == sum(row["calls"] for row in cost["calls"]) == 15
    assert all(row["dollars"] is not None for row in judged)  # replay reports 0 tokens: $0
    assert by_role["actor"]["dollars"] is None  # no price on the actor
    page = run_page_context(RunStore(tmp_path / "run", read_only=True), RunRef(id="run", path=tmp_path / "run"))
    assert page["run_cost"]["total"]["calls"] == 15
    assert any(line.startswith("cost: 15 completions") for line in run_header_lines(tmp_path / "run"))
    again = run_experiment(None, tmp_path / "run2", data=config)  # a new folder: nothing cached there
    assert again["cost"]["total"]["cache_hits"] == 0
