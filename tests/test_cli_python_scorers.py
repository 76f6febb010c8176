"""`python:` scorers on the command line: listed by `coevo models`, used by `coevo judge`, and
refused at the start of `coevo run` (exit 2, one line naming the spec, no run folder)."""

import json

import pytest

from tests.test_cli_errors import coevo

SCORERS = '''
def reward(x, y0, critique, y1):
    return float(len(critique))

def pairwise(x, a, b):
    return "b"

def gold(x, response, rubric):
    return 5.0

def raises(x, y0, critique, y1):
    raise KeyError("oops")
'''


@pytest.fixture
def scorers(tmp_path):
    path = tmp_path / "scorers.py"
    path.write_text(SCORERS)
    return path


def test_models_lists_the_python_form_and_its_signatures():
    proc = coevo("models")
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "python:FILE.py" in text
    for signature in ("reward(x, y0, critique, y1)", "pairwise(x, a, b)", "gold(x, response, rubric)",
                      "grader(question, answer, rubric)"):
        assert signature in text


def test_judge_scores_a_file_with_a_python_reward(tmp_path, scorers):
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(json.dumps({"id": "a", "x": "Write.", "y0": "old", "c": "abcd", "y1": "new"}) + "\n")
    out = tmp_path / "scored.jsonl"
    proc = coevo("judge", "taiscore", "--input", rollouts, "--out", out, "--judge", f"python:{scorers}:reward")
    assert proc.returncode == 0, proc.stderr
    judgment = json.loads(out.read_text())["judgment"]
    assert (judgment["score"], judgment["reward"], judgment["source"]) == (4.0, 4.0, "python")


def _run_config(tmp_path, judge, **models):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write {i}."}) + "\n" for i in range(8)))
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"algorithm": "taiscore", "data": {"source": str(data)},
                                  "roles": {role: {"model": spec} for role, spec in {"judge": judge, **models}.items()}}))
    return config


@pytest.mark.parametrize("target, message", [
    ("{path}:raises", "raised KeyError: 'oops' on a probe call"),
    ("{path}:reward", "names one function, but this place serves 3 judge kinds"),
    ("{dir}/absent.py", "no Python file at"),
    ("{path}:nope", "defines no function 'nope'"),
])
def test_run_refuses_a_bad_python_judge_at_the_start(tmp_path, scorers, target, message):
    spec = "python:" + target.format(path=scorers, dir=tmp_path)
    if target.endswith(":raises"):  # the module form, its reward the one that raises
        scorers.write_text(SCORERS.replace("def reward(", "def unused(").replace("def raises(", "def reward("))
        spec = f"python:{scorers}"
    proc = coevo("run", _run_config(tmp_path, spec), "--out", tmp_path / "run")
    assert proc.returncode == 2 and spec in proc.stderr and message in " ".join(proc.stderr.split())
    assert len(proc.stderr.strip().splitlines()) <= 3  # one message (wrapped), no traceback
    assert not (tmp_path / "run").exists()


def test_run_refuses_a_python_spec_where_no_judge_goes(tmp_path, scorers):
    proc = coevo("run", _run_config(tmp_path, f"python:{scorers}", actor=f"python:{scorers}"),
                 "--out", tmp_path / "run")
    assert proc.returncode == 2 and "roles.actor.model" in proc.stderr and "stands only where a judge goes" in proc.stderr


def test_refine_probes_a_python_judge_before_any_model_loads(tmp_path, scorers):
    proc = coevo("refine", "--prompt", "Write a haiku.", "--judge", f"python:{scorers}:raises")
    assert proc.returncode == 2 and "raises" in proc.stderr and "Traceback" not in proc.stderr
    proc = coevo("refine", "--prompt", "Write a haiku.", "--critic", f"python:{scorers}:reward")
    assert proc.returncode == 2 and "--critic" in proc.stderr and "not for the critic" in proc.stderr
