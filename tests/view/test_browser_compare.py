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
from test_browser import WAIT, By, WebDriverWait, check_page, click, table_rows, text_of
from view_harness import Viewer

from coevo.metric_defs import describe

pytestmark = pytest.mark.timeout(180)


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

    # The metrics: the title in words, the definition on hover, the interval and n.
    metrics = {row[0]: row for row in table_rows(browser, "table-compare-metrics")}
    meaning = describe("detection_rate")
    assert metrics[f"{meaning.title} detection_rate"][2:] == ["0.250 (n=4: too few to tell)",
                                                              "0.167 [0.030, 0.564] (n=6)"]
    label = browser.find_element(By.CSS_SELECTOR, '#table-compare-metrics tr[data-metric="detection_rate"] td.name')
    assert label.get_attribute("title").startswith(meaning.definition)

    # An overlaid curve: one drawn line per run, the legend naming both.
    plot = browser.find_element(By.ID, "plot-compare-detection-rate")
    WebDriverWait(browser, WAIT).until(lambda _: len(plot.find_elements(
        By.CSS_SELECTOR, "svg.main-svg .scatterlayer .trace")) == 2, "the curve does not have a line per run")
    legend = [text_of(t) for t in plot.find_elements(By.CSS_SELECTOR, ".legend .legendtext")]
    assert legend == ["rlac-a", "rlac-b"]

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
