"""A run folder has one writer: the lock, the store's schema version and integrity check,
idempotent metric rows, atomic meta updates, and failed / resumable runs shown as such."""

import json
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from coevo.run import runner
from coevo.view.runinfo import runs_under
from coevo.rundir.lock import RunFolderBusy, RunLock, holder, run_status
from coevo.rundir.store import SCHEMA_VERSION, RunStore, StoreError
from tests.test_cli_errors import coevo

HOLD = """
import sys, time
from coevo.rundir.lock import RunLock
with RunLock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held(tmp_path):
    """A live process holding tmp_path/run's lock."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_writer_ends_at_once_naming_the_holder(tmp_path, held):
    config = tmp_path / "c.yaml"
    config.write_text("algorithm: controls\n")
    for extra in ((), ("--resume",)):
        started = time.monotonic()
        proc = coevo("run", config, "--out", tmp_path / "run", *extra)
        assert proc.returncode == 2 and time.monotonic() - started < 60
        assert f"is in use by PID {held.pid} on " in proc.stderr and proc.stderr.count("\n") == 1
    assert holder(tmp_path / "run")["pid"] == held.pid
    assert not (tmp_path / "run" / "run.sqlite").exists()  # nothing written behind the holder's back


def test_a_lock_left_by_a_dead_process_is_taken_over_and_said(tmp_path, held, caplog):
    held.kill()
    held.wait()
    assert holder(tmp_path / "run") is None  # the OS released it with the process
    with caplog.at_level("WARNING"), RunLock(tmp_path / "run"):
        assert "took over the lock" in caplog.text and f"PID {held.pid}" in caplog.text
        with pytest.raises(RunFolderBusy):  # and it is really held now (a second handle fails)
            RunLock(tmp_path / "run").acquire()
    assert holder(tmp_path / "run") is None


def test_stores_of_another_schema_version_are_refused(tmp_path):
    RunStore(tmp_path / "new").close()
    with sqlite3.connect(tmp_path / "new" / "run.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    for version, word in ((1, "an older"), (SCHEMA_VERSION + 1, "a newer")):
        folder = tmp_path / f"v{version}"
        folder.mkdir()
        with sqlite3.connect(folder / "run.sqlite") as db:
            db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(f"PRAGMA user_version = {version}")
        with pytest.raises(StoreError, match=f"written by {word} coevo \\(store schema {version}"):
            RunStore(folder)


def test_a_schema_2_store_is_upgraded_in_place_and_read_only_opens_write_nothing(tmp_path):
    folder = tmp_path / "v2"
    folder.mkdir()
    with sqlite3.connect(folder / "run.sqlite") as db:  # the schema-2 cache table, one cached call
        db.execute("CREATE TABLE llm_cache (key TEXT NOT NULL, idx INTEGER NOT NULL, model_id TEXT NOT NULL,"
                   " completion TEXT NOT NULL, created REAL NOT NULL, PRIMARY KEY (key, idx))")
        db.execute("INSERT INTO llm_cache VALUES ('k', 0, 'm', '{\"text\": \"old answer\"}', 1.0)")
        db.execute("PRAGMA user_version = 2")
    viewer = RunStore(folder, read_only=True)  # a viewer reads the old layout as it is
    assert [c["completion"] for c in viewer.cached_calls("old")] == ["old answer"]
    assert viewer.cached_calls("old")[0]["request"] is None
    viewer.close()
    with sqlite3.connect(folder / "run.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    store = RunStore(folder)  # a writer upgrades it
    from coevo.core.types import Completion

    store.cache_put("k2", "m", {0: Completion(text="new \"quoted\" answer")}, request={"messages": ["hi"]})
    assert [c["request"] for c in store.cached_calls()] == [None, {"messages": ["hi"]}]
    assert [c["completion"] for c in store.cached_calls('"quoted"')] == ['new "quoted" answer']
    store.close()
    with sqlite3.connect(folder / "run.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    with pytest.raises(FileNotFoundError, match="not a run folder"):
        RunStore(tmp_path / "absent", read_only=True)
    assert not (tmp_path / "absent").exists()


def test_a_corrupt_or_truncated_store_is_one_line_and_exit_2(tmp_path):
    store = RunStore(tmp_path / "run")
    store.set_meta("algorithm", "controls")
    store.close()
    db = tmp_path / "run" / "run.sqlite"
    db.write_bytes(db.read_bytes()[:1000])  # truncated inside its first page
    for args in (("show", tmp_path / "run"), ("report", tmp_path / "run")):
        proc = coevo(*args)
        assert proc.returncode == 2 and "is corrupt or truncated" in proc.stderr, proc.stderr
    db.write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreError, match="corrupt or truncated"):
        RunStore(tmp_path / "run")
    assert runs_under(tmp_path)[0].status.startswith("unreadable: ")


def test_metric_rows_are_keyed_so_a_resumed_stage_never_duplicates_one(tmp_path):
    store = RunStore(tmp_path)
    for value in (1.0, 2.0):  # a stage logged, then logged again after a resume
        store.log_metrics("critic", {"loss": value, "kl": 0.1}, round=1)
        store.log_metrics("refine", {"mean": value})  # no round
    rows = store.metrics()
    assert sorted((r["stage"], r["round"] or 0, r["name"], r["value"]) for r in rows) == [
        ("critic", 1, "kl", 0.1), ("critic", 1, "loss", 2.0), ("refine", 0, "mean", 2.0)]
    assert [r["round"] for r in rows if r["stage"] == "refine"] == [None]


def test_meta_updates_from_two_connections_lose_nothing(tmp_path):
    stores = [RunStore(tmp_path), RunStore(tmp_path)]

    def add(store, tag):
        for i in range(25):
            store.update_meta("warnings", lambda old, item=f"{tag}{i}": [*old, item], [])

    threads = [threading.Thread(target=add, args=(s, t)) for s, t in zip(stores, "ab")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores[0].get_meta("warnings")) == 50


def test_a_run_that_raises_is_marked_failed_with_its_error(tmp_path, monkeypatch):
    def boom(config, store):
        raise RuntimeError("the judge server vanished")

    experiments = runner._experiments()
    monkeypatch.setattr(runner, "_experiments", lambda: {
        **experiments, "controls": runner.Experiment(experiments["controls"].config, boom, "")})
    with pytest.raises(RuntimeError):
        runner.run_experiment(None, tmp_path / "run", data={"algorithm": "controls"})
    [row] = runs_under(tmp_path)
    assert row.status == "failed" and row.error == "RuntimeError: the judge server vanished"
    store = RunStore(tmp_path / "run")
    assert store.get_meta("error") == "RuntimeError: the judge server vanished"
    assert holder(tmp_path / "run") is None  # the lock went with the run
    proc = coevo("show", tmp_path / "run")
    assert proc.returncode == 0 and "failed: RuntimeError: the judge server vanished" in proc.stdout
    assert "--resume" in proc.stdout


def test_a_running_run_whose_process_is_gone_is_resumable(tmp_path, held):
    store = RunStore(tmp_path / "run")
    store.set_meta("status", "running")
    assert run_status(tmp_path / "run", "running") == "running"  # its holder lives
    held.kill()
    held.wait()
    assert run_status(tmp_path / "run", "running") == "resumable"
    assert run_status(tmp_path / "run", "finished") == "finished"
    assert runs_under(tmp_path)[0].status == "resumable"


def test_records_nested_in_meta_stay_records(tmp_path):
    from coevo.core.types import Table

    store = RunStore(tmp_path)
    store.update_meta("tables", lambda tables: {**tables, "t": Table(columns=["a"], rows=[{"a": 1}])}, {})
    assert store.get_meta("tables") == {"t": {"columns": ["a"], "rows": [{"a": 1}]}}


def test_a_trained_model_is_named_by_the_stage_that_saved_it_without_reading_its_weights(tmp_path, monkeypatch):
    from types import SimpleNamespace

    import coevo.llm.local as local
    from coevo.core.checkpoint_identity import RESULT_FILE

    monkeypatch.setattr(local, "weights_digest", lambda model: pytest.fail("walked the weights"))
    policy = SimpleNamespace(model=SimpleNamespace(name_or_path="/models/smollm2"))
    ids = []
    for stage, result in (("round1/actor", "a"), ("round2/actor", "a"), ("round2/actor", "b")):
        final = tmp_path / stage / "final"
        final.mkdir(parents=True, exist_ok=True)
        (final / RESULT_FILE).write_text(result)  # the record a finished stage leaves (train/checkpoints.py)
        ids.append(local.LocalModel.refresh_model_id(policy, final))
    assert ids[0].startswith("hf:smollm2@") and "round1/actor/final" in ids[0]
    assert len(set(ids)) == 3  # another stage, or the same stage trained again: another id
    again = local.LocalModel.refresh_model_id(policy, tmp_path / "round2/actor/final")
    assert again == ids[2]  # a resumed run restoring the stage: the same id (its cache answers)


SLOW_RUN = """
import sys, time
from coevo import cli
from coevo.run import runner

real = runner._experiments


def experiments():
    found = real()
    controls = found["controls"]

    def slow(config, store):  # a run at work: something recorded, then a long stage
        store.log_metrics("stage", {"x": 1.0})
        print("working", flush=True)
        time.sleep(120)

    found["controls"] = runner.Experiment(controls.config, slow, controls.help)
    return found


runner._experiments = experiments
sys.argv = ["coevo", "run", sys.argv[1], "--out", sys.argv[2]]
cli.main()
"""


def test_sigterm_stops_the_run_marks_it_resumable_and_prints_the_resume_line(tmp_path):
    # What a cluster scheduler sends before it preempts a job.
    import signal

    config = tmp_path / "c.yaml"
    config.write_text("algorithm: controls\n")
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(config), str(tmp_path / "run")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "working"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "stopped (SIGTERM)" in stderr and f"coevo run {config} --out {tmp_path / 'run'} --resume" in stderr
    assert "Traceback" not in stderr
    store = RunStore(tmp_path / "run")
    assert store.get_meta("status") == "interrupted" and store.metrics()  # kept what it had
    assert holder(tmp_path / "run") is None


def test_a_start_that_failed_before_any_work_does_not_hold_its_folder(tmp_path, monkeypatch):
    # A run that died before recording anything (a server down at the first load, say): the
    # fixed config starts over in place, with or without --resume.
    first = RunStore(tmp_path / "run")
    first.set_meta("config", {"algorithm": "controls", "old": True})
    first.set_meta("status", "failed")
    first.close()
    real = runner._experiments

    def experiments():
        found = real()
        found["controls"] = runner.Experiment(found["controls"].config, lambda config, store: {"ok": True}, "")
        return found

    monkeypatch.setattr(runner, "_experiments", experiments)
    for resume in (False, True):
        summary = runner.run_experiment(None, tmp_path / "run", data={"algorithm": "controls"}, resume=resume)
        assert summary["ok"]
        assert RunStore(tmp_path / "run").get_meta("status") == "finished"
        if not resume:  # the finished run holds no work either (the fake records none): make it hold some
            store = RunStore(tmp_path / "run")
            store.set_meta("status", "failed")
            store.close()


def test_fresh_deletes_a_run_folder_and_nothing_else(tmp_path):
    store = RunStore(tmp_path / "run")
    store.log_metrics("stage", {"x": 1.0})
    store.close()
    runner.remove_run_folder(tmp_path / "run")
    assert not (tmp_path / "run").exists()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "precious.txt").write_text("x")
    with pytest.raises(runner.ConfigError, match="holds no run.sqlite"):
        runner.remove_run_folder(tmp_path / "data")
    assert (tmp_path / "data" / "precious.txt").exists()
    runner.remove_run_folder(tmp_path / "absent")  # nothing there: nothing to do


def test_a_full_disk_is_one_clear_error_and_the_run_is_resumable(tmp_path, monkeypatch):
    import errno

    real = runner._experiments

    def experiments():
        found = real()

        def fills_the_disk(config, store):
            store.log_metrics("stage", {"x": 1.0})
            raise RuntimeError("Error while serializing") from OSError(errno.ENOSPC, "No space left on device")

        found["controls"] = runner.Experiment(found["controls"].config, fills_the_disk, "")
        return found

    monkeypatch.setattr(runner, "_experiments", experiments)
    with pytest.raises(runner.DiskFull, match="free space, then continue with --resume"):
        runner.run_experiment(None, tmp_path / "run", data={"algorithm": "controls"})
    store = RunStore(tmp_path / "run")
    assert store.get_meta("status") == "failed" and store.metrics()


def test_provenance_says_which_coevo_ran_when_on_what_summed_over_a_resume(tmp_path, monkeypatch):
    """Store meta and summary.json carry the version, the source commit, the dates, the time
    spent running (both processes of a failed-then-resumed run) and the hardware."""
    import os
    from datetime import datetime
    from pathlib import Path

    import coevo

    calls = []

    def work(config, store):
        calls.append(1)
        store.log_metrics("x", {"a": 1.0})  # recorded work: a later start resumes, not starts over
        time.sleep(0.3)
        if len(calls) == 1:
            raise RuntimeError("the judge server vanished")
        return {"ok": 1}

    experiments = runner._experiments()
    monkeypatch.setattr(runner, "_experiments", lambda: {
        **experiments, "controls": runner.Experiment(experiments["controls"].config, work, "")})
    with pytest.raises(RuntimeError):
        runner.run_experiment(None, tmp_path / "run", data={"algorithm": "controls"})
    store = RunStore(tmp_path / "run")
    failed = store.get_meta("provenance")
    store.close()
    assert failed["finished"] is None and failed["duration_s"] >= 0.3
    summary = runner.run_experiment(None, tmp_path / "run", data={"algorithm": "controls"}, resume=True)
    prov = summary["provenance"]
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["provenance"] == prov
    assert RunStore(tmp_path / "run").get_meta("provenance") == prov
    assert prov["coevo_version"] == coevo.__version__
    assert prov["started"] == failed["started"]  # the run's first start, not the resume's
    assert datetime.fromisoformat(prov["finished"]) >= datetime.fromisoformat(prov["started"])
    assert prov["duration_s"] >= 0.6  # both processes' running time
    source = Path(coevo.__file__).resolve().parent.parent
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=source, capture_output=True, text=True)
    if head.returncode == 0 and (source / ".git").exists():
        assert prov["git_commit"] == head.stdout.strip() and isinstance(prov["git_dirty"], bool)
    hardware = prov["hardware"]
    assert hardware["cpus"] == os.cpu_count() and hardware["memory_gb"] > 0
    assert hardware["python"] == sys.version.split()[0] and isinstance(hardware["gpus"], list)
    assert hardware["torch"] and hardware["platform"]
