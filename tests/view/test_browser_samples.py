"""The sample pages in headless Chromium, reached as a person reaches them: from the samples
list, by clicking. Every model call on a sample page sits under the heading of the role and
stage it recorded (checked against the run's store, call by call), and the list's search box
and cut-off filter narrow the list. Fixtures: conftest.py; helpers: test_browser.py.
"""

from __future__ import annotations

import pytest
from replay_runs import PROMPTS, Y1
from test_browser import check_page, click, go, header, open_run, table_rows, text_of

from coevo.rundir.store import RunStore

try:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
except ImportError:  # test_browser skipped the module already (or raised under CI)
    pytest.skip("selenium is not installed", allow_module_level=True)

pytestmark = pytest.mark.timeout(180)


def _calls_under_headings(browser) -> list[tuple[dict, list[dict]]]:
    """The page's call headings in order, each with the calls listed under it."""
    out: list[tuple[dict, list[dict]]] = []
    for element in browser.find_elements(By.CSS_SELECTOR, "#sample-calls > h3.call-heading, #sample-calls > div.call"):
        if element.tag_name == "h3":
            out.append(({"role": element.get_attribute("data-role"), "stage": element.get_attribute("data-stage"),
                         "label": element.get_attribute("data-label"), "text": element.text}, []))
        else:
            out[-1][1].append({"key": element.get_attribute("data-key"), "index": int(element.get_attribute("data-index")),
                               "text": text_of(element)})
    return out


def test_each_call_on_a_sample_page_sits_under_its_own_role(browser, viewer, run_folders):
    store = RunStore(run_folders["controls"], read_only=True)
    recorded = {(c["key"], c["index"]): c for c in store.cached_calls(limit=None)}
    by_id = {row["id"]: row["rollout"] for row in store.rollout_rows()}
    store.close()
    open_run(browser, viewer, "controls")
    go(browser, viewer, "samples")
    rows = len(browser.find_elements(By.CSS_SELECTOR, "#samples-table tbody tr"))
    assert rows == len(PROMPTS) * 4
    seen_steps: set[str] = set()
    for i in range(rows):
        link = browser.find_elements(By.CSS_SELECTOR, "#samples-table tbody tr a.sample-link")[i]
        rollout = by_id[int(link.text)]
        click(browser, link)
        check_page(browser, viewer)
        headings = _calls_under_headings(browser)
        assert {h["label"] for h, _ in headings} >= {"initial response y0", "revision y1"}
        for heading, calls in headings:
            assert heading["role"] in heading["text"] and heading["label"] in heading["text"]
            # The generic control's critique is a fixed text: no model wrote it.
            if not (heading["label"] == "critique" and rollout.condition == "generic"):
                assert calls, f"{heading['text']}: no call on rollout {rollout.sample_id}"
            for call in calls:
                record = recorded[call["key"], call["index"]]["request"]["call"]
                assert (record["role"], record["stage"]) == (heading["role"], heading["stage"]), heading
                seen_steps.add(record["step"])
                if heading["label"] == "revision y1":
                    assert record["step"] == ("revise" if rollout.c is not None else "revise_no_critique")
                    assert rollout.y1 in call["text"]
                elif heading["label"] == "initial response y0":
                    assert record["step"] == "respond" and rollout.y0 in call["text"]
                elif heading["label"] == "critique":
                    assert record["step"] == "critique"
                else:
                    assert record["role"] == "judge:gold_rubric"
            # The page says where the text was made and how the call went.
            if calls:
                assert f"made in stage {heading['stage']}" in heading["text"]
            assert all("latency" in call["text"] and "tokens: prompt" in call["text"] for call in calls)
        browser.back()
        check_page(browser, viewer)
    assert seen_steps == {"respond", "critique", "revise", "revise_no_critique", "judge"}


def test_search_box_and_cut_off_filter_narrow_the_list(browser, viewer, run_folders):
    store = RunStore(run_folders["controls"], read_only=True)
    holding = [row["id"] for row in store.rollout_rows()
               if any("thumbprint" in (t or "").lower() for t in (row["rollout"].x, row["rollout"].y0,
                                                                  row["rollout"].c, row["rollout"].y1))]
    store.close()
    open_run(browser, viewer, "controls")
    go(browser, viewer, "samples")
    box = browser.find_element(By.ID, "filter-search")
    box.send_keys("THUMBPRINT")  # a word of one revision only, in another case
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    rows = table_rows(browser, "samples-table")
    assert [int(row[0]) for row in rows] == holding and len(holding) >= 4  # s1's revision in every condition
    assert all(Y1[1] in row[header(browser, "samples-table").index("y1")] for row in rows)
    assert browser.find_element(By.ID, "filter-search").get_attribute("value") == "THUMBPRINT"
    # No replay answer of this run reached its token limit: "some text cut off" lists none.
    Select(browser.find_element(By.ID, "filter-cut-off")).select_by_value("yes")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    assert browser.find_element(By.ID, "samples-empty").text.startswith("No rollout matches")
    Select(browser.find_element(By.ID, "filter-cut-off")).select_by_value("no")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    assert [int(row[0]) for row in table_rows(browser, "samples-table")] == holding  # the search still applies
