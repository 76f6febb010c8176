"""The metric registry (coevo/eval/metric_defs.py): every number a run shows is defined, carries
its n, and an interval only from enough items."""

from __future__ import annotations

import pytest

from coevo.eval.metric_defs import MIN_ITEMS, describe, estimate_of, estimate_text, latest_estimates
from coevo.view.plots import GROUPS


@pytest.mark.parametrize("name", ["gold_score", "win_rate_vs_round0", "position_consistency_vs_round0",
                                  "refine_delta", "refine_S_y1_after_dpo", "constraint_pass_rate", "pass_at_1",
                                  "detection_rate", "factscore_precision", "reward_mean", "test_mean",
                                  "audit_reward_fooled_rate", "actor_weight_delta", "grpo_clipped_ratio"])
def test_the_metrics_runs_log_are_defined(name):
    definition = describe(name)
    assert definition.definition != "(no definition registered)" and definition.title != name.replace("_", " ")


def test_rates_live_on_zero_to_one_and_scores_on_their_scale():
    assert (describe("win_rate_vs_round0").low, describe("win_rate_vs_round0").high) == (0.0, 1.0)
    assert describe("win_rate_vs_round0").axis_label == "share of pairs (0–1)"
    assert describe("gold_score").axis_label == "points (1–10)"
    assert describe("audit_pairwise_position_consistency").title == "Pairwise judge position consistency"


def test_an_unknown_metric_still_gets_a_readable_title():
    assert describe("my_new_metric").title == "my new metric"


def test_fewer_than_five_items_are_too_few_to_tell_whatever_interval_was_logged():
    assert MIN_ITEMS == 5
    assert estimate_text(0.516, 0.1, 0.911, 2) == "0.516 (n=2: too few to tell)"
    assert estimate_text(0.55, 0.398, 0.693, 40) == "0.550 [0.398, 0.693] (n=40)"
    assert estimate_text(None) == "—" and estimate_text(1.0) == "1.000"


def test_n_is_found_under_the_names_older_metrics_use_and_a_rate_gets_a_wilson_interval():
    values = {"position_consistency_vs_round0": 0.5, "win_rate_vs_round0_n": 20.0,
              "constraint_pass_rate": 0.4, "constraint_pass_rate_lo": 0.2, "constraint_pass_rate_hi": 0.6,
              "constraint_count": 20.0, "detection_rate": 0.6, "proposals": 128.0}
    consistency = estimate_of(values, "position_consistency_vs_round0")
    assert consistency.n == 20 and 0.29 < consistency.low < 0.31 and 0.69 < consistency.high < 0.71
    assert estimate_of(values, "constraint_pass_rate").text() == "0.400 [0.200, 0.600] (n=20)"
    assert estimate_of(values, "detection_rate").n == 128


def test_latest_estimates_read_the_last_round_with_its_own_n():
    metrics = [{"stage": "s", "round": r, "name": name, "value": value}
               for r, values in ((0, {"gold_score": 5.0, "gold_score_n": 3.0}),
                                 (1, {"gold_score": 6.0, "gold_score_n": 8.0, "gold_score_lo": 5.0,
                                      "gold_score_hi": 7.0}))
               for name, value in values.items()]
    assert latest_estimates(metrics, ["gold_score", "absent"])["gold_score"].text() == "6.000 [5.000, 7.000] (n=8)"


def test_every_plotted_group_pattern_has_its_headline_metrics_defined():
    # The run page's "Scores" group is what a reader looks at first: none of it undefined.
    import re

    scores = dict(GROUPS)["Scores"]
    for name in ("gold_score", "win_rate_vs_round0", "pass_at_1", "constraint_pass_rate", "diag_gold"):
        assert re.match(scores, name) and describe(name).estimate


def test_coevo_metrics_prints_definitions_and_console_tables_explain_their_metrics(capsys):
    from typer.testing import CliRunner

    from coevo.cli import app
    from coevo.commands.console import print_table

    result = CliRunner().invoke(app, ["metrics", "gold_score", "nonsense_metric"])
    assert result.exit_code == 0, result.output
    assert "Gold-rubric score" in result.output and "points (1–10)" in result.output
    assert "not a registered metric" in result.output
    capsys.readouterr()
    print_table({"columns": ["metric", "round 1"], "rows": [{"metric": "win_rate_vs_round0", "round 1": 0.5}]},
                title="t")
    assert "win_rate_vs_round0: Share of held-out pairs" in capsys.readouterr().out
