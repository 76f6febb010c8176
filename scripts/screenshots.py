"""`make screenshots`: a PNG of every page of `coevo view`, for the README.

    python scripts/screenshots.py [FOLDER] [--out docs/screenshots] [--width 1280 --height 900]

FOLDER is a run folder or a folder of runs; without it the replay runs the browser tests use
(controls, RLAC, DecoEvo; tests/view/replay_runs.py, a few seconds) are built in a temporary
folder. The viewer is started as a user starts it (`coevo view FOLDER --port P`), each page is
opened in headless Chromium at a fixed window size (`make browser` installs it), and what
the window shows (the top of the page) is saved:

    runs.png       the runs list               run.png       a run's page
    samples.png    its samples                 sample.png    one sample in full
    annotate.png   one pair to label           proposals.png an RLAC run's critic proposals
    skills.png     a DecoEvo run's skill versions

Each page is taken from the run that suits it best (run.png, samples.png and sample.png from
a TAIScore run where there is one: its training curves and x -> y0 -> c -> y1 stories); a
page no run has is left out, with a note. The README's screenshots: a real `coevo quickstart`
run folder (embedded model) beside the replay runs, in one folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "view"))  # the viewer harness and replay runs the tests use

from view_harness import WINDOW, Viewer, browser_missing, settle, start_browser  # noqa: E402

#: For each page: which run's page it is, in order of preference (None: any run).
RUN_PAGE_PREFERENCE = ["taiscore", "rlac", "decoevo", "controls", "refine", None]
SAMPLE_PREFERENCE = ["taiscore", "controls", "refine", "rlac", None]


def _runs(driver) -> list[tuple[str, str]]:
    """(run id, algorithm) of every row of the runs list on screen."""
    from selenium.webdriver.common.by import By

    out = []
    for row in driver.find_elements(By.CSS_SELECTOR, "#runs-table tbody tr"):
        cells = row.find_elements(By.TAG_NAME, "td")
        out.append((cells[0].text.strip(), cells[1].text.strip()))
    return out


def _pick(runs: list[tuple[str, str]], preference: list[str | None]) -> str | None:
    for algorithm in preference:
        for run_id, algo in runs:
            if algorithm is None or algo == algorithm:
                return run_id
    return None


def _full_sample(driver) -> str | None:
    """The link of the first listed sample that has both a critique and a revision (the
    whole x -> y0 -> c -> y1 story), one under its own critique (condition `matched`) if
    any; else of the first sample; None: no samples."""
    from selenium.webdriver.common.by import By

    columns = [th.text.strip() for th in driver.find_elements(By.CSS_SELECTOR, "#samples-table thead th")]
    rows = driver.find_elements(By.CSS_SELECTOR, "#samples-table tbody tr")
    whole = []
    for row in rows:
        cells = dict(zip(columns, (td.text.strip() for td in row.find_elements(By.TAG_NAME, "td"))))
        if cells.get("critique") and cells.get("y1"):
            whole.append((cells.get("condition") != "matched", row))
    if whole:
        return min(whole, key=lambda item: item[0])[1].find_element(By.TAG_NAME, "a").get_attribute("href")
    return rows[0].find_element(By.TAG_NAME, "a").get_attribute("href") if rows else None


def _first_pair(driver) -> str | None:
    """The link that starts annotating the first stage listed (opening it labels nothing)."""
    from selenium.webdriver.common.by import By

    links = driver.find_elements(By.CSS_SELECTOR, "#annotate-stages a.annotate-start")
    return links[0].get_attribute("href") if links else None


def shoot(driver, url: str, out: Path) -> None:
    """Open `url`, wait for it (plots drawn), save the window as `out`."""
    driver.get(url)
    settle(driver)
    time.sleep(0.3)  # plotly's last layout pass after the svg appears
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(out))
    print(f"{out}  <- {url}")


def take_all(folder: Path, out_dir: Path, size: tuple[int, int]) -> list[Path]:
    """Every page's PNG into `out_dir`; the paths written."""

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="coevo-view-log-") as logs:
        viewer = Viewer(folder, Path(logs) / "view.log")
        driver = start_browser(*size)
        try:
            def save(name: str, path: str) -> None:
                shoot(driver, viewer.url + path, out_dir / name)
                written.append(out_dir / name)

            save("runs.png", "/")
            runs = _runs(driver)
            if not runs:
                raise SystemExit(f"no run folders under {folder} (a run folder holds run.sqlite)")
            run_id = _pick(runs, RUN_PAGE_PREFERENCE)
            save("run.png", f"/runs/{run_id}")
            sample_run = _pick(runs, SAMPLE_PREFERENCE)
            save("samples.png", f"/runs/{sample_run}/samples")
            link = _full_sample(driver)
            if link:
                save("sample.png", link.removeprefix(viewer.url))
            else:
                print(f"note: run {sample_run} has no samples: sample.png left out")
            # The annotation page with a pair on it (the stages list where no stage has pairs),
            # under an annotator name (the page asks for one first; the cookie keeps it).
            driver.get(f"{viewer.url}/runs/{sample_run}/annotate?annotator=screenshots")
            settle(driver)
            pair = _first_pair(driver)
            save("annotate.png", pair.removeprefix(viewer.url) if pair else f"/runs/{sample_run}/annotate")
            for name, algorithm in (("proposals.png", "rlac"), ("skills.png", "decoevo")):
                chosen = _pick(runs, [algorithm])
                if chosen is None:
                    print(f"note: no {algorithm} run under {folder}: {name} left out")
                    continue
                save(name, f"/runs/{chosen}/{name.removesuffix('.png')}")
        finally:
            driver.quit()
            viewer.stop()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", type=Path,
                        help="a run folder or a folder of runs (default: build the replay runs)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots", help="where the PNGs go")
    parser.add_argument("--width", type=int, default=WINDOW[0])
    parser.add_argument("--height", type=int, default=WINDOW[1])
    args = parser.parse_args(argv)
    why = browser_missing()
    if why:
        print(f"cannot take screenshots: {why}", file=sys.stderr)
        return 1
    size = (args.width, args.height)
    if args.folder is not None:
        if not args.folder.is_dir():
            print(f"no such folder: {args.folder}", file=sys.stderr)
            return 1
        take_all(args.folder, args.out, size)
        return 0
    from replay_runs import build_all

    with tempfile.TemporaryDirectory(prefix="coevo-screenshots-") as tmp:
        runs = build_all(Path(tmp))
        take_all(next(iter(runs.values())).parent, args.out, size)
    return 0


if __name__ == "__main__":
    sys.exit(main())
