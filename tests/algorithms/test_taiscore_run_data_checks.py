"""What a TAIScore run's own data shows, caught on replay runs: a critic that echoes y0 and a
judge that pays the echo best (the monitor flags it, summary.json -> monitor -> copies counts
it, the run's warnings name it with the reward on copies beside the reward on real critiques);
a gold-rubric judge that writes 1, 2, 3, 4, 5 down the criteria whatever it reads (it fails
the run's judge audit, and the warnings and the runs list say so); a `python:` gold scorer
(not audited, and never "judge-agrees")."""

from __future__ import annotations

import json
from types import SimpleNamespace

from coevo.algorithms.taiscore import run_taiscore
from coevo.monitor.records import run_summary
from coevo.view.runinfo import run_marks
from coevo.run.runner import summary_dict
from coevo.rundir.store import RunStore
from coevo.train.common import TrainResult
from coevo.view.warnings import run_warnings
from tests.algorithms.test_taiscore_logic import RULES, FakeLocal, FakeTrainers, _config, _taiscore_answer
from tests.algorithms.test_taiscore_python_judge import JUDGE

#: The replay actor's every initial response: long enough for a copy of it to count as one.
Y0 = "The lighthouse stood on the rocks and its lantern turned all night over the dark harbour."
REAL = "The ending is rushed: show the keeper deciding to climb the tower, and cut the second adjective."
CRITERIA = ("voice", "imagery", "structure", "ending", "length")


class EchoTrainers(FakeTrainers):
    """GRPO whose critic echoes its input: of each prompt's two critiques the first is the y0 it
    was asked to critique, the second a real critique; two optimizer steps, the callbacks (the
    run's monitor) driven as TRL's Trainer drives them."""

    def grpo(self, policy, prompts, reward_fn, settings, output_dir, *, resume=True, extra_columns=None,
             callbacks=None):
        n, callbacks = settings.num_generations, callbacks or []
        args = SimpleNamespace(per_device_train_batch_size=n, gradient_accumulation_steps=1, world_size=1)
        state, control = SimpleNamespace(global_step=0, max_steps=2), SimpleNamespace(should_training_stop=False)
        for callback in callbacks:
            callback.on_train_begin(args, state, control, model=None)
        columns = {k: [v for v in values for _ in range(n)] for k, values in extra_columns.items()}
        completions = [[{"role": "assistant", "content": y0 if i == 0 else f"{REAL} ({i})"}]
                       for y0 in extra_columns["y0"] for i in range(n)]
        for step in (1, 2):
            for callback in callbacks:
                callback.on_step_begin(args, state, control)
            rewards = reward_fn(prompts=[p for p in prompts for _ in range(n)], completions=completions, **columns)
            state.global_step = step
            for callback in callbacks:
                callback.on_step_end(args, state, control)
        self.grpo_calls.append({"prompts": prompts, "rewards": rewards})
        policy.model_id += "+grpo"
        return TrainResult(checkpoint=str(output_dir / "final"), steps=2, seconds=1.0, seconds_per_step=0.5,
                           peak_rss_mb=1.0, metrics={"loss": 0.5})


def _backend(trainers, rules):
    class Local(FakeLocal):
        def __init__(self, spec):
            super().__init__(spec)
            self.rules = [dict(rule, completions=[rule["completion"]] if "completion" in rule else rule["completions"])
                          for rule in rules]

    backend = trainers.backend()
    backend.load_trainable = backend.load_frozen = Local
    return backend


def test_a_critic_that_echoes_y0_for_the_top_reward_is_flagged_and_named(tmp_path):
    # The judge pays a critique that is y0 again 9, a real one 7; the actor's answers are Y0.
    rules = [*RULES[:4], {"match": ["Critique:\n" + Y0, "Response B:"], "completion": _taiscore_answer(9)},
             *RULES[4:-1], {"completion": Y0}]
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(_config(tmp_path, rounds=1), store, _backend(EchoTrainers(), rules)))
    monitor = run_summary(store)
    copies = monitor["copies"]
    assert copies["copies"] * 2 == copies["critiques"] > 0  # one echo in each group of two
    assert copies["reward_on_copies"]["mean"] == 9.0 and copies["reward_on_critiques"]["mean"] == 7.0
    assert copies["worst"]["copies"] == "y0" and copies["worst"]["reward"] == 9.0
    # The monitor: copying paid best in every group is flagged at its first check (step 2), though
    # half the critiques copied from the first step (no crossing).
    assert [f["anchor"] for f in monitor["flags"]] == ["degeneracy:copy_rewarded_share"]
    assert monitor["stages"]["coevolution/round1/critic"]["degeneracy"]["1"]["copy_share"] == 0.5
    found = run_warnings(store)
    [named] = [f for f in found if f.kind == "copies-input"]
    n = copies["critiques"]
    assert named.text.startswith(f"{n // 2} of {n} GRPO critiques (50%) in coevolution/round1/grpo copy their input")
    assert "reward on copies: 9.000" in named.text and "on real critiques: 7.000" in named.text
    assert f"samples/{copies['worst']['rollout_id']}" in named.text
    assert any("degeneracy:copy_rewarded_share" in f.text for f in found if f.kind == "run")
    assert summary["rounds"][0]["metrics"]["reward_mean"] == 8.0


def _gold_answer(scores):
    return json.dumps({"criteria": [{"name": c, "score": s, "reason": "r"} for c, s in zip(CRITERIA, scores)]})


def _rubric_data(tmp_path, n=20):
    rubric = {"criteria": [{"name": c, "weight": 1} for c in CRITERIA]}
    path = tmp_path / "rubric_data.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about topic {i}.", "rubric": rubric})
                            + "\n" for i in range(n)))
    return str(path)


def test_a_gold_judge_that_scores_the_criteria_in_order_fails_the_run_audit(tmp_path):
    rules = [{"match": "evaluation criteria", "completion": _gold_answer([1, 2, 3, 4, 5])}, *RULES[1:]]
    store = RunStore(tmp_path / "run")
    config = _config(tmp_path, rounds=1, data={"source": _rubric_data(tmp_path)})
    summary = summary_dict(run_taiscore(config, store, _backend(FakeTrainers(), rules)))
    gold = [record for record in summary["audit"] if record["judge_role"] == "gold"]
    assert [record["round"] for record in gold] == ["coevolution/round0", "coevolution/round1"]
    for record in gold:
        assert record["kind"] == "gold_rubric" and record["n_items"] == 4
        assert {"criterion_order", "same_pattern", "master_keys"} <= {flag["probe"] for flag in record["flags"]}
        assert record["criterion_order_rate"]["value"] == 1.0 and record["criterion_order_rate"]["n"] == 4
    metrics = summary["rounds"][0]["metrics"]
    assert metrics["audit_gold_criterion_order_rate"] == 1.0 and metrics["audit_gold_flags"] >= 3
    said = [f.text for f in run_warnings(store) if f.kind == "judge-audit"]
    assert any(text.startswith("the gold judge failed") and "criterion order" in text for text in said)
    marks = run_marks(store, store.metrics())
    assert any(mark.kind == "judge-audit" and mark.text.startswith("the gold judge failed") for mark in marks)


def test_a_python_gold_scorer_is_not_audited_and_never_agrees(tmp_path):
    module = tmp_path / "judge.py"
    module.write_text(JUDGE)  # its gold: the response's word count, 2 for every "plain initial"
    store = RunStore(tmp_path / "run")
    config = _config(tmp_path, rounds=1, roles={"judge": {"model": f"python:{module}"}})
    summary = summary_dict(run_taiscore(config, store, FakeTrainers().backend()))
    assert summary["baseline"]["gold_score"] == 2.0
    assert "gold" not in {record["judge_role"] for record in summary["audit"]}
    assert not [f for f in run_warnings(store) if f.kind == "judge-agrees"]
