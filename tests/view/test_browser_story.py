"""The run page tells the story first, in headless Chromium: a card at the top says what ran,
what changed (with n, and "too few to tell" in words), what to trust (this run's settings
apart from findings) and what to run next; the departures are one folded line after the
results; plots are drawn on their metric's whole scale; the per-step training curves include
completion length, completions cut at their limit and entropy; the DPO pairs are a table with
the judge's verdict; round 0's and round N's answers to one prompt stand side by side; the
monitor says when it had too few steps to tell, and names its anchor in words; and the page
before its folds fits in about six 1080-px screens.

The run is the quickstart's shape from replay models (replay_runs.build_taiscore_story),
served by its own `coevo view`; the page-height check also reads the RLAC and DecoEvo replay
runs the other browser tests use."""

from __future__ import annotations

import pytest
from test_browser import WAIT, open_run, table_rows, text_of, unfold
from view_harness import Viewer, settle

from coevo.rundir.store import RunStore

try:
    from selenium.webdriver.common.by import By
except ImportError:  # test_browser skips the module (or fails under CI) first
    By = None

pytestmark = pytest.mark.timeout(240)

#: The screens the page may take before any fold is opened, each 1080 px at 1280 px wide.
SCREENS, SCREEN = 6, (1280, 1080)


@pytest.fixture(scope="module")
def story_run(tmp_path_factory):
    from replay_runs import build_taiscore_story

    folder = tmp_path_factory.mktemp("story")
    return build_taiscore_story(folder / "runs" / "taiscore", folder / "inputs")


@pytest.fixture(scope="module")
def story_viewer(story_run, tmp_path_factory):
    server = Viewer(story_run.parent, tmp_path_factory.mktemp("story_log") / "view.log")
    yield server
    server.stop()


@pytest.fixture
def page(browser, story_viewer):
    """The story run's page, opened from the runs list as a person does."""
    open_run(browser, story_viewer, "taiscore")
    return browser


def _top(element) -> float:
    return element.location["y"]


def test_the_story_card_comes_first_and_tells_the_run(page, story_viewer, story_run):
    story = page.find_element(By.ID, "story")
    sections = [s.get_attribute("id") for s in page.find_elements(By.CSS_SELECTOR, "main > section")]
    assert sections[:3] == ["run-summary", "story", "results"], sections
    ran = [li.text for li in page.find_elements(By.CSS_SELECTOR, "#story-ran li")]
    assert "2 training stages: critic GRPO round 1: 2 steps, actor DPO round 1: 2 steps" in ran
    assert any(line.endswith("DPO pairs trained on") or line.endswith("DPO pair trained on") for line in ran)
    # what changed: the gold score's first and last round, each with its n, read in words
    rows = {row[0]: row for row in table_rows(page, "table-story-changes")}
    gold = rows["Gold-rubric score"]
    assert "(n=1: too few to tell)" in gold[2] and "(n=1: too few to tell)" in gold[3]
    assert gold[4] == "—" and gold[5].startswith("too few to tell")
    # the audit measure that failed is among them, its interval past the threshold said
    assert any("fooled" in name and "failed its audit check" in row[5] for name, row in rows.items())
    # what to trust: this run's settings apart from the findings
    settings = [li.get_attribute("class") for li in page.find_elements(By.CSS_SELECTOR, "#warnings-settings li")]
    findings = [li.get_attribute("class") for li in page.find_elements(By.CSS_SELECTOR, "#warnings-findings li")]
    assert "warning warning-adam-first-step" in settings and "warning warning-small-n" in settings
    assert "warning warning-judge-audit" in findings
    assert not {"warning warning-small-n", "warning warning-adam-first-step", "warning warning-cut-off"} & set(findings)
    adam = page.find_element(By.CSS_SELECTOR, "#warnings-settings li.warning-adam-first-step").text
    assert "1e-05 (step 1), 5e-06 (step 2)" in adam and "x its learning rate" not in adam
    steps = [code.text for code in page.find_elements(By.CSS_SELECTOR, "#story-next code")]
    assert "coevo plan examples/taiscore_full.yaml" in steps
    assert story.is_displayed() and _top(story) < SCREEN[1]  # on the first screen


def test_departures_are_one_folded_line_after_the_results(page):
    departures = page.find_element(By.ID, "departures")
    assert _top(departures) > _top(page.find_element(By.ID, "results"))
    fold = departures.find_element(By.TAG_NAME, "details")
    summary = fold.find_element(By.TAG_NAME, "summary")
    assert fold.get_attribute("open") is None and "This run is not its paper in" in summary.text
    table = fold.find_element(By.CSS_SELECTOR, "table.departures")
    assert not table.is_displayed()
    summary.click()
    assert table.is_displayed() and len(table.find_elements(By.TAG_NAME, "tr")) > 1


def _y_ranges(browser, plot_id: str) -> dict[str, list[float]]:
    """{panel title: [y low, y high]} as plotly laid the figure out on the page."""
    return browser.execute_script("""
        const p = document.getElementById(arguments[0]), l = p._fullLayout, out = {};
        l.annotations.forEach((a, i) => { out[a.text.replace(/<\\/?b>/g, '')] = l['yaxis' + (i ? i + 1 : '')].range; });
        return out;""", plot_id)


def test_plots_are_drawn_on_their_metrics_whole_scale(page):
    unfold(page)
    target = _y_ranges(page, "plot-what-the-loop-is-trained-for")
    low, high = target["gold score of π_r (held out)"]
    assert low == pytest.approx(1 - 0.27, abs=0.01) and high == pytest.approx(10 + 0.27, abs=0.01)  # 1–10, whole
    low, high = target["win rate vs round 0 (both orders)"]
    assert low == pytest.approx(-0.03, abs=0.01) and high == pytest.approx(1.03, abs=0.01)
    scores = _y_ranges(page, "plot-scores-by-round")
    assert scores["Gold-rubric score"] == pytest.approx(target["gold score of π_r (held out)"], abs=0.01)


def test_per_step_training_curves_show_length_cut_off_and_entropy(page, story_run):
    unfold(page)
    figure = "plot-training-curves-grpo-critic-per-step"
    traces = page.execute_script("""
        const p = document.getElementById(arguments[0]), l = p._fullLayout, titles = {};
        l.annotations.forEach((a, i) => { titles[i ? 'x' + (i + 1) : 'x'] = a.text.replace(/<\\/?b>/g, ''); });
        return p.data.map(t => [titles[t.xaxis], t.x, t.y]);""", figure)
    by_panel = {title: (x, y) for title, x, y in traces}
    store = RunStore(story_run, read_only=True)
    try:
        (history,) = [log["history"] for log in store.training_logs() if log["stage"].endswith("/critic")]
    finally:
        store.close()
    steps = [row for row in history if "train_runtime" not in row]
    for panel, key in (("completion length", "completions/mean_length"),
                       ("completions cut at their limit", "completions/clipped_ratio"), ("entropy", "entropy")):
        assert by_panel[panel] == ([row["step"] for row in steps], pytest.approx([row[key] for row in steps]))
    assert "<b>entropy</b>" in page.execute_script(
        "return document.getElementById('plot-training-curves-dpo-per-step')._fullLayout.annotations.map(a => a.text)")


def test_the_dpo_pairs_are_a_table_with_the_judges_verdict(page, story_run):
    fold = page.find_element(By.ID, "dpo-pairs-details")
    assert fold.get_attribute("open") is None
    fold.find_element(By.TAG_NAME, "summary").click()
    header = [th.text for th in page.find_elements(By.CSS_SELECTOR, "#table-dpo-pairs thead th")]
    assert header[2:5] == ["chosen", "rejected", "P(chosen better)"]
    store = RunStore(story_run, read_only=True)
    try:
        pairs = [pair for _, pair in store.get_records("pairs/coevolution/round1")]
    finally:
        store.close()
    rows = table_rows(page, "table-dpo-pairs")
    assert len(rows) == len(pairs) > 0
    for row, pair in zip(rows, pairs):
        assert row[0] == "1" and row[1] == pair["sample_id"]
        assert row[2].endswith(pair["chosen"]) and row[3].endswith(pair["rejected"])
        assert row[5] == "preferred y1"  # the pool judgment that picked it; this judge gave no probability


def test_round_0_and_round_n_answer_the_same_prompt_side_by_side(page, story_run):
    pair = page.find_element(By.CSS_SELECTOR, "#round-answers .rounds-pair")
    sample = pair.get_attribute("data-sample")
    left, right = pair.find_elements(By.CSS_SELECTOR, ".sbs > .answer")
    assert left.location["y"] == right.location["y"] and left.location["x"] < right.location["x"]
    assert left.find_element(By.CSS_SELECTOR, ".meta b").text == "round 0"
    assert right.find_element(By.CSS_SELECTOR, ".meta b").text == "round 1"
    store = RunStore(story_run, read_only=True)
    try:
        answers = {row["stage"]: row["rollout"].y0 for row in store.rollout_rows()
                   if row["rollout"].sample_id == sample and row["stage"].endswith("/eval")}
    finally:
        store.close()
    assert left.find_element(By.TAG_NAME, "pre").text == answers["coevolution/round0/eval"]
    assert right.find_element(By.TAG_NAME, "pre").text == answers["coevolution/round1/eval"]
    # a readable line: an answer's text box is no wider than 80 characters
    widths = page.execute_script("""
        const pre = arguments[0].querySelector('pre'), probe = document.createElement('span');
        probe.style.font = getComputedStyle(pre).font; probe.textContent = 'x'.repeat(80);
        document.body.appendChild(probe); const w = probe.getBoundingClientRect().width; probe.remove();
        return [pre.getBoundingClientRect().width, w];""", left)
    assert widths[0] <= widths[1] + 30  # 80 characters and the box's padding


def test_the_monitor_says_too_few_steps_and_names_its_anchor(page):
    status = page.find_element(By.ID, "monitor-status").text
    assert "too few steps to tell" in status and "No flag" not in text_of(page.find_element(By.ID, "reward-monitor"))
    anchor = page.find_element(By.CSS_SELECTOR, "#monitor-anchors dt").text
    assert anchor == "anchor: A checkable TAIScore on the constraints y0 breaks"
    titles = page.execute_script(
        "return document.getElementById('plot-reward-hacking-monitor-the-reward-and-its-anchors-by-step')"
        "._fullLayout.annotations.map(a => a.text)")
    assert any("A checkable TAIScore" in t for t in titles) and not any("python:" in t for t in titles)


def _folded_height(browser) -> int:
    browser.execute_script("document.querySelectorAll('details').forEach(d => d.open = false)")
    return browser.execute_script("return document.documentElement.scrollHeight")


@pytest.fixture
def screen(browser):
    """The browser at 1280 x 1080 for the test, back to the usual window afterwards."""
    from view_harness import WINDOW

    frame = browser.execute_script(
        "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]")
    browser.set_window_size(SCREEN[0] + frame[0], SCREEN[1] + frame[1])
    yield browser
    browser.set_window_size(WINDOW[0] + frame[0], WINDOW[1] + frame[1])


def test_the_story_page_fits_in_six_screens_before_its_folds(screen, story_viewer):
    open_run(screen, story_viewer, "taiscore")
    height = _folded_height(screen)
    assert height <= SCREENS * SCREEN[1], f"{height} px before any fold: {height / SCREEN[1]:.1f} screens"


@pytest.mark.parametrize("algorithm", ["rlac", "decoevo", "controls"])
def test_every_replay_run_page_fits_in_six_screens_before_its_folds(screen, viewer, algorithm):
    open_run(screen, viewer, algorithm)
    height = _folded_height(screen)
    assert height <= SCREENS * SCREEN[1], f"{algorithm}: {height} px before any fold"


def test_report_html_tells_the_same_story_offline(browser, story_viewer, story_run):
    open_run(browser, story_viewer, "taiscore")
    served = table_rows(browser, "table-story-changes")
    browser.get((story_run / "report.html").resolve().as_uri())
    settle(browser, WAIT)
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert table_rows(browser, "table-story-changes") == served
    assert browser.find_element(By.ID, "story").is_displayed()
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/favicon.ico " not in e["message"]]
    assert not errors, errors
