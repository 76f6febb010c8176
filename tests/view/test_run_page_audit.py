"""The judge audit on the run page, in its warnings and in `coevo report` / `coevo show` (issue 23).

A replay TAIScore run (the loop of tests/algorithms/test_taiscore_logic.py, recording
trainers in place of TRL) audits its frozen judges every round; its replay judge scores
content-free answers like real ones, so every round is flagged. A run without audit metrics
gets no panel and no audit warning.
"""

from __future__ import annotations

import html as html_lib
import json
import re
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from coevo.rundir.store import RunStore
from coevo.view.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "algorithms"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.fixture(scope="module")
def audited_run(tmp_path_factory) -> Path:
    """A two-round replay TAIScore run with its judges audited before round 1 and after each round."""
    from test_taiscore_logic import FakeTrainers, _config

    from coevo.algorithms.taiscore import run_taiscore
    from coevo.run.runner import summary_dict

    tmp = tmp_path_factory.mktemp("audited")
    run = tmp / "run"
    store = RunStore(run)
    summary = summary_dict(run_taiscore(_config(tmp), store, FakeTrainers().backend()))
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    store.close()
    (run / "summary.json").write_text(json.dumps(summary, default=str), encoding="utf-8")
    return run


def _figures(page: str) -> dict[str, dict]:
    return {m.group(1): json.loads(html_lib.unescape(m.group(2)))
            for m in re.finditer(r'<div class="plot" id="(plot-[^"]+)" data-figure="([^"]*)"', page)}


def _panel(figure: dict, title: str) -> list[dict]:
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    i = titles.index(f"<b>{title}</b>")
    return [t for t in figure["data"] if t["xaxis"] == ("x" if i == 0 else f"x{i + 1}")]


def _metric(run: Path, name: str, r: int) -> float:
    store = RunStore(run, read_only=True)
    try:
        return next(m["value"] for m in store.metrics() if m["name"] == name and m["round"] == r)
    finally:
        store.close()


def test_run_page_has_a_judge_audit_panel_with_intervals(audited_run):
    page = TestClient(create_app([audited_run])).get("/runs/run").text
    section = re.search(r'<section id="judge-audit">(.*?)</section>', page, re.S)
    assert section, "no Judge audit panel"
    figures = _figures(page)
    audit = figures["plot-judge-audit-by-round"]
    assert [a["text"] for a in audit["layout"]["annotations"]] == [
        "<b>reward judge: fooled rate (master keys)</b>", "<b>pairwise judge: fooled rate (master keys)</b>",
        "<b>pairwise judge: position consistency</b>", "<b>gold-rubric judge: fooled rate (master keys)</b>"]
    fooled, threshold = _panel(audit, "reward judge: fooled rate (master keys)")
    assert fooled["name"] == "coevolution" and fooled["x"] == [0, 1, 2]
    value, lo = _metric(audited_run, "audit_reward_fooled_rate", 2), _metric(audited_run, "audit_reward_fooled_rate_lo", 2)
    n = _metric(audited_run, "audit_reward_fooled_rate_n", 2)
    assert fooled["y"][2] == value and fooled["error_y"]["arrayminus"][2] == pytest.approx(value - lo)
    assert fooled["text"][2].startswith(f"n = {n:g} cases, 95% CI [{lo:.3g}, ")
    assert threshold["name"] == "flag threshold" and threshold["y"] == [0.2] * 3 and "error_y" not in threshold
    consistency, _ = _panel(audit, "pairwise judge: position consistency")
    pairs = _metric(audited_run, "audit_pairwise_position_consistency_n", 0)
    assert consistency["text"][0].startswith(f"n = {pairs:g} ")
    if pairs < 5:  # too few pairs for an interval: no bar, as the tables say "too few to tell"
        assert "error_y" not in consistency and "too few to tell" in consistency["text"][0]
    else:
        assert "error_y" in consistency
    # audit metrics are drawn in the panel only, not among the grouped metric figures
    for key, figure in figures.items():
        if key.endswith("-by-round") and key != "plot-judge-audit-by-round":
            assert not any("audit_" in a["text"] for a in figure["layout"]["annotations"]), key
    # the table of flags: each round, each judge, its flags in words, latest round first
    table = re.search(r'<table id="table-audit-flags">(.*?)</table>', section.group(1), re.S).group(1)
    rows = re.findall(r"<tr><td class=\"l\">coevolution</td><td>(\d+)</td><td class=\"l\">(\w+)</td>", table)
    assert rows == [("2", "reward"), ("2", "pairwise"), ("2", "gold"), ("1", "reward"), ("1", "pairwise"),
                    ("1", "gold"), ("0", "reward"), ("0", "pairwise"), ("0", "gold")]
    assert "content-free answers scored at least as high as a real answer in" in table
    assert "(flagged probes: colon," in table  # each master key's flag folded into one line


def test_judge_audit_warning_per_judge_in_plain_words(audited_run):
    page = TestClient(create_app([audited_run])).get("/runs/run").text
    warnings = [html_lib.unescape(w) for w in re.findall(
        r'<li class="warning warning-judge-audit"><span class="kind">[^<]*</span>(.*?)</li>', page, re.S)]
    flags = int(_metric(audited_run, "audit_reward_flags", 2))
    assert len(warnings) == 3
    assert warnings[0].startswith(f"the reward judge failed {flags} audit checks in round 2 (content-free answers "
                                  "scored at least as high as a real answer in ")
    assert "Its rewards can be gamed" in warnings[0]
    assert warnings[1].startswith("the pairwise judge failed ") and "win_rate_vs_round0" in warnings[1]
    assert warnings[2].startswith("the gold judge failed ") and "gold_score" in warnings[2]


def test_report_and_show_print_the_audit_warnings(audited_run):
    from typer.testing import CliRunner

    from coevo.cli import app

    for args in (["report", str(audited_run)], ["show", str(audited_run), "--limit", "0"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        # Every run warning is printed, a line each, its kind named; the audit's are three of them.
        lines = [line for line in result.output.splitlines() if line.startswith("warning (judge-audit): ")]
        assert len(lines) == 3, result.output
        assert lines[0].startswith("warning (judge-audit): the reward judge failed ") and "in round 2" in lines[0]
        assert lines[1].startswith("warning (judge-audit): the pairwise judge failed ")
    html = (audited_run / "report.html").read_text(encoding="utf-8")
    assert 'id="judge-audit"' in html and 'id="plot-judge-audit-by-round"' in html


def test_a_run_without_audit_metrics_has_no_panel(tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    store = RunStore(tmp_path / "plain")
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    for r in (0, 1, 2):
        store.log_metrics("c", {"gold_score": 5.0 + r, "eval_prompts": 20.0}, round=r)
    store.close()
    page = TestClient(create_app([tmp_path / "plain"])).get("/runs/plain").text
    assert 'id="judge-audit"' not in page and "plot-judge-audit" not in page
    assert "warning-judge-audit" not in page
    shown = CliRunner().invoke(app, ["report", str(tmp_path / "plain")])
    assert shown.exit_code == 0 and "warning:" not in shown.output


def test_audit_metrics_with_no_flags_warn_nothing_and_audit_group():
    from coevo.view.audit import audit_section, audit_warnings
    from coevo.view.plots import group_of, metric_figures

    metrics = [{"stage": "c", "round": r, "name": name, "value": value}
               for r in (0, 1) for name, value in (("audit_reward_fooled_rate", 0.0), ("audit_reward_fooled_rate_lo", 0.0),
                                                   ("audit_reward_fooled_rate_hi", 0.3), ("audit_reward_fooled_rate_n", 10.0),
                                                   ("audit_reward_flags", 1.0 - r))]
    assert audit_warnings(metrics, []) == []  # round 1, the latest, has no flag
    assert audit_warnings(metrics[:5], []) == [  # only round 0 (one flag), no record: no sentence from it
        "the reward judge failed 1 audit check in round 0. Its rewards can be gamed: a rising critic reward may not "
        "mean better critiques. See the run page's Judge audit panel; a stronger judge is the fix."]
    section = audit_section(metrics, [])
    assert section["figure"] is not None and section["rows"] == []
    assert metric_figures(metrics) == [] and group_of("audit_reward_flags") == "Judge audit"
    assert audit_section([{"stage": "c", "round": 0, "name": "gold_score", "value": 1.0}], []) is None


def test_browser_draws_the_audit_panel_with_error_bars(audited_run, browser):
    """report.html in headless Chromium: plotly draws the panel, its error bars included."""
    from view_harness import settle

    from coevo.view.report import build_report

    browser.get(build_report(audited_run).resolve().as_uri())
    settle(browser, 30)
    bars = browser.execute_script(
        "return document.querySelectorAll('#plot-judge-audit-by-round g.errorbar').length")
    # three rounds in each panel whose n allows an interval (the position-consistency panel's
    # few pairs get none: too few to tell)
    assert bars >= 6
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/favicon.ico " not in e["message"]]
    assert not errors, errors
