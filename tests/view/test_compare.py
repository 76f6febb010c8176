"""Runs side by side, without a browser: `coevo.view.comparison` (the tables), the compare
page (`/compare`), the runs list's checkboxes and `coevo runs --compare`.

Two real replay RLAC runs two settings apart (replay_runs.build_rlac_pair), and two runs
made through the store API where the exact values, intervals and n are known.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from replay_runs import RLAC_VARIANT, build_rlac_pair
from typer.testing import CliRunner

from coevo.eval.metric_defs import describe, estimate_text
from coevo.rundir.store import RunStore
from coevo.view.app import create_app
from coevo.view.comparison import compare_runs


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> dict[str, Path]:
    """{"rlac-a", "rlac-b": run folder}: build_rlac's run and one with RLAC_VARIANT's settings."""
    return build_rlac_pair(tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="module")
def client(pair) -> TestClient:
    return TestClient(create_app([pair["rlac-a"].parent]))


def _made_run(run_dir: Path, config: dict, metrics: list[tuple[str, int | None, dict]]) -> Path:
    store = RunStore(run_dir)
    store.set_meta("algorithm", config.get("algorithm", "taiscore"))
    store.set_meta("config", config)
    store.set_meta("started", time.time())
    for stage, round_, values in metrics:
        store.log_metrics(stage, values, round=round_)
    store.close()
    return run_dir


@pytest.fixture
def made(tmp_path) -> dict[str, Path]:
    """Two runs of nested configs: `rounds.max` and `only_in_a` differ, `roles.actor.model` (and a
    list) do not. Both log win_rate_vs_round0 over rounds 0-1 with its interval and n; only
    run a logs gold_score; both log a bookkeeping count."""
    a = _made_run(tmp_path / "runs" / "a", {"algorithm": "taiscore", "rounds": {"max": 2, "conditions": ["x", "y"]},
                                            "roles": {"actor": {"model": "smollm2"}}, "only_in_a": True},
                  [("eval", 0, {"win_rate_vs_round0": 0.5, "eval_prompts": 12}),
                   ("eval", 1, {"win_rate_vs_round0": 0.75, "win_rate_vs_round0_lo": 0.47,
                                "win_rate_vs_round0_hi": 0.91, "win_rate_vs_round0_n": 12, "eval_prompts": 12,
                                "gold_score": 6.5})])
    b = _made_run(tmp_path / "runs" / "b", {"algorithm": "taiscore", "rounds": {"max": 3, "conditions": ["x", "y"]},
                                            "roles": {"actor": {"model": "smollm2"}}},
                  [("eval", 0, {"win_rate_vs_round0": 0.5, "eval_prompts": 3}),
                   ("eval", 1, {"win_rate_vs_round0": 0.6, "win_rate_vs_round0_lo": 0.2,
                                "win_rate_vs_round0_hi": 0.9, "win_rate_vs_round0_n": 3, "eval_prompts": 3})])
    return {"a": a, "b": b}


# -- the tables ----------------------------------------------------------------------------

def test_config_table_marks_exactly_the_settings_that_differ(made):
    comparison = compare_runs([("a", made["a"]), ("b", made["b"])])
    differing = {row.key: row.values for row in comparison.differing}
    assert differing == {"rounds.max": ["2", "3"], "only_in_a": ["true", None]}  # None: b has no such key
    alike = {row.key: row.values for row in comparison.config if not row.differs}
    assert alike["roles.actor.model"] == ["smollm2", "smollm2"] and alike["rounds.conditions"] == ['["x", "y"]'] * 2


def test_metrics_are_the_last_rounds_with_interval_and_n_and_only_those_both_logged(made):
    comparison = compare_runs([("a", made["a"]), ("b", made["b"])])
    rows = {(row.stage, row.name): row for row in comparison.metrics}
    # gold_score: run a only; eval_prompts: a count; the interval's parts: read into the cell.
    assert set(rows) == {("eval", "win_rate_vs_round0")}
    row = rows[("eval", "win_rate_vs_round0")]
    a, b = row.cells
    assert (a.value, a.low, a.high, a.n, a.round) == (0.75, 0.47, 0.91, 12, 1)
    assert a.text == estimate_text(0.75, 0.47, 0.91, 12) == "0.750 [0.470, 0.910] (n=12)"
    assert b.text == "0.600 (n=3: too few to tell)"
    meaning = describe("win_rate_vs_round0")
    assert (row.title, row.definition) == (meaning.title, meaning.definition)
    [curve] = comparison.curves
    assert curve.name == "win_rate_vs_round0"
    assert {label: [p[:2] for p in points] for label, points in curve.stages["eval"].items()} == {
        "a": [(0, 0.5), (1, 0.75)], "b": [(0, 0.5), (1, 0.6)]}


def test_replay_runs_differ_in_the_two_settings_changed(pair):
    comparison = compare_runs([("rlac-a", pair["rlac-a"]), ("rlac-b", pair["rlac-b"])])
    assert {row.key: row.values for row in comparison.differing} == {
        key: ["2", str(value)] for key, value in RLAC_VARIANT.items()}
    detection = next(row for row in comparison.metrics if row.name == "detection_rate")
    assert [cell.n for cell in detection.cells] == [4, 6]  # k=3 outputs: more proposals judged
    assert all(cell.low is not None and cell.high is not None for cell in detection.cells)


# -- the page ------------------------------------------------------------------------------

def test_compare_page_highlights_differing_settings_and_overlays_curves(client):
    page = client.get("/compare", params=[("run", "rlac-a"), ("run", "rlac-b")])
    assert page.status_code == 200
    html = page.text
    differing = re.findall(r'<tr class="differs" data-key="([^"]+)">\s*<td class="name">'
                           r'<span class="diff-mark"[^>]*>≠', html)
    assert sorted(differing) == sorted(RLAC_VARIANT)
    assert 'data-key="algorithm"' in html and html.count('<tr class="same"') > 10
    # The metric's definition on hover, its title in words, its raw name small.
    definition = describe("detection_rate").definition.replace("'", "&#39;")
    assert (f'title="{definition}' in html and f'{describe("detection_rate").title} <small class="muted">detection_rate'
            in html)
    assert "0.167 [0.030, 0.564] (n=6)" in html
    # One overlaid figure per metric: a line per run, with the rounds on x.
    figure = re.search(r'id="plot-compare-detection-rate" data-figure="([^"]+)"', html).group(1)
    traces = json.loads(figure.replace("&#34;", '"').replace("&quot;", '"').replace("&#39;", "'"))["data"]
    assert [t["name"] for t in traces] == ["rlac-a", "rlac-b"] and [t["x"] for t in traces] == [[1, 2], [1, 2]]
    assert "error_y" in traces[1]  # its 95 % interval as bars
    assert '<script src="/static/plotly.min.js">' in html


def test_only_differing_link_keeps_just_those_rows(client):
    page = client.get("/compare", params=[("run", "rlac-a"), ("run", "rlac-b")]).text
    link = re.search(r'id="toggle-differing" href="([^"]+)"', page).group(1).replace("&amp;", "&")
    only = client.get(link).text
    assert sorted(re.findall(r'<tr class="\w+" data-key="([^"]+)"', only)) == sorted(RLAC_VARIANT)
    back = re.search(r'id="toggle-differing" href="([^"]+)"', only).group(1).replace("&amp;", "&")
    assert client.get(back).text.count('<tr class="same"') > 10


def test_unknown_run_is_a_404_page_naming_it_and_one_run_asks_for_two(client):
    missing = client.get("/compare?run=rlac-a&run=no-such-run")
    assert missing.status_code == 404 and "No run &#39;no-such-run&#39; here" in missing.text
    assert "<h1>Compare runs</h1>" in missing.text  # a page, not a bare JSON error
    one = client.get("/compare?run=rlac-a&run=rlac-a")  # a repeat is one run
    assert one.status_code == 200 and "Pick at least two runs" in one.text
    assert "Pick at least two runs" in client.get("/compare").text


def test_runs_list_has_a_checkbox_per_run_and_a_compare_form(client):
    html = client.get("/").text
    assert re.search(r'<form id="compare-form"[^>]*action="/compare" method="get">', html)
    picks = re.findall(r'<input type="checkbox" class="compare-pick" name="run" value="([^"]+)" '
                       r'form="compare-form"', html)
    assert sorted(picks) == ["rlac-a", "rlac-b"]
    assert 'id="compare-button">Compare selected</button>' in html


# -- the command line ----------------------------------------------------------------------

def test_cli_compare_prints_the_differences_and_the_metrics(pair, monkeypatch):
    from coevo.cli import app

    monkeypatch.chdir(pair["rlac-a"].parent.parent)  # names resolve under runs/, as `coevo runs` lists them
    monkeypatch.setenv("COLUMNS", "200")
    result = CliRunner().invoke(app, ["runs", "--compare", "rlac-a", str(pair["rlac-b"])])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "config: 2 of" in result.output
    [k] = [line for line in lines if re.search(r"│ k\s+│", line)]
    assert re.search(r"│ k\s+│ 2\s+│ 3\s+│", k)
    assert not [line for line in lines if re.search(r"│ algorithm\s+│", line)]  # alike: not shown by default
    # (the table's row; the definitions printed under it name the metric too)
    [detection] = [line for line in lines if "detection_rate" in line and "│" in line]
    assert "0.250 (n=4: too few to tell)" in detection and "0.167 [0.030, 0.564] (n=6)" in detection
    every = CliRunner().invoke(app, ["runs", "--compare", "rlac-a", "rlac-b", "--all"]).output
    assert re.search(r"│ algorithm\s+│ rlac\s+│ rlac\s+│", every)  # alike: shown with --all
    assert re.search(r"│ ≠ k\s+│ 2\s+│ 3", every)


def test_cli_compare_json_is_the_pages_comparison(pair, monkeypatch):
    from coevo.cli import app

    monkeypatch.chdir(pair["rlac-a"].parent.parent)
    result = CliRunner().invoke(app, ["runs", "--compare", "rlac-a", "rlac-b", "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert printed == json.loads(compare_runs([("rlac-a", Path("runs/rlac-a")),
                                               ("rlac-b", Path("runs/rlac-b"))]).model_dump_json())
    assert {row["key"] for row in printed["config"] if row["differs"]} == set(RLAC_VARIANT)


def test_cli_compare_refuses_an_unknown_run_and_a_single_one(pair, monkeypatch):
    from coevo.cli import app

    monkeypatch.chdir(pair["rlac-a"].parent.parent)
    unknown = CliRunner().invoke(app, ["runs", "--compare", "rlac-a", "nope"])
    assert isinstance(unknown.exception, FileNotFoundError) and "no run 'nope'" in str(unknown.exception)
    single = CliRunner().invoke(app, ["runs", "--compare", "rlac-a"])
    assert single.exit_code == 2 and "at least two runs" in single.output


def test_all_without_compare_is_refused_with_the_fix(tmp_path):
    from coevo.cli import app

    result = CliRunner().invoke(app, ["runs", str(tmp_path), "--all"])
    assert result.exit_code == 2 and "add --compare" in result.output


# -- units, scales, differences, training curves -------------------------------------------

def _figures(page: str) -> dict[str, dict]:
    """The page's plotly figures by element id."""
    import html as html_lib

    return {fid: json.loads(html_lib.unescape(data))
            for fid, data in re.findall(r'id="(plot-compare-[^"]+)" data-figure="([^"]+)"', page)}


def _y_axes(figure: dict) -> list[dict]:
    return [axis for key, axis in sorted(figure["layout"].items()) if key.startswith("yaxis")]


def test_every_panel_names_its_unit_and_rates_span_0_to_1(client):
    figures = _figures(client.get("/compare", params=[("run", "rlac-a"), ("run", "rlac-b")]).text)
    curves = {fid: f for fid, f in figures.items() if not fid.startswith("plot-compare-training-")}
    assert "plot-compare-detection-rate" in curves
    for fid, figure in figures.items():
        for axis in _y_axes(figure):
            assert axis.get("title", {}).get("text"), (fid, axis)  # the unit (and scale) on every y axis
    detection = describe("detection_rate")
    [axis] = _y_axes(curves["plot-compare-detection-rate"])
    assert axis["title"]["text"] == detection.axis_label == "share of proposals (0–1)"
    low, high = axis["range"]
    assert low <= 0 and high >= 1 and high - low < 1.2  # the whole of 0–1, not a zoom on the values
    # x: what the points are over, under the bottom panel
    assert curves["plot-compare-detection-rate"]["layout"]["xaxis"]["title"]["text"]


def _scored_pair(tmp_path: Path) -> dict[str, Path]:
    """Two runs whose gold_score and win rate are known, both from 20 prompts (enough for an
    interval), and a third from 3 (too few)."""
    def run(name, gold, win, n):
        return _made_run(tmp_path / "runs" / name, {"algorithm": "taiscore", "rounds": 2},
                         [("eval", r, {"gold_score": g, "gold_score_lo": g - 0.5, "gold_score_hi": g + 0.4,
                                       "eval_prompts": n, "win_rate_vs_round0": w, "win_rate_vs_round0_n": n})
                          for r, (g, w) in enumerate(zip(gold, win))])
    return {"a": run("a", (5.0, 5.5), (0.5, 0.6), 20), "b": run("b", (5.0, 6.5), (0.5, 0.75), 20),
            "c": run("c", (5.0, 7.0), (0.5, 0.9), 3)}


def test_difference_column_is_b_minus_a_with_n_and_an_interval_only_from_5_items(tmp_path):
    from coevo.eval.stats import wilson_interval

    runs = _scored_pair(tmp_path)
    comparison = compare_runs([(name, path) for name, path in runs.items()])
    rows = {row.name: row for row in comparison.metrics}
    gold_b, gold_c = rows["gold_score"].differences
    # MOVER by hand: d = 6.5 - 5.5; low = d - sqrt((6.5 - 6.0)^2 + (5.9 - 5.5)^2); high = d + sqrt(0.4^2 + 0.5^2)
    assert gold_b.value == pytest.approx(1.0) and gold_b.n == (20, 20)
    assert gold_b.low == pytest.approx(1.0 - (0.5 ** 2 + 0.4 ** 2) ** 0.5)
    assert gold_b.high == pytest.approx(1.0 + (0.4 ** 2 + 0.5 ** 2) ** 0.5)
    assert gold_b.text == f"+1.000 [{gold_b.low:+.3f}, {gold_b.high:+.3f}] (n=20 vs 20)"
    assert gold_c.low is None and gold_c.text == "+1.500 (n=20 vs 3: too few to tell)"
    # A rate's interval is its Wilson one (n logged, no bounds): the difference combines them.
    win_b = rows["win_rate_vs_round0"].differences[0]
    _, la, ha = wilson_interval(0.6 * 20, 20)
    _, lb, hb = wilson_interval(0.75 * 20, 20)
    assert win_b.low == pytest.approx(0.15 - ((0.75 - lb) ** 2 + (ha - 0.6) ** 2) ** 0.5)
    assert win_b.high == pytest.approx(0.15 + ((hb - 0.75) ** 2 + (0.6 - la) ** 2) ** 0.5)

    page = TestClient(create_app([runs["a"].parent])).get("/compare", params=[("run", n) for n in runs]).text
    assert '<th class="difference" title="b\'s value minus a\'s">b − a</th>' in page
    assert "c − a</th>" in page and gold_b.text in page and gold_c.text in page
    assert 'class="l unit">points (1–10)</td>' in page  # the unit and scale beside each metric
    # A score is drawn on its whole scale (1–10), a rate on 0–1, in the compare figures too.
    figures = _figures(page)
    [gold_axis] = _y_axes(figures["plot-compare-gold-score"])
    assert gold_axis["range"][0] <= 1 and gold_axis["range"][1] >= 10
    assert gold_axis["title"]["text"] == "points (1–10)"


def test_training_curves_of_the_stages_both_runs_trained_are_overlaid(pair, client):
    comparison = compare_runs([("rlac-a", pair["rlac-a"]), ("rlac-b", pair["rlac-b"])])
    stages = {curve.stage for curve in comparison.training}
    assert stages == {f"rlac/round{r}/{role}" for r in (1, 2) for role in ("generator", "critic")}
    keys = {curve.key for curve in comparison.training}
    assert keys == {"loss", "grad_norm", "rewards/margins", "rewards/accuracies"}  # a constant lr is no curve
    loss = next(c for c in comparison.training if c.stage == "rlac/round1/generator" and c.key == "loss")
    assert sorted(loss.runs) == ["rlac-a", "rlac-b"] and [s for s, _ in loss.runs["rlac-a"]] == [1, 2, 3, 4]

    page = client.get("/compare", params=[("run", "rlac-a"), ("run", "rlac-b")]).text
    figure = _figures(page)["plot-compare-training-rlac-round1-generator"]
    assert {t["name"] for t in figure["data"]} == {"rlac-a", "rlac-b"}
    titles = [axis["title"]["text"] for axis in _y_axes(figure)]
    assert titles == ["loss", "L2 norm", "β × log ratio", "share of pairs (0–1)"]
    # The same run, the same colour in every figure.
    colours = {t["name"]: t["line"]["color"] for f in _figures(page).values() for t in f["data"]}
    curve_colours = {t["name"]: t["line"]["color"] for t in _figures(page)["plot-compare-detection-rate"]["data"]}
    assert colours == curve_colours
