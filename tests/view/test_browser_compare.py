"""Comparing runs in `coevo view`, in headless Chromium: tick two runs in the runs list,
click "Compare selected", read the config difference and the overlaid curves.

The two runs are RLAC replay runs two settings apart (replay_runs.build_rlac_pair), served
by a viewer of their own: the session's viewer holds one run per algorithm, which the other
browser tests count on, and no two of its runs share a metric over rounds to overlay.
"""

from __future__ import annotations

import urllib.parse

import pytest
from replay_runs import RLAC_VARIANT, build_rlac_pair
# Selenium's names through test_browser, which skips (or, under CI, fails) where it is missing.
from test_browser import WAIT, By, WebDriverWait, check_page, click, header, table_rows, text_of
from view_harness import Viewer

from coevo.eval.metric_defs import describe

pytestmark = pytest.mark.timeout(180)

#: A drawn plot's y axes as plotly laid them out: [{title, range}], in panel order.
AXES = """
const layout = arguments[0]._fullLayout;
return Object.keys(layout).filter(k => /^yaxis\\d*$/.test(k))
  .sort((a, b) => (parseInt(a.slice(5)) || 1) - (parseInt(b.slice(5)) || 1))
  .map(k => ({title: (layout[k].title || {}).text || "", range: layout[k].range}));
"""
#: The y-axis titles a drawn plot's svg holds (`ytitle`, `y2title`, ...), in panel order.
DRAWN_TITLES = """
const number = t => parseInt(t.getAttribute('class').slice(1)) || 1;
return [...arguments[0].querySelectorAll('svg text')]
  .filter(t => /^y\\d*title$/.test(t.getAttribute('class')))
  .sort((a, b) => number(a) - number(b)).map(t => t.textContent);
"""


@pytest.fixture(scope="module")
def pair_viewer(tmp_path_factory):
    """`coevo view` over a folder holding the two RLAC runs "rlac-a" and "rlac-b"."""
    folder = tmp_path_factory.mktemp("compare_runs")
    runs = build_rlac_pair(folder)
    server = Viewer(runs["rlac-a"].parent, folder / "view.log")
    yield server
    server.stop()


def test_tick_two_runs_compare_and_see_the_difference_and_the_curves(browser, pair_viewer):
    viewer = pair_viewer
    browser.get(viewer.url + "/")
    check_page(browser, viewer)
    for run_id in ("rlac-a", "rlac-b"):
        box = browser.find_element(By.CSS_SELECTOR, f'#run-{run_id} input.compare-pick[value="{run_id}"]')
        box.click()
        assert box.is_selected()
    click(browser, browser.find_element(By.ID, "compare-button"))
    check_page(browser, viewer)
    url = urllib.parse.urlparse(browser.current_url)
    assert url.path == "/compare" and sorted(urllib.parse.parse_qs(url.query)["run"]) == ["rlac-a", "rlac-b"]

    # The config: the two settings the runs differ in are marked, and look different; the
    # identical ones are folded after them.
    rows = browser.find_elements(By.CSS_SELECTOR, "#table-compare-config tbody tr, #table-compare-same tbody tr")
    differing = [row for row in rows if "differs" in row.get_attribute("class")]
    assert sorted(row.get_attribute("data-key") for row in differing) == sorted(RLAC_VARIANT)
    for row in differing:
        cells = [cell.text.strip() for cell in row.find_elements(By.TAG_NAME, "td")]
        key = row.get_attribute("data-key")
        assert cells == [f"≠ {key}", "2", str(RLAC_VARIANT[key])], cells
    same = next(row for row in rows if row.get_attribute("data-key") == "algorithm")
    background = "return getComputedStyle(arguments[0].querySelector('td')).backgroundColor"
    assert browser.execute_script(background, differing[0]) != browser.execute_script(background, same)

    # The metrics: the title in words, the definition on hover, the unit and scale, the
    # interval and n, and B − A with both n (no interval: run a has 4 items).
    metrics = {row[0]: row for row in table_rows(browser, "table-compare-metrics")}
    meaning = describe("detection_rate")
    assert header(browser, "table-compare-metrics") == ["metric", "unit (scale)", "stage", "rlac-a", "rlac-b",
                                                        "rlac-b − rlac-a"]
    assert metrics[f"{meaning.title} detection_rate"][1:] == [
        "share of proposals (0–1)", "critic", "0.250 (n=4: too few to tell)", "0.167 [0.030, 0.564] (n=6)",
        "-0.083 (n=4 vs 6: too few to tell)"]
    label = browser.find_element(By.CSS_SELECTOR, '#table-compare-metrics tr[data-metric="detection_rate"] td.name')
    assert label.get_attribute("title").startswith(meaning.definition)

    # An overlaid curve: one drawn line per run, the legend naming both.
    plot = browser.find_element(By.ID, "plot-compare-detection-rate")
    WebDriverWait(browser, WAIT).until(lambda _: len(plot.find_elements(
        By.CSS_SELECTOR, "svg.main-svg .scatterlayer .trace")) == 2, "the curve does not have a line per run")
    legend = [text_of(t) for t in plot.find_elements(By.CSS_SELECTOR, ".legend .legendtext")]
    assert legend == ["rlac-a", "rlac-b"]

    # Every drawn plot names its y axis's unit, and a rate's axis spans all of 0–1.
    plots = browser.find_elements(By.CSS_SELECTOR, "div.plot")
    assert len(plots) > 4
    for drawn in plots:
        axes = browser.execute_script(AXES, drawn)
        assert axes and all(axis["title"] for axis in axes), (drawn.get_attribute("id"), axes)
        titles = browser.execute_script(DRAWN_TITLES, drawn)  # as the svg shows them, not only as laid out
        assert [a["title"] for a in axes] == titles, (drawn.get_attribute("id"), titles)
    [rate] = browser.execute_script(AXES, plot)
    assert rate["title"] == "share of proposals (0–1)"
    assert rate["range"][0] <= 0 and rate["range"][1] >= 1 and rate["range"][1] - rate["range"][0] < 1.2
    # The runs' per-step training, overlaid: a line per run in each shared stage's panels.
    training = browser.find_element(By.ID, "plot-compare-training-rlac-round1-generator")
    assert len(training.find_elements(By.CSS_SELECTOR, "svg.main-svg .scatterlayer .trace")) == 2 * 4
    assert [a["title"] for a in browser.execute_script(AXES, training)] == [
        "loss", "L2 norm", "β × log ratio", "share of pairs (0–1)"]

    # Only the differing settings, one click away.
    click(browser, browser.find_element(By.ID, "toggle-differing"))
    check_page(browser, viewer)
    rows = browser.find_elements(By.CSS_SELECTOR, "#table-compare-config tbody tr")
    keys = [row.get_attribute("data-key") for row in rows]
    assert sorted(keys) == sorted(RLAC_VARIANT)


def test_compare_with_one_run_ticked_asks_for_two(browser, pair_viewer):
    viewer = pair_viewer
    browser.get(viewer.url + "/")
    check_page(browser, viewer)
    browser.find_element(By.CSS_SELECTOR, 'input.compare-pick[value="rlac-a"]').click()
    click(browser, browser.find_element(By.ID, "compare-button"))
    check_page(browser, viewer)
    assert "Pick at least two runs" in browser.find_element(By.ID, "compare-error").text
