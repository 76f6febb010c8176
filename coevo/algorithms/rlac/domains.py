"""RLAC's two tasks (§4): what the critic proposes, how the validator checks it, and how the
generator is scored, for factual biographies (facts) and code with tests (code)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from coevo.algorithms.backend import Backend, default_backend
from coevo.algorithms.rlac.config import RlacConfig
from coevo.algorithms.rlac.records import HeldoutEval
from coevo.prompts import load_template
from coevo.rundir.store import RunStore
from coevo.core.types import Completion, Conversation, Proposal, Sample, Verdict
from coevo.validators.base import Validator

if TYPE_CHECKING:
    pass

# --------------------------------------------------------------------------- domains


class RlacDomain(Protocol):
    """What the loop asks of a task (FactsDomain, CodeDomain): its instructions, the prompts
    of both models, how a critic answer reads, the enumerative baseline's cost and scores,
    and the held-out metric."""

    name: str
    #: The domain's real validator (the `validator: random` ablation replaces it).
    validator: Validator
    #: Verifications one critic proposal costs, in the paper's unit: facts 1 validator call;
    #: code 2 executions, the proposed test on the reference solution and on the output (App.
    #: B.2: 2,000 problems x 8 outputs x 2 proposals x 3 iterations x 2 = 192K). A reference
    #: run the validator answers from its cache still counts, as the paper counts it.
    verifications_per_proposal: int

    def generator_prompt(self, sample: Sample) -> Conversation:
        """The messages the generator is asked for this instruction."""
        ...

    def critic_prompt(self, sample: Sample, output: str) -> Conversation:
        """The messages the critic is asked about one output."""
        ...

    def critic_schema(self, sample: Sample, output: str) -> dict[str, Any] | None:
        """The JSON schema the critic decodes under for this output (None: free text)."""
        ...

    def proposal(self, sample: Sample, output: str, text: str) -> Proposal:
        """A critic answer read as the claim the validator checks."""
        ...

    def enumerative_cost(self, sample: Sample, outputs: list[str]) -> list[int]:
        """Validator calls that checking each output in full costs."""
        ...

    def enumerate(self, sample: Sample, outputs: list[str]) -> list[float]:
        """Each output's score when checked in full (the enumerative baseline)."""
        ...

    def evaluate(self, heldout: list[Sample], outputs: list[str]) -> HeldoutEval:
        """The held-out metric of one output per held-out instruction."""
        ...

    def example_proposals(self, sample: Sample, output: str) -> list[Proposal]:
        """The checks the instruction itself spells out, as proposals (code: the problem
        statement's example calls; none for facts): what a critic that only copies the
        instruction would propose."""
        ...


class FactsDomain:
    """Biographies of exactly n sentences; FactScore precision on held-out people."""

    name = "facts"
    verifications_per_proposal = 1

    def __init__(self, config: RlacConfig, store: RunStore | None, backend: Backend | None = None):
        from coevo.tasks.bios import BUNDLED_CORPUS
        from coevo.validators.facts import EntailmentJudge, FactValidator, KnowledgeSource

        self.config = config
        self.corpus = config.data.source or BUNDLED_CORPUS
        judge_model = None if config.facts.judge == "lexical" and config.facts.atomic_facts == "sentences" \
            else (backend or default_backend()).model(config.roles, "judge", store=store)
        self.judge_model = judge_model
        self.validator = FactValidator(
            KnowledgeSource.load(self.corpus),
            EntailmentJudge(judge_model, config.roles.judge.sampling.entail, mode=config.facts.judge,
                            free=config.facts.judge_output == "free"),
            k=config.facts.passages, min_overlap=config.facts.min_overlap)
        self.generator_template = load_template(config.roles.generator.template)
        self.critic_template = load_template(config.roles.critic.template)
        self._facts_cache: dict[tuple[str, str], list[str]] = {}

    def generator_prompt(self, sample: Sample) -> Conversation:
        from coevo.tasks.bios import number_word

        return self.generator_template.messages(n=number_word(int(sample.meta["sentences"])),
                                                topic=sample.meta["entity"])

    def critic_prompt(self, sample: Sample, output: str) -> Conversation:
        from coevo.tasks.bios import numbered, split_sentences

        return self.critic_template.messages(topic=sample.meta["entity"],
                                             numbered_paragraph=numbered(split_sentences(output)))

    def critic_schema(self, sample: Sample, output: str) -> dict[str, Any] | None:
        """{"sentence": N, "error_fact": 3-8 words quoted from sentence N, "reason"}, one
        branch per sentence of THIS output (see `critic_schemas.quoted_fact_proposal`)."""
        from coevo.roles.critic_schemas import quoted_fact_proposal
        from coevo.tasks.bios import split_sentences

        return None if self.config.critic_form == "paper" else quoted_fact_proposal(split_sentences(output))

    def proposal(self, sample: Sample, output: str, text: str) -> Proposal:
        from coevo.validators.facts import parse_fact_proposal

        parsed = parse_fact_proposal(text)
        return Proposal(sample_id=sample.id, output=output, text=text, parsed=parsed or {},
                        valid=parsed is not None)

    def atomic_facts(self, sample: Sample, outputs: list[str]) -> list[list[str]]:
        from coevo.eval.factscore import split_atomic_facts

        entity = str(sample.meta["entity"])
        todo = [o for o in dict.fromkeys(outputs) if (entity, o) not in self._facts_cache]
        if todo:
            split = split_atomic_facts(self.judge_model, entity, todo, mode=self.config.facts.atomic_facts,
                                       sampling=self.config.roles.judge.sampling.split)
            self._facts_cache.update({(entity, o): f for o, f in zip(todo, split)})
        return [self._facts_cache[(entity, o)] for o in outputs]

    def enumerative_cost(self, sample: Sample, outputs: list[str]) -> list[int]:
        """One validator call per atomic fact (FactScore's cost unit)."""
        return [len(f) for f in self.atomic_facts(sample, outputs)]

    def enumerate(self, sample: Sample, outputs: list[str]) -> list[float]:
        """FactTune-FS: verify every atomic fact; score = FactScore precision of the output."""
        from coevo.eval.factscore import factscore

        entity = str(sample.meta["entity"])
        results = factscore(self.validator, [(entity, facts) for facts in self.atomic_facts(sample, outputs)])
        # An output with no fact to check has no precision; it ranks lowest, not unscored.
        return [r.precision if r.precision is not None else 0.0 for r in results]

    def evaluate(self, heldout: list[Sample], outputs: list[str]) -> HeldoutEval:
        """FactScore over the held-out people: precision, #correct, #incorrect (Table 1),
        with the precision's 95 % t-interval over the people with a scorable fact (n of
        them) and each one's precision (`per_item`, by sample id)."""
        from coevo.eval.factscore import factscore, summarize

        items = [(str(s.meta["entity"]), self.atomic_facts(s, [o])[0]) for s, o in zip(heldout, outputs)]
        results = factscore(self.validator, items)
        per_item = {s.id: r.precision for s, r in zip(heldout, results) if r.precision is not None}
        lo, hi = _t_bounds(list(per_item.values()))
        return HeldoutEval(**summarize(results), factscore_precision_lo=lo, factscore_precision_hi=hi,
                           heldout_n=len(per_item), per_item=per_item)

    def example_proposals(self, sample: Sample, output: str) -> list[Proposal]:
        """A biography instruction names a person and a length: no claim to check."""
        return []


class CodeDomain:
    """HumanEval-style problems; pass@1 on held-out problems through the sandbox."""

    name = "code"
    verifications_per_proposal = 2

    def __init__(self, config: RlacConfig, store: RunStore | None, backend: Backend | None = None):
        from coevo.validators.code import CodeValidator, ReferenceTests
        from coevo.validators.sandbox import Sandbox

        self.config = config
        sandbox = Sandbox(unsafe_exec=config.code.unsafe_exec)
        self.validator = CodeValidator(sandbox, timeout_s=config.code.timeout_s)
        self.tests = ReferenceTests(sandbox, timeout_s=max(10.0, config.code.timeout_s))
        self.generator_template = load_template(config.roles.generator.template)
        self.critic_template = load_template(config.roles.critic.template)

    def generator_prompt(self, sample: Sample) -> Conversation:
        """The paper's form (App. A.1) is the problem statement alone, as the user message;
        `generator_code_instructed` wraps it in an instruction to answer in a code block."""
        return self.generator_template.messages(problem=sample.prompt)

    def critic_prompt(self, sample: Sample, output: str) -> Conversation:
        from coevo.tasks.code import extract_code
        from coevo.validators.code import answer_format

        code = extract_code(output, sample.meta.get("entry_point"))
        if self.config.critic_form == "paper":
            return self.critic_template.messages(question=sample.prompt, code=code,
                                                 optional_examples_block=self._examples(sample))
        return self.critic_template.messages(question=sample.prompt, code=code, answer_format=answer_format(sample))

    def _examples(self, sample: Sample) -> str:
        import re

        entry = sample.meta.get("entry_point")
        call = re.search(rf">>>\s*({re.escape(str(entry))}\(.*\))\s*$", sample.prompt, re.M) if entry else None
        if not self.config.code.critic_examples or call is None:
            return ""
        return ("Example of the answer format (this call comes from the problem statement; look for a "
                f"case that the generated code gets wrong):\n<think>Check the code on an input.</think>\n"
                f"<testcase> CALL: {call.group(1)} </testcase>")

    def critic_schema(self, sample: Sample, output: str) -> dict[str, Any] | None:
        """The arguments of one call of the function under test (see validators/code.py)."""
        from coevo.validators.code import answer_schema

        return None if self.config.critic_form == "paper" else answer_schema(sample)

    def proposal(self, sample: Sample, output: str, text: str) -> Proposal:
        from coevo.validators.code import parse_answer

        proposal = parse_answer(sample, output, text)
        if not proposal.valid:
            call = _bare_call(text, str(sample.meta.get("entry_point") or ""))
            if call:
                proposal = proposal.model_copy(update={
                    "parsed": {"kind": "call", "test": call, "format": "bare call"}, "valid": True})
        return proposal

    def enumerative_cost(self, sample: Sample, outputs: list[str]) -> list[int]:
        """Every reference test case on every output (the paper counts executed tests)."""
        from coevo.tasks.code import count_test_cases

        return [count_test_cases(sample)] * len(outputs)

    def enumerate(self, sample: Sample, outputs: list[str]) -> list[float]:
        """AceCoder-Rule: run the reference tests; score 1 when all pass."""
        return [float(o.passed) for o in self.tests.run_many([(sample, out) for out in outputs])]

    def evaluate(self, heldout: list[Sample], outputs: list[str]) -> HeldoutEval:
        """pass@1: the share of held-out problems whose one output passes every reference
        test, with its Wilson 95 % interval, n, and each problem's outcome (`per_item`)."""
        from coevo.eval.stats import wilson_interval

        outcomes = self.tests.run_many(list(zip(heldout, outputs)))
        if not outcomes:
            return HeldoutEval(pass_at_1=None, heldout_n=0, per_item={})
        per_item = {s.id: float(o.passed) for s, o in zip(heldout, outcomes)}
        share, lo, hi = wilson_interval(sum(o.passed for o in outcomes), len(outcomes))
        return HeldoutEval(pass_at_1=share, pass_at_1_lo=lo, pass_at_1_hi=hi, heldout_n=len(outcomes),
                           per_item=per_item)

    def example_proposals(self, sample: Sample, output: str) -> list[Proposal]:
        """Each call with literal arguments the problem statement shows (`>>> f(3.5)`), as a
        CALL test on `output`."""
        from coevo.tasks.code import example_calls

        entry = str(sample.meta.get("entry_point") or "")
        if not entry:
            return []
        return [Proposal(sample_id=sample.id, output=output, text=f"{entry}({', '.join(map(repr, args))})",
                         parsed={"kind": "call", "test": f"{entry}({', '.join(map(repr, args))})",
                                 "format": "problem example"})
                for args in example_calls(sample)]


def _t_bounds(values: list[float]) -> tuple[float | None, float | None]:
    """The 95 % t-interval of a mean of per-person precisions, cut to [0, 1] (a precision
    cannot leave it; the t-interval over a few people can); none under two people."""
    from coevo.eval.stats import t_interval

    if len(values) < 2:
        return None, None
    _, lo, hi = t_interval(values)
    return max(0.0, lo), min(1.0, hi)


def _bare_call(text: str, entry: str) -> str | None:
    """A call of the function under test written outside the <testcase> tags, as small
    critics do ("Testcase: print(f(3.5))", ">>> f(3.5)", "assert f(3.5) == 0.5"): the meaning
    (call f with these arguments) is there, only the form is off. Top-level lines only, so
    a call inside a function the critic rewrote is never taken; the call is only parsed,
    never run here (the validator runs it in the sandbox)."""
    import ast
    import re

    if not entry:
        return None
    for line in text.splitlines():
        if line[:1].isspace():
            continue  # inside a def/class body
        body = re.sub(r"^(?:>>>\s*|assert\s+)", "", line.strip())
        try:
            node = ast.parse(body, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            try:  # "assert f(x) == y": the left side is the call
                node = ast.parse(body).body[0]
                node = node.value if isinstance(node, ast.Expr) else None
            except (SyntaxError, ValueError, RecursionError, IndexError):
                continue
        if isinstance(node, ast.Compare):
            node = node.left
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print" and node.args:
            node = node.args[0]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry:
            return ast.unparse(node)
    return None


#: A plain dict, as the conventions ask: the task name of a config to its domain.
DOMAINS: dict[str, type[FactsDomain] | type[CodeDomain]] = {"facts": FactsDomain, "code": CodeDomain}


def check_proposals(validator: Validator, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]:
    """The validator's verdict on each (sample, output, proposal), in the items' order."""
    # Validators that batch (the facts judge, the code sandbox) check the whole stage's
    # proposals in one go; the verdicts come back in the items' order either way.
    check_many = getattr(validator, "check_many", None)
    if check_many is not None:
        return check_many(items)
    return [validator.check(*item) for item in items]


def completion_texts(completions: list[list[Completion]]) -> list[list[str]]:
    # Raw texts, <think> blocks kept: DPO must train on what the policy actually wrote.
    # Whatever reads a generator output as an answer gets `Instruction.answers` (stripped).
    return [[c.text.strip() for c in row] for row in completions]
