"""`kill -9` at any moment of any stage, then `--resume`: the run ends as if never killed.

A SIGTERM is a polite stop (tests/test_run_folder.py); a `kill -9`, an OOM kill or a lost
node gives the run no last word. Here a test-sized TAIScore run on the tiny random model
(tests/real_runs.py: every stage for real, GRPO and DPO steps included, in seconds) is run
once uninterrupted, timed, and its store read as a timeline: the moments its rows were
written, cut into windows, one per stage (startup, each finished step, the summary and
report at the end). A seeded random moment in each window is where a second run of the same
config is killed with SIGKILL, resumed with `--resume`, killed at the next moment, and so
on; then resumed to the end. Its summary.json must equal the uninterrupted run's (the
clock and memory fields of VOLATILE aside) and its store must hold the same rows: every
cached call, rollout, judgment, metric, record, finished step and meta value, none lost and
none twice. Once also for a two-process launch (torchrun, gloo), killed during a training
stage: its launcher and both workers at once, as a lost node would be.

A moment is not a wall-clock offset (a resumed run answers its cached calls at once, and a
loaded CI machine is slower): it is "the store holds the rows the uninterrupted run held
at that moment, then as long again as it waited there", so each kill lands in the stage it
was drawn for on any machine (the stage each kill hit is printed: `pytest -s`).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from real_runs import coevo_run_command, run_coevo, taiscore_on_tiny_llama

from coevo.rundir.lock import holder, run_status
from coevo.rundir.store import RunStore

pytestmark = [pytest.mark.slow, pytest.mark.tiny_model]
CONFIG = "taiscore_tiny.yaml"
SEED = 46  # fixed: CI kills at the same moments every time
ONE_THREAD = {"OMP_NUM_THREADS": "1"}  # two processes share this machine's two cores
# Fields (any key ending so, at any depth) that differ between two uninterrupted runs too,
# or that a resume changes by design.
VOLATILE = (
    # clocks: how long a call, a step, a stage, the run took, and when it started and ended
    "seconds", "seconds_per_step", "time_share", "runtime", "per_second", "step_time", "duration_s",
    "started", "finished",
    "peak_rss_mb",  # memory: another process, another peak
    # calls answered from the cache: a resumed run answers what the killed one asked
    "cache_hits", "llm_cache",
    "report",  # the absolute path of report.html: another run folder
)
# A trained model's id ends in a digest of its stage's result record, clocks included
# (coevo/core/checkpoint_identity.py): another training of the stage, another id, so the cache
# key (a hash over the id) and the digest are compared without it.
DIGEST = re.compile(r":[0-9a-f]{16}$")
# Meta keys that are the run's bookkeeping, not its results: `cache_hits` counts the cache's
# answers per stage (a resume adds its own); `provenance`, `started` and `finished` are clocks.
VOLATILE_META = {"cache_hits", "provenance", "finished", "started"}


@dataclass(frozen=True)
class Moment:
    """Where to kill: once the store holds `rows` of `_timeline`'s rows, `wait` seconds later
    (`rows` 0: after the process started), or sooner if the next row comes first. `stage`:
    the window of the uninterrupted run it was drawn in."""

    stage: str
    rows: int
    wait: float


@dataclass(frozen=True)
class Baseline:
    out: Path
    summary: dict
    moments: list[Moment]


def _timeline(out: Path) -> list[tuple[float, str]]:
    """(time, what) of every timestamped row of a run's store, in the order written, and of
    the moment the store was opened (its `started` meta value)."""
    with sqlite3.connect(out / "run.sqlite") as db:
        rows = db.execute(
            "SELECT CAST(value AS REAL), 'store opened' FROM meta WHERE key = 'started'"
            " UNION ALL SELECT created, 'call ' || COALESCE(json_extract(request, '$.call.stage'), '?') FROM llm_cache"
            " UNION ALL SELECT created, 'metrics ' || stage FROM metrics"
            " UNION ALL SELECT created, 'record ' || kind FROM records"
            " UNION ALL SELECT finished, 'step ' || name FROM steps").fetchall()
    return sorted(rows)


def _row_count(out: Path) -> int:
    """How many of `_timeline`'s rows the store holds now (0 before it exists); never
    decreases: a resumed run replaces the rows it writes again."""
    if not (out / "run.sqlite").is_file():
        return 0
    try:
        with sqlite3.connect(f"{(out / 'run.sqlite').as_uri()}?mode=ro", uri=True, timeout=5) as db:
            return sum(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                       for table in ("llm_cache", "metrics", "records", "steps", "meta WHERE key = 'started'"))
    except sqlite3.OperationalError:  # being created
        return 0


def _moments(out: Path, began: float, ended: float, rng: random.Random) -> list[Moment]:
    """One seeded moment in each window of the uninterrupted run: startup (imports, checks,
    to the store's opening), each step (from the previous step's end, or the store's opening,
    to its own end), and the end (summary.json, report.html)."""
    timeline = _timeline(out)
    ends = [t for t, what in timeline if what.startswith("step ")]
    assert timeline[0][1] == "store opened"
    windows = [("startup", began, timeline[0][0])]
    windows += [(what.removeprefix("step "), start, end) for (end, what), start
                in zip([e for e in timeline if e[1].startswith("step ")], [timeline[0][0], *ends])]
    windows.append(("summary and report", ends[-1], ended))
    moments = []
    for stage, start, end in windows:
        at = rng.uniform(start + 0.1 * (end - start), end - 0.1 * (end - start))
        before = [t for t, _ in timeline if t <= at]
        moments.append(Moment(stage, len(before), at - (before[-1] if before else began)))
    return moments


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, tiny_llama) -> Baseline:
    """The uninterrupted run, timed from its process's start to its end."""
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    began = time.time()
    run = run_coevo(CONFIG, out, taiscore_on_tiny_llama(tiny_llama), env=ONE_THREAD)
    return Baseline(out, run.summary, _moments(out, began, time.time(), random.Random(SEED)))


def _kill_at(out: Path, settings: list[str], moment: Moment, processes: int = 1) -> str:
    """Start (or, once the folder holds a store, resume) the run and SIGKILL every process of
    it at `moment`; what the store last held when it died (or "ended" if it finished first)."""
    resume = ["--resume"] if (out / "run.sqlite").is_file() else []
    proc = subprocess.Popen(coevo_run_command(CONFIG, out, settings, *resume, processes=processes),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "COEVO_QUIET": "1", **ONE_THREAD})
    anchor, deadline = time.monotonic(), time.monotonic() + 600
    if moment.rows:
        while _row_count(out) < moment.rows and proc.poll() is None:
            assert time.monotonic() < deadline, f"never reached {moment}"
            time.sleep(0.01)
        anchor = time.monotonic()
    # Waited out as the uninterrupted run did, but never past its next row: on a slower or
    # faster machine the kill still lands between the rows it fell between there.
    while time.monotonic() < anchor + moment.wait and proc.poll() is None and _row_count(out) <= moment.rows:
        time.sleep(0.005)
    ended = proc.poll() is not None
    _kill_tree(proc.pid)
    proc.wait(timeout=60)
    stderr = proc.stderr.read()
    proc.stderr.close()
    assert not ended or proc.returncode == 0, stderr[-3000:]
    return "ended" if ended else _last_written(out)


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and all it started, at once: a lost node, an OOM killer's sweep. (A
    launcher's workers run in sessions of their own, so its process group is not enough.)"""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGSTOP)  # it starts no more while its tree is read
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:  # ended while read
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    for member in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGSTOP)  # none of them acts on the others' deaths first
    for member in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(member, signal.SIGKILL)


def _last_written(out: Path) -> str:
    """What the killed run's store held last, after checking it survived the kill whole: the
    lock is free, the store opens (its integrity check passes), and summary.json, where one
    was written, reads."""
    deadline = time.monotonic() + 30
    while holder(out) is not None:  # flock goes with its process; a worker may take a moment
        assert time.monotonic() < deadline, f"the lock outlived the killed run: {holder(out)}"
        time.sleep(0.1)
    if not (out / "run.sqlite").is_file():
        return "startup (no store yet)"
    store = RunStore(out)
    status = store.get_meta("status")
    store.close()
    assert status is None or run_status(out, status) in ("resumable", "finished")
    if (out / "summary.json").exists():
        json.loads((out / "summary.json").read_text())
    timeline = _timeline(out)
    return timeline[-1][1] if timeline else "startup (store opened)"


def _steady(value):
    """`value` without its VOLATILE fields, at any depth."""
    if isinstance(value, dict):
        return {k: _steady(v) for k, v in value.items() if not k.endswith(VOLATILE)}
    if isinstance(value, list):
        return [_steady(v) for v in value]
    return value


def _contents(out: Path) -> dict[str, object]:
    """A run's store, table by table, as sorted rows of what identifies and holds each row
    (creation times and VOLATILE fields left out): two stores with equal contents hold the
    same calls, rollouts, judgments, metrics, records, steps and meta values, each once."""
    with sqlite3.connect(out / "run.sqlite") as db:
        def rows(sql):
            return sorted(db.execute(sql).fetchall(), key=repr)
        meta = {k: _steady(json.loads(v)) for k, v in db.execute("SELECT key, value FROM meta")
                if k not in VOLATILE_META}
        return {
            "calls": sorted((DIGEST.sub(":<digest>", model), idx, completion)
                            for model, idx, completion in db.execute("SELECT model_id, idx, completion FROM llm_cache")),
            "rollouts": rows("SELECT stage, round, sample_id, condition, record FROM rollouts"),
            "judgments": rows("SELECT r.stage, r.sample_id, r.condition, j.judge, j.valid, j.score, j.record"
                              " FROM judgments j JOIN rollouts r ON r.id = j.rollout_id"),
            "metrics": rows("SELECT stage, round, name, value FROM metrics WHERE " + " AND ".join(
                f"name NOT LIKE '%{v}'" for v in VOLATILE)),
            "records": rows("SELECT kind, key, record FROM records"),
            "steps": sorted((name, json.dumps(_steady(json.loads(result)), sort_keys=True))
                            for name, result in db.execute("SELECT name, result FROM steps")),
            "meta": meta,
        }


def _counts(contents: dict[str, object]) -> dict[str, object]:
    """How many rows of each table, per stage (or step, record kind, model) in its first column."""
    return {table: sorted(Counter(row[0] for row in rows).items())
            for table, rows in contents.items() if table != "meta"}


def _assert_same_store(killed: Path, uninterrupted: Path) -> None:
    mine, theirs = _contents(killed), _contents(uninterrupted)
    assert _counts(mine) == _counts(theirs)  # nothing lost, nothing twice (the short diff first)
    for table in mine:
        assert mine[table] == theirs[table], table


def test_kill_9_at_a_seeded_moment_of_every_stage_then_resume_is_the_uninterrupted_run(
        tmp_path, tiny_llama, baseline):
    settings, out = taiscore_on_tiny_llama(tiny_llama), tmp_path / "killed"
    drawn = [m.stage for m in baseline.moments]
    assert drawn[0] == "startup" and drawn[-1] == "summary and report" and len(drawn) >= 7
    hits = [(m.stage, _kill_at(out, settings, m)) for m in baseline.moments]
    print("\n".join(f"kill -9 drawn in {stage!r}: the store last held {held!r}" for stage, held in hits))
    assert sum(held != "ended" for _, held in hits) >= 5, hits  # (a run that ended before its kill: not one)
    resumed = run_coevo(CONFIG, out, settings, "--resume", env=ONE_THREAD)
    assert _steady(resumed.summary) == _steady(baseline.summary)
    _assert_same_store(out, baseline.out)
    assert not (out / "run.lock").read_text()  # released by the run that finished


def test_a_two_process_launch_killed_whole_mid_training_resumes_to_the_same_rows(tmp_path, tiny_llama, baseline):
    # Two processes sample with other random streams than one (test_many_processes), so the
    # rows' contents differ from the one-process run's; their kinds and numbers may not.
    settings, out = taiscore_on_tiny_llama(tiny_llama), tmp_path / "two"
    training = [m for m in baseline.moments if m.stage.endswith(("/critic", "/actor"))]
    moment = random.Random(SEED).choice(training)
    held = _kill_at(out, settings, moment, processes=2)
    print(f"\ntwo processes: kill -9 drawn in {moment.stage!r}: the store last held {held!r}")
    assert held != "ended" and not (out / "summary.json").exists()
    resumed = run_coevo(CONFIG, out, settings, "--resume", processes=2, env=ONE_THREAD).summary
    assert resumed["world_size"] == 2 and resumed["rounds"][0]["metrics"]["critic_weight_delta"] > 0
    assert _counts(_contents(out)) == _counts(_contents(baseline.out))
