"""End to end on the real embedded model (SmolLM2-135M-Instruct through llama.cpp)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow


def _coevo(*args, **kwargs):
    env = {**os.environ, "COEVO_QUIET": "1"}
    return subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=900, **kwargs)


def test_refine_json_on_the_embedded_model():
    # Capped: at its default 2048 tokens the small model's y1 runs on for minutes.
    proc = _coevo("refine", "--prompt", "Write a two-line poem about morning rain.", "--max-tokens", "64", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["y0"].strip() and result["critique"].strip() and result["y1"].strip()
    taiscore = result["taiscore"]
    diagnostics = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    assert set(taiscore) >= {*diagnostics, "score", "valid"}
    # The judge decodes under its answer's JSON Schema and asks again if it cannot read the
    # answer, so the 135M judge's answer reads (it did in every run measured): a final score in
    # 1-10, no error, and diagnostics from the same answer. Catches a parser that rejects every
    # answer (`valid: false` passed before) and a score or diagnostic outside the 1-10 scale.
    assert taiscore["valid"] is True and "error" not in taiscore, taiscore
    assert 1 <= taiscore["score"] <= 10, taiscore
    assert any(taiscore[d] is not None for d in diagnostics), taiscore
    assert all(taiscore[d] is None or 1 <= taiscore[d] <= 10 for d in diagnostics), taiscore


def _cached_calls(run_dir):
    try:
        with sqlite3.connect(run_dir / "run.sqlite", timeout=5) as db:
            return db.execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_kill_9_then_resume_loses_and_recomputes_nothing(tmp_path):
    config = tmp_path / "controls.yaml"
    config.write_text(
        "algorithm: controls\n"
        "data: {source: 'bundled:writing', limit: 2}\n"
        "evaluator: pairwise\n"
        "roles:\n"
        "  actor: {sampling: {response: {temperature: 0.8, top_p: 0.95, max_tokens: 48},\n"
        "                     revision: {temperature: 0.2, top_p: 0.95, max_tokens: 48}}}\n"
        "  critic: {sampling: {temperature: 0.8, top_p: 0.95, max_tokens: 48}}\n"
    )
    run_dir = tmp_path / "run"
    env = {**os.environ, "COEVO_QUIET": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "coevo.cli", "run", str(config), "--out", str(run_dir)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while _cached_calls(run_dir) < 5 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    saved = _cached_calls(run_dir)
    assert saved >= 5

    resumed = _coevo("run", config, "--out", run_dir, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    # Every answer saved before the kill was reused, not asked again.
    assert summary["llm_cache"]["hits"] >= saved
    assert [row["condition"] for row in summary["table"]["rows"]] == ["none", "generic", "shuffled", "matched"]
    with sqlite3.connect(run_dir / "run.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM rollouts").fetchone()[0] == 2 * 4

    again = _coevo("run", config, "--out", run_dir, "--resume")
    assert again.returncode == 0, again.stderr
    assert json.loads((run_dir / "summary.json").read_text())["llm_cache"]["misses"] == 0
    _check_the_viewer_on_a_real_run(run_dir)


def _check_the_viewer_on_a_real_run(run_dir):
    """Issue 26 on the real model's run: every call records who made it, with real token counts
    and latency; a sample page files each call under the role that made it; the real 48-token
    caps are counted as cut-offs and warned about where a role hit them often."""
    from coevo.rundir.store import RunStore
    from coevo.view.calls import call_info, cut_off_shares
    from coevo.view.samples import calls_behind
    from coevo.view.trust_warnings import CUT_OFF_SHARE
    from coevo.view.warnings import run_warnings

    store = RunStore(run_dir, read_only=True)
    try:
        infos = [call_info(call) for call in store.cached_calls(limit=None)]
        assert infos and all(i.role and i.stage and i.completion_tokens for i in infos)
        assert all(i.cut_off == (i.completion_tokens >= i.max_tokens) for i in infos)
        assert any(i.seconds and i.seconds > 0 for i in infos)
        for row in store.rollout_rows():
            for heading in calls_behind(store, row["rollout"], row["stage"]):
                assert all(call["info"].role == heading["role"] for call in heading["found"]), heading
                # A tagged run never falls back to text matching (the "generic" control's fixed
                # critique, which no model wrote, has no call at all).
                assert not (heading["by_text"] and heading["found"]), (row["stage"], heading)
        often = [g for g in cut_off_shares(store) if g["cut_off"] / g["n"] >= CUT_OFF_SHARE]
        assert bool(often) == any(f.kind == "cut-off" for f in run_warnings(store))
    finally:
        store.close()
