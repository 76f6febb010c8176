"""The public Python API: docs/api.md runs as written, `import coevo` stays cheap, and
`coevo.rewards` gives the rewards its docstrings promise.

Each ```python block of docs/api.md runs on its own (a fresh namespace, from the repository
root), so the page cannot drift from the code; a block after an `<!-- api-test: slow -->`
line loads the embedded model or trains, and is a slow test. The reward tests run on replay
models, Python judges and scripted validators: they pin what each reward reads (the dataset
columns, the actor's revision, the critic's claim) and the reward it gives for each verdict.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import coevo
from coevo import rewards
from coevo.llm.replay import ReplayModel
from coevo.core.strict import ConfigError
from coevo.tasks.code import load_code_problems
from coevo.core.types import Judgment, Verdict

ROOT = Path(__file__).resolve().parents[1]
API_DOC = ROOT / "docs" / "api.md"
SLOW_MARK = "<!-- api-test: slow -->"


# --------------------------------------------------------------------------- docs/api.md


@dataclass(frozen=True)
class DocBlock:
    line: int  # of the opening fence, for the failure's traceback
    code: str
    slow: bool


def doc_blocks(text: str) -> list[DocBlock]:
    """The ```python blocks of a markdown page, each marked slow when the line before its
    fence (blank lines skipped) is SLOW_MARK."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            before = next((ln.strip() for ln in reversed(lines[:i]) if ln.strip()), "")
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append(DocBlock(i + 1, "\n".join(lines[i + 1:end]) + "\n", before == SLOW_MARK))
            i = end
        i += 1
    return blocks


BLOCKS = doc_blocks(API_DOC.read_text(encoding="utf-8"))


@pytest.mark.parametrize("block", [
    pytest.param(block, id=f"api.md:{block.line}", marks=[pytest.mark.slow] if block.slow else [])
    for block in BLOCKS])
def test_the_api_page_runs_as_written(block, monkeypatch):
    monkeypatch.chdir(ROOT)  # the page says: run from the repository root
    # Padded with blank lines, so a traceback's line number is the page's.
    source = "\n" * block.line + block.code
    exec(compile(source, str(API_DOC), "exec"), {"__name__": "__api_doc__"})


def test_the_block_finder_reads_fences_and_slow_marks():
    page = "text\n```python\na = 1\n```\n<!-- api-test: slow -->\n\n```python\nb = 2\n```\n```bash\nls\n```\n"
    assert doc_blocks(page) == [DocBlock(2, "a = 1\n", False), DocBlock(7, "b = 2\n", True)]


def test_the_page_shows_a_grpo_step_of_ones_own_and_marks_model_blocks_slow():
    assert any("GRPOTrainer(" in b.code and "rewards." in b.code and b.slow for b in BLOCKS)
    # A block loading the embedded model takes seconds to minutes: it must be a slow test.
    assert [b.line for b in BLOCKS if "smollm2" in b.code and not b.slow] == []


# --------------------------------------------------------------------------- the package


def test_import_coevo_loads_nothing_else():
    probe = "import sys, coevo; print(sorted(m for m in sys.modules if m.startswith(('coevo', 'torch', 'pydantic'))))"
    found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert found.stdout.strip() == "['coevo', 'coevo.version']"  # the version leaf, nothing above it


def test_every_public_name_resolves_and_is_listed():
    for name in coevo.__all__:
        assert getattr(coevo, name) is not None, name
    assert set(coevo.__all__) <= set(dir(coevo)) and coevo.rewards is rewards
    assert coevo.load_model.__module__ == "coevo.llm.specs" and coevo.audit_judge.__name__ == "audit_judge"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        coevo.not_a_name  # noqa: B018


# --------------------------------------------------------------------------- rewards.taiscore


def recording_judge():
    """A Python judge that keeps what it was asked; its score is the critique's length."""
    calls = []

    def judge(x, y0, critique, y1):
        calls.append((x, y0, critique, y1))
        return float(len(critique))

    return judge, calls


def columns(n, **given):
    return {"x": [f"x{i}" for i in range(n)], "y0": [f"y0-{i}" for i in range(n)],
            "sample_id": [f"s{i}" for i in range(n)], **given}


def test_taiscore_judges_the_columns_and_the_actors_revision_under_each_critique():
    judge, calls = recording_judge()
    actor = ReplayModel(rules=[{"match": "critique A", "completion": "revision A"}, {"completion": "revision B"}])
    reward_fn = rewards.taiscore(judge=judge, actor=actor)
    completions = [[{"role": "assistant", "content": "<think>hm</think>critique A"}], "crit B"]
    # TRL passes its own keywords beside the dataset's columns: they are ignored.
    scores = reward_fn(prompts=[[], []], completions=completions, trainer_state=None, **columns(2))
    assert calls == [("x0", "y0-0", "critique A", "revision A"), ("x1", "y0-1", "crit B", "revision B")]
    assert scores == [10.0, 6.0] and reward_fn.__name__ == "taiscore_reward"
    assert "y0-0" in actor.calls[0][-1].content  # the actor revised the row's own y0


def test_critique_quality_judges_the_critique_alone_and_asks_no_revision():
    judge, calls = recording_judge()
    actor = ReplayModel(rules=[{"completion": "never asked"}])
    reward_fn = rewards.taiscore(judge=judge, actor=actor, reward="critique_quality")
    assert reward_fn([[]], ["a critique"], **columns(1)) == [10.0]
    assert actor.calls == [] and calls == [("x0", "y0-0", "a critique", None)]
    assert reward_fn.__name__ == "critique_quality_reward"


def test_a_scorer_is_used_as_given_and_an_unreadable_answer_or_empty_critique_gets_invalid_reward():
    class Scripted:
        name = "taiscore"

        def score(self, rollouts, samples=None):
            return [Judgment(judge="taiscore", score=7.0), Judgment(judge="taiscore", valid=False, error="?")]

    reward_fn = rewards.taiscore(judge=Scripted(), actor=ReplayModel(rules=[{"completion": "y1"}]),
                                 invalid_reward=-1.0)
    assert reward_fn([[]] * 3, ["c1", "c2", "  "], **columns(3)) == [7.0, -1.0, -1.0]


def test_specs_load_the_named_judge_and_actor(tmp_path):
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    answer = json.dumps({**{d: {"score": 5, "reason": "r"} for d in dims}, "score": 8})
    (tmp_path / "judge.jsonl").write_text(json.dumps({"completion": answer}) + "\n")
    (tmp_path / "actor.jsonl").write_text(json.dumps({"completion": "a revision"}) + "\n")
    reward_fn = rewards.taiscore(judge=f"replay:{tmp_path / 'judge.jsonl'}", actor=f"replay:{tmp_path / 'actor.jsonl'}",
                                 judge_sampling={"max_tokens": 64, "scoring": "sampled"}, store=tmp_path / "run")
    assert reward_fn([[]], ["a critique"], **columns(1)) == [8.0]
    assert (tmp_path / "run" / "run.sqlite").is_file()  # the calls are cached in the run folder


def test_a_python_spec_judge_is_probed_and_used(tmp_path):
    (tmp_path / "judge.py").write_text("def reward(x, y0, critique, y1):\n    return 3.0 if y1 else 1.0\n")
    reward_fn = rewards.taiscore(judge=f"python:{tmp_path / 'judge.py'}:reward",
                                 actor=ReplayModel(rules=[{"completion": "y1"}]))
    assert reward_fn([[]], ["c"], **columns(1)) == [3.0]


def test_rows_hold_the_critic_prompt_and_the_columns_the_reward_reads():
    reward_fn = rewards.taiscore(judge=recording_judge()[0], actor=ReplayModel(rules=[{"completion": "y1"}]))
    [row] = reward_fn.rows(["Write about rain."], ["Rain."])
    assert row["x"] == "Write about rain." and row["y0"] == "Rain." and row["sample_id"] == "row0"
    [message] = row["prompt"]
    assert message["role"] == "user" and "Write about rain." in message["content"] and "Rain." in message["content"]
    assert reward_fn.rows(["a"], ["b"], ids=["q7"])[0]["sample_id"] == "q7"
    with pytest.raises(ValueError, match="1 prompts, 2 responses"):
        reward_fn.rows(["a"], ["b", "c"])


def test_a_missing_or_misaligned_column_is_named_with_the_fix():
    reward_fn = rewards.taiscore(judge=recording_judge()[0], actor=ReplayModel(rules=[{"completion": "y1"}]))
    with pytest.raises(ValueError, match=r"column\(s\) y0, sample_id .*rows\(\.\.\.\)"):
        reward_fn([[]], ["c"], x=["x"])
    with pytest.raises(ValueError, match=r"2 completions but column\(s\) x, y0, sample_id"):
        reward_fn([[]] * 2, ["c", "d"], **columns(1))


def _bad_python_judge(tmp_path):
    (tmp_path / "narrow.py").write_text("def reward(x):\n    return 1.0\n")
    return f"python:{tmp_path / 'narrow.py'}:reward"


@pytest.mark.parametrize("arguments, says", [
    ({"judge": "nope:x"}, "judge='nope:x': unknown model spec"),
    ({"judge": "python:/no/such/file.py:reward"}, "no Python file"),
    ({"judge": 42}, "give a model spec"),
    ({"judge": lambda x: 1.0}, "takes \\(x, y0, critique, y1\\)"),
    ({"actor": "python:judge.py"}, "actor='python:judge.py': a python: function stands where a judge goes"),
    ({"actor": "gguf:/no/such.gguf"}, "actor='gguf:/no/such.gguf': .*no file"),
    ({"actor": 42}, "actor=42: give a model spec"),
    ({"reward": "pairwise"}, "taiscore, critique_quality, outcome_gain"),
    ({"revision": {"max_tokenz": 3}}, "revision=.*max_tokenz"),
    ({"revision": 16}, "revision=16: give a coevo Sampling or a dict"),
])
def test_a_bad_taiscore_argument_is_a_config_error_naming_it(arguments, says):
    given = {"judge": recording_judge()[0], "actor": ReplayModel(rules=[{"completion": "y1"}]), **arguments}
    with pytest.raises(ConfigError, match=says):
        rewards.taiscore(**given)


def test_a_python_judge_of_the_wrong_signature_is_refused_before_training(tmp_path):
    with pytest.raises(ConfigError, match="does not take the reward arguments"):
        rewards.taiscore(judge=_bad_python_judge(tmp_path), actor=ReplayModel(rules=[{"completion": "y1"}]))


# --------------------------------------------------------------------------- rewards.rlac


PROBLEMS = load_code_problems("bundled:code_easy", limit=1)  # add(a, b)
RIGHT = "def add(a: int, b: int) -> int:\n    return a + b\n"
WRONG = "def add(a: int, b: int) -> int:\n    return a - b\n"
CALL_ADD = '{"a": 2, "b": 3}'  # the critic's answer in the schema form: the arguments of one call


class ScriptedValidator:
    """A `Validator` whose verdict on each output is scripted; it keeps what it checked."""

    name = "scripted"

    def __init__(self, verdicts):
        self.verdicts, self.calls, self.seen = verdicts, 0, []

    def check(self, sample, output, proposal):
        self.calls += 1
        self.seen.append((sample.id, output, proposal))
        return Verdict(verdict=self.verdicts[output])


def test_rlac_reward_is_zero_exactly_when_the_validator_confirms_the_critics_failure():
    validator = ScriptedValidator({"right": "survived", "wrong": "caught", "odd": "invalid"})
    critic = ReplayModel(rules=[{"completion": CALL_ADD}])
    reward_fn = rewards.rlac(validator=validator, critic=critic, task="code", samples=PROBLEMS)
    completions = ["right", "<think>hm</think>wrong", [{"role": "assistant", "content": "odd"}]]
    assert reward_fn([None] * 3, completions, sample_id=["code_easy/0"] * 3, trainer_state=None) == [1.0, 0.0, 1.0]
    # The validator checked each output (reasoning stripped) against the critic's parsed claim.
    assert [(sid, output) for sid, output, _ in validator.seen] == [("code_easy/0", o) for o in ("right", "wrong", "odd")]
    assert all(p.valid and p.parsed["test"] == "add(2, 3)" for _, _, p in validator.seen)
    assert len(critic.calls) == 3 and reward_fn.__name__ == "rlac_code_reward"


def test_rlac_code_reward_runs_the_critics_test_in_the_sandbox():
    checked = []
    reward_fn = rewards.rlac(validator="code", critic=ReplayModel(rules=[{"completion": CALL_ADD}]),
                             samples=PROBLEMS, on_checked=checked.extend)
    assert reward_fn([None] * 2, [RIGHT, WRONG], sample_id=["code_easy/0"] * 2) == [1.0, 0.0]
    assert [verdict.verdict for *_, verdict in checked] == ["survived", "caught"]


def test_rlac_rows_are_the_generator_prompts_and_make_their_problems_known():
    reward_fn = rewards.rlac(validator=ScriptedValidator({"right": "survived"}),
                             critic=ReplayModel(rules=[{"completion": CALL_ADD}]), task="code")
    with pytest.raises(ValueError, match=r"no problem with sample_id \['code_easy/0'\].*rows\(samples\)"):
        reward_fn([None], ["right"], sample_id=["code_easy/0"])
    [row] = reward_fn.rows(PROBLEMS)
    assert row["sample_id"] == "code_easy/0" and row["prompt"][-1] == {"role": "user", "content": PROBLEMS[0].prompt}
    assert reward_fn([row["prompt"]], ["right"], sample_id=[row["sample_id"]]) == [1.0]


def test_rlac_critic_samples_afresh_at_every_call():
    class Recording(ReplayModel):
        def generate(self, conversations, sampling, n=1):
            self.seeds = [*getattr(self, "seeds", []), sampling.seed]
            return super().generate(conversations, sampling, n)

    critic = Recording(rules=[{"completion": CALL_ADD}])
    reward_fn = rewards.rlac(validator=ScriptedValidator({"right": "survived"}), critic=critic, task="code",
                             samples=PROBLEMS, config={"seed": 3})
    for _ in range(2):
        reward_fn([None], ["right"], sample_id=["code_easy/0"])
    assert critic.seeds == [3000, 3001]


@pytest.mark.parametrize("arguments, says", [
    ({"validator": "bogus"}, "give 'code', 'facts', 'random' or a Validator"),
    ({"validator": object()}, "a validator has check"),
    ({"validator": ScriptedValidator({})}, "say which task"),
    ({"validator": "random"}, "say which task"),
    ({"validator": "code", "task": "facts"}, "the code validator checks code proposals"),
    ({"validator": "code", "config": {"task": "facts"}}, "task"),
    ({"validator": "code", "config": 7}, "give an RlacConfig or a dict"),
    ({"validator": "code", "critic": "python:judge.py"}, "critic='python:judge.py': a python: function"),
    ({"validator": "code", "critic": 42}, "critic=42: give a model spec"),
    ({"validator": "code", "critic_sampling": {"temp": 1}}, "critic_sampling=.*temp"),
])
def test_a_bad_rlac_argument_is_an_error_naming_it(arguments, says):
    given = {"critic": ReplayModel(rules=[{"completion": CALL_ADD}]), **arguments}
    with pytest.raises(ValueError, match=says):
        rewards.rlac(**given)
