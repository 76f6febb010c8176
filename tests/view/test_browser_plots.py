"""The run page's plots survive a window resize, in headless Chromium: each plot's box keeps
its figure's height, so no plot covers the one below it, and every drawn <svg> stays inside
its box (a resize from 1400 to 1000 px once shrank every box to 320 px while the plots kept
their height, and the GRPO and DPO grids covered the panels and titles under them).

Two pages: the RLAC replay run served by `coevo view` (metric grids of one and two rows, the
DPO training grid) and a TAIScore-shaped run's report.html opened from disk (the GRPO grid of
three rows, the DPO grid, the box plot)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from test_browser import WAIT, check_page, open_run, unfold
from view_harness import WINDOW, settle

from coevo.rundir.store import RunStore
from coevo.view.export import write_report

pytestmark = pytest.mark.timeout(180)

#: The plot boxes and titles that overlap, and the svgs drawn outside their box.
LAYOUT_FAULTS = """
const boxes = [...document.querySelectorAll('div.plot, .plot-title')].map(e => {
  const r = e.getBoundingClientRect();
  return {name: e.id || 'title "' + e.textContent.trim() + '"', l: r.left, t: r.top, r: r.right, b: r.bottom};
});
const faults = [];
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const a = boxes[i], b = boxes[j];
  if (a.l < b.r - 1 && b.l < a.r - 1 && a.t < b.b - 1 && b.t < a.b - 1) faults.push(a.name + ' overlaps ' + b.name);
}
document.querySelectorAll('div.plot').forEach(p => {
  const r = p.getBoundingClientRect();
  p.querySelectorAll('svg.main-svg').forEach(s => {
    const q = s.getBoundingClientRect();
    if (q.left < r.left - 1 || q.top < r.top - 1 || q.right > r.right + 1 || q.bottom > r.bottom + 1)
      faults.push(p.id + ': its ' + Math.round(q.width) + 'x' + Math.round(q.height) + ' plot is outside its '
                  + Math.round(r.width) + 'x' + Math.round(r.height) + ' box');
  });
});
// the panel titles inside a grid (plotly annotations) must not run into each other either
document.querySelectorAll('div.plot').forEach(p => {
  const titles = [...p.querySelectorAll('g.annotation')].map(g => [g.textContent, g.getBoundingClientRect()]);
  for (let i = 0; i < titles.length; i++) for (let j = i + 1; j < titles.length; j++) {
    const [na, a] = titles[i], [nb, b] = titles[j];
    if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
      faults.push(p.id + ': panel titles "' + na + '" and "' + nb + '" overlap');
  }
});
return faults;
"""

#: True once plotly has redrawn every plot for its box's current width.
REDRAWN = """
return [...document.querySelectorAll('div.plot')].every(p => {
  const svg = p.querySelector('svg.main-svg');
  return svg && Math.abs(svg.getBoundingClientRect().width - p.clientWidth) <= 3;
});
"""


def set_width(browser, width: int) -> None:
    """Make the page `width` px wide (the window's frame added), its height the tests' usual."""
    frame = browser.execute_script(
        "return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight]")
    browser.set_window_size(width + frame[0], WINDOW[1] + frame[1])


def resized(browser, width: int) -> None:
    """Resize to `width` and wait for plotly (and view.js) to lay the plots out again."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    set_width(browser, width)
    WebDriverWait(browser, WAIT).until(lambda d: d.execute_script("return window.innerWidth") == width)
    time.sleep(0.5)  # view.js waits 150 ms for the resize to end, plotly 100 ms
    try:
        WebDriverWait(browser, WAIT).until(lambda d: d.execute_script(REDRAWN))
    except TimeoutException:
        pass  # what is wrong with the layout is for `assert_laid_out` to say


def assert_laid_out(browser, width: int) -> None:
    faults = browser.execute_script(LAYOUT_FAULTS)
    assert not faults, f"at {width} px wide: " + "; ".join(faults)


@pytest.fixture
def wide_then_restored(browser):
    """The browser 1400 px wide for the test, back to the usual window afterwards."""
    set_width(browser, 1400)
    yield browser
    set_width(browser, WINDOW[0])


def test_served_plots_keep_their_boxes_after_a_resize(wide_then_restored, viewer, run_folders):
    browser = wide_then_restored
    open_run(browser, viewer, "rlac")
    unfold(browser)  # every fold open: each plot it held laid out for its box, then resized with the rest
    plots = browser.execute_script("return [...document.querySelectorAll('div.plot')].map(p => p.id)")
    assert "plot-training-curves-dpo-per-step" in plots and "plot-judges-rewards-and-critics-by-round" in plots
    assert_laid_out(browser, 1400)
    for width in (1100, 1000):
        resized(browser, width)
        assert_laid_out(browser, width)
    check_page(browser, viewer)  # no script error from the redraws


def _taiscore_run(run: Path) -> Path:
    """A three-round TAIScore-shaped run: per-round results, a GRPO and a DPO stage with TRL's
    per-step history (a grid of seven and of five panels) and a kept reward distribution."""
    store = RunStore(run)
    store.set_meta("config", {"algorithm": "taiscore", "rounds": 2})
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    for r in range(3):
        store.log_metrics("coevolution", {
            "gold_score": 4.9011 + 0.0002 * r, "eval_prompts": 20.0, "refine_delta": 0.2 * r,
            "constraint_pass_rate": 0.3 + 0.1 * r, "constraint_pass_rate_lo": 0.1 + 0.1 * r,
            "constraint_pass_rate_hi": 0.6 + 0.1 * r, "constraint_count": 10.0, "win_rate_vs_round0": 0.5 + 0.05 * r,
            "reward_mean": 3.0 + r, "reward_sd": 1.0, "invalid_judgment_rate": 0.1, "grpo_loss": 0.01 * r,
            "critic_weight_delta": 0.002 * (r + 1)}, round=r)
    grpo = [{"step": s, "loss": 1e-5 * s, "reward": 3.0 + 0.2 * s, "reward_std": 0.5, "kl": 1e-4 * s,
             "grad_norm": 2.0 + s, "frac_reward_zero_std": 0.25, "learning_rate": 1e-5 * (1 - s / 8)}
            for s in range(1, 7)]
    dpo = [{"step": s, "loss": 0.69 - 0.05 * s, "grad_norm": 1.5, "rewards/margins": 0.1 * s,
            "rewards/accuracies": 0.5 + 0.05 * s, "learning_rate": 1e-6 * (1 - s / 8)} for s in range(1, 7)]
    for stage, kind, history in (("coevolution/round1/critic", "grpo", grpo), ("coevolution/round1/actor", "dpo", dpo)):
        store.finish_step(stage, {"checkpoint": "x", "steps": 6, "seconds": 1.0, "kind": kind, "round": 1,
                                  "metrics": {"weight_delta": 0.01}, "history": history})
    store.set_meta("distributions", {"critic training reward (GRPO)": {
        "coevolution": {"1": [3.6, 3.9, 3.1, 4.2], "2": [4.0, 4.4, 3.7, 4.1]}}})
    store.close()
    return run


def test_report_grids_keep_their_boxes_after_a_resize(wide_then_restored, tmp_path):
    browser = wide_then_restored
    report = write_report(_taiscore_run(tmp_path / "tai"))
    browser.get(report.resolve().as_uri())
    settle(browser, WAIT)
    unfold(browser)
    plots = browser.execute_script("return [...document.querySelectorAll('div.plot')].map(p => p.id)")
    for grid in ("plot-training-curves-grpo-critic-per-step", "plot-training-curves-dpo-per-step",
                 "plot-scores-by-round", "plot-critic-training-reward-grpo"):
        assert grid in plots
    assert_laid_out(browser, 1400)
    for width in (1100, 1000, 1400, 700):
        resized(browser, width)
        assert_laid_out(browser, width)
    # at 700 px the seven GRPO panels reflow into fewer columns, each still a readable width
    grpo = browser.execute_script(
        "const p = document.getElementById('plot-training-curves-grpo-critic-per-step');"
        "return [p.dataset.columns, p.getBoundingClientRect().height, p._fullLayout.height]")
    assert int(grpo[0]) < 3 and math.isclose(grpo[1], grpo[2], abs_tol=2)
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/favicon.ico " not in e["message"]]
    assert not errors, errors
