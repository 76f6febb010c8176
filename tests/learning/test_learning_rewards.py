"""The checkable rewards the learning curves train on, and the curve record's interval."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from learning.curve import curve_record, paired_gain
from coevo.eval.checkable import (
    broken,
    constraints_for,
    concise_critique,
    fewer_broken_constraints,
    names_broken_constraint,
)
from coevo.tasks.loaders import load_samples

LIGHTHOUSE = next(s for s in load_samples("bundled:writing") if s.id == "wp-001")  # max 350 words, lantern + harbour


def test_a_bundled_prompt_has_its_constraints_and_another_is_refused_but_the_probe():
    from coevo.eval.checkable import UnknownPrompt
    from coevo.llm.python_functions import PROBE_PROMPT

    assert {c["kind"] for c in constraints_for(LIGHTHOUSE.prompt)} == {"max_words", "include_words"}
    assert constraints_for(PROBE_PROMPT) == []
    with pytest.raises(UnknownPrompt, match="dragons"):
        constraints_for("Write about dragons.")


def test_the_critic_reward_counts_the_named_failures_and_charges_false_alarms():
    y0 = "The cat sat by the lantern. " * 5  # breaks include_words (no "harbour") only
    assert [c["kind"] for c in broken(LIGHTHOUSE.prompt, y0)] == ["include_words"]
    assert names_broken_constraint(LIGHTHOUSE.prompt, y0, "Nice story, well done.") == 0.0
    assert names_broken_constraint(LIGHTHOUSE.prompt, y0, "The word harbour never appears.") == 1.0
    # Also flagging the length, which y0 meets, is half a false alarm.
    assert names_broken_constraint(LIGHTHOUSE.prompt, y0, "Mention the harbour, and it is too long.") == 0.5
    # y0 that meets everything: no failure to name, a constant 0 (no GRPO signal).
    good = "The lantern glowed over the harbour."
    assert names_broken_constraint(LIGHTHOUSE.prompt, good, "The harbour is fine.") == 0.0


def test_the_pairwise_judge_prefers_fewer_broken_constraints_and_ties_otherwise():
    good, bad = "A lantern and a harbour.", "A cat."
    assert fewer_broken_constraints(LIGHTHOUSE.prompt, good, bad) == "a"
    assert fewer_broken_constraints(LIGHTHOUSE.prompt, bad, good) == "b"
    assert fewer_broken_constraints(LIGHTHOUSE.prompt, bad, "A dog.") == "tie"


def test_the_concision_reward_falls_with_length_in_characters():
    assert concise_critique("", "", "short " * 25) == 1.0        # 149 characters
    assert concise_critique("", "", "long " * 73) == 0.0         # 364 characters
    assert 0.4 < concise_critique("", "", "long " * 51) < 0.6    # 254 characters
    assert concise_critique("", "", "  spaced \n\n  out  ") == 1.0


def test_the_concision_reward_cannot_be_raised_by_fewer_longer_words():
    # The loophole of issue 43: under a word count, 30 long words scored as well as 30 short
    # ones in the same tokens; in characters the longer critique scores lower.
    short_words, long_words = "bad " * 30, "inconsistent " * 30
    assert concise_critique("", "", long_words) < concise_critique("", "", short_words)


def test_paired_gain_pairs_keys_and_gives_no_interval_for_one():
    before = {"a#0": 0.0, "b#0": 0.0, "c#0": 1.0, "d#0": 0.0}
    after = {"a#0": 1.0, "b#0": 1.0, "c#0": 1.0, "d#0": 1.0, "extra#0": 0.0}
    gain, lo, hi, n = paired_gain(before, after)
    assert (gain, n) == (0.75, 4) and 0 <= lo <= gain <= hi <= 1
    assert paired_gain({"a": 0.0}, {"a": 1.0})[1:] == (None, None, 1)
    assert paired_gain({"a": 0.0}, {"b": 1.0}) == (None, None, None, 0)


def test_the_curve_record_reads_before_and_after_from_its_first_and_last_points():
    points = [(0, {"a#0": 0.0, "b#0": 0.0}), (4, {"a#0": 1.0, "b#0": 0.0}), (8, {"a#0": 1.0, "b#0": 1.0})]
    record = curve_record(loop="x", target="t", reward="r", points=points, seconds=1.0, seeds=[0])
    assert (record.before, record.after, record.gain, record.steps) == (0.0, 1.0, 1.0, 8)
    assert record.curve == [[0, 0.0], [4, 0.5], [8, 1.0]]
    assert json.loads(record.model_dump_json())["gain_ci"] == record.gain_ci


def test_the_benchmark_names_a_bad_reward_and_exits_2(tmp_path):
    result = subprocess.run([sys.executable, "benchmarks/learning_curves.py", "--loop", "taiscore-critic",
                             "--reward", f"python:{tmp_path}/missing.py:f", "--work-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "missing.py" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--seeds", "a,b"], "error: --seeds must be comma-separated integers, got 'a,b'"),
    (["--steps", "0"], "error: --steps must be at least 1, got 0"),
    (["--loop", "nope"], "error: argument --loop: invalid choice: 'nope'"),
    (["--learning-rate", "0"], "error: --learning-rate must be positive, got 0.0"),
    (["--loop", "decoevo", "--learning-rate", "1e-5"],
     "error: --learning-rate applies to the TAIScore loops only; decoevo sets its own"),
])
def test_the_benchmark_refuses_bad_arguments(args, message):
    # The refusal names what is wrong, from argparse's usage error (exit 2), before any model
    # loads: not some later error that happens to say "error" after minutes of training.
    base = ["--loop", "taiscore-critic"] if "--loop" not in args else []
    result = subprocess.run([sys.executable, "benchmarks/learning_curves.py", *base, *args],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("usage: learning_curves.py") and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_writing_split_is_seeded_disjoint_and_refuses_a_bad_size():
    from learning.common import writing_split

    train, held = writing_split(24)
    assert len(held) == 24 and len(train) == 48 and not {s.id for s in train} & {s.id for s in held}
    assert [s.id for s in writing_split(24)[1]] == [s.id for s in held]
    assert [s.id for s in writing_split(24, seed=1)[1]] != [s.id for s in held]
    with pytest.raises(ValueError, match="heldout must be between"):
        writing_split(72)


def test_cached_texts_makes_only_what_the_file_lacks(tmp_path):
    from learning.common import cached_texts

    made: list[list[str]] = []

    def make(keys: list[str]) -> list[str]:
        made.append(keys)
        return [k.upper() for k in keys]

    path = tmp_path / "y0.json"
    assert cached_texts(path, ["a", "b"], make) == {"a": "A", "b": "B"}
    assert cached_texts(path, ["b", "c"], make) == {"b": "B", "c": "C"}
    assert made == [["a", "b"], ["c"]]


def test_the_measuring_callback_measures_every_few_steps_and_at_the_last():
    from types import SimpleNamespace

    from learning.common import measuring_callback

    points: list = []
    callback = measuring_callback(2, 5, lambda: {"k": 1.0}, points)
    for step in range(1, 6):
        callback.on_step_end(None, SimpleNamespace(global_step=step), None)
    assert [p[0] for p in points] == [2, 4, 5]
