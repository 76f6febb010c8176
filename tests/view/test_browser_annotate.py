"""Annotation as a person does it in Chromium, for the cases a researcher must be able to
trust: a label corrected with the browser's Back button is the one the run keeps, the
review list shows it in terms of the texts, and undo takes it out of the run's store.

Uses the session's viewer, browser and replay runs (conftest.py); labels are made under
a name of their own and undone at the end, so the other tests' counts are untouched.
"""

from __future__ import annotations

import urllib.parse

import pytest
from test_browser import WAIT, check_page, click, go, open_run, text_of

from coevo.store import RunStore

try:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # test_browser has already skipped (or, under CI, failed) the whole session
    pytest.skip("selenium is not installed", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)

NAME = "back-tester"


def _labels(run) -> dict[str, dict]:
    """This test's annotator's labels in the run's store: pair -> record."""
    store = RunStore(run, read_only=True)
    try:
        return {r["pair"]: r for _, r in store.get_records("annotation") if r.get("annotator") == NAME}
    finally:
        store.close()


def _served_left(run, pair: str) -> str:
    """Which candidate the server put on the left of `pair` for this annotator."""
    store = RunStore(run, read_only=True)
    try:
        [left] = [r["left"] for _, r in store.get_records("annotation_served")
                  if r["pair"] == pair and r["annotator"] == NAME]
        return left
    finally:
        store.close()


def test_back_then_another_label_replaces_it_and_undo_removes_it(browser, viewer, run_folders):
    run = run_folders["controls"]
    run_id = open_run(browser, viewer, "controls")
    go(browser, viewer, "annotate")
    # The name, asked once (the form is there whether or not this browser gave one before).
    field = browser.find_element(By.ID, "annotator")
    field.clear()
    field.send_keys(NAME)
    click(browser, browser.find_element(By.ID, "annotator-save"))
    check_page(browser, viewer)
    try:
        row = browser.find_element(By.CSS_SELECTOR, '#annotate-stages tr[data-stage="controls"][data-kind="revision"]')
        assert row.find_elements(By.TAG_NAME, "td")[3].text == "0"  # nothing labelled under this name yet
        click(browser, row.find_element(By.CSS_SELECTOR, "a.annotate-start"))
        check_page(browser, viewer)
        assert f"as {NAME}" in browser.find_element(By.ID, "annotate-progress").text
        pair = browser.find_element(By.ID, "pair")
        key = pair.get_attribute("data-pair")
        texts = {side: browser.find_element(By.ID, f"pair-{where}").text for side, where in (("A", "left"), ("B", "right"))}
        left = _served_left(run, key)
        right = "y1" if left == "y0" else "y0"

        click(browser, browser.find_element(By.ID, "label-B"))
        check_page(browser, viewer)
        assert browser.find_element(By.ID, "pair").get_attribute("data-pair") != key  # on to the next pair
        assert _labels(run)[key]["winner"] == right

        # Back: the same pair again, saying what was chosen; "A is better" now replaces it.
        browser.back()
        WebDriverWait(browser, WAIT).until(
            EC.text_to_be_present_in_element_attribute((By.ID, "pair"), "data-pair", key))
        check_page(browser, viewer)
        assert browser.find_element(By.ID, "pair-left").text == texts["A"]  # the same sides as before
        ActionChains(browser).send_keys("a").perform()
        WebDriverWait(browser, WAIT).until(
            lambda _: _labels(run).get(key, {}).get("winner") == left, "the second label did not replace the first")
        check_page(browser, viewer)
        saved = _labels(run)
        assert list(saved) == [key] and saved[key]["label"] == "A"
        assert [h["winner"] for h in saved[key]["history"]] == [right]

        # The review list: the pair, the text chosen (not a side's name), a change link, undo.
        click(browser, browser.find_element(By.ID, "annotate-review"))
        check_page(browser, viewer)
        rows = browser.find_elements(By.CSS_SELECTOR, "#review-table tbody tr")
        assert [r.get_attribute("data-pair") for r in rows] == [key]
        assert text_of(rows[0].find_element(By.CSS_SELECTOR, "td.choice")).strip() == texts["A"]
        assert "1 earlier" in rows[0].text
        change = rows[0].find_element(By.CSS_SELECTOR, "a.review-change").get_attribute("href")
        assert urllib.parse.parse_qs(urllib.parse.urlparse(change).query)["pair"] == [key]
        click(browser, rows[0].find_element(By.CSS_SELECTOR, ".review-undo button"))
        check_page(browser, viewer)
        assert browser.find_elements(By.ID, "review-empty")
        assert _labels(run) == {}
        status, body = viewer.get(f"/runs/{run_id}/annotate/export?file=human&annotator={NAME}")
        assert status == 404, body  # nothing of this annotator's left to export
    finally:
        _undo_all(viewer, run_id, run)


def _undo_all(viewer, run_id: str, run) -> None:
    """Take this test's labels out again whatever happened, so other tests count only theirs."""
    import urllib.request

    for pair in _labels(run):
        data = urllib.parse.urlencode({"pair": pair, "annotator": NAME}).encode()
        try:
            urllib.request.urlopen(viewer.url + f"/runs/{run_id}/annotate/undo", data=data, timeout=30).close()
        except OSError:
            pass
