"""The views a headless-browser review of a real quickstart run found misleading (issue 46,
item 4), each checked in the HTML `coevo view` serves: a judgment shows the calls that made
it, intervals from too few items are not drawn, the compare page puts differences first, the
runs list marks a run's warnings, a judge's expected and sampled scores are explained,
latency says what it averages, the samples list has a cut-off column, error pages keep the
nav, and results tables define their metrics.

Runs are built through the store API, shaped as TAIScore stores them (round-0 and round-1
eval rollouts with the pairwise judgments against round 0, cached calls with their tags).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from coevo.eval.metric_defs import describe
from coevo.rundir.store import RunStore
from coevo.core.types import Completion, Judgment, Rollout
from coevo.view import plots
from coevo.view.app import create_app

X, BASE, CURRENT, REVISION = "Write about rain.", "Rain falls.", "Rain falls on the roofs.", "Rain drums on roofs."
EVAL0, EVAL1 = "coevolution/round0/eval", "coevolution/round1/eval"
HTML = {"accept": "text/html"}


def _pair_prompt(first: str, second: str) -> str:
    return f"Which is better?\n\nUser prompt:\n{X}\n\nResponse 1:\n{first}\n\nResponse 2:\n{second}\n"


def _call(store: RunStore, key: str, prompt: str, answer: str, seconds: float, **tags) -> None:
    store.cache_put(key, "replay:test", {0: Completion(text=answer)},
                    request={"messages": [{"role": "user", "content": prompt}],
                             "sampling": {"temperature": 0.0, "max_tokens": 64},
                             "call": {"seconds": seconds, "cut_off": False, **tags}})


def make_pairwise_run(run_dir: Path) -> Path:
    """Round 0's answer and round 1's rollout judged against it in both shown orders; in the
    same stage the same judge also compared round 1's y0 with its y1 (an audit or refinement
    pair), answering the same one token: the calls a judgment must NOT be shown with."""
    store = RunStore(run_dir)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    store.set_meta("config", {"algorithm": "taiscore"})
    store.save_rollout(EVAL0, Rollout(sample_id="q1", x=X, y0=BASE, condition="coevolution"), round=0)
    as_given = Judgment(judge="pairwise", score=1.0, raw="2", scores={"preference": 1.0},
                        shown_order=["round0", "current"], winner="current")
    swapped = Judgment(judge="pairwise", score=1.0, raw="1", scores={"preference": 1.0},
                       shown_order=["current", "round0"], winner="current")
    gold = Judgment(judge="gold_rubric", score=7.0, sampled=7.0, expected=6.42, raw='{"score": 7}',
                    scores={"clarity": 7.0}, reasons={"clarity": "clear"})
    store.save_rollout(EVAL1, Rollout(sample_id="q1", x=X, y0=CURRENT, c="Say what it sounds like.", y1=REVISION,
                                      condition="coevolution",
                                      judgments={"pairwise_vs_round0": as_given, "pairwise_vs_round0_swapped": swapped,
                                                 "gold_rubric": gold}), round=1)
    judge = {"role": "judge:pairwise", "stage": EVAL1, "step": "judge"}
    _call(store, "pair-y0-y1", _pair_prompt(CURRENT, REVISION), "2", 0.25, **judge)
    _call(store, "pair-y1-y0", _pair_prompt(REVISION, CURRENT), "1", 0.25, **judge)
    # The win rate's two calls, one batch of two: each records half the batch's time.
    _call(store, "vs-round0", _pair_prompt(BASE, CURRENT), "2", 0.5, **judge)
    _call(store, "vs-round0-swapped", _pair_prompt(CURRENT, BASE), "1", 0.5, **judge)
    actor = {"role": "actor", "stage": EVAL1}
    _call(store, "respond", X, CURRENT, 1.5, step="respond", **actor)
    store.cache_put("revise", "replay:test", {0: Completion(text=REVISION)},
                    request={"messages": [{"role": "user", "content": f"Revise: {X} {CURRENT}"}],
                             "sampling": {"max_tokens": 4}, "call": {"seconds": 0.7, "cut_off": True,
                                                                     "step": "revise", **actor}})
    store.close()
    return run_dir


@pytest.fixture(scope="module")
def pairwise(tmp_path_factory):
    run = make_pairwise_run(tmp_path_factory.mktemp("pairwise") / "pairwise")
    client = TestClient(create_app([run]))
    store = RunStore(run, read_only=True)
    ids = {row["stage"]: row["id"] for row in store.rollout_rows()}
    store.close()
    return client, ids


def _calls_under(page: str, label: str) -> list[str]:
    """The keys of the calls filed under the heading of `label` on a sample page."""
    part = page[page.index('id="sample-calls"'):]
    found = []
    for block in re.split(r'(?=<h3 class="call-heading")', part)[1:]:
        if f'data-label="{label}"' in block[:block.index(">")]:
            found += re.findall(r'<div class="call" data-key="([^"]+)"', block)
    return found


def test_a_judgment_against_round_0_shows_the_calls_that_made_it(pairwise):
    client, ids = pairwise
    page = client.get(f"/runs/pairwise/samples/{ids[EVAL1]}").text
    assert _calls_under(page, "judgment pairwise_vs_round0") == ["vs-round0"]
    assert _calls_under(page, "judgment pairwise_vs_round0_swapped") == ["vs-round0-swapped"]
    assert "shown round 0&#39;s answer first, then this round&#39;s answer y0" in page


def test_latency_says_it_is_a_batch_average_or_the_calls_own(pairwise):
    client, ids = pairwise
    page = html.unescape(client.get(f"/runs/pairwise/samples/{ids[EVAL1]}").text)
    block = page[page.index('data-key="vs-round0"'):]
    assert "latency 0.50 s: batch average per call, 2 calls" in block[:block.index("</div>")]
    block = page[page.index('data-key="respond"'):]
    assert "latency 1.50 s (this call alone: not batched)" in block[:block.index("</div>")]


def test_expected_and_sampled_scores_are_explained(pairwise):
    client, ids = pairwise
    page = html.unescape(client.get(f"/runs/pairwise/samples/{ids[EVAL1]}").text)
    kinds = page[page.index('id="score-kinds"'):]
    kinds = kinds[:kinds.index("</dl>")]
    assert "probability-weighted mean over the score's tokens (G-Eval)" in kinds
    assert "the score the judge wrote" in kinds and "sampled integers" in kinds
    assert 'title="the score the judge wrote' in page  # the table's "sampled" header


def test_the_samples_list_has_a_cut_off_column(pairwise):
    client, ids = pairwise
    page = client.get("/runs/pairwise/samples").text
    assert ">cut off</th>" in page
    cells = dict(re.findall(r'<tr class="sample-row" data-id="(\d+)">.*?<td class="cut-off-cell">(.*?)</td>',
                            page, re.S))
    assert "yes" in cells[str(ids[EVAL1])]  # its revision stopped at its 4-token limit
    assert cells[str(ids[EVAL0])] == "no"


def test_error_pages_keep_the_layout_and_the_runs_nav(pairwise):
    client, _ = pairwise
    for path in ("/runs/pairwise/samples/99999", "/runs/pairwise/no-such-page", "/runs/pairwise/samples/abc"):
        page = client.get(path, headers=HTML)
        assert page.status_code in (400, 404) and 'id="runnav"' in page.text, path
        assert 'id="nav-samples" href="/runs/pairwise/samples"' in page.text and 'class="brand"' in page.text
        assert 'id="error-run-link" href="/runs/pairwise"' in page.text
    page = client.get("/no-such-page", headers=HTML)
    assert page.status_code == 404 and 'class="brand" href="/"' in page.text and 'id="runnav"' not in page.text


# -- plots: no interval from too few items, none past the scale -------------------------------

def test_no_interval_under_five_items_and_none_past_the_scale():
    assert plots.drawn_interval(-10.0, 23.0, 2) == (None, None)
    assert plots.drawn_interval(4.0, 8.0, 5) == (4.0, 8.0)
    figure = plots.small_multiples("g", [plots.Panel("gold", {"run": [(0, 5.0, -10.0, 23.0, ""), (1, 6.0, 5.5, 6.5, "")]},
                                                     metric="gold_score")], "round")["figure"]
    (trace,) = figure["data"]
    # 1–10 is the gold score's scale: the bar stops at its ends.
    assert trace["error_y"]["arrayminus"] == pytest.approx([4.0, 0.5])
    assert trace["error_y"]["array"] == pytest.approx([5.0, 0.5])
    # the axis holds the bars' ends: no range stretched to −10 and 23
    y_range = figure["layout"]["yaxis"].get("range", [1.0, 10.0])
    assert y_range[0] >= 0.5 and y_range[1] <= 10.5


def test_the_target_figure_draws_no_bar_for_two_items(tmp_path):
    store = RunStore(tmp_path / "few")
    store.set_meta("algorithm", "taiscore")
    for r, n in ((0, 2.0), (1, 8.0)):
        store.log_metrics("c", {"gold_score": 5.0 + r, "gold_score_lo": -10.0, "gold_score_hi": 23.0,
                                "gold_score_n": n, "eval_prompts": n}, round=r)
    store.close()
    page = TestClient(create_app([tmp_path / "few"])).get("/runs/few").text
    figure = re.search(r'id="plot-what-the-loop-is-trained-for" data-figure="([^"]+)"', page).group(1)
    import json

    (trace,) = json.loads(html.unescape(figure))["data"]
    assert trace["text"][0] == "n = 2, too few to tell (no interval)"
    assert trace["error_y"]["array"][0] == 0 and trace["error_y"]["arrayminus"][0] == 0
    # n = 8: drawn, but only to the scale's ends (1 and 10), not to −10 and 23.
    assert trace["error_y"]["arrayminus"][1] == pytest.approx(6.0 - 1.0)
    assert trace["error_y"]["array"][1] == pytest.approx(10.0 - 6.0)


# -- compare: differences first, small numbers readable, coinciding curves said ------------------

def _compared_run(path: Path, seed: int) -> Path:
    store = RunStore(path)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("config", {"seed": seed, **{f"setting_{i:03d}": i for i in range(40)}})
    for r in (0, 1, 2):
        store.log_metrics("coevolution", {"gold_score": 5.0 + r, "gold_score_n": 10.0,
                                          "kl_from_base": 1.5e-05}, round=r)
    store.close()
    return path


def test_compare_shows_differences_first_small_numbers_and_coinciding_curves(tmp_path):
    _compared_run(tmp_path / "a", 1)
    _compared_run(tmp_path / "b", 2)
    page = TestClient(create_app([tmp_path])).get("/compare?run=a&run=b").text
    differing = page[page.index('id="table-compare-config"'):]
    differing = differing[:differing.index("</table>")]
    assert re.findall(r'data-key="([^"]+)"', differing) == ["seed"]
    same = page.index('<details id="compare-same-settings"><summary>40 identical settings')
    assert page.index('id="table-compare-config"') < same < page.index('id="compare-metrics"')
    assert 'data-key="setting_000"' in page[same:]
    assert "1.5e-05" in page and "0.000" not in page[page.index('id="table-compare-metrics"'):]
    notes = re.findall(r'<p class="note coincide" data-curve="gold_score">(.*?)</p>', page)
    assert notes and "a and b coincide" in notes[0]


# -- runs list: a run's warnings marked beside its numbers --------------------------------------

def test_runs_list_marks_a_failed_audit_and_cut_off_outputs(tmp_path):
    store = RunStore(tmp_path / "warned")
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    store.log_metrics("coevolution", {"gold_score": 6.0, "gold_score_n": 10.0, "audit_reward_fooled_rate": 0.8,
                                      "audit_reward_flags": 2.0}, round=1)
    for i in range(5):
        store.cache_put(f"k{i}", "replay:test", {0: Completion(text=f"answer {i}")},
                        request={"messages": [], "call": {"role": "actor", "cut_off": i < 4}})
    store.close()
    RunStore(tmp_path / "clean").close()
    page = TestClient(create_app([tmp_path])).get("/").text
    warned = re.search(r'<tr id="run-warned">(.*?)</tr>', page, re.S).group(1)
    assert "⚠ judge failed its audit" in warned and "⚠ outputs cut off" in warned
    assert "4 of 5 model outputs (80%) stopped at their token limit (actor 4)" in html.unescape(warned)
    assert 'class=" warned" title="read with this run\'s warnings' in html.unescape(warned)  # its numbers too
    clean = re.search(r'<tr id="run-clean">(.*?)</tr>', page, re.S).group(1)
    assert "none found" in clean and "⚠" not in clean


# -- metric definitions: results tables, after-DPO metrics ------------------------------------

def test_after_dpo_metrics_have_their_own_definitions():
    for name in ("refine_S_y1", "refine_delta", "refine_constraint_pass_rate", "refine_constraint_check_rate"):
        after = name.replace("refine_", "refine_after_dpo_") if "constraint" in name else f"{name}_after_dpo"
        assert describe(after).definition != describe(name).definition, after
        assert "after the round's DPO" in describe(after).definition


def test_results_tables_define_their_metric_names(tmp_path):
    store = RunStore(tmp_path / "tables")
    store.set_meta("algorithm", "taiscore")
    store.set_meta("tables", {"coevolution: by round": {
        "columns": ["metric", "round 0", "round 1"],
        "rows": [{"metric": "gold_score", "round 0": 5.0, "round 1": 6.0},
                 {"metric": "refine_S_y1_after_dpo", "round 0": None, "round 1": 6.5}]},
        "conditions": {"columns": ["condition", "gold_score", "gold_gain vs round 0 (95% CI)"],
                       "rows": [{"condition": "coevolution", "gold_score": 6.0}]}})
    store.close()
    page = html.unescape(TestClient(create_app([tmp_path / "tables"])).get("/runs/tables").text)
    after = describe("refine_S_y1_after_dpo")
    assert f'<td class="name" title="{after.title}: {after.definition}">refine_S_y1_after_dpo</td>' in page
    assert f'title="{describe("gold_score").title}: {describe("gold_score").definition}">gold_score</th>' in page
    definitions = page[page.index('id="table-result-0-definitions"'):]
    assert "<code>refine_S_y1_after_dpo</code>" in definitions[:definitions.index("</details>")]
    assert "Gold gain over round 0" in page[page.index('id="table-result-1-definitions"'):]
