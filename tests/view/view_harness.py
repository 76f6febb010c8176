"""`coevo view` as a user starts it, and headless Chromium to look at it: what the browser
tests (conftest.py) and scripts/screenshots.py share.

- `Viewer`: `coevo view FOLDER --port P` in a subprocess on 127.0.0.1, waited for until it
  answers, stopped by its PID (its process group);
- `start_browser`: Debian's `chromium` + `chromium-driver` under Selenium, headless, at a
  fixed window size; `browser_missing` says why it cannot run (naming `make browser`).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("COEVO_CHROMEDRIVER", "/usr/bin/chromedriver")
#: The window every test (and every screenshot) uses: pages are laid out the same each time.
WINDOW = (1280, 900)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def coevo_command() -> list[str]:
    """The `coevo` a user runs: the console script beside this Python, else the same entry."""
    script = Path(sys.executable).with_name("coevo")
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from coevo.cli import main; sys.argv[0] = 'coevo'; sys.exit(main())"]


class Viewer:
    """`coevo view` running in a subprocess: its URL, its PID, its output (in a log file)."""

    def __init__(self, folder: Path, log: Path, port: int | None = None, timeout: float = 60.0):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self._out = open(log, "wb")
        # Its own session (process group): stopping it stops a server it forked too.
        self.process = subprocess.Popen([*coevo_command(), "view", str(folder), "--port", str(self.port)],
                                        stdout=self._out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise

    def _wait(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"`coevo view` exited with code {self.process.returncode} before it "
                                   f"answered:\n{self.output()}")
            try:
                with urllib.request.urlopen(self.url + "/", timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"`coevo view` did not answer on {self.url} within {timeout:.0f} s:\n{self.output()}")

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def get(self, path: str) -> tuple[int, str]:
        """GET a path of the viewer: (status, body)."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=30) as reply:
                return reply.status, reply.read().decode("utf-8", errors="replace")
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode("utf-8", errors="replace")

    def stop(self) -> None:
        """Stop this viewer by its PID (its process group): SIGTERM, then SIGKILL after 10 s."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self._out.close()


def browser_missing() -> str | None:
    """Why headless Chromium cannot run here (None: it can)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        return (f"{' and '.join(missing)} not found: install Debian's chromium and chromium-driver "
                "with `make browser` (as root) to run the viewer's browser tests")
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed: `make install` (the `test` extra) installs it"
    return None


def start_browser(width: int = WINDOW[0], height: int = WINDOW[1]):
    """A headless Chromium under Selenium whose page is width x height; the browser's console
    log is kept (tests read its errors). Nothing is downloaded: both binaries are Debian's."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--disable-extensions", "--no-first-run", "--hide-scrollbars",
                f"--window-size={width},{height}", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    # --window-size is the outer window: grow it by the browser's own frame, so that the
    # page (and every screenshot) gets exactly width x height.
    inner_width, inner_height = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    if (inner_width, inner_height) != (width, height):
        driver.set_window_size(2 * width - inner_width, 2 * height - inner_height)
    return driver


def settle(driver, wait: float = 15.0) -> None:
    """Wait for the page to finish loading, then for every plot on it to be drawn (plotly
    puts an <svg class="main-svg"> in each `div.plot`)."""
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, wait).until(lambda d: d.execute_script("return document.readyState") == "complete")
    WebDriverWait(driver, wait).until(lambda d: d.execute_script(
        "return [...document.querySelectorAll('div.plot')].every(p => p.querySelector('svg.main-svg'))"),
        f"a div.plot on {driver.current_url} was not drawn by plotly")
