"""The run page's story card (view/story.py, view/changes.py) and the labels under it: what ran,
what changed (each headline metric first vs last round with its n, an interval only from 5
items on, "too few to tell" in words below), what to trust (warnings split into this run's
settings and findings), what to run next; the DPO pairs and the first vs last round's answers
(view/answers.py); the monitor's words (view/monitor.py, view/anchors.py); and the training
table's labels: the final loss is the last step's, the mean has its own column."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from coevo.eval.metric_defs import describe
from coevo.monitor import Monitor
from coevo.monitor.records import keep_report
from coevo.rundir.store import RunStore
from coevo.core.types import Judgment, PreferencePair, Rollout
from coevo.view.anchors import anchor_words
from coevo.view.answers import dpo_pairs, round_answers
from coevo.view.app import create_app
from coevo.view.changes import Change, failed_audit_changes, headline_changes
from coevo.view.findings import Finding, split_findings
from coevo.view.monitor import monitor_section, stage_status
from coevo.view.run_page import _intervals, stage_losses
from coevo.view.story import next_steps, run_story

ANCHOR = "python:coevo.eval.checkable:checkable_taiscore"


def _store(tmp_path, name: str = "run") -> RunStore:
    store = RunStore(tmp_path / name)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("status", "finished")
    store.set_meta("config", {"algorithm": "taiscore"})
    return store


def _gold(store: RunStore, n: float, values=(5.0, 6.5), spread: float = 0.4) -> None:
    for r, v in enumerate(values):
        store.log_metrics("coevolution", {"gold_score": v, "gold_score_lo": v - spread, "gold_score_hi": v + spread,
                                          "gold_score_n": n, "eval_prompts": n}, round=r)


def test_a_change_from_enough_items_gets_a_difference_and_an_interval(tmp_path):
    store = _store(tmp_path)
    _gold(store, 20.0)
    (change,) = headline_changes(store.metrics(), ["gold_score"])
    assert (change.first_round, change.last_round, change.n) == (0, 1, 20)
    assert change.first == "5.000 [4.600, 5.400] (n=20)" and change.last == "6.500 [6.100, 6.900] (n=20)"
    # the two half-widths in quadrature: 0.4 * sqrt(2) = 0.566
    assert change.difference == "+1.500 [+0.934, +2.066] (n=20)"
    assert change.tone == "up" and change.reading.startswith("rose")


def test_a_change_from_two_items_is_too_few_to_tell_with_no_interval(tmp_path):
    store = _store(tmp_path)
    _gold(store, 2.0, values=(4.9, 5.4), spread=3.0)
    (change,) = headline_changes(store.metrics(), ["gold_score"])
    assert change.tone == "too-few" and change.difference == ""
    assert "too few to tell: n=2 then n=2 items" in change.reading
    assert change.first == "4.900 (n=2: too few to tell)" and "[" not in change.first + change.last


def test_overlapping_rounds_read_as_no_clear_change(tmp_path):
    store = _store(tmp_path)
    _gold(store, 20.0, values=(5.0, 5.2), spread=0.5)
    (change,) = headline_changes(store.metrics(), ["gold_score"])
    assert change.tone == "flat" and "contains 0" in change.reading


def test_warnings_split_into_this_runs_settings_and_findings():
    found = [Finding(kind=k, text=k) for k in ("no-learning", "small-n", "cut-off", "judge-audit", "adam-first-step",
                                               "run")]
    settings, findings = split_findings(found)
    assert [f.kind for f in settings] == ["small-n", "cut-off", "adam-first-step"]
    assert [f.kind for f in findings] == ["no-learning", "judge-audit", "run"]
    assert Finding(kind="small-n", text="").about == "settings" and Finding(kind="x", text="").about == "findings"


def test_next_steps_are_the_runs_own_where_it_recorded_them(tmp_path):
    store = _store(tmp_path)
    _gold(store, 2.0)
    story = run_story(store, {})
    assert story.next_steps[:2] == ["coevo plan examples/taiscore_full.yaml",
                                    "coevo run examples/taiscore_full.yaml --out runs/taiscore_full"]
    assert any("more held-out items" in step for step in story.next_steps)  # the small-n warning's ask
    assert not story.next_from_run
    store.set_meta("next_steps", ["coevo run examples/taiscore_tiny.yaml --set rounds=3", "read the samples"])
    story = run_story(store, {})
    assert story.next_from_run and story.next_steps == ["coevo run examples/taiscore_tiny.yaml --set rounds=3",
                                                        "read the samples"]
    assert next_steps("rlac", {"task": "code"}, [])[0] == "coevo plan examples/rlac_code_full.yaml"


def test_the_story_says_what_ran_and_prints_as_plain_lines(tmp_path):
    store = _store(tmp_path)
    _gold(store, 8.0)
    history = [{"step": 1, "loss": 0.69, "learning_rate": 1e-5}, {"step": 2, "loss": 0.6, "learning_rate": 5e-6}]
    for role, kind in (("critic", "grpo"), ("actor", "dpo")):
        store.finish_step(f"coevolution/round1/{role}", {"checkpoint": "x", "steps": 2, "kind": kind, "round": 1,
                                                         "metrics": {"weight_delta": 1.5e-5}, "history": history})
    store.save_rollout("coevolution/round0/eval", Rollout(sample_id="q0", x="x", y0="a"), round=0)
    story = run_story(store, {"cost": {"total": {"calls": 77}}}, pairs=4)
    assert story.ran == ["2 rounds measured (0–1)",
                         "2 training stages: critic GRPO round 1: 2 steps, actor DPO round 1: 2 steps",
                         "4 DPO pairs trained on", "8 held-out items per measured round (the headline numbers' n)",
                         "1 rollout saved, 77 model completions"]
    assert [f.kind for f in story.settings] == ["adam-first-step", "adam-first-step"]
    lines = story.lines()
    assert lines[0] == "What ran:" and "What changed:" in lines and "What to trust:" in lines
    assert any(line.startswith("  Gold-rubric score (coevolution): round 0 5.000") for line in lines)
    assert any(line.startswith("  this run's settings: adam-first-step: coevolution/round1/critic") for line in lines)
    assert lines.index("What to run next:") > lines.index("What to trust:")


def _audited(store: RunStore, fooled: float, n: float = 20.0) -> None:
    for r in (0, 1):
        store.log_metrics("coevolution", {
            "audit_pairwise_fooled_rate": fooled, "audit_pairwise_fooled_rate_lo": fooled - 0.1,
            "audit_pairwise_fooled_rate_hi": min(1.0, fooled + 0.1), "audit_pairwise_fooled_rate_n": n,
            "audit_pairwise_position_consistency": 0.9, "audit_pairwise_position_consistency_lo": 0.8,
            "audit_pairwise_position_consistency_hi": 0.95, "audit_pairwise_position_consistency_n": n,
            "audit_pairwise_flags": 1.0 if fooled > 0.3 else 0.0}, round=r)


def test_the_audit_measure_that_failed_is_in_the_story_and_the_results_table(tmp_path):
    store = _store(tmp_path)
    _audited(store, fooled=0.8)
    (change,) = failed_audit_changes(store.metrics())
    assert change.name == "audit_pairwise_fooled_rate" and change.tone == "audit"
    assert change.reading == "failed its audit check: the whole interval is above 0.2"
    assert change.last == "0.800 [0.700, 0.900] (n=20)"
    # a rounds table that lists the audit's passing measure only gets the failing one added
    store.set_meta("tables", {"TAIScore: rounds": {"columns": ["metric", "round 0", "round 1"], "rows": [
        {"metric": "audit_pairwise_position_consistency", "round 0": "0.900", "round 1": "0.900"}]}})
    store.close()
    page = TestClient(create_app([tmp_path / "run"])).get("/runs/run").text
    table = page[page.index('id="table-result-0"'):]
    table = table[:table.index("</table>")]
    added = re.search(r'<tr class="audit-added"[^>]*>(.*?)</tr>', table, re.S).group(1)
    assert "audit_pairwise_fooled_rate" in added and "0.800 [0.700, 0.900] (n=20)" in added
    story = page[page.index('id="table-story-changes"'):]
    assert 'data-metric="audit_pairwise_fooled_rate"' in story[:story.index("</table>")]


def test_a_passing_audit_adds_nothing(tmp_path):
    store = _store(tmp_path)
    _audited(store, fooled=0.05)
    assert failed_audit_changes(store.metrics()) == []


def test_no_paired_interval_from_fewer_than_five_pairs():
    (few,) = _intervals({"gold_gain_ci": {"coevolution": {"mean_diff": -0.36, "low": -0.492, "high": -0.229,
                                                           "n_pairs": 2}}})
    assert few["too_few"] and few["low"] is None and few["high"] is None
    (enough,) = _intervals({"diff_ci": {"mean_diff": 0.3, "low": 0.1, "high": 0.5, "n_pairs": 12}})
    assert not enough["too_few"] and (enough["low"], enough["high"]) == (0.1, 0.5)


def test_the_page_prints_no_interval_for_two_pairs(tmp_path):
    import json

    store = _store(tmp_path)
    _gold(store, 2.0)
    store.close()
    (tmp_path / "run" / "summary.json").write_text(json.dumps({"gold_gain_ci": {"coevolution": {
        "mean_diff": -0.36, "low": -0.492, "high": -0.229, "n_pairs": 2}}}))
    page = TestClient(create_app([tmp_path / "run"])).get("/runs/run").text
    table = page[page.index('id="table-intervals"'):]
    table = table[:table.index("</table>")]
    assert "-0.492" not in table and "-0.229" not in table and "no interval" in table
    assert "too few to tell (2 pairs" in table


def test_final_loss_is_the_last_steps_and_the_mean_has_its_own_name():
    history = [{"step": 1, "loss": 0.693}, {"step": 2, "loss": 0.6}, {"step": 2, "train_loss": 0.647,
                                                                         "train_runtime": 3.0}]
    assert stage_losses({"metrics": {"train_loss": 0.647, "loss": 0.6}, "history": history}) == \
        {"final_loss": 0.6, "mean_loss": 0.647}
    # a stage that kept only TRL's mean: the last step comes from its history, the mean is not taken for it
    assert stage_losses({"metrics": {"train_loss": 0.647}, "history": history}) == {"final_loss": 0.6,
                                                                                     "mean_loss": 0.647}
    assert stage_losses({"metrics": {"train_loss": 0.647}}) == {"final_loss": None, "mean_loss": 0.647}
    assert stage_losses({"metrics": {}, "history": history[:2]})["mean_loss"] == pytest.approx(0.6465)


def test_weight_change_and_loss_metrics_say_what_they_are():
    delta = describe("actor_weight_delta")
    assert "Relative L2" not in delta.definition and "Largest absolute change" in delta.definition
    assert delta.unit == "max |Δw|" and delta.title == "Actor largest weight change"
    assert describe("dpo_loss").title == "DPO mean loss"


def _pool(store: RunStore, expected: float | None) -> None:
    pairwise = Judgment(judge="pairwise", score=1.0, expected=expected, winner="y1", shown_order=["y1", "y0"])
    store.save_rollout("coevolution/round1/pool0", Rollout(sample_id="q3", x="Write about tides.", y0="Tides.",
                                                           y1="Tides rise and fall.",
                                                           judgments={"pairwise": pairwise}), round=1)
    pair = PreferencePair(prompt="Write about tides.", chosen="Tides rise and fall.", rejected="Tides.",
                          sample_id="q3", source="coevolution/round1")
    store.put_record("pairs/coevolution/round1", "q3", pair)


def test_dpo_pairs_carry_the_judges_probability(tmp_path):
    store = _store(tmp_path)
    _pool(store, expected=0.83)
    pairs = dpo_pairs(store, ["coevolution/round1/actor"], store.rollout_rows())
    assert pairs["total"] == 1 and pairs["judged"]
    (row,) = pairs["rows"]
    assert (row["round"], row["chosen"], row["rejected"], row["probability"], row["winner"]) == (
        1, "Tides rise and fall.", "Tides.", 0.83, "y1")
    assert dpo_pairs(store, [], store.rollout_rows()) is None


def test_round_answers_pair_the_first_and_last_round_on_a_prompt(tmp_path):
    store = _store(tmp_path)
    for r, answer in ((0, "Fine."), (1, "Rivers bend past the mill."), (2, "The river bends, slow and brown.")):
        gold = Judgment(judge="gold_rubric", score=4.0 + r)
        store.save_rollout(f"coevolution/round{r}/eval", Rollout(sample_id="q0", x="Write about rivers.", y0=answer,
                                                                 judgments={"gold_rubric": gold}), round=r)
        store.save_rollout(f"coevolution/round{r}/grpo", Rollout(sample_id="q9", x="other", y0="a"), round=r)
    found = round_answers(store.rollout_rows())
    assert (found["kind"], found["first"], found["last"], found["shared"]) == ("coevolution/round*/eval", 0, 2, 1)
    (prompt,) = found["prompts"]
    assert prompt["first"]["y0"] == "Fine." and prompt["last"]["y0"] == "The river bends, slow and brown."
    assert prompt["first"]["judges"] == [("gold_rubric", "4")] and prompt["last"]["y0_chars"] == 32


def _watched(store: RunStore, steps: int) -> None:
    monitor = Monitor(stage="coevolution/round1/critic")
    monitor.observe_anchor(0, ANCHOR, {"q0": -0.5, "q1": 0.0})
    for step in range(1, steps + 1):
        monitor.observe_reward(step, [0.1 * step, 0.2])
        monitor.observe_outputs(step, ["a b c a b c a b c", "short"])

    class Kept:
        flags = monitor.flags

        def report(self):
            return monitor.report()

    keep_report(store, Kept())


def test_the_monitor_says_too_few_steps_to_tell_and_names_its_anchor_in_words(tmp_path):
    store = _store(tmp_path)
    _watched(store, steps=2)
    section = monitor_section(store)
    (status,) = section["statuses"]
    assert status["verdict"] == "too-few" and status["text"].startswith("too few steps to tell")
    assert "needs 4 logged steps; this stage logged 2" in status["text"]
    (anchor,) = section["anchors"]
    assert anchor["title"] == "A checkable TAIScore on the constraints y0 breaks"
    assert "less half the share of the met ones" in anchor["about"]  # why its mean can be below 0
    titles = [a["text"] for a in section["figure"]["figure"]["layout"]["annotations"]]
    assert "<b>anchor: A checkable TAIScore on the constraints y0 breaks</b>" in titles
    assert not any("learning" in t for t in titles)
    outputs = [a["text"] for a in section["outputs_figure"]["figure"]["layout"]["annotations"]]
    assert {"<b>repetition</b>", "<b>output length</b>", "<b>empty outputs</b>"} <= set(outputs)
    store.close()
    page = TestClient(create_app([tmp_path / "run"])).get("/runs/run").text
    assert "No flag in" not in page and "too few steps to tell" in page


def test_enough_steps_and_no_flag_says_so():
    report = {"stage": "s", "reward_curve": [[s, 0.5, 8] for s in range(1, 7)], "flags": []}
    assert stage_status(report)["text"] == "no flag over 6 logged steps"
    rounds = {"stage": "rlac", "unit": "round", "reward_curve": [[1, 0.5, 4]], "flags": []}
    assert stage_status(rounds)["verdict"] == "too-few" and "needs 2 logged rounds" in stage_status(rounds)["text"]


@pytest.mark.parametrize(("spec", "title"), [
    ("gold", "held-out gold score"), ("judge:qwen", "second judge (qwen)"),
    ("degeneracy:repeat_share", "repeated word 3-grams within a completion"),
    ("python:missing.py:short_answers", "short answers")])
def test_anchors_are_named_in_words(spec, title):
    assert anchor_words(spec)["title"] == title


def test_a_change_row_is_a_plain_record():
    change = Change(name="gold_score", title="Gold", stage="c", first="1", last="2", reading="r", tone="flat")
    assert change.model_dump()["difference"] == ""
