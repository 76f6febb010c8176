"""RLAC's held-out metric with its n, 95 % interval and per-item outcomes (replay models):
in summary.json, in the run store's per-round metrics, and on the run page."""

import pytest

from coevo.algorithms.rlac import run_rlac
from coevo.algorithms.rlac.records import HeldoutEval
from coevo.eval.stats import t_interval, wilson_interval
from coevo.rundir.store import RunStore
from coevo.view.rlac import verification_figure
from coevo.view.targets import target_section
# The replay generator / critic and the recorded DPO stage of each domain's tests (fixtures by name).
from test_rlac_code import config as code_config, trained  # noqa: F401
from test_rlac_loop import FACT_MODELS, facts_config, fakes  # noqa: F401


def test_cell_and_store_metrics_keep_per_item_out():
    evaluation = HeldoutEval(pass_at_1=0.475, pass_at_1_lo=0.329, pass_at_1_hi=0.625, heldout_n=40,
                             per_item={"a": 1.0, "b": 0.0})
    assert evaluation.cell("pass_at_1") == "0.475 [0.329, 0.625] (n=40)"
    assert HeldoutEval(pass_at_1=0.5).cell("pass_at_1") == 0.5  # no interval: the bare value
    # The store logs one number per name: no per-item dict, the n under a count's name.
    assert evaluation.store_metrics() == {"pass_at_1": 0.475, "pass_at_1_lo": 0.329, "pass_at_1_hi": 0.625,
                                          "heldout_count": 40}


def test_code_interval_reaches_the_store_and_the_run_page(tmp_path, trained):  # noqa: F811
    store = RunStore(tmp_path)
    run_rlac(code_config(data={"train_ids": ["HumanEval/0"], "heldout_ids": ["HumanEval/2", "HumanEval/3"]}), store)
    _, lo, hi = wilson_interval(1, 2)
    logged = {(m["name"], m["round"]): m["value"] for m in store.metrics("generator")}
    assert logged[("pass_at_1_lo", 0)] == pytest.approx(lo) and logged[("pass_at_1_hi", 1)] == pytest.approx(hi)
    assert logged[("heldout_count", 1)] == 2
    assert not {name for name, _ in logged} & {"per_item", "heldout_n"}
    # The target figure: the n in the hover, and no error bar from 2 items (too few to tell, n < 5).
    section = target_section("rlac", "code", store.metrics(), [], {}, {})
    [trace] = [t for t in section["figure"]["figure"]["data"] if t["name"] == "generator" and t["yaxis"] == "y"]
    assert trace["text"][0] == "n = 2, too few to tell (no interval)"
    assert "error_y" not in trace or trace["error_y"]["arrayminus"][0] == 0
    # The proposals page's Fig. 2b: the same interval on each round's point.
    figure = verification_figure(store)["figure"]
    assert all(t["text"][0].startswith("n = 2") for t in figure["data"])


NEWTON = "Isaac Newton was an English mathematician. He was born on the Moon."


def test_facts_precision_has_a_t_interval_over_people(tmp_path, fakes):  # noqa: F811
    fakes["models"]["gen"] = [*FACT_MODELS["gen"], {"match": "biography of Isaac Newton", "completions": [NEWTON]}]
    config = facts_config(**{"data.heldout_ids": ["Marie Curie", "Isaac Newton"]})
    summary = run_rlac(config, RunStore(tmp_path))
    base = summary.baseline
    assert base.heldout_n == 2 and set(base.per_item) == {"bio:marie-curie", "bio:isaac-newton"}
    values = list(base.per_item.values())
    assert base.factscore_precision == pytest.approx(sum(values) / 2)
    _, lo, hi = t_interval(values)  # over two people: wide, and cut to [0, 1]
    assert (base.factscore_precision_lo, base.factscore_precision_hi) == (
        pytest.approx(max(0.0, lo)), pytest.approx(min(1.0, hi)))
    cell = summary.table.rows[0]["factscore_precision"]
    # Two people: the table says too few to tell rather than show a [0, 1]-wide interval.
    assert cell == f"{base.factscore_precision:.3f} (n=2: too few to tell)"
