"""The monitor over a loop's rounds (RLAC iterations, DecoEvo inner steps): one round at each
end of a trend, the gold anchor's baseline at round 0, and a resumed run replaying what its
finished rounds observed (the same flags, each warned once)."""

from __future__ import annotations

from coevo.monitor.records import run_summary
from coevo.monitor.rounds import RoundMonitor
from coevo.rundir.store import RunStore


def feed(monitor: RoundMonitor, rounds: range) -> None:
    for r in rounds:
        gold = {f"p{i}": 0.8 - 0.1 * r + 0.02 * i for i in range(10)}  # falls a tenth a round
        if r == 0:
            monitor.observe(0, gold=gold)
            continue
        rewards = [0.2 * r + 0.05 * (i % 4) for i in range(24)]      # rises a fifth a round
        monitor.observe(r, rewards=rewards, outputs=[f"def f(x): return {i}" for i in range(24)], gold=gold)


def test_rewards_rising_while_the_gold_falls_are_flagged_round_by_round(tmp_path):
    store = RunStore(tmp_path / "run")
    monitor = RoundMonitor(store, "rlac/co_trained", ["gold"])
    feed(monitor, range(0, 5))
    flag, = monitor.flags
    # Trends exist from round 2 (rounds 1 and 2 at the ends); two diverging checks: round 3.
    assert (flag.anchor, flag.step) == ("gold", 3) and flag.onset_step <= 2
    summary = run_summary(store)
    assert summary["onset_stage"] == "rlac/co_trained" and len(summary["flags"]) == 1
    warned = [w for w in store.get_meta("warnings", []) if w.startswith("reward hacking?")]
    assert len(warned) == 1


def test_a_resumed_run_replays_its_finished_rounds(tmp_path):
    store = RunStore(tmp_path / "run")
    feed(RoundMonitor(store, "rlac/co_trained", ["gold"]), range(0, 3))
    resumed = RoundMonitor(RunStore(tmp_path / "run"), "rlac/co_trained", ["gold"])
    feed(resumed, range(0, 5))  # rounds 0-2 are skipped: replayed from the store
    whole = RoundMonitor(RunStore(tmp_path / "other"), "rlac/co_trained", ["gold"])
    feed(whole, range(0, 5))
    assert resumed.report() == whole.report()
    assert len([w for w in store.get_meta("warnings", []) if w.startswith("reward hacking?")]) == 1


def test_without_the_gold_anchor_only_the_rewards_and_outputs_are_kept(tmp_path):
    store = RunStore(tmp_path / "run")
    monitor = RoundMonitor(store, "decoevo/seed0", [])
    feed(monitor, range(0, 4))
    report = monitor.report()
    assert report["anchor_curves"] == {} and monitor.flags == [] and len(report["reward_curve"]) == 3



def audit_record(not_fooled: float) -> dict:
    """A round's judge audit record as coevo/audit/in_run.py keeps it: three master keys."""
    return {"master_keys": [{"name": f"key{i}", "fooled": {"value": round(1.0 - not_fooled + 0.05 * i, 6)}}
                            for i in range(3)]}


def feed_audited(monitor: RoundMonitor, rounds: range) -> None:
    """Rewards rising every round; the grading audited every round after its observations,
    fooled by more of the master keys each time (the grader getting easier to please)."""
    for r in rounds:
        rewards = [0.2 * r + 0.05 * (i % 4) for i in range(24)] if r else []
        monitor.observe(r, rewards=rewards, outputs=[f"answer {i}" for i in range(24)] if r else [])
        monitor.observe_audit(r, audit_record(0.9 - 0.2 * r))


def test_a_grading_that_gets_easier_to_fool_while_the_proxy_rises_is_flagged(tmp_path):
    monitor = RoundMonitor(RunStore(tmp_path / "run"), "decoevo/seed0", ["audit"])
    feed_audited(monitor, range(0, 5))
    flag, = monitor.flags
    assert flag.anchor == "audit" and flag.step == 3
    assert monitor.report()["anchor_curves"]["audit"][0] == [0, 0.85, 3]


def test_the_audit_anchor_is_kept_only_where_it_was_asked_for_and_replays_in_order(tmp_path):
    plain = RoundMonitor(RunStore(tmp_path / "plain"), "decoevo/seed0", [])
    feed_audited(plain, range(0, 4))
    assert plain.report()["anchor_curves"] == {}
    store = RunStore(tmp_path / "run")
    feed_audited(RoundMonitor(store, "decoevo/seed0", ["audit"]), range(0, 3))
    resumed = RoundMonitor(RunStore(tmp_path / "run"), "decoevo/seed0", ["audit"])
    feed_audited(resumed, range(0, 5))
    whole = RoundMonitor(RunStore(tmp_path / "whole"), "decoevo/seed0", ["audit"])
    feed_audited(whole, range(0, 5))
    assert resumed.report() == whole.report() and len(whole.flags) == 1
