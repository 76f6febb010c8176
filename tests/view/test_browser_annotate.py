"""Annotation as a person does it in Chromium, for the cases a researcher must be able to
trust: a label corrected with the browser's Back button is the one the run keeps, the
review list shows it in terms of the texts, and undo takes it out of the run's store; a
batch's pages carry opaque ids only, mark a text cut off at its token limit, and end with
the annotator's agreement with the judge and its n.

Uses the session's viewer, browser and replay runs (conftest.py); labels are made under
a name of their own and undone at the end, so the other tests' counts are untouched.
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
from replay_runs import build_taiscore
from test_browser import WAIT, check_page, click, go, open_run, text_of
from view_harness import Viewer

from coevo.rundir.store import RunStore
from coevo.view.annotate_ids import batch_id, run_secret
from coevo.view.annotate_pairs import store_pairs

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


def _served(run, token: str) -> dict:
    """The server's record of the pair a page's token was served for: its key, its left side."""
    store = RunStore(run, read_only=True)
    try:
        return store.get_record("annotation_served", token)
    finally:
        store.close()


def _secret(run) -> bytes:
    store = RunStore(run, read_only=True)
    try:
        return run_secret(store)
    finally:
        store.close()


def _token(browser) -> str:
    return browser.find_element(By.CSS_SELECTOR, '#label-form input[name="token"]').get_attribute("value")


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
        batch = batch_id(_secret(run), "controls", "revision")  # the overview drew the run's id secret
        row = browser.find_element(By.CSS_SELECTOR, f'#annotate-stages tr[data-batch="{batch}"]')
        assert row.find_elements(By.TAG_NAME, "td")[3].text == "0"  # nothing labelled under this name yet
        click(browser, row.find_element(By.CSS_SELECTOR, "a.annotate-start"))
        check_page(browser, viewer)
        assert f"as {NAME}" in browser.find_element(By.ID, "annotate-progress").text
        pair = browser.find_element(By.ID, "pair")
        key = pair.get_attribute("data-pair")  # the pair's opaque id
        texts = {side: browser.find_element(By.ID, f"pair-{where}").text
                 for side, where in (("A", "left"), ("B", "right"))}
        served = _served(run, _token(browser))
        left, pair_key = served["left"], served["pair"]
        right = "y1" if left == "y0" else "y0"

        click(browser, browser.find_element(By.ID, "label-B"))
        check_page(browser, viewer)
        assert browser.find_element(By.ID, "pair").get_attribute("data-pair") != key  # on to the next pair
        assert _labels(run)[pair_key]["winner"] == right

        # Back: the same pair again, saying what was chosen; "A is better" now replaces it.
        browser.back()
        WebDriverWait(browser, WAIT).until(
            EC.text_to_be_present_in_element_attribute((By.ID, "pair"), "data-pair", key))
        check_page(browser, viewer)
        assert browser.find_element(By.ID, "pair-left").text == texts["A"]  # the same sides as before
        ActionChains(browser).send_keys("a").perform()
        WebDriverWait(browser, WAIT).until(
            lambda _: _labels(run).get(pair_key, {}).get("winner") == left,
            "the second label did not replace the first")
        check_page(browser, viewer)
        saved = _labels(run)
        assert list(saved) == [pair_key] and saved[pair_key]["label"] == "A"
        assert [h["winner"] for h in saved[pair_key]["history"]] == [right]

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


# -- opaque ids, cut-off texts, agreement at the end of a batch ----------------------------

#: A pair's key as the store writes it (`STAGE|KIND|RID[-RID]`): never in an annotator's page.
PAIR_KEY = re.compile(r"\|(revision|critique|vs_round0|vs_condition)\||\|\d+(-\d+)?\b")
TAI_NAME = "cut-tester"


@pytest.fixture(scope="module")
def tai_viewer(tmp_path_factory):
    """`coevo view` over a TAIScore replay run one of whose revisions ran past its token limit
    (replay_runs.build_taiscore), served on its own: its labels touch no other test's run."""
    folder = tmp_path_factory.mktemp("annotate_tai")
    run = build_taiscore(folder / "runs" / "tai", folder / "inputs")
    server = Viewer(run.parent, folder / "view.log")
    server.run = run
    yield server
    server.stop()


def _start_as(browser, viewer, name: str) -> None:
    field = browser.find_element(By.ID, "annotator")
    field.clear()
    field.send_keys(name)
    click(browser, browser.find_element(By.ID, "annotator-save"))
    check_page(browser, viewer)


def _no_key_anywhere(browser) -> None:
    """The url, the page's source and every form field of it carry opaque ids only."""
    url = urllib.parse.urlparse(browser.current_url)
    query = urllib.parse.parse_qs(url.query)
    assert set(query) <= {"batch", "pair", "annotator", "seed"}, query
    assert re.fullmatch(r"b-[0-9a-f]{12}", query["batch"][0]) and (
        "pair" not in query or re.fullmatch(r"p-[0-9a-f]{16}", query["pair"][0])), query
    main = browser.page_source.split("<main>")[1]
    assert not PAIR_KEY.search(main), PAIR_KEY.search(main)
    for stage in ("coevolution/round", "/eval", "/grpo", "/pool0"):  # the run's stages, conditions and rounds
        assert stage not in main, stage
    for field in browser.find_elements(By.CSS_SELECTOR, "main input[type=hidden]"):
        name, value = field.get_attribute("name"), field.get_attribute("value")
        pattern = {"batch": r"b-[0-9a-f]{12}", "pair": r"p-[0-9a-f]{16}", "annotator": re.escape(TAI_NAME)}
        assert re.fullmatch(pattern.get(name, r"[\w-]{20,}"), value), (name, value)


def test_a_batch_shows_opaque_ids_a_cut_off_mark_and_the_agreement_at_its_end(browser, tai_viewer):
    from replay_runs import TAI_TEXTS

    viewer, run = tai_viewer, tai_viewer.run
    long_revision = TAI_TEXTS[2][2]  # past the revision's token limit: its call was cut off
    store = RunStore(run, read_only=True)
    try:
        batches = {st: store_pairs(store, st)["revision"] for st, _ in store.rollout_stages()}
    finally:
        store.close()
    # The smallest batch holding the cut-off revision: a few clicks to its end.
    stage = min((st for st, pairs in batches.items() if any(long_revision in p.texts for p in pairs)),
                key=lambda st: len(batches[st]))
    n_pairs, cut_keys = len(batches[stage]), {p.key for p in batches[stage] if long_revision in p.texts}
    open_run(browser, viewer, "taiscore")
    go(browser, viewer, "annotate")
    _start_as(browser, viewer, TAI_NAME)
    assert stage not in browser.page_source.split("<main>")[1]  # the overview names batches, not stages
    batch = batch_id(_secret(run), stage, "revision")
    click(browser, browser.find_element(By.CSS_SELECTOR, f'#annotate-stages tr[data-batch="{batch}"] a.annotate-start'))
    check_page(browser, viewer)
    marked = 0
    for _ in range(n_pairs):
        _no_key_anywhere(browser)
        served = _served(run, _token(browser))
        texts = {"left": browser.find_element(By.ID, "pair-left").text,
                 "right": browser.find_element(By.ID, "pair-right").text}
        for side, text in texts.items():
            marks = browser.find_elements(By.ID, f"pair-{side}-cut")
            is_cut = served["pair"] in cut_keys and text == long_revision
            assert bool(marks) == is_cut, (side, text)
            if marks:  # shown above the text it marks, in words
                assert marks[0].is_displayed() and "cut off at its token limit" in marks[0].text
                marked += 1
        click(browser, browser.find_element(By.ID, "label-A"))
        check_page(browser, viewer)
    assert marked == len(cut_keys) >= 1
    # The end of the batch: the annotator's agreement with the judge, with its n.
    _no_key_anywhere(browser)
    assert browser.find_element(By.ID, "annotate-done").is_displayed()
    agreement = browser.find_element(By.ID, "annotate-agreement")
    n = int(agreement.get_attribute("data-n"))
    value = browser.find_element(By.ID, "annotate-agreement-value").text
    assert f"n={n}" in value and n <= n_pairs
    assert ("too few to tell" in value and "[" not in value) if n < 5 else re.search(r"\[\d\.\d{3}, \d\.\d{3}\]", value)
    assert "pairs you both decided" in agreement.text and "tied by you or the judge" in agreement.text
    # The review page: opaque ids in every row, change links included.
    click(browser, browser.find_element(By.ID, "annotate-review"))
    check_page(browser, viewer)
    main = browser.page_source.split("<main>")[1]
    assert not PAIR_KEY.search(main) and stage not in main
    links = [a.get_attribute("href") for a in browser.find_elements(By.CSS_SELECTOR, "a.review-change")]
    assert len(links) == n_pairs and all(re.search(r"\?batch=b-[0-9a-f]{12}&pair=p-[0-9a-f]{16}$", h) for h in links)
