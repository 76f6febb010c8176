"""RLAC on code with the real code validator (sandbox) and replay generator/critic."""

import pytest

import coevo.algorithms.rlac.loop as rlac_loop
from coevo.algorithms.backend import Backend
from coevo.algorithms.rlac import RlacConfig, run_rlac
from coevo.algorithms.rlac.records import VerificationCounts
from coevo.settings.config import validate
from coevo.llm.replay import ReplayModel
from coevo.rundir.store import RunStore
from coevo.tasks.code import count_test_cases, load_humaneval
from coevo.train.common import TrainResult
from coevo.core.types import Message

GOOD = """```python
from typing import List

def has_close_elements(numbers: List[float], threshold: float) -> bool:
    for i, a in enumerate(numbers):
        for j, b in enumerate(numbers):
            if i != j and abs(a - b) < threshold:
                return True
    return False
```"""
BAD = """```python
def has_close_elements(numbers, threshold):
    return len(numbers) < 0
```"""
TRUNCATE = """```python
def truncate_number(number: float) -> float:
    return number % 1.0
```"""
#: Right on the docstring's first example, wrong whenever the balance does go below zero.
BELOW_ZERO_WRONG = """```python
from typing import List

def below_zero(operations: List[int]) -> bool:
    return False
```"""
CATCHING_TEST = "<think>empty?</think><testcase> CALL: has_close_elements([1.0, 1.1], 0.5) </testcase>"
NO_TEST = "The code looks correct."

MODELS = {
    "gen": [{"match": "has_close_elements", "completions": [GOOD, BAD]},
            {"match": "truncate_number", "completions": [TRUNCATE]},
            {"match": "def below_zero", "completions": [BELOW_ZERO_WRONG]}],
    "crit": [{"match": "len(numbers) < 0", "completions": [CATCHING_TEST, NO_TEST]},
             {"completions": [CATCHING_TEST, NO_TEST]}],
}


@pytest.fixture
def trained(monkeypatch):
    """Replay models and a recording DPO stage, as the loop's default Backend."""
    calls = []

    def load_model(spec, store=None, **options):
        return ReplayModel(rules=MODELS[spec])

    def train_dpo(policy, pairs, settings, output_dir, **kwargs):
        calls.append((str(output_dir), list(pairs)))
        return TrainResult(checkpoint=str(output_dir / "final"), steps=1, seconds=0.0,
                           seconds_per_step=0.0, peak_rss_mb=0.0)

    backend = Backend(load_trainable=load_model, load_frozen=load_model, train_dpo=train_dpo,
                      restore=lambda policy, path, settings: None)
    monkeypatch.setattr(rlac_loop, "default_backend", lambda: backend)
    return calls


def config(**changes):
    """The code config with `changes`: a dotted key (`roles.generator.template`) sets one
    nested value, a plain one replaces the top-level value."""
    data = {"algorithm": "rlac", "task": "code", "iterations": 1, "k": 2, "n": 2, "kl": False,
            "roles": {"generator": {"model": "gen"}, "critic": {"model": "crit"}, "judge": {"model": "gen"}},
            "code": {"unsafe_exec": False, "timeout_s": 5},
            "data": {"train_ids": ["HumanEval/0"], "heldout_ids": ["HumanEval/2"]}}
    for key, value in changes.items():
        node = data
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return validate(RlacConfig, data)


def test_code_round_pairs_come_from_sandboxed_verdicts(tmp_path, trained):
    store = RunStore(tmp_path)
    summary = run_rlac(config(), store)
    (gen_dir, gen_pairs), (crit_dir, crit_pairs) = trained
    assert [(p.chosen, p.rejected) for p in gen_pairs] == [(GOOD, BAD)]
    assert [(p.chosen, p.rejected) for p in crit_pairs] == [(CATCHING_TEST, NO_TEST)]
    verdicts = sorted(r["verdict"] for _, r in store.get_records("rlac_proposal"))
    # bad+test: caught; good+test: survived; both NO_TEST answers: invalid (no testcase).
    assert verdicts == ["caught", "invalid", "invalid", "survived"]
    n_tests = count_test_cases(load_humaneval(ids=["HumanEval/0"])[0])
    # 4 proposals, each run on the reference and on the output (App. B.2's unit: 2 executions).
    assert summary.verification_calls == VerificationCounts(rlac=2 * 4, enumerative=2 * n_tests, used=2 * 4)
    assert summary.rounds[0].eval.pass_at_1 == 1.0


def test_code_enumerative_baseline_runs_every_reference_test(tmp_path, trained):
    summary = run_rlac(config(verification="enumerative"), RunStore(tmp_path))
    [(gen_dir, pairs)] = trained
    assert [(p.chosen, p.rejected, p.source) for p in pairs] == [(GOOD, BAD, "enumerative:code")]
    n_tests = count_test_cases(load_humaneval(ids=["HumanEval/0"])[0])
    assert summary.verification_calls.used == 2 * n_tests


def test_critic_examples_block_uses_a_call_from_the_docstring():
    from coevo.algorithms.rlac.domains import CodeDomain

    [sample] = load_humaneval(ids=["HumanEval/2"])
    hinted = CodeDomain(config(critic_form="paper", code={"critic_examples": True}), None)
    assert "<testcase> CALL: truncate_number(3.5) </testcase>" in hinted.critic_prompt(sample, TRUNCATE)[-1].content
    assert hinted.critic_schema(sample, TRUNCATE) is None  # the paper's form is free text
    plain = CodeDomain(config(critic_form="paper"), None)
    assert "truncate_number(3.5) </testcase>" not in plain.critic_prompt(sample, TRUNCATE)[-1].content


def test_schema_form_asks_for_the_arguments_of_one_call():
    from coevo.algorithms.rlac.domains import CodeDomain

    [sample] = load_humaneval(ids=["HumanEval/2"])
    domain = CodeDomain(config(), None)
    system, asked = domain.critic_prompt(sample, TRUNCATE)
    prompt = system.content + asked.content
    assert "<testcase>" not in prompt and '"number": ...' in asked.content
    schema = domain.critic_schema(sample, TRUNCATE)
    assert schema["required"] == ["number"] and schema["additionalProperties"] is False


PAPER_CODE_CRITIC_SYSTEM = ("You are a code critic. Analyze code for bugs and generate failing test\ncases.\n"
                            "Strictly follow the format with <think> and <testcase> tags.")  # App. A.2


def test_the_paper_prompts_are_the_problem_alone_and_a_system_and_user_critic_message():
    from coevo.algorithms.rlac.domains import CodeDomain

    [sample] = load_humaneval(ids=["HumanEval/2"])
    paper = CodeDomain(config(critic_form="paper"), None)
    # App. A.1: the problem statement exactly as the data has it, the only message.
    assert paper.generator_prompt(sample) == [Message(role="user", content=sample.prompt)]
    system, asked = paper.critic_prompt(sample, TRUNCATE)
    assert (system.role, system.content) == ("system", PAPER_CODE_CRITIC_SYSTEM)
    assert asked.role == "user" and asked.content.startswith("Analyze the given problem and the generated code")
    assert f"Problem: {sample.prompt}" in asked.content and "return number % 1.0" in asked.content
    # The tiny config's named departure: the instruction wrapper around the same statement.
    [wrapped] = CodeDomain(config(**{"roles.generator.template": "generator_code_instructed"}), None).generator_prompt(sample)
    assert wrapped.content.startswith("Complete the following Python problem.")
    assert wrapped.content.endswith(sample.prompt) and wrapped.content != sample.prompt


def test_a_code_run_asks_and_trains_on_the_paper_messages(tmp_path, trained):
    loaded = []

    def load_model(spec, store=None, **options):
        loaded.append((spec, ReplayModel(rules=MODELS[spec])))
        return loaded[-1][1]

    backend = rlac_loop.default_backend()  # the fixture's fake, with models that remember their calls
    backend.load_trainable = backend.load_frozen = load_model
    run_rlac(config(critic_form="paper"), RunStore(tmp_path), backend)
    problems = {s.prompt for s in load_humaneval(ids=["HumanEval/0", "HumanEval/2"])}
    gen_calls = [c for spec, model in loaded if spec == "gen" for c in model.calls]
    crit_calls = [c for spec, model in loaded if spec == "crit" for c in model.calls]
    assert {(c[0].role, c[0].content) for c in gen_calls} == {("user", p) for p in problems}
    assert all(len(c) == 1 for c in gen_calls)
    assert crit_calls and all([(m.role, m.content) for m in c][0] == ("system", PAPER_CODE_CRITIC_SYSTEM)
                              and [m.role for m in c] == ["system", "user"] for c in crit_calls)
    (_, gen_pairs), (_, crit_pairs) = trained
    assert [(p.system, p.prompt) for p in gen_pairs] == [(None, load_humaneval(ids=["HumanEval/0"])[0].prompt)]
    assert crit_pairs and all(p.system == PAPER_CODE_CRITIC_SYSTEM for p in crit_pairs)


@pytest.mark.parametrize("answer, passes", [
    ("    return number % 1.0\n", True),                  # the body alone, as a completion model writes it
    ("```python\n    return number % 1.0\n```", True),   # the body alone, fenced
    ("    return 0.0\n", False),                          # a wrong body fails: the tests did run
])
def test_a_body_only_answer_runs_after_the_problem_statement(answer, passes):
    """With the problem statement alone as the prompt, a model may continue the signature
    and docstring with the body only (HumanEval's completion style): the sandbox then runs
    problem statement + body."""
    from coevo.tasks.code import candidate_program
    from coevo.validators.code import ReferenceTests
    from coevo.validators.sandbox import Sandbox

    [sample] = load_humaneval(ids=["HumanEval/2"])
    body = answer.replace("```python\n", "").replace("```", "")
    assert candidate_program(sample, answer) == sample.prompt + body
    assert ReferenceTests(Sandbox(unsafe_exec=False)).run(sample, answer).passed is passes


@pytest.mark.parametrize("text, call", [
    ("Testcase:\n```python\nprint(truncate_number(3.5))\n# Output: 0.5\n```", "truncate_number(3.5)"),
    (">>> truncate_number(2.25)\n0.25", "truncate_number(2.25)"),
    ("assert truncate_number(1.5) == 0.5", "truncate_number(1.5)"),
    ("def truncate_number(x):\n    return truncate_number(3)\n", None),  # inside a rewritten def
    ("print(other(3))", None),
])
def test_a_bare_call_of_the_entry_point_is_read_as_a_call_test(text, call):
    from coevo.algorithms.rlac.domains import CodeDomain

    [sample] = load_humaneval(ids=["HumanEval/2"])
    proposal = CodeDomain(config(), None).proposal(sample, TRUNCATE, text)
    assert proposal.valid == (call is not None)
    if call:
        assert proposal.parsed == {"kind": "call", "test": call, "format": "bare call"}


def test_pass_at_1_is_the_share_of_heldout_problems_that_pass_every_reference_test(tmp_path, trained):
    # Held out: truncate_number solved right, below_zero solved wrong, so pass@1 is 1/2 before
    # and after the round (replay outputs do not change with training). A pass@1 that read
    # any passing test, any passing problem, or the train problems would not give 0.5.
    summary = run_rlac(config(data={"train_ids": ["HumanEval/0"], "heldout_ids": ["HumanEval/2", "HumanEval/3"]}),
                       RunStore(tmp_path))
    assert summary.baseline.pass_at_1 == 0.5
    assert summary.rounds[0].eval.pass_at_1 == 0.5
    # Each problem's outcome (a paired comparison of rounds needs them), its n, and the
    # Wilson 95 % interval of 1 in 2, shown in the table beside the share.
    assert summary.baseline.per_item == {"HumanEval/2": 1.0, "HumanEval/3": 0.0}
    assert summary.baseline.heldout_n == 2
    assert (summary.baseline.pass_at_1_lo, summary.baseline.pass_at_1_hi) == (
        pytest.approx(0.0945, abs=1e-4), pytest.approx(0.9055, abs=1e-4))
    assert [row["pass_at_1"] for row in summary.table.rows] == ["0.500 (n=2: too few to tell)"] * 2
    # Only what the run measured: no FactScore keys on code, no KL with `kl: false`.
    assert set(summary.baseline.model_dump()) == {"pass_at_1", "pass_at_1_lo", "pass_at_1_hi", "heldout_n", "per_item",
                                        "heldout_output_chars"}


def test_pass_at_1_counts_a_wrong_solution_as_a_failure(tmp_path, trained):
    summary = run_rlac(config(data={"train_ids": ["HumanEval/0"], "heldout_ids": ["HumanEval/3"]}),
                       RunStore(tmp_path))
    assert summary.baseline.pass_at_1 == 0.0


def test_a_config_file_alone_cannot_switch_off_isolation(monkeypatch):
    from coevo.core.strict import ConfigError
    from coevo.validators.sandbox import UNSAFE_ENV_VAR

    monkeypatch.delenv(UNSAFE_ENV_VAR, raising=False)
    with pytest.raises(ConfigError, match="--unsafe-exec"):
        config(code={"unsafe_exec": True})
    monkeypatch.setenv(UNSAFE_ENV_VAR, "1")  # what `coevo run --unsafe-exec` sets
    assert config(code={"unsafe_exec": True}).code.unsafe_exec


#: A reasoning model's draft inside <think>, a wrong solution in a code block, then its answer
#: as bare code: read with the reasoning, the only fenced block (the draft) would be the code.
THINK_DRAFT = "<think>First try:\n```python\ndef truncate_number(number):\n    return 0.0\n```\nHmm, no.</think>\n"
BARE_TRUNCATE = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"


def test_code_is_extracted_from_the_answer_not_from_the_reasoning(tmp_path, trained, monkeypatch):
    """The first code block of a reasoning model's output may be a draft inside <think>:
    the enumerative tests and pass@1 read the answer after it."""
    monkeypatch.setitem(MODELS, "gen", [{"match": "has_close_elements", "completions": [GOOD, BAD]},
                                        {"match": "truncate_number", "completions": [THINK_DRAFT + BARE_TRUNCATE]}])
    store = RunStore(tmp_path / "enumerative")
    run_rlac(config(data={"train_ids": ["HumanEval/2"], "heldout_ids": ["HumanEval/0"]},
                    verification="enumerative"), store)
    assert [r["score"] for _, r in store.get_records("rlac_enumerative")] == [1.0, 1.0]
    assert trained == []  # both outputs pass every test: nothing to pair
    summary = run_rlac(config(data={"train_ids": ["HumanEval/0"], "heldout_ids": ["HumanEval/2"]}),
                       RunStore(tmp_path / "heldout"))
    assert summary.baseline.pass_at_1 == 1.0
