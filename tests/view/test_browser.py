"""`coevo view` used as a person uses it: real run folders (replay runs), the viewer started
from the command line, every page driven in headless Chromium.

Each test starts from the runs list and clicks its way to the page it checks, then reads
what a person would see: the rows of a table, a drawn plot (plotly's <svg> inside
`div.plot`), a diff, the buttons and keys of the annotation page. Every page is also held to
two rules of a local viewer: no script error in the browser's console, and nothing fetched
from anywhere but the viewer itself (it must work offline).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import urllib.parse
from pathlib import Path

import pytest
from replay_runs import PROMPTS, Y0, Y1
from view_harness import coevo_command, settle

try:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import Select, WebDriverWait
except ImportError:
    if os.environ.get("CI"):  # `make test` installs it: under CI a skip would hide a broken install
        raise
    pytest.skip("selenium is not installed: `make install` (the `test` extra) installs it", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)

WAIT = 15  # seconds a page may take to show what a test waits for


# -- what every page is held to ------------------------------------------------------------

def check_page(browser, viewer) -> None:
    """The page has a heading, raised no script error, failed to load nothing it asked for,
    and fetched nothing from anywhere but the viewer."""
    settle(browser, WAIT)
    headings = [h.text.strip() for h in browser.find_elements(By.TAG_NAME, "h1")]
    assert any(headings), (f"no <h1> on {browser.current_url}; the page reads: "
                           f"{browser.find_element(By.TAG_NAME, 'body').text[:500]!r}")
    # A missing favicon is the browser asking, not the page: every other failed load counts.
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/favicon.ico " not in e["message"]]
    assert not errors, f"script errors on {browser.current_url}: {errors}"
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    off_site = [url for url in fetched if not url.startswith(viewer.url)]
    assert not off_site, f"{browser.current_url} fetched from outside the viewer (no CDN: offline): {off_site}"


def click(browser, element) -> None:
    """Click as a person does and wait for the next page."""
    element.click()
    wait_for_next_page(browser, element)


def wait_for_next_page(browser, old_element) -> None:
    """Wait until `old_element`'s page has been replaced. While Chromium swaps documents,
    asking about the old node can fail with an inspector error ("Node with given id does not
    belong to the document") instead of the stale-element error `staleness_of` expects: that
    is the swap under way, so it is polled through (seen once in CI)."""
    WebDriverWait(browser, WAIT, ignored_exceptions=(WebDriverException,)).until(
        EC.staleness_of(old_element), f"{browser.current_url}: the page did not change")


def open_run(browser, viewer, algorithm: str) -> str:
    """From the runs list, click the run of `algorithm`; its run id."""
    browser.get(viewer.url + "/")
    check_page(browser, viewer)
    for row in browser.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        if cells[1].text.strip() == algorithm:
            link = cells[0].find_element(By.TAG_NAME, "a")
            run_id = link.text.strip()
            click(browser, link)
            assert urllib.parse.urlparse(browser.current_url).path == f"/runs/{run_id}"
            check_page(browser, viewer)
            return run_id
    raise AssertionError(f"no {algorithm} run in the runs list")


#: Opens every fold (<details>) of the page; True once view.js has laid out every plot the
#: folds held for the width it now has.
UNFOLD = "document.querySelectorAll('details').forEach(d => d.open = true)"
UNFOLDED = """
return [...document.querySelectorAll('div.plot')].every(p => {
  const svg = p.querySelector('svg.main-svg');
  return svg && Math.abs(svg.getBoundingClientRect().width - p.clientWidth) <= 3;
});
"""


def unfold(browser) -> None:
    """Open every <details> of the page (the run page folds its long tables and plot grids), and
    wait for the plots inside to be drawn at their box's width."""
    browser.execute_script(UNFOLD)
    WebDriverWait(browser, WAIT).until(lambda d: d.execute_script(UNFOLDED), "a plot was not laid out once unfolded")


def go(browser, viewer, nav: str) -> None:
    """Click one of the run's navigation links (Overview, Samples, Annotate, Proposals, Skills)."""
    click(browser, browser.find_element(By.ID, f"nav-{nav}"))
    check_page(browser, viewer)
    assert "active" in browser.find_element(By.ID, f"nav-{nav}").get_attribute("class")


def table_rows(browser, table_id: str) -> list[list[str]]:
    return [[cell.text.strip() for cell in row.find_elements(By.TAG_NAME, "td")]
            for row in browser.find_elements(By.CSS_SELECTOR, f"#{table_id} tbody tr")]


def header(browser, table_id: str) -> list[str]:
    return [th.text.strip() for th in browser.find_elements(By.CSS_SELECTOR, f"#{table_id} thead th")]


def text_of(element) -> str:
    """All of an element's text, the folded-away parts (<details>) included."""
    return element.get_attribute("textContent")


# -- the pages -----------------------------------------------------------------------------

def test_runs_list_shows_every_run_with_its_status(browser, viewer, run_folders):
    browser.get(viewer.url + "/")
    check_page(browser, viewer)
    rows = table_rows(browser, "runs-table")
    assert sorted(row[1] for row in rows) == sorted(run_folders)  # one row per run, by algorithm
    assert {row[2] for row in rows} == {"finished"}
    by_algorithm = {row[1]: row for row in rows}
    rollouts = header(browser, "runs-table").index("rollouts")
    assert by_algorithm["controls"][rollouts] == str(len(PROMPTS) * 4)  # 3 prompts x 4 conditions


@pytest.mark.parametrize("algorithm", ["rlac", "decoevo"])
def test_run_page_draws_its_plots(browser, viewer, run_folders, algorithm):
    from coevo.rundir.store import RunStore

    open_run(browser, viewer, algorithm)
    unfold(browser)  # the grids of every metric and the training curves are folded
    plots = browser.find_elements(By.CSS_SELECTOR, "div.plot")
    assert plots, "the run page has no plot"
    rounds_or_steps = 0
    for plot in plots:
        assert plot.get_attribute("id").startswith("plot-"), plot.get_attribute("outerHTML")[:200]
        assert plot.find_elements(By.CSS_SELECTOR, "svg.main-svg .scatterlayer .trace"), \
            f"plot {plot.get_attribute('id')} has no drawn trace"
        assert plot.size["height"] > 100 and plot.size["width"] > 200
        # Rounds and steps are whole numbers: an axis of rounds has no 0.25 ticks.
        name = plot.get_attribute("id")
        if "round" in name or "step" in name:
            ticks = [text_of(t) for t in plot.find_elements(By.CSS_SELECTOR, ".xaxislayer-above text")]
            assert ticks and all(re.fullmatch(r"\d+", t) for t in ticks), (name, ticks)
            rounds_or_steps += 1
    assert rounds_or_steps, "no plot over rounds or steps"
    # The loop's targets come first, drawn, their round and step axes on whole numbers.
    assert plots[0].get_attribute("id") == "plot-what-the-loop-is-trained-for"
    axes = browser.execute_script(
        "const l = arguments[0]._fullLayout; return Object.keys(l).filter(k => k.startsWith('xaxis'))"
        ".map(k => [l[k].title.text || '', l[k].type, (l[k]._vals || []).map(v => v.text)])", plots[0])
    assert any(kind == "linear" for _, kind, _ in axes), axes
    for _title, kind, ticks in axes:
        assert kind == "category" or (ticks and all(re.fullmatch(r"\d+", t) for t in ticks)), axes

    # Per-step training curves: each training stage's loss as TRL logged it, step by step.
    store = RunStore(run_folders[algorithm], read_only=True)
    try:
        logs = store.training_logs()
    finally:
        store.close()
    if algorithm == "rlac":
        assert len(logs) == 4  # generator and critic, 2 rounds
    curves = [p.get_attribute("id") for p in plots if "training" in p.get_attribute("id")]
    assert bool(curves) == bool(logs), (curves, [log["stage"] for log in logs])
    if logs:
        traces = browser.execute_script(
            "return arguments[0].map(id => document.getElementById(id).data).flat()"
            ".map(t => [t.name, t.x, t.y])", curves)
        for log in logs:
            steps, loss = [h["step"] for h in log["history"]], [h["loss"] for h in log["history"]]
            assert [log["stage"], steps, pytest.approx(loss)] in traces, (log["stage"], traces)


def _run_page_content(browser) -> dict:
    """What a run page shows: its heading, its tables (id -> rows), its plots' ids."""
    tables = {t.get_attribute("id"): table_rows(browser, t.get_attribute("id"))
              for t in browser.find_elements(By.CSS_SELECTOR, "main table[id]")}
    return {"h1": browser.find_element(By.TAG_NAME, "h1").text, "tables": tables,
            "plots": [p.get_attribute("id") for p in browser.find_elements(By.CSS_SELECTOR, "div.plot")]}


def test_report_html_is_the_run_page_and_opens_offline(browser, viewer, run_folders):
    """report.html, opened from disk: the served run page's heading, tables and plots, all
    drawn with nothing fetched (one self-contained file)."""
    open_run(browser, viewer, "rlac")
    served = _run_page_content(browser)
    assert served["tables"] and served["plots"]
    browser.get((run_folders["rlac"] / "report.html").resolve().as_uri())
    settle(browser, WAIT)
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched == [], f"report.html fetched {fetched}: it must be one self-contained file"
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/favicon.ico " not in e["message"]]
    assert not errors, errors
    assert _run_page_content(browser) == served


def test_samples_filter_and_one_sample_with_its_diff(browser, viewer):
    run_id = open_run(browser, viewer, "controls")
    go(browser, viewer, "samples")
    assert len(table_rows(browser, "samples-table")) == len(PROMPTS) * 4
    columns = header(browser, "samples-table")
    condition, sample = columns.index("condition"), columns.index("sample")

    # Filter: the matched condition, then only rollouts with an unreadable judgment.
    Select(browser.find_element(By.ID, "filter-condition")).select_by_value("matched")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    rows = table_rows(browser, "samples-table")
    assert [row[condition] for row in rows] == ["matched"] * len(PROMPTS)
    Select(browser.find_element(By.ID, "filter-validity")).select_by_value("invalid")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    rows = table_rows(browser, "samples-table")
    assert [(row[condition], row[sample]) for row in rows] == [("matched", "s2")]  # the third y1's judgment
    assert "invalid" in rows[0][columns.index("judges: score")]

    # Sorted by the gold judge's score, high first.
    browser.get(f"{viewer.url}/runs/{run_id}/samples")
    check_page(browser, viewer)
    Select(browser.find_element(By.ID, "filter-condition")).select_by_value("matched")
    Select(browser.find_element(By.ID, "filter-judge")).select_by_value("gold_rubric")
    Select(browser.find_element(By.ID, "filter-sort")).select_by_value("score")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    rows = table_rows(browser, "samples-table")
    assert [row[sample] for row in rows] == ["s1", "s0", "s2"]  # 7.25, 5.5, then the unreadable one

    # One sample: the texts side by side, the y0 -> y1 diff, the judge's reasons, the calls.
    link = browser.find_element(By.CSS_SELECTOR, "#samples-table tbody tr a")
    click(browser, link)
    check_page(browser, viewer)
    assert "s1" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_element(By.CSS_SELECTOR, "#text-y0 pre").text == Y0[1]
    assert browser.find_element(By.CSS_SELECTOR, "#text-y1 pre").text == Y1[1]
    diff = browser.find_element(By.ID, "sample-diff")
    deleted = " ".join(d.text for d in diff.find_elements(By.TAG_NAME, "del"))
    inserted = " ".join(i.text for i in diff.find_elements(By.TAG_NAME, "ins"))
    assert "was" in deleted and "thumbprint" in inserted and "tide" in inserted
    assert "thumbprint" not in deleted and "was" not in inserted
    criteria = table_rows(browser, "criteria-gold_rubric")
    assert [row[:2] for row in criteria] == [["clarity", "8"], ["detail", "7"]]
    assert "a concrete image" in criteria[0][2]
    calls = text_of(browser.find_element(By.ID, "sample-calls"))
    assert Y1[1] in calls and "Revised Response:" in calls  # the reviser's call: its request and answer


def test_rlac_proposals_show_verdicts_and_evidence(browser, viewer):
    open_run(browser, viewer, "rlac")
    go(browser, viewer, "proposals")
    # 2 rounds x K=2 outputs x N=2 proposals: per round one caught, one survived, two invalid.
    assert [row[:5] for row in table_rows(browser, "verdict-counts")] == [
        ["1", "4", "1 (25 %)", "1 (25 %)", "2 (50 %)"], ["2", "4", "1 (25 %)", "1 (25 %)", "2 (50 %)"]]
    shown = browser.find_elements(By.CSS_SELECTOR, "#proposals-list .proposal")
    assert sorted(p.get_attribute("data-verdict") for p in shown) == sorted(
        ["caught"] * 2 + ["survived"] * 2 + ["invalid"] * 4)

    Select(browser.find_element(By.ID, "filter-verdict")).select_by_value("caught")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    shown = browser.find_elements(By.CSS_SELECTOR, "#proposals-list .proposal")
    assert len(shown) == 2 and {p.get_attribute("data-verdict") for p in shown} == {"caught"}
    for proposal in shown:
        text = text_of(proposal)
        assert "Einstein was born in Vienna." in text  # the fact the critic claimed is wrong
        assert "He was born in Vienna." in text  # the sentence of the output it names
        assert "Kingdom of Württemberg" in text  # the validator's evidence: the retrieved passage


def test_decoevo_skills_show_versions_decisions_and_diffs(browser, viewer):
    open_run(browser, viewer, "decoevo")
    go(browser, viewer, "skills")
    assert browser.find_elements(By.CSS_SELECTOR, "div.plot"), "no proxy-vs-gold trajectory plot"

    def version(name: str) -> tuple[str, list[str], list[str]]:
        """(decision, added lines, removed lines) of one version, as the page shows them."""
        box = browser.find_element(By.ID, f"version-decoevo-seed0-{name}")
        return (box.get_attribute("data-decision"),
                [text_of(e) for e in box.find_elements(By.CSS_SELECTOR, "pre.diff .add")],
                [text_of(e) for e in box.find_elements(By.CSS_SELECTOR, "pre.diff .del")])

    # DecoEvo on seed 0 (see decoevo_fakes.method_telling_rules): the solver's edits are
    # accepted; the rubric generator's easy rubric is refused, its hard one accepted.
    assert version("solver-v1") == ("accepted", ["+SKILL V1"], ["-SKILL V0"])
    assert version("solver-v3") == ("accepted", ["+SKILL V3 HARD"], ["-SKILL V2"])
    decision, added, _ = version("rubric_generator-v1")
    assert (decision, added) == ("rejected", ["+EASY GENERATOR SKILL"])
    decision, added, _ = version("rubric_generator-v2")
    assert (decision, added) == ("accepted", ["+HARD GENERATOR SKILL"])

    Select(browser.find_element(By.ID, "filter-decision")).select_by_value("rejected")
    click(browser, browser.find_element(By.ID, "filter-apply"))
    check_page(browser, viewer)
    shown = browser.find_elements(By.CSS_SELECTOR, ".version")
    assert shown and {box.get_attribute("data-decision") for box in shown} == {"rejected"}
    assert any("EASY GENERATOR SKILL" in text_of(box) for box in shown)


# -- annotation: keys -> labels in the store -> export -> `coevo eval agreement` -----------

def _judge_prefers(store, pair_key: str) -> str | None:
    """What the run's gold judge says of a revision pair, read from the store itself:
    "y1", "y0", "tie", or None where either judgment is unreadable."""
    rollout = store.rollout_row(int(pair_key.rsplit("|", 1)[1]))["rollout"]
    after, before = rollout.judgments["gold_rubric"], rollout.judgments["gold_rubric_y0"]
    if not (after.valid and before.valid):
        return None
    return "y1" if after.score > before.score else "y0" if after.score < before.score else "tie"


def _coevo(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([*coevo_command(), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"coevo {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_annotation_round_trip_into_agreement(browser, viewer, run_folders, tmp_path):
    """Label pairs with the keys a / b / t, leave and come back (resumed), export the labels,
    and get judge-human agreement from `coevo eval agreement`: the numbers it prints are the
    ones the labels made against the judge's scores in the store."""
    from selenium.webdriver.common.action_chains import ActionChains

    from coevo.rundir.store import RunStore

    run = run_folders["controls"]
    run_id = open_run(browser, viewer, "controls")
    go(browser, viewer, "annotate")
    name = browser.find_element(By.ID, "annotator")  # asked once; the default name keeps the pairs' own keys
    name.clear()
    name.send_keys("annotator1")
    click(browser, browser.find_element(By.ID, "annotator-save"))

    def start_row():
        # Batches go by opaque ids: the controls stage's revision pairs are the one revision batch.
        row = browser.find_element(By.CSS_SELECTOR, '#annotate-stages tr[data-kind="revision"]')
        return row, [td.text.strip() for td in row.find_elements(By.TAG_NAME, "td")]

    row, cells = start_row()
    assert cells[2:4] == [str(len(PROMPTS) * 4), "0"]  # one y0-vs-y1 pair per rollout, none labelled
    click(browser, row.find_element(By.CSS_SELECTOR, "a.annotate-start"))
    check_page(browser, viewer)

    labels: dict[str, str] = {}  # pair -> what this person preferred: y0, y1 or tie
    expected = {"n_pairs": 0, "n_agree": 0, "n_tied": 0}
    disagreed = False
    reader = RunStore(run, read_only=True)
    try:
        for i in range(6):
            if i == 3:  # leave for the runs list, come back: the next pair is a new one
                open_run(browser, viewer, "controls")
                go(browser, viewer, "annotate")
                row, cells = start_row()
                assert cells[3] == "3"
                click(browser, row.find_element(By.CSS_SELECTOR, "a.annotate-start"))
                check_page(browser, viewer)
            progress = browser.find_element(By.ID, "annotate-progress")
            assert progress.get_attribute("data-labelled") == str(i)
            shown = browser.find_element(By.ID, "pair")
            # The page names the pair by an opaque id; its key is the server's (the served token's record).
            token = browser.find_element(By.CSS_SELECTOR, '#label-form input[name="token"]').get_attribute("value")
            key = reader.get_record("annotation_served", token)["pair"]
            assert key not in labels, f"pair {key} came back after it was labelled"
            # The judge's verdict is hidden: none of its scores' reasons are on the page.
            page = text_of(browser.find_element(By.TAG_NAME, "main"))
            assert "gold_rubric" not in page and "concrete image" not in page and "generic and flat" not in page
            left = browser.find_element(By.ID, "pair-left").text
            right = browser.find_element(By.ID, "pair-right").text
            assert {left, right} <= set(Y0) | set(Y1) and (left in Y1) != (right in Y1)
            side = {"y1": "a" if left in Y1 else "b", "y0": "b" if left in Y1 else "a", "tie": "t"}
            judge = _judge_prefers(reader, key)
            if i == 3:
                choice = "tie"
            elif not disagreed and i >= 1 and judge in ("y0", "y1"):
                choice, disagreed = ("y0" if judge == "y1" else "y1"), True
            else:
                choice = judge if judge in ("y0", "y1") else "y1"
            ActionChains(browser).send_keys(side[choice]).perform()
            wait_for_next_page(browser, shown)
            check_page(browser, viewer)
            # Saved at once, into the run's store.
            saved = dict(reader.get_records("annotation"))
            assert len(saved) == i + 1 and saved[key]["winner"] == choice, saved.get(key)
            labels[key] = choice
            if judge is not None:
                if choice == "tie" or judge == "tie":
                    expected["n_tied"] += 1
                else:
                    expected["n_pairs"] += 1
                    expected["n_agree"] += choice == judge
    finally:
        reader.close()
    assert disagreed and expected["n_pairs"] >= 2, (labels, expected)

    # Export with the CLI; the viewer's export serves the same labels.
    out = tmp_path / "annotations"
    exported = json.loads(_coevo("eval", "annotations", str(run), "--out", str(out), "--json").stdout.splitlines()[-1])
    assert exported["labels"] == len(labels) and exported["judge_name"] == "gold_rubric"
    human = [json.loads(line) for line in Path(exported["human"]).read_text().splitlines()]
    status, body = viewer.get(f"/runs/{run_id}/annotate/export?file=human")
    assert status == 200 and [json.loads(line) for line in body.splitlines()] == human
    by_pair = {}
    for line in human:
        by_pair.setdefault(line["group"], {})[line["candidate"]] = line["score"]
    assert {k: ("tie" if v["y0"] == v["y1"] else max(v, key=v.get)) for k, v in by_pair.items()} == labels

    # Judge-human agreement is one command.
    report = json.loads(_coevo("eval", "agreement", "--a", exported["human"], "--b", exported["judge"],
                               "--json").stdout.splitlines()[-1])
    assert {k: report[k] for k in expected} == expected
    assert report["agreement"] == pytest.approx(expected["n_agree"] / expected["n_pairs"])
    table = _coevo("eval", "agreement", "--a", exported["human"], "--b", exported["judge"]).stdout
    numbers = [float(n) for n in re.findall(r"\d+\.\d+", table)]
    assert "agreement" in table and any(abs(n - report["agreement"]) < 0.005 for n in numbers), table


# -- `make screenshots` --------------------------------------------------------------------

def test_screenshots_script_saves_every_page(browser, runs_root, tmp_path):
    """scripts/screenshots.py on the replay runs: one PNG per page, each the window's size."""
    import importlib.util
    import struct

    from view_harness import WINDOW

    path = Path(__file__).resolve().parents[2] / "scripts" / "screenshots.py"
    spec = importlib.util.spec_from_file_location("coevo_screenshots", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    written = script.take_all(runs_root, tmp_path, WINDOW)
    names = ["runs.png", "run.png", "samples.png", "sample.png", "annotate.png", "proposals.png", "skills.png"]
    assert sorted(p.name for p in written) == sorted(names)
    for name in names:
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert struct.unpack(">II", data[16:24]) == WINDOW, name  # IHDR: width, height
