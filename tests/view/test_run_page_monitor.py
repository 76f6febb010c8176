"""The reward-hacking monitor on the run page: per watched stage the training reward and each
anchor by step, the onset and the flag marked, the flags in words; a run without watched
stages has no panel."""

from __future__ import annotations

import html as html_lib
import json
import re

from fastapi.testclient import TestClient

from coevo.monitor import Monitor
from coevo.monitor.records import keep_report, run_summary
from coevo.rundir.store import RunStore
from coevo.view.app import create_app


class Watched:
    """A monitor that saw the reward rise while its anchor stayed flat (as HackingMonitor
    keeps it: `report()` and `flags`)."""

    def __init__(self):
        self.monitor = Monitor(stage="taiscore/round1/critic")
        self.monitor.observe_anchor(0, "python:a.py:meant", {f"i{k}": 0.3 + 0.01 * k for k in range(6)})
        for step in range(1, 7):
            self.monitor.observe_reward(step, [0.1 * step + 0.01 * (i % 3) for i in range(8)])
            if step % 2 == 0:
                self.monitor.observe_anchor(step, "python:a.py:meant", {f"i{k}": 0.3 + 0.01 * k for k in range(6)})
                self.monitor.check(step)

    def report(self):
        return self.monitor.report()

    @property
    def flags(self):
        return self.monitor.flags


def _run(tmp_path, watched: bool):
    store = RunStore(tmp_path / "run")
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    store.log_metrics("c", {"gold_score": 5.0}, round=0)
    if watched:
        keep_report(store, Watched())
    summary = run_summary(store)
    store.close()
    return summary


def test_a_flagged_stage_shows_its_curves_onset_flag_and_why(tmp_path):
    summary = _run(tmp_path, watched=True)
    flag, = summary["flags"]
    assert summary["onset_stage"] == "taiscore/round1/critic" and summary["onset_step"] == flag["onset_step"]
    page = TestClient(create_app([tmp_path / "run"])).get("/runs/run").text
    assert 'id="reward-monitor"' in page and 'id="table-monitor-flags"' in page and "stayed flat" in page
    figure = next(json.loads(html_lib.unescape(m.group(2)))
                  for m in re.finditer(r'<div class="plot" id="(plot-[^"]+)" data-figure="([^"]*)"', page)
                  if "reward-hacking" in m.group(1))
    names = {trace["name"] for trace in figure["data"]}
    assert {"training reward", "anchor", "onset", "flag"} <= names
    # The flag is in the run's warnings too, with its step and onset.
    assert "reward hacking? taiscore/round1/critic step" in page


def test_a_run_without_watched_stages_has_no_panel(tmp_path):
    assert _run(tmp_path, watched=False) == {"flags": [], "onset_step": None, "onset_stage": None, "stages": {}}
    page = TestClient(create_app([tmp_path / "run"])).get("/runs/run").text
    assert 'id="reward-monitor"' not in page
