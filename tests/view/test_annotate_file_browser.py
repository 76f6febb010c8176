"""`coevo annotate FILE.jsonl` as a person uses it: the command started as a user starts it,
two pairs labelled in headless Chromium, then `coevo eval annotations` reads the 2 labels.

The browser is the session's (conftest.py: it skips, naming `make browser`, where Chromium
is missing); the server is this test's own, stopped by its PID (its process group).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request

import pytest
from test_browser import WAIT, check_page, click
from view_harness import coevo_command, free_port

try:
    from selenium.webdriver.common.by import By
except ImportError:  # test_browser has already skipped (or, under CI, failed) the whole session
    pytest.skip("selenium is not installed", allow_module_level=True)

pytestmark = pytest.mark.timeout(120)

NAMES = ("step500", "step1000")
ROWS = [{"prompt": f"Describe season {i} in one line.", "a": f"checkpoint one says {i}",
         "b": f"checkpoint two says {i}"} for i in range(3)]


class Annotating:
    """`coevo annotate FILE --port P` in a subprocess: its page's URL once it answers."""

    def __init__(self, file, log):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._out = open(log, "wb")
        self.log = log
        self.process = subprocess.Popen(
            [*coevo_command(), "annotate", str(file), "--port", str(self.port), "--a-name", NAMES[0],
             "--b-name", NAMES[1]], stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.page = self._wait(60)

    def _wait(self, timeout: float) -> str:
        """The annotate page the command printed, once the server answers it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"`coevo annotate` exited with {self.process.returncode}:\n{self.output()}")
            found = re.search(r"coevo annotate: (http://\S+/annotate)", self.output())
            try:
                if found:
                    with urllib.request.urlopen(found.group(1), timeout=2) as reply:
                        if reply.status == 200:
                            return found.group(1)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"`coevo annotate` did not answer within {timeout:.0f} s:\n{self.output()}")

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        import signal

        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._out.close()


def test_coevo_annotate_serves_pairs_and_eval_annotations_reads_the_labels(browser, tmp_path):
    file = tmp_path / "completions.jsonl"
    file.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    server = Annotating(file, tmp_path / "annotate.log")
    try:
        assert "3 prompts, step500 vs step1000 (wins counted for step500); made now" in server.output()
        browser.get(server.page)
        check_page(browser, server)
        field = browser.find_element(By.ID, "annotator")
        field.clear()
        field.send_keys("carol")
        click(browser, browser.find_element(By.ID, "annotator-save"))
        check_page(browser, server)
        [row] = browser.find_elements(By.CSS_SELECTOR, "#annotate-stages tbody tr")  # one batch: the two systems
        click(browser, row.find_element(By.CSS_SELECTOR, "a.annotate-start"))
        seen = []
        for label in ("label-A", "label-B"):
            check_page(browser, server)
            texts = {browser.find_element(By.ID, f"pair-{side}").text for side in ("left", "right")}
            assert any(texts == {r["a"], r["b"]} for r in ROWS), texts
            main = browser.find_element(By.TAG_NAME, "main").text
            assert not any(name in main for name in NAMES), main  # blind: no system is named
            seen.append(browser.find_element(By.ID, "pair").get_attribute("data-pair"))
            click(browser, browser.find_element(By.ID, label))
        check_page(browser, server)
        assert len(set(seen)) == 2
        assert browser.find_element(By.ID, "annotate-progress").get_attribute("data-labelled") == "2"
    finally:
        server.stop()
    labels = tmp_path / "labels"
    done = subprocess.run([*coevo_command(), "eval", "annotations", str(tmp_path / "completions.annotate"),
                           "--out", str(labels), "--json"], capture_output=True, text=True, timeout=WAIT * 4)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["labels"] == 2
    lines = [json.loads(line) for line in (labels / "human.jsonl").read_text().splitlines()]
    assert len(lines) == 4 and {line["candidate"] for line in lines} == set(NAMES)
    assert [row["comparison"] for row in result["conditions"]] == ["step500 vs step1000"]
