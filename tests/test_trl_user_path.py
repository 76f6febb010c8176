"""The TRL user's path (docs/trl.md): a plain GRPO script plus coevo's five lines trains, and
the monitor's findings reach TRL's logs and TensorBoard; each wrong use ends in one clear
error or a warning."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRL_DOC = ROOT / "docs" / "trl.md"


def doc_script() -> str:
    [block] = re.findall(r"```python\n(.*?)```", TRL_DOC.read_text(encoding="utf-8"), flags=re.S)
    return block


def test_the_doc_adds_at_most_five_lines_to_a_plain_trl_script():
    added = [line for line in doc_script().splitlines() if line.rstrip().endswith("# coevo")]
    assert 1 <= len(added) <= 5, added
    assert 'report_to="tensorboard"' in doc_script()


@pytest.mark.slow
@pytest.mark.tiny_model
def test_the_doc_script_trains_and_its_tensorboard_file_holds_the_monitor(tmp_path, tiny_llama):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    script = tmp_path / "train.py"
    script.write_text(f"MODEL = {str(tiny_llama)!r}\nOUT = {str(tmp_path / 'out')!r}\n" + doc_script(),
                      encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "held_out" in done.stdout  # the report's anchor curve
    events = sorted((tmp_path / "out").rglob("events.out.tfevents.*"))
    assert events, list((tmp_path / "out").rglob("*"))
    tags = set()
    for path in events:
        accumulator = EventAccumulator(str(path))
        accumulator.Reload()
        tags |= set(accumulator.Tags()["scalars"])
    assert {"train/monitor/held_out", "train/monitor/flags"} <= tags, sorted(tags)


def test_anchors_in_the_wrong_form_are_refused_saying_the_form_wanted():
    from coevo.monitor import HackingMonitor

    def anchor():
        return {"a": 1.0}

    with pytest.raises(TypeError, match="dict of named anchors"):
        HackingMonitor([anchor])
    with pytest.raises(TypeError, match="dict of named anchors"):
        HackingMonitor(anchor)
    with pytest.raises(TypeError, match="function of no arguments"):
        HackingMonitor({"a": 3})


def test_an_empty_monitor_warns_that_it_compares_the_reward_with_nothing(caplog):
    from coevo.monitor import HackingMonitor

    with caplog.at_level(logging.WARNING):
        HackingMonitor({})
    assert "no anchors" in caplog.text


def test_an_anchor_returning_a_number_is_refused_at_its_first_check():
    from types import SimpleNamespace

    from coevo.monitor import HackingMonitor

    monitor = HackingMonitor({"length": lambda: 0.5})
    with pytest.raises(TypeError, match="anchor 'length' returned float .* one number per item"):
        monitor.on_train_begin(SimpleNamespace(world_size=1), SimpleNamespace(global_step=0), None)


def test_a_wrapped_reward_whose_monitor_is_not_a_callback_is_refused_at_the_first_call():
    from coevo.monitor import HackingMonitor

    reward = HackingMonitor({"a": lambda: {"x": 1.0}}).wrap_reward(lambda prompts, completions, **kw: [1.0])
    with pytest.raises(RuntimeError, match="callbacks=\\[monitor\\]"):
        reward(prompts=["p"], completions=["c"], trainer_state=object())  # as TRL calls it


def test_the_monitor_logs_its_findings_through_trls_log_metric_once_per_check():
    from types import SimpleNamespace

    from coevo.monitor import HackingMonitor

    monitor = HackingMonitor({"held_out": lambda: {"q1": 2.0, "q2": 4.0}})
    monitor.on_train_begin(SimpleNamespace(world_size=1), SimpleNamespace(global_step=0), None)
    logged: list[tuple[str, float]] = []
    reward = monitor.wrap_reward(lambda prompts, completions, **kw: [1.0] * len(completions))
    reward(prompts=["p"], completions=["c"], log_metric=lambda name, value: logged.append((name, value)))
    reward(prompts=["p"], completions=["c"], log_metric=lambda name, value: logged.append((name, value)))
    assert logged == [("monitor/held_out", 3.0), ("monitor/flags", 0.0)]  # the second call: no new check


def test_judge_turns_a_function_of_prompt_and_completion_into_a_trl_reward(tmp_path):
    from coevo.rewards import judge

    reward = judge(lambda prompt, completion: None if not completion else float(len(completion)))
    chat = [{"role": "assistant", "content": "four"}]
    assert reward(prompts=["p", "p"], completions=[chat, ""]) == [4.0, None]
    scorer = tmp_path / "scorer.py"
    scorer.write_text("def words(prompt, completion):\n    return float(len(completion.split()))\n")
    from_spec = judge(f"python:{scorer}:words")
    assert from_spec(prompts=["p"], completions=["a b c"]) == [3.0] and from_spec.__name__ == "words"


def test_a_gold_rubric_reward_reads_each_rows_criteria_and_logs_the_judges_reasons():
    from coevo.llm.replay import ReplayModel
    from coevo.rewards import judge

    answer = {"criteria": [{"name": "Names the moon's gravity", "score": 8, "reason": "names the moon"}]}
    model = ReplayModel(rules=[{"completions": [json.dumps(answer)]}])
    reward = judge(model, kind="gold_rubric")
    extra: dict = {}
    scores = reward(prompts=["How do tides work?"], completions=["The moon pulls the sea."],
                    rubric=[["Names the moon's gravity"]], log_extra=lambda column, values: extra.update({column: values}))
    assert scores == [8.0] and extra["judge_reason"] and "moon" in extra["judge_reason"][0]
    with pytest.raises(Exception, match="rubric"):
        reward(prompts=["p"], completions=["c"])


@pytest.mark.slow
@pytest.mark.tiny_model
def test_under_two_processes_anchors_run_on_the_main_one_and_the_curve_is_trls_mean(tmp_path, tiny_llama):
    """torchrun, gloo: the user's script builds a monitor on each rank; only rank 0's anchor
    runs, and its reward curve is TRL's logged reward (the mean over both ranks' completions),
    not rank 0's half of them."""
    import json
    import shutil

    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    done = subprocess.run([torchrun, "--nproc_per_node", "2", str(ROOT / "tests" / "trl_monitor_ranks.py"),
                           str(tiny_llama), str(tmp_path)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    main, other = (json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1))
    assert main["world_size"] == 2 and main["anchor_calls"] >= 2 and other["anchor_calls"] == 0
    assert other["reward_curve"] == []
    assert {str(step): mean for step, mean, _ in main["reward_curve"]} == pytest.approx(main["trl_reward"])


def test_an_openai_spec_with_no_server_and_no_key_is_refused_at_load(monkeypatch):
    from coevo.llm.base import ModelError
    from coevo.llm.specs import load_model

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelError, match="OPENAI_API_KEY is not set.*openai:gpt-4.1-mini@http://HOST:PORT/v1"):
        load_model("openai:gpt-4.1-mini")


def test_a_misspelt_sampling_field_is_one_line_naming_the_field_it_meant():
    from coevo.rewards import taiscore
    from coevo.core.strict import ConfigError

    judge_spec = f"python:{ROOT / 'benchmarks' / 'gpu_round_judges.py'}"
    with pytest.raises(ConfigError, match="no field 'max_token' \\(did you mean 'max_tokens'\\?\\)") as caught:
        taiscore(judge_spec, "replay:x", revision={"max_token": 8})
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("follow, expected", [("optimised", [5.0, 6.0]), ("wrapped", [1.0, 1.0])])
def test_with_several_reward_functions_the_curve_is_what_grpo_optimises_unless_told(follow, expected):
    from types import SimpleNamespace

    from coevo.monitor import HackingMonitor

    monitor = HackingMonitor({"a": lambda: {"x": 1.0}}, follow=follow)
    args = SimpleNamespace(world_size=1, per_device_train_batch_size=2, gradient_accumulation_steps=1)
    monitor.on_train_begin(args, SimpleNamespace(global_step=0), None)
    reward = monitor.wrap_reward(lambda prompts, completions, **kw: [1.0] * len(completions))
    for step, total in ((1, 5.0), (2, 6.0)):
        monitor.on_step_begin(args, SimpleNamespace(global_step=step - 1), None)
        reward(prompts=["p", "q"], completions=["c", "d"])
        monitor.on_log(args, SimpleNamespace(global_step=step), None,
                       logs={"reward": total, "reward_std": 0.0, "rewards/mine/mean": 1.0,
                             "rewards/other/mean": total - 1.0})
    assert [mean for _, mean, _ in monitor.report()["reward_curve"]] == expected


def test_a_key_points_reward_is_the_share_of_each_rows_reference_points_supported():
    """The reference-based judge: a dataset column of key points, one judge call per point."""
    from coevo.llm.replay import ReplayModel
    from coevo.rewards import judge

    model = ReplayModel(rules=[{"match": "the moon's pull", "completions": [json.dumps({"label": "supported"})]},
                               {"completions": [json.dumps({"label": "omitted"})]}])
    reward = judge(model, kind="key_points")
    scores = reward(prompts=["How do tides work?"], completions=["The moon pulls the sea."],
                    key_points=[["Tides follow the moon's pull.", "Two tides a day.", "Springs at full moon."]])
    assert scores == [pytest.approx(1 / 3)]
