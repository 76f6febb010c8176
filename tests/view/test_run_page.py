"""The viewer's runs list and run page, and report.html as its static export.

Run folders are made two ways: through the store API, shaped like a TAIScore run whose
critic learned nothing (every sign the page must warn about, on purpose), and by real
replay runs of `coevo run` (controls, DecoEvo), so the page reads what the algorithms store.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from coevo.run.runner import run_experiment
from coevo.rundir.store import RunStore
from coevo.core.types import Judgment, Rollout
from coevo.view.app import create_app

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "algorithms"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
# RLAC's replay models and recorded DPO stage (`fakes`, a fixture used below by name).
from test_rlac_loop import facts_config, fakes  # noqa: E402,F401


def _grpo_history(steps: int, learned: bool) -> list[dict]:
    """TRL's GRPO log_history: a row per step, then the closing summary row."""
    rows = [{"step": s, "epoch": s / steps, "loss": 0.1 / s if learned else 0.0,
             "grad_norm": 0.5 if learned else 0.0, "reward": 6.0 + (0.3 * s if learned else 0.0),
             "reward_std": 1.2 if learned else 0.0, "frac_reward_zero_std": 0.0 if learned else 1.0,
             "kl": 0.01 * s, "learning_rate": 1e-5} for s in range(1, steps + 1)]
    return rows + [{"step": steps, "train_loss": 0.0, "train_runtime": 12.0}]


def _dpo_history(steps: int) -> list[dict]:
    rows = [{"step": s, "loss": 0.69 - 0.05 * s, "grad_norm": 2.0, "rewards/margins": 0.1 * s,
             "rewards/accuracies": 0.5 + 0.1 * s, "learning_rate": 1e-5} for s in range(1, steps + 1)]
    return rows + [{"step": steps, "train_loss": 0.6, "train_runtime": 8.0}]


#: Per round, the constraint pass rate of y0 with its Wilson interval and n (as
#: `coevo.eval.constraints.pass_rate_metrics` logs them).
CONSTRAINTS = {r: {"constraint_pass_rate": rate, "constraint_pass_rate_lo": lo, "constraint_pass_rate_hi": hi,
                   "constraint_count": 8.0}
               for r, (rate, lo, hi) in enumerate([(0.25, 0.07, 0.59), (0.5, 0.22, 0.78), (0.75, 0.41, 0.93)])}


def make_taiscore_run(run_dir: Path, *, status: str = "finished", provenance: bool = True) -> Path:
    """A two-round TAIScore-shaped run: the critic's GRPO changed nothing (zero loss, grad
    norm, reward sd, weight change), the gold score sits at 10 on 2 held-out prompts, the
    TAIScore judge is unreadable 3 times in 10, the pairwise judge always picks the same
    side, and revisions are 3x longer than what they revise."""
    store = RunStore(run_dir)
    store.set_meta("config", {"algorithm": "taiscore", "rounds": 2, "roles": {"actor": {"model": "smollm2"}}})
    store.set_meta("algorithm", "taiscore")
    store.set_meta("started", time.time() - 125)
    store.set_meta("status", status)
    if status == "finished":
        store.set_meta("finished", time.time())
    if provenance:
        store.set_meta("provenance", {
            "coevo_version": "0.1.0", "git_commit": "abc1234", "git_dirty": True,
            "started": "2026-12-01T10:00:00", "finished": "2026-12-01T10:02:05", "duration_s": 125.0,
            "hardware": {"platform": "Linux", "python": "3.11", "torch": "2.13.0", "cpus": 2,
                         "memory_gb": 24, "gpus": []}})
    store.set_meta("held_out", ["q1", "q2"])
    for r in (0, 1, 2):
        values = {"gold_score": 10.0, "eval_prompts": 2.0, "eval_judgments": 4.0, "eval_invalid": 0.0,
                  "refine_delta": 0.5 * r, **CONSTRAINTS[r]}
        if r:
            values |= {"reward_mean": 7.0, "reward_sd": 0.0, "reward_count": 4.0, "win_rate_vs_round0": 0.5,
                       "win_rate_vs_round0_lo": 0.095, "win_rate_vs_round0_hi": 0.905, "win_rate_vs_round0_n": 2.0,
                       "position_consistency_vs_round0": 0.0, "first_position_rate_vs_round0": 1.0,
                       "grpo_loss": 0.0, "grpo_grad_norm": 0.0, "grpo_zero_std_fraction": 1.0,
                       "critic_weight_delta": 0.0, "dpo_loss": 0.6, "actor_weight_delta": 0.002,
                       "invalid_judgment_rate": 0.3, "pairs_selected": 2.0, "dpo_steps": 2.0}
        store.log_metrics("coevolution", values, round=r)
    for r in (1, 2):
        store.finish_step(f"coevolution/round{r}/critic", {
            "checkpoint": f"checkpoints/coevolution/round{r}/critic/final", "steps": 3, "seconds": 12.0,
            "seconds_per_step": 4.0, "peak_rss_mb": 900.0, "kind": "grpo", "round": r,
            "metrics": {"train_loss": 0.0, "weight_delta": 0.0}, "history": _grpo_history(3, learned=False)})
        store.finish_step(f"coevolution/round{r}/actor", {
            "checkpoint": f"checkpoints/coevolution/round{r}/actor/final", "steps": 2, "seconds": 8.0,
            "seconds_per_step": 4.0, "peak_rss_mb": 900.0, "kind": "dpo", "round": r,
            "metrics": {"train_loss": 0.6, "weight_delta": 0.002}, "history": _dpo_history(2)})
    for i in range(10):
        valid = i >= 3
        judgments = {
            "taiscore": Judgment(judge="taiscore", valid=valid, score=6.0 + i % 3 if valid else None,
                                 scores={"helpfulness": 7.0, "accuracy": 5.0} if valid else {},
                                 reasons={"helpfulness": f"reason {i}"} if valid else {},
                                 raw="???" if not valid else "", error=None if valid else "no score"),
            "pairwise": Judgment(judge="pairwise", score=1.0),
        }
        rollout = Rollout(sample_id=f"q{i}", x=f"Write about item {i}.", y0="short answer",
                          c=f"critique {i}", y1="a much longer revision " * 2, condition="coevolution",
                          judgments=judgments)
        store.save_rollout(f"coevolution/round{1 + i % 2}/grpo", rollout, round=1 + i % 2)
    store.set_meta("tables", {"TAIScore: conditions": {
        "columns": ["condition", "rounds", "gold_score"],
        "rows": [{"condition": "base actor (round 0)", "rounds": 0, "gold_score": "9.500 ± 0.500"},
                 {"condition": "coevolution", "rounds": 2, "gold_score": "10.000 ± 0.000"}]}})
    store.set_meta("distributions", {"critic training reward (GRPO)": {"coevolution": {"1": [7.0, 7.0],
                                                                                       "2": [7.0, 7.0]}}})
    store.set_meta("warnings", ["coevolution/round1: the critic's weights did not change (a run's own warning)"])
    if provenance:  # (the old run without provenance predates departures too)
        store.set_meta("departures", [{"setting": "sampling.judge.scoring", "paper": "sampled", "here": "expected",
                                       "why": "the reward is the judge's expected score"}])
    store.close()
    return run_dir


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A folder of run folders: a TAIScore-shaped one, a failed one, a stale 'running' one
    (its process is gone: resumable), an old one without provenance, and a replay
    controls run."""
    root = tmp_path_factory.mktemp("runs")
    make_taiscore_run(root / "tai")
    make_taiscore_run(root / "crashed", status="failed")
    make_taiscore_run(root / "group" / "stale", status="running", provenance=False)
    from test_controls_replay import _setup

    config = _setup(tmp_path_factory.mktemp("controls_data"))
    run_experiment(None, root / "controls", data=config)
    return root


@pytest.fixture(scope="module")
def client(runs):
    return TestClient(create_app([runs]))


def _plot_figures(html: str) -> dict[str, dict]:
    import html as html_lib

    return {m.group(1): json.loads(html_lib.unescape(m.group(2)))
            for m in re.finditer(r'<div class="plot" id="(plot-[^"]+)" data-figure="([^"]*)"', html)}


def test_runs_list_statuses_and_headlines(client):
    page = client.get("/")
    assert page.status_code == 200 and "<h1>" in page.text and 'id="runs-table"' in page.text
    rows = dict(re.findall(r'<tr id="run-([^"]+)">(.*?)</tr>', page.text, re.S))
    assert set(rows) == {"tai", "crashed", "group~stale", "controls"}
    assert "status-finished" in rows["tai"] and "status-failed" in rows["crashed"]
    assert "status-resumable" in rows["group~stale"]  # marked running, but no process holds it
    assert "taiscore" in rows["tai"] and "controls" in rows["controls"]
    assert "2m 05s" in rows["tai"]  # duration from provenance
    assert "gold_score" in page.text  # a headline metric column


def test_run_page_warns_in_plain_words(client):
    page = client.get("/runs/tai")
    assert page.status_code == 200
    warnings = re.findall(r'<li class="warning warning-([a-z-]+)"><span class="kind">[^<]*</span>(.*?)</li>',
                          page.text, re.S)
    kinds = [k for k, _ in warnings]
    text = " ".join(t for _, t in warnings)
    assert "no-learning" in kinds and "did not change the policy" in text
    no_learning = " ".join(t for k, t in warnings if k == "no-learning")
    assert "coevolution/round1/critic" in no_learning  # names the stage
    assert "coevolution/round1/actor" not in no_learning  # the DPO stage changed its weights
    assert "invalid-judgments" in kinds and "&#39;taiscore&#39;: 3 of 10 judgments (30%)" in text
    assert "constant-reward" in kinds
    assert "judge-agrees" in kinds and "pairwise" in text
    # the both-orders win rate's judge read only the order: said in words, per round
    assert kinds.count("position-bias") == 2
    assert "coevolution round 1: the pairwise judge named the same response in both shown orders for only 0% of 2 " \
           "pairs" in text and "the response shown first won 100% of its verdicts" in text
    assert "ceiling" in kinds and "gold_score is at its ceiling (10) in every round (3) on only 2 held-out items" in text
    assert "length-inflation" in kinds
    assert "run" in kinds and "a run&#39;s own warning" in text


def test_run_page_lists_departures_from_the_paper(client):
    section = re.search(r'<section id="departures">(.*?)</section>', client.get("/runs/tai").text, re.S)
    assert section and "not its paper in 1 setting" in section.group(1)
    assert "<code>sampling.judge.scoring</code></td><td>sampled</td><td>expected</td>" in section.group(1)
    assert "Not recorded" in client.get("/runs/group~stale").text  # made before departures were kept
    assert 'id="departures"' not in client.get("/runs/controls").text  # controls reproduce no paper


def test_clean_run_has_no_false_alarms(tmp_path):
    run = tmp_path / "clean"
    store = RunStore(run)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    for r in (0, 1, 2):
        store.log_metrics("c", {"gold_score": 5.0 + r, "eval_prompts": 20.0}, round=r)
    store.finish_step("c/round1/critic", {"checkpoint": "x", "steps": 3, "seconds": 1.0, "kind": "grpo", "round": 1,
                                          "metrics": {"weight_delta": 0.01}, "history": _grpo_history(3, True)})
    for i in range(6):
        store.save_rollout("c/round1/eval", Rollout(sample_id=f"s{i}", x="x", y0="answer", y1="answer!",
                                                    judgments={"gold": Judgment(judge="gold", score=float(i))}), 1)
    store.close()
    page = TestClient(create_app([run])).get("/runs/clean").text
    assert 'class="warning ' not in page and "No warning signs found" in page


def test_plots_have_integer_rounds_and_are_grouped(client):
    page = client.get("/runs/tai").text
    figures = _plot_figures(page)
    by_round = [f for k, f in figures.items() if k.endswith("-by-round")]
    assert 2 <= len(by_round) <= 6  # a few grouped figures, not one per metric
    panels = [a["text"] for f in by_round for a in f["layout"]["annotations"]]
    # panels are titled in words (the metric registry's), not by the metric's logged name
    assert "<b>Gold-rubric score</b>" in panels and "<b>Refinement gain S(y1) − S(y0)</b>" in panels
    assert not any("eval_prompts" in p or "dpo_steps" in p for p in panels)  # bookkeeping is not plotted
    for f in by_round:
        for key, axis in f["layout"].items():
            if key.startswith("xaxis"):
                assert axis["tickmode"] == "array" and all(isinstance(v, int) for v in axis["tickvals"])
        for trace in f["data"]:
            assert all(float(x).is_integer() for x in trace["x"])
    # the loop's targets come first, then the results in a figure of their own
    assert list(figures)[:2] == ["plot-what-the-loop-is-trained-for", "plot-scores-by-round"]


def _panel_traces(figure: dict, panel: str) -> list[dict]:
    """The traces drawn in the panel titled `panel` of a small-multiples figure."""
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    i = titles.index(f"<b>{panel}</b>")
    return [t for t in figure["data"] if t["xaxis"] == ("x" if i == 0 else f"x{i + 1}")]


def test_target_figure_rounds_with_intervals_and_grpo_steps(client):
    page = client.get("/runs/tai").text
    target = _plot_figures(page)["plot-what-the-loop-is-trained-for"]
    panels = [a["text"] for a in target["layout"]["annotations"]]
    assert panels == ["<b>gold score of π_r (held out)</b>", "<b>constraint pass rate of y0</b>",
                      "<b>critic's reward mean (GRPO)</b>", "<b>win rate vs round 0 (both orders)</b>",
                      "<b>critic's reward mean per GRPO step (each round)</b>"]
    (rate,) = _panel_traces(target, "constraint pass rate of y0")
    assert rate["name"] == "coevolution" and rate["x"] == [0, 1, 2] and rate["y"] == [0.25, 0.5, 0.75]
    assert rate["error_y"]["array"] == pytest.approx([0.34, 0.28, 0.18])  # hi - rate
    assert rate["error_y"]["arrayminus"] == pytest.approx([0.18, 0.28, 0.34])  # rate - lo
    assert rate["text"][1] == "n = 8, 95% CI [0.22, 0.78]"
    (win,) = _panel_traces(target, "win rate vs round 0 (both orders)")
    # From 2 pairs no bar (the tables say "too few to tell"), and the hover says why.
    assert win["x"] == [1, 2] and win["text"][0] == "n = 2, too few to tell (no interval)"
    assert "error_y" not in win or win["error_y"]["array"][0] == 0
    (reward,) = _panel_traces(target, "critic's reward mean (GRPO)")
    assert reward["x"] == [1, 2] and reward["text"] == ["n = 4, sd 0", "n = 4, sd 0"]
    assert "error_y" not in reward  # an sd is a spread, not an interval: hover only
    steps = _panel_traces(target, "critic's reward mean per GRPO step (each round)")
    assert {t["name"] for t in steps} == {"coevolution/round1/critic", "coevolution/round2/critic"}
    assert all(t["x"] == [1, 2, 3] and t["y"] == [6.0, 6.0, 6.0] for t in steps)
    axes = {k: a for k, a in target["layout"].items() if k.startswith("xaxis")}
    assert all(a["tickmode"] == "array" and all(isinstance(v, int) for v in a["tickvals"]) for a in axes.values())
    assert axes["xaxis5"]["title"]["text"] == "GRPO step" and axes["xaxis4"]["title"]["text"] == "round"
    # refinement's y1 was not checked against constraints in this run: said, not drawn empty
    missing = re.search(r'<ul id="targets-missing"[^>]*>(.*?)</ul>', page, re.S).group(1)
    assert "<b>constraint pass rate of refined y1</b>: not measured" in missing
    assert "constraint pass rate of y0" not in missing


def test_target_missing_is_said_in_words(tmp_path):
    """A run without constraints in its data and without GRPO history: words, no empty panel."""
    store = RunStore(tmp_path / "plain")
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    for r in (0, 1):
        store.log_metrics("c", {"gold_score": 5.0 + r, "eval_prompts": 4.0, "constraint_pass_rate": None,
                                "constraint_count": 0.0}, round=r)
    store.close()
    page = TestClient(create_app([tmp_path / "plain"])).get("/runs/plain").text
    target = _plot_figures(page)["plot-what-the-loop-is-trained-for"]
    assert [a["text"] for a in target["layout"]["annotations"]] == ["<b>gold score of π_r (held out)</b>"]
    assert _panel_traces(target, "gold score of π_r (held out)")[0]["text"] == ["n = 4", "n = 4"]
    missing = re.search(r'<ul id="targets-missing"[^>]*>(.*?)</ul>', page, re.S).group(1)
    assert ("<b>constraint pass rate of y0</b>: not measured — no held-out prompt states a checkable "
            "constraint") in missing
    assert "<b>critic&#39;s reward per GRPO step</b>: not measured — no GRPO stage" in missing


def test_training_curves_from_trl_history(client):
    figures = _plot_figures(client.get("/runs/tai").text)
    grpo = figures["plot-training-curves-grpo-critic-per-step"]
    panels = [a["text"] for a in grpo["layout"]["annotations"]]
    for name in ("loss", "reward mean", "reward sd", "KL", "grad norm", "zero-std fraction"):
        assert f"<b>{name}</b>" in panels
    loss = [t for t in grpo["data"] if t["xaxis"] == "x" and t["name"] == "coevolution/round1/critic"][0]
    assert loss["x"] == [1, 2, 3] and loss["y"] == [0.0, 0.0, 0.0]  # the summary row is left out
    dpo = figures["plot-training-curves-dpo-per-step"]
    assert "<b>DPO reward margin</b>" in [a["text"] for a in dpo["layout"]["annotations"]]


def test_tables_examples_and_sections(client):
    page = client.get("/runs/tai").text
    assert 'id="table-result-0"' in page and "9.500 ± 0.500" in page
    assert 'id="table-rounds-0"' in page and 'id="table-rounds-0-counts"' in page
    results, counts = page.split('id="table-rounds-0"')[1].split('id="table-rounds-0-counts"')
    assert "gold_score" in results and "eval_prompts" not in results and "eval_prompts" in counts
    assert 'id="table-judgments"' in page and 'id="table-stages"' in page
    assert "abc1234" in page and "(with uncommitted changes)" in page  # provenance
    assert '<details id="config-details">' in page  # config collapsed
    links = re.findall(r'href="/runs/tai/samples/(\d+)"', page)
    assert links and "round 2" in page and "helpfulness" in page and "reason 9" in page
    # the stale run has no provenance: said so, not an error
    assert "Not recorded" in client.get("/runs/group~stale").text
    assert client.get("/runs/nope").status_code == 404


def test_nav_links(client):
    page = client.get("/runs/tai").text
    nav = re.search(r'<nav class="runnav" id="runnav">(.*?)</nav>', page, re.S).group(1)
    assert re.findall(r'href="([^"]+)"', nav) == ["/runs/tai", "/runs/tai/samples", "/runs/tai/annotate"]
    assert 'id="nav-overview" href="/runs/tai" class="active"' in nav


def test_static_export_is_self_contained(runs):
    from coevo.view.report import build_report

    path = build_report(runs / "tai")
    html = path.read_text(encoding="utf-8")
    assert path.name == "report.html"
    assert not re.search(r'<(script|link|img)[^>]+(src|href)="(https?:)?//', html)
    assert not re.search(r'(src|href)="/', html)  # no server-only links or assets
    assert "Plotly" in html and "<style>" in html and "/static/" not in html
    # the same content as the served page: warnings, tables, the same figures
    served = TestClient(create_app([runs])).get("/runs/tai").text
    assert _plot_figures(html) == _plot_figures(served)
    assert html.count('class="warning ') == served.count('class="warning ') > 0
    assert 'id="runnav"' not in html


def test_replay_runs(runs, client, tmp_path):
    page = client.get("/runs/controls").text
    assert "Critique-content controls" in page and 'id="table-result-0"' in page
    assert (runs / "controls" / "report.html").is_file()  # written by the runner through build_report
    # DecoEvo: skill history, the CI from summary.json, the trajectory figure, inner steps not rounds
    from decoevo_fakes import replay_run_config

    config = replay_run_config(tmp_path, seeds=[0], inner_steps=2)
    run_experiment(None, tmp_path / "deco", data=config)
    page = TestClient(create_app([tmp_path / "deco"])).get("/runs/deco").text
    assert 'id="table-skills"' in page and 'id="table-intervals"' in page and "Diagnostic trajectory" in page
    assert "inner step 1" in page and 'id="nav-skills"' in page
    target = _plot_figures(page)["plot-what-the-loop-is-trained-for"]
    panels = [a["text"] for a in target["layout"]["annotations"]]
    assert panels[:3] == ["<b>diagnostic gold-rubric score</b>", "<b>diagnostic proxy score (generated rubrics)</b>",
                          "<b>test score (gold rubric, 0-1)</b>"]
    summary = json.loads((tmp_path / "deco" / "summary.json").read_text())["methods"]
    test = {t["name"]: t for t in _panel_traces(target, "test score (gold rubric, 0-1)")}
    assert set(test) == set(summary) and all(t["x"] == [m] for m, t in test.items())
    assert [t["y"][0] for t in test.values()] == [summary[m]["test_mean"] for m in test]
    assert "Plotly" in (tmp_path / "deco" / "report.html").read_text()


def test_cli_view_refuses_a_folder_without_runs(tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    result = CliRunner().invoke(app, ["view", str(tmp_path)])
    assert result.exit_code != 0
    assert "no run folders in" in str(result.exception)


def test_rlac_replay_run_page(tmp_path, fakes):
    from coevo.train.common import TrainResult

    def still(policy, pairs, settings, output_dir, **kwargs):  # a DPO stage that moved no weight
        return TrainResult(checkpoint=str(output_dir / "final"), steps=2, seconds=0.0, seconds_per_step=0.0,
                           peak_rss_mb=0.0, metrics={"weight_delta": 0.0, "train_loss": 0.69}, kind="dpo",
                           history=_dpo_history(2))

    fakes["backend"].train_dpo = still
    run_experiment(None, tmp_path / "rlac", data=facts_config(iterations=2).model_dump(mode="json"))
    page = TestClient(create_app([tmp_path / "rlac"])).get("/runs/rlac").text
    assert "RLAC iterations" in page and 'id="nav-proposals"' in page
    figures = _plot_figures(page)
    fig2b = next(f for k, f in figures.items() if "verification-calls-fig-2b" in k)
    assert fig2b["layout"]["xaxis"]["title"]["text"] == "verification calls"
    assert all(isinstance(v, int) for v in fig2b["layout"]["xaxis"]["tickvals"])
    assert "plot-training-curves-dpo-per-step" in figures
    target = figures["plot-what-the-loop-is-trained-for"]
    assert [a["text"] for a in target["layout"]["annotations"]] == [
        "<b>held-out FactScore precision</b>", "<b>critic's detection rate</b>"]
    (precision,) = _panel_traces(target, "held-out FactScore precision")
    assert precision["name"] == "generator" and precision["x"] == [0, 1, 2]
    warnings = re.findall(r'<li class="warning warning-no-learning">(.*?)</li>', page, re.S)
    assert any("rlac/round1/generator" in w and "did not change the policy" in w for w in warnings)


def test_pass_at_1_at_its_ceiling_on_few_problems(tmp_path):
    store = RunStore(tmp_path / "code")
    store.set_meta("algorithm", "rlac")
    store.set_meta("config", {"algorithm": "rlac", "task": "code", "data": {"heldout": 2}})
    for r in (0, 1, 2):
        store.log_metrics("generator", {"pass_at_1": 1.0, "kl_from_base": 0.1 * r}, round=r)
    store.close()
    page = TestClient(create_app([tmp_path / "code"])).get("/runs/code").text
    assert "pass_at_1 is at its ceiling (1) in every round (3) on only 2 held-out items" in page


def test_run_info_statuses_durations_and_headlines(tmp_path):
    from coevo.view.runinfo import find_runs, format_duration, run_info
    from coevo.rundir.lock import RunLock

    for name, status in (("done", "finished"), ("broke", "failed"), ("stopped", "interrupted"),
                         ("live", "running"), ("gone", "running")):
        make_taiscore_run(tmp_path / "all" / name, status=status, provenance=False)
    (tmp_path / "all" / "done" / "summary.json").write_text(json.dumps({"table": {
        "columns": ["metric", "round 0", "round 2"],
        "rows": [{"metric": "gold_score", "round 0": 9.0, "round 2": 9.5},
                 {"metric": "refine_delta", "round 0": 0.0, "round 2": 0.25}]}}))
    assert [p.name for p in find_runs(tmp_path / "all")] == ["broke", "done", "gone", "live", "stopped"]
    with RunLock(tmp_path / "all" / "live"):  # a live process holds it
        infos = {p.name: run_info(p) for p in find_runs(tmp_path / "all")}
    assert {n: i.status for n, i in infos.items()} == {
        "done": "finished", "broke": "failed", "stopped": "interrupted", "live": "running", "gone": "resumable"}
    assert infos["done"].headline == {"gold_score": 9.5, "refine_delta": 0.25}  # summary.json's last round
    assert infos["broke"].headline["gold_score"] == 10.0  # no summary: the last round logged
    assert 120 <= infos["done"].duration_s < 200 and infos["live"].duration_s >= 120
    assert infos["done"].rollouts == 10 and infos["done"].algorithm == "taiscore"
    assert format_duration(125) == "2m 05s" and format_duration(3725) == "1h 02m" and format_duration(None) == "—"
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "run.sqlite").write_bytes(b"not a database" * 100)
    assert run_info(tmp_path / "bad").status.startswith("unreadable: ")


def test_a_run_started_while_the_viewer_is_open_shows_up(tmp_path):
    make_taiscore_run(tmp_path / "first")
    client = TestClient(create_app([tmp_path]))
    assert 'id="run-first"' in client.get("/").text and client.get("/runs/second").status_code == 404
    make_taiscore_run(tmp_path / "second", status="running")
    assert 'id="run-second"' in client.get("/").text
    assert client.get("/runs/second").status_code == 200


def test_taiscore_gold_gains_are_shown_as_paired_intervals(tmp_path):
    """TAIScore's summary carries one gold-gain CI per condition; the page lists each, read in words."""
    from coevo.view.run_page import _intervals

    run = make_taiscore_run(tmp_path / "gains")
    gains = {"coevolution": {"mean_diff": 0.75, "low": 0.25, "high": 1.5, "n_pairs": 8},
             "taiscore": {"mean_diff": -0.5, "low": -1.0, "high": 0.5, "n_pairs": 8},
             "baseline": {"mean_diff": 2.0, "low": 1.0, "high": 3.0, "n_pairs": 4}}
    (run / "summary.json").write_text(json.dumps({"gold_gain_ci": gains, "table": {}}))
    assert [ci["name"] for ci in _intervals({"gold_gain_ci": gains})] == ["gold gain: coevolution",
                                                                         "gold gain: taiscore", "gold gain: baseline"]
    page = TestClient(create_app([run])).get("/runs/gains").text
    table = page[page.index('id="table-intervals"'):]
    table = table[:table.index("</table>")]
    assert "gold gain: coevolution" in table and "better: the CI is above 0" in table
    assert "gold gain: taiscore" in table and "no clear difference: the CI contains 0" in table
    # 4 pairs: however far its interval lies above 0, it is not read as "better" (issue 26)
    baseline = table[table.index("gold gain: baseline"):]
    assert "too few to tell (4 pairs" in baseline and "better" not in baseline


def test_interval_bounds_get_no_panel_of_their_own():
    from coevo.view.plots import metric_figures

    metrics = [{"name": name, "stage": "c", "round": r, "value": v + r / 10}
               for r in (0, 1) for name, v in (("constraint_pass_rate", 0.4), ("constraint_pass_rate_lo", 0.2),
                                               ("constraint_pass_rate_hi", 0.6), ("orphan_lo", 0.1))]
    # a panel's title is in words; the metric's logged name leads its hover text
    panels = [re.match(r"<i>([^<]+)</i>", a["hovertext"]).group(1) for f in metric_figures(metrics)
              for a in f["figure"]["layout"].get("annotations", [])]
    assert "constraint_pass_rate" in panels and "orphan_lo" in panels  # a _lo without its metric stays
    assert not {"constraint_pass_rate_lo", "constraint_pass_rate_hi"} & set(panels)


def test_errors_are_pages_for_a_browser_and_json_for_a_script(client):
    """A bad address names what is wrong in words, with a way back, where a browser asks
    (issue 26: /samples/abc showed a validation dump); a script still gets JSON."""
    html = {"accept": "text/html,application/xhtml+xml"}
    run_id = client.get("/", headers=html).text.split('href="/runs/')[1].split('"')[0]
    page = client.get(f"/runs/{run_id}/samples/abc", headers=html)
    assert page.status_code == 400 and "text/html" in page.headers["content-type"]
    assert "rollout_id must be a whole number, not &#39;abc&#39;" in page.text and 'href="/"' in page.text
    assert "int_parsing" not in page.text
    missing = client.get("/no/such/page", headers=html)
    assert missing.status_code == 404 and "There is no page at /no/such/page." in missing.text
    assert client.get(f"/runs/{run_id}/samples/abc").json()["detail"][0]["loc"] == ["path", "rollout_id"]
