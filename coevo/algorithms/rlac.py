"""RLAC: Reinforcement Learning with Adversarial Critic (Algorithm 1 of the RLAC paper).

    for each iteration:
      # Policy evaluation for the generator
      for each instruction s: a_1..a_K ~ pi_g(.|s); c_i ~ pi_c(.|s, a_i); r_i = R(s, a_i, c_i)
      # Policy evaluation for the critic (optional)
      for each (s, a): c_1..c_N ~ pi_c(.|s, a); R(s, a, c_j)
      # Policy improvement: DPO for pi_g on (a+ survived, a- caught) of the same s,
      #                     DPO for pi_c on (c+ confirmed failure, c- rejected) of the same (s, a)
      pi_ref <- pi   (train_dpo freezes the policy at entry: the reference moves every iteration)

`RlacRun.iteration` is this box, one method per step: `policy_evaluation` (`generate` K
outputs -> `critique`: the critic proposes, the validator checks -> `generator_dataset`,
`critic_dataset`), then `improve("generator")` and `improve("critic")` (DPO), then
`evaluate` on the held-out instructions. The records it hands on are in rlac_records.py.

Two domains share the loop: `facts` (biographies; the facts validator checks the critic's
claimed wrong fact against a knowledge corpus) and `code` (HumanEval; the code validator runs
the critic's test on the reference and on the output in a sandbox). Baselines are configs of
the same loop: `verification: enumerative` (facts: verify every atomic fact, DPO best vs
worst output, FactTune-FS; code: run every reference test, AceCoder-Rule), `critic_training:
static` (frozen critic) and `validator: random` (noisy labels). Every validator call is
counted, and every run also counts what enumerative checking of the SAME generations costs,
so the verification-call ratio comes out of one run.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import time
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field, field_validator, model_validator

from coevo.algorithms.rlac_reward import RewardModelSettings
from coevo.algorithms.rlac_records import (BaselineRecord, Critiques, CriticStats, EnumerativeScore,
                                           HeldoutEval, Instruction, IterationData, ProposalRecord,
                                           RlacSummary, RolloutStats, RoundPair, RoundRecord,
                                           TrainingInfo, VerdictCounts, VerificationCounts)
from coevo.algorithms.rlac_audit import STAGE as AUDIT_STAGE
from coevo.algorithms.rlac_audit import audit_validator
from coevo.audit.in_run import run_records
from coevo.config import AuditConfig, ModelRoles, StrictModel, refuse_moved_keys
from coevo.llm.base import ChatModel
from coevo.llm.call_tags import tagged
from coevo.llm.specs import base_model_path
from coevo.prompts import load_template
from coevo.roles.parsing import strip_reasoning
from coevo.store import RunStore
from coevo.train.dpo import DPOSettings
from coevo.types import (Completion, Conversation, PreferencePair, Proposal, Rollout, Sample, Sampling,
                         Table, Verdict)
from coevo.validators.base import Validator

if TYPE_CHECKING:
    from coevo.algorithms.rlac_reward import RewardModelScorer
    from coevo.llm.local import LocalModel

# --------------------------------------------------------------------------- config


class RlacData(StrictModel):
    """Instructions: biographies of corpus people (facts) or code problems (code)."""

    #: facts: a {title, text} corpus (`bundled:bios` or a JSONL path); code: `humaneval`,
    #: `bundled:code_easy` or a JSONL.
    source: str | None = None
    #: Held-out instructions from another source than the train ones (code: the paper trains
    #: on AceCode-87K-hard problems and evaluates on HumanEval); None: both from `source`.
    heldout_source: str | None = None
    train: int = Field(4, ge=1)
    heldout: int = Field(2, ge=1)
    #: Pin the people / problem ids instead of a seeded draw (train first, then held-out).
    train_ids: list[str] | None = None
    heldout_ids: list[str] | None = None
    sentences: int = Field(4, ge=1)  # facts: "exactly n sentences" (the paper: 4 or 8)
    seed: int = 0

    @model_validator(mode="after")
    def _pinned_ids_are_the_sizes(self) -> RlacData:
        # So `train` / `heldout` always say how many instructions a run has (the plan, the
        # departures and the summary read them), pinned or drawn.
        if self.train_ids:
            self.train = len(self.train_ids)
        if self.heldout_ids:
            self.heldout = len(self.heldout_ids)
        return self


class RlacModels(ModelRoles):
    """The roles of Algorithm 1 (backend options per role in `options`, see ModelRoles)."""

    generator: str = "smollm2"
    critic: str = "smollm2"
    #: The facts validator's entailment judge and the atomic-fact splitter (frozen).
    judge: str = "smollm2"

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return refuse_moved_keys(data, {"frozen_options": "models.options (per role, or `default`)"})


class RlacSampling(StrictModel):
    generator: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=256)
    critic: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=128)
    judge: Sampling = Sampling(temperature=0.0, max_tokens=16)
    splitter: Sampling = Sampling(temperature=0.0, max_tokens=384)
    #: Held-out evaluation decodes greedily: FactScore and pass@1 of the policy's mode.
    eval: Sampling = Sampling(temperature=0.0, max_tokens=256)


class FactsSettings(StrictModel):
    #: Entailment judgments: the judge model (the paper), word overlap, or both (see facts.py).
    judge: Literal["llm", "lexical", "hybrid"] = "llm"
    atomic_facts: Literal["llm", "sentences"] = "llm"
    passages: int = Field(3, ge=1)
    min_overlap: float = Field(0.5, ge=0, le=1)


class CodeSettings(StrictModel):
    timeout_s: float = Field(5.0, gt=0)
    #: Asks for model-written code to run WITHOUT isolation where none works. A config file
    #: alone cannot allow it: `coevo run --unsafe-exec` or COEVO_UNSAFE_EXEC=1 must too.
    unsafe_exec: bool = False

    @field_validator("unsafe_exec")
    @classmethod
    def _allowed_outside_the_file(cls, value: bool) -> bool:
        from coevo.validators.sandbox import UNSAFE_ENV_VAR, unsafe_allowed

        if value and not unsafe_allowed():
            raise ValueError(f"running model-written code without isolation needs the command line's consent: "
                             f"pass --unsafe-exec to `coevo run` (or set {UNSAFE_ENV_VAR}=1), or install "
                             "bubblewrap and set unsafe_exec: false")
        return value
    #: critic_form=paper only: fill the paper prompt's {optional_examples_block} with one
    #: answer in its <testcase> format, built from a call in the problem's own docstring
    #: (`>>> f(3.5)`). The schema form needs no example: its grammar fixes the form.
    critic_examples: bool = False


class RlacTemplates(StrictModel):
    """The prompt templates of the two trained roles: a bundled name or a path to your own
    file (coevo/prompts: a `<<system>>` / `<<user>>` split gives a system message). Left
    out, each is the paper's for the task and critic form (App. A): `generator_bio` /
    `generator_code` and `critic_fact` / `critic_code` (`critic_*_schema` for the schema form).
    """

    generator: str | None = None
    critic: str | None = None


#: The paper's generator template of each task (App. A.1): a system message with the bio
#: instructions and the user's request; for code the problem statement alone, unmodified.
PAPER_GENERATOR_TEMPLATE = {"facts": "generator_bio", "code": "generator_code"}
#: The task of each bundled generator template (its fields are that task's).
GENERATOR_TASK = {"generator_bio": "facts", "generator_code": "code", "generator_code_instructed": "code"}
#: The critic's template of each (task, critic_form): App. A.2's prompts, or ours for the
#: schema form (the same system/user split, the answer form asked for as JSON).
CRITIC_TEMPLATE = {("facts", "paper"): "critic_fact", ("facts", "schema"): "critic_fact_schema",
                   ("code", "paper"): "critic_code", ("code", "schema"): "critic_code_schema"}


class RlacConfig(StrictModel):
    """`algorithm: rlac` — the paper's defaults: K=10 outputs, N=4 proposals (facts)."""

    algorithm: Literal["rlac"] = "rlac"
    task: Literal["facts", "code"] = "facts"
    iterations: int = Field(2, ge=1)
    k: int = Field(10, ge=2)  # generator outputs per instruction
    n: int = Field(4, ge=1)  # critic proposals per output when the critic is trained
    critic_training: Literal["adversarial", "static"] = "adversarial"
    #: How the critic answers. `schema` (default): decoded under a JSON schema built for the
    #: output at hand (facts: {"sentence": 1..n, "error_fact", "reason"}; code: the arguments
    #: of one call of the function under test), with prompts saying so (critic_*_schema.md);
    #: the form is fixed, the content is the model's. `paper`: the paper's App. A prompts and
    #: free text (<testcase> tags, three lines), which a 135M critic rarely writes.
    critic_form: Literal["schema", "paper"] = "schema"
    #: Where the generator's reward comes from: `critic` (RLAC: one critic proposal per output,
    #: checked by the validator), `enumerative` (every atomic fact / reference test of every
    #: output: FactTune-FS, AceCoder-Rule) or `reward_model` (a learned scalar reward of each
    #: output: ArmoRM, AceCoder-RM; needs `reward_model`). The baselines pair outputs by
    #: score under the same `max_pairs_per_instruction` budget as RLAC.
    verification: Literal["critic", "enumerative", "reward_model"] = "critic"
    #: The reward-model baseline's scorer: `hf:PATH_OR_ID` of a transformers
    #: sequence-classification model with one output (ArmoRM-Llama3-8B-v0.1 for facts,
    #: AceCodeRM-7B for code in the paper). Read only when verification is `reward_model`.
    reward_model: str | None = None
    reward_scoring: RewardModelSettings = RewardModelSettings()
    validator: Literal["real", "random"] = "real"
    #: Also count (facts: split into atomic facts) what enumerative checking of the same
    #: generations would cost; off saves the splitter calls but loses the ratio.
    count_enumerative: bool = True
    #: Generator DPO pairs per instruction, for every condition alike (RLAC's survived-vs-
    #: caught pairs and the baselines' score-ranked pairs), so no method gets more signal.
    max_pairs_per_instruction: int = Field(4, ge=1)
    max_pairs_per_output: int = Field(2, ge=1)
    kl: bool = True
    #: torch intra-op threads for generation and training. On a shared machine one thread is
    #: ~10x faster than two fighting other jobs (measured: 16 tokens x 4 rows, 2.3 s vs 22 s);
    #: None leaves torch's default (all cores), right for a machine of your own.
    torch_threads: int | None = Field(None, ge=1)
    data: RlacData = RlacData()
    models: RlacModels = RlacModels()
    sampling: RlacSampling = RlacSampling()
    dpo: DPOSettings = DPOSettings(max_length=1024, max_prompt_length=768)
    facts: FactsSettings = FactsSettings()
    code: CodeSettings = CodeSettings()
    templates: RlacTemplates = RlacTemplates()
    #: Not in the paper (a diagnosis, not a departure): the facts validator's entailment judge
    #: probed with content-free critic proposals before iteration 1 and after every iteration
    #: (rlac_audit.py); its calls are counted apart from the verification calls.
    audit: AuditConfig = AuditConfig()
    seed: int = 0

    @model_validator(mode="after")
    def _paper_templates_by_default(self) -> RlacConfig:
        self.audit.refuse_gate("rlac", "the audited validator is frozen; the critic's claims are checked, not trusted")
        # Filled in here, not left None, so summary.json, the plan and the departures name
        # the template a run actually uses.
        critic = CRITIC_TEMPLATE[(self.task, self.critic_form)]
        self.templates.generator = self.templates.generator or PAPER_GENERATOR_TEMPLATE[self.task]
        self.templates.critic = self.templates.critic or critic
        # A bundled template of another task or critic form asks for fields this run does
        # not fill, or for an answer form the critic is not decoded in: refused here, not
        # mid-run.
        task = GENERATOR_TASK.get(self.templates.generator, self.task)
        if task != self.task:
            raise ValueError(f"templates.generator {self.templates.generator!r} is a {task} template; "
                             f"task {self.task} uses {PAPER_GENERATOR_TEMPLATE[self.task]!r} (the paper's) or "
                             "your own file")
        if self.templates.critic in CRITIC_TEMPLATE.values() and self.templates.critic != critic:
            raise ValueError(f"templates.critic {self.templates.critic!r} does not fit task {self.task} with "
                             f"critic_form {self.critic_form}, which uses {critic!r}; leave templates.critic out "
                             "or give your own file")
        return self

    @model_validator(mode="after")
    def _heldout_source_for_code(self) -> RlacConfig:
        if self.task == "facts" and self.data.heldout_source is not None:
            raise ValueError("data.heldout_source is for code; a facts run checks every person against the "
                             "knowledge corpus data.source, so held-out people must be in it (pin them with "
                             "data.heldout_ids)")
        return self

    @model_validator(mode="after")
    def _reward_model_named(self) -> RlacConfig:
        if self.verification == "reward_model" and not self.reward_model:
            raise ValueError("verification: reward_model needs `reward_model: hf:PATH_OR_ID` (a transformers "
                             "sequence-classification reward model, e.g. hf:RLHFlow/ArmoRM-Llama3-8B-v0.1)")
        if self.reward_model and self.reward_model.strip().partition(":")[0] != "hf":
            raise ValueError(f"reward_model {self.reward_model!r}: only `hf:PATH_OR_ID` (a transformers "
                             "sequence-classification model) can score outputs; write it as hf:...")
        return self


# --------------------------------------------------------------------------- pairs


def reward(verdict: Verdict) -> int:
    """R(s, a, c) for the generator: 0 only when the critic exposed a real failure."""
    return 0 if verdict.verdict == "caught" else 1


def generator_pairs(sample: Sample, prompt: Conversation, outputs: list[str], rewards: list[int],
                    limit: int) -> list[PreferencePair]:
    """a+ (r=1) vs a- (r=0) of the same instruction, at most `limit`, distinct texts; on
    `prompt`, the conversation the outputs were sampled from.

    Pairs are taken round-robin over the positives so a few outputs do not fill every slot.
    """
    pos = [o for o, r in zip(outputs, rewards) if r == 1]
    neg = [o for o, r in zip(outputs, rewards) if r == 0]
    combos = sorted(itertools.product(range(len(pos)), range(len(neg))), key=lambda ij: (ij[1], ij[0]))
    pairs = [PreferencePair.asked(prompt, pos[i], neg[j], sample_id=sample.id, source="rlac:generator")
             for i, j in combos if pos[i] != neg[j]]
    return pairs[:limit]


def critic_pairs(sample: Sample, prompt: Conversation, proposals: list[str], verdicts: list[Verdict],
                 limit: int) -> list[PreferencePair]:
    """c+ (the validator confirmed a failure) vs c- (invalid, or the output satisfies it)."""
    pos = [p for p, v in zip(proposals, verdicts) if v.verdict == "caught"]
    neg = [p for p, v in zip(proposals, verdicts) if v.verdict != "caught"]
    pairs = [PreferencePair.asked(prompt, c, r, sample_id=sample.id, source="rlac:critic")
             for c, r in itertools.product(pos, neg) if c != r]
    return pairs[:limit]


def ranked_pairs(sample: Sample, prompt: Conversation, outputs: list[str], scores: list[float],
                 limit: int, source: str) -> list[PreferencePair]:
    """The baselines' pairs (enumerative, reward model): higher- over lower-scoring outputs
    of the same instruction, widest score gap first (so the first is best vs worst), at most
    `limit` — the budget RLAC's pairs have — and only where the scores and texts differ.

    Why not one best-vs-worst pair: RLAC gets up to `max_pairs_per_instruction` pairs, and a
    baseline trained on a quarter of the pairs loses for want of data, not of method.
    """
    order = sorted(((i, j) for i in range(len(outputs)) for j in range(len(outputs))
                    if scores[i] > scores[j] and outputs[i] != outputs[j]),
                   key=lambda ij: (-(scores[ij[0]] - scores[ij[1]]), -scores[ij[0]], ij))
    pairs: list[PreferencePair] = []
    seen: set[tuple[str, str]] = set()
    for i, j in order:
        if len(pairs) == limit:
            break
        if (outputs[i], outputs[j]) in seen:  # the same text sampled twice is one pair
            continue
        seen.add((outputs[i], outputs[j]))
        pairs.append(PreferencePair.asked(prompt, outputs[i], outputs[j], sample_id=sample.id, source=source))
    return pairs


# --------------------------------------------------------------------------- domains


class RlacDomain(Protocol):
    """What the loop asks of a task (FactsDomain, CodeDomain): its instructions, the prompts
    of both models, how a critic answer reads, the enumerative baseline's cost and scores,
    and the held-out metric."""

    name: str
    #: The domain's real validator (the `validator: random` ablation replaces it).
    validator: Validator

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


class FactsDomain:
    """Biographies of exactly n sentences; FactScore precision on held-out people."""

    name = "facts"

    def __init__(self, config: RlacConfig, store: RunStore):
        from coevo.tasks.bios import BUNDLED_CORPUS
        from coevo.validators.facts import EntailmentJudge, FactValidator, KnowledgeSource

        self.config = config
        self.corpus = config.data.source or BUNDLED_CORPUS
        judge_model = None if config.facts.judge == "lexical" and config.facts.atomic_facts == "sentences" \
            else config.models.load("judge", store=store)
        self.judge_model = judge_model
        self.validator = FactValidator(
            KnowledgeSource.load(self.corpus),
            EntailmentJudge(judge_model, config.sampling.judge, mode=config.facts.judge),
            k=config.facts.passages, min_overlap=config.facts.min_overlap)
        self.generator_template = load_template(config.templates.generator)
        self.critic_template = load_template(config.templates.critic)
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
                                       sampling=self.config.sampling.splitter)
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


class CodeDomain:
    """HumanEval-style problems; pass@1 on held-out problems through the sandbox."""

    name = "code"

    def __init__(self, config: RlacConfig, store: RunStore):
        from coevo.validators.code import CodeValidator, ReferenceTests
        from coevo.validators.sandbox import Sandbox

        self.config = config
        sandbox = Sandbox(unsafe_exec=config.code.unsafe_exec)
        self.validator = CodeValidator(sandbox, timeout_s=config.code.timeout_s)
        self.tests = ReferenceTests(sandbox, timeout_s=max(10.0, config.code.timeout_s))
        self.generator_template = load_template(config.templates.generator)
        self.critic_template = load_template(config.templates.critic)

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


# --------------------------------------------------------------------------- KL


def _next_token_logprobs(model: Any, tokenizer: Any, prompt: Conversation, completion: str) -> Any:
    """log pi(. | x, y_<t) over the vocabulary at each position of y, a [T, V] tensor (None for
    an empty y). x is the conversation the generator was asked (system message included),
    under the chat template, as the generator saw it."""
    import torch

    head = tokenizer.apply_chat_template([m.model_dump() for m in prompt], tokenize=False,
                                         add_generation_prompt=True)
    p_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
    c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    if not c_ids:
        return None
    ids = torch.tensor([p_ids + c_ids], device=model.device)
    logits = model(ids).logits[0, len(p_ids) - 1:-1].float()
    return torch.log_softmax(logits, dim=-1)


def kl_estimate(policy: LocalModel, base: LocalModel, prompts: list[Conversation], samples: list[str]) -> float:
    """KL(pi || pi_base) per sequence, y sampled from pi (the paper's Fig. 2c reward-hacking
    sign): at each position of y the exact KL between the two next-token distributions,
    summed over y, averaged over samples. `prompts` are the conversations y was sampled
    from, system message included: the KL is of the policy as it is asked.

    Why not the plain Monte-Carlo mean of log pi(y|x) - log pi_base(y|x): with the one or two
    samples a held-out prompt gets, it is often negative (measured: -0.49 nats after two RLAC
    rounds), which reads as nonsense. The per-position sum is the same quantity in
    expectation, never negative, and zero exactly when the two models agree on y's prefixes.
    """
    import torch

    if not samples:
        return 0.0
    total = 0.0
    with torch.inference_mode():
        for prompt, sample in zip(prompts, samples):
            logp = _next_token_logprobs(policy.model, policy.tokenizer, prompt, sample)
            if logp is None:
                continue
            logb = _next_token_logprobs(base.model, base.tokenizer, prompt, sample)
            # max(0, .): float rounding when the two models barely differ, nothing more.
            total += max(0.0, float((logp.exp() * (logp - logb)).sum()))
    return total / len(samples)


# --------------------------------------------------------------------------- the loop


def load_instructions(config: RlacConfig, source: str | None) -> list[Sample]:
    """Every instruction of a source, in file order (no model loads): facts, one biography
    instruction per person of the {title, text} corpus; code, one per problem."""
    if config.task == "facts":
        from coevo.tasks.bios import BUNDLED_CORPUS, bio_samples

        return bio_samples(source or BUNDLED_CORPUS, sentences=config.data.sentences)
    from coevo.tasks.code import load_code_problems

    return load_code_problems(source or "humaneval")


def instruction_key(config: RlacConfig, sample: Sample) -> str:
    """The id a config pins an instruction by: a person's name (facts), a problem id (code)."""
    return str(sample.meta["entity"]) if config.task == "facts" else sample.id


def split_data(config: RlacConfig) -> tuple[list[Sample], list[Sample]]:
    """Disjoint train / held-out instructions: pinned ids, or a seeded draw. With
    `data.heldout_source` the held-out ones come from that source (drawn or pinned on their
    own); otherwise both come from `data.source`."""
    from coevo.tasks.loaders import DataError

    data = config.data
    samples = load_instructions(config, data.source)

    def pick(pool: list[Sample], ids: list[str]) -> list[Sample]:
        by_key = {instruction_key(config, s).lower(): s for s in pool} | {s.id.lower(): s for s in pool}
        missing = [i for i in ids if i.lower() not in by_key]
        if missing:
            raise DataError(f"data ids not found: {missing}; e.g. {[instruction_key(config, s) for s in pool[:4]]}")
        return [by_key[i.lower()] for i in ids]

    def draw(pool: list[Sample], n: int, offset: int, where: str) -> list[Sample]:
        if len(pool) < offset + n:
            raise DataError(f"need {offset + n} instructions from {where}, it has {len(pool)}; "
                            "lower data.train / data.heldout or bring more")
        order = list(pool)
        random.Random(data.seed).shuffle(order)
        return order[offset:offset + n]

    if data.heldout_source is not None:
        train = pick(samples, data.train_ids) if data.train_ids else draw(samples, data.train, 0, "data.source")
        others = load_instructions(config, data.heldout_source)
        heldout = (pick(others, data.heldout_ids) if data.heldout_ids
                   else draw(others, data.heldout, 0, "data.heldout_source"))
    elif data.train_ids or data.heldout_ids:
        train, heldout = pick(samples, data.train_ids or []), pick(samples, data.heldout_ids or [])
    else:
        train = draw(samples, data.train, 0, "data.source")
        heldout = draw(samples, data.heldout, data.train, "data.source")
    if {s.id for s in train} & {s.id for s in heldout}:
        raise DataError("train and held-out instructions overlap; give disjoint train_ids / heldout_ids")
    return train, heldout


def _texts(completions: list[list[Completion]]) -> list[list[str]]:
    # Raw texts, <think> blocks kept: DPO must train on what the policy actually wrote.
    # Whatever reads a generator output as an answer gets `Instruction.answers` (stripped).
    return [[c.text.strip() for c in row] for row in completions]


def run_rlac(config: RlacConfig, store: RunStore) -> dict[str, Any]:
    """Algorithm 1 for `config.iterations` iterations; returns the run summary."""
    if not config.torch_threads:
        return _run_rlac(config, store)
    import torch

    # Process-wide setting: restored afterwards so a caller's other work (a test session)
    # keeps its own thread count.
    before = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)
    try:
        return _run_rlac(config, store)
    finally:
        torch.set_num_threads(before)


def _run_rlac(config: RlacConfig, store: RunStore) -> dict[str, Any]:
    run = RlacRun(config, store)
    baseline = run.baseline()
    rounds: list[RoundRecord] = []
    for r in range(1, config.iterations + 1):
        done = store.step_result(f"rlac:round{r}")
        if done is not None:
            rounds.append(run.resume(RoundRecord.model_validate(done)))
            continue
        rounds.append(run.iteration(r))
        _tables(store, baseline, rounds, config)  # after every round: a long run reads mid-way
    _tables(store, baseline, rounds, config)
    # A plain dict, as summary.json holds it: the runner adds its own keys to it.
    return run.summary(baseline, rounds).model_dump(mode="json")


class RlacRun:
    """Algorithm 1's state, one method per step of the box: the two policies and their
    cached views, the validator, the train / held-out split, where each model's latest
    weights are, and the verification calls counted so far."""

    def __init__(self, config: RlacConfig, store: RunStore):
        from coevo.llm.cache import CachedModel
        from coevo.validators.base import RandomValidator

        self.config, self.store = config, store
        self.domain: RlacDomain = DOMAINS[config.task](config, store)
        self.train, self.heldout = split_data(config)
        # Line 1: initialise pi_g, pi_c (their references are frozen inside train_dpo).
        models = config.models
        self.generator_policy: LocalModel = models.load("generator", trainable=True)
        self.generator: ChatModel = CachedModel(self.generator_policy, store)
        #: The critic trains only in the adversarial condition; the enumerative baseline has none.
        self.trained_critic = config.critic_training == "adversarial" and config.verification == "critic"
        self.critic_policy: LocalModel | None = (models.load("critic", trainable=True)
                                                 if self.trained_critic else None)
        # The baselines ask no critic: a frozen one is loaded only where it proposes.
        self.critic: ChatModel | None = (CachedModel(self.critic_policy, store) if self.critic_policy is not None
                                         else models.load("critic", store=store)
                                         if config.verification == "critic" else None)
        self.base: LocalModel | None = models.load("generator", trainable=True) if config.kl else None
        self.validator: Validator = (RandomValidator(seed=config.seed) if config.validator == "random"
                                     else self.domain.validator)
        self.base_paths = {"generator": base_model_path(config.models.generator),
                           "critic": base_model_path(config.models.critic)}
        self.checkpoints = dict(self.base_paths)  # each model's latest weights; the base until trained
        self.counts = VerificationCounts()
        #: The reward-model baseline's scorer (frozen, never trained) and outputs it scored.
        self.reward_scorer: RewardModelScorer | None = None
        if config.verification == "reward_model" and config.reward_model:
            from coevo.algorithms.rlac_reward import RewardModelScorer

            self.reward_scorer = RewardModelScorer(config.reward_model, config.reward_scoring)
        self.reward_scored = 0
        #: The latest held-out greedy outputs (reasoning stripped), as `evaluate` scored them.
        self.heldout_answers: list[str] = []

    def policies(self) -> dict[str, tuple[LocalModel | None, ChatModel | None]]:
        """Each role's trainable weights (None: a frozen critic) and the cached view the loop asks."""
        return {"generator": (self.generator_policy, self.generator), "critic": (self.critic_policy, self.critic)}

    # -- one iteration (lines 2-21) -------------------------------------------------------
    def iteration(self, r: int) -> RoundRecord:
        """Policy evaluation (lines 3-11), policy improvement of the generator (lines 12-16)
        and of the critic (lines 17-21), then the held-out metrics of the new generator."""
        started = time.perf_counter()
        with tagged(stage=f"rlac:round{r}"):  # the stage its rollouts are saved under
            data = self.policy_evaluation(r)
        training: dict[str, TrainingInfo] = {}
        if data.generator_pairs:
            training["generator"] = self.improve("generator", r, data.generator_pairs)
        # Optional in the box: a static critic (or the baseline's none) is never trained.
        if self.trained_critic and data.critic_pairs:
            training["critic"] = self.improve("critic", r, data.critic_pairs)
        with tagged(stage=f"rlac:round{r}/eval"):
            evaluation = self.evaluate(r)
        # After the counts are taken: the audit's validator calls are its own (rlac_audit.py).
        counts = self.counts.model_copy()
        audit = audit_validator(self, r)
        record = RoundRecord(
            round=r, checkpoints=self.stored_checkpoints(),
            trained={role: role in training for role in ("generator", "critic")},
            eval=evaluation, critic=data.critic, rollout=data.rollout,
            pairs={"generator": len(data.generator_pairs), "critic": len(data.critic_pairs)},
            training=training, counts=counts, audit=audit, seconds=time.perf_counter() - started)
        self.store.log_metrics("generator", record.eval.store_metrics(), round=r)
        self.store.log_metrics("critic", record.critic.model_dump(), round=r)
        self.store.log_metrics("verification", {"calls_rlac": self.counts.rlac, "calls_enumerative":
                                                self.counts.enumerative, "calls_used": self.counts.used}, round=r)
        self.store.log_metrics("rollout", record.rollout.model_dump(), round=r)
        if audit:
            self.store.log_metrics(AUDIT_STAGE, audit, round=r)
        self.store.finish_step(f"rlac:round{r}", record)
        return record

    def resume(self, done: RoundRecord) -> RoundRecord:
        """Adopt a round an earlier process finished: its weights, checkpoints and counts."""
        from coevo.train.stages import resolved_path, restore_checkpoint

        # Stored relative to the run folder (absolute in runs recorded before that).
        # A new dict: later rounds must not rewrite the finished round's record.
        self.checkpoints = {role: resolved_path(path, self.store.run_dir) for role, path in done.checkpoints.items()}
        for role, (policy, _) in self.policies().items():
            if policy is not None and done.trained.get(role):
                restore_checkpoint(policy, self.checkpoints[role], self.config.dpo.lora)
        self.counts = done.counts.model_copy()
        return done

    def stored_checkpoints(self) -> dict[str, str | None]:
        """Each model's latest weights as the store and summary.json keep them: relative to
        the run folder when trained here, a base model's folder or hub id as it is."""
        from coevo.train.stages import stored_path

        return {role: stored_path(path, self.store.run_dir) for role, path in self.checkpoints.items()}

    # -- policy evaluation (lines 3-11) ---------------------------------------------------
    def policy_evaluation(self, r: int) -> IterationData:
        """Lines 3-11: K outputs per instruction, the critic's proposals on them, the
        validator's verdicts, and from those the two DPO datasets. The enumerative baseline
        replaces critic and validator by checking every output in full."""
        instructions, tokens = self.generate(r)
        costs = [self.count_enumerative_cost(instruction) for instruction in instructions]
        generator_data: list[PreferencePair] = []
        critic_data: list[PreferencePair] = []
        outcomes = VerdictCounts()
        if self.config.verification == "enumerative":
            for instruction, cost in zip(instructions, costs):
                generator_data += self.enumerative_pairs(r, instruction, cost)
        elif self.config.verification == "reward_model":
            generator_data += self.reward_model_pairs(r, instructions)
        else:
            for instruction, critiques in zip(instructions, self.critique(r, instructions)):
                outcomes.add([v for row in critiques.verdicts for v in row])
                generator_data += self.generator_dataset(instruction, critiques)
                if self.trained_critic:
                    critic_data += self.critic_dataset(instruction, critiques)
                self.record_critiques(r, instruction, critiques)
        self.record_pairs(r, generator_data + critic_data)
        rollout = RolloutStats(output_tokens=sum(tokens) / max(1, len(tokens)),
                               generator_pairs=float(len(generator_data)), critic_pairs=float(len(critic_data)))
        return IterationData(generator_pairs=generator_data, critic_pairs=critic_data,
                             critic=CriticStats.of(outcomes), rollout=rollout)

    def generate(self, r: int) -> tuple[list[Instruction], list[int]]:
        """Lines 4-5: a_1..a_K ~ pi_g(.|s) for every train instruction s, and the token
        count of every output (the rollout length metric)."""
        prompts = [self.domain.generator_prompt(s) for s in self.train]
        sampling = self.config.sampling.generator.model_copy(update={"seed": self.config.seed * 1000 + r})
        with tagged(role="generator", step="respond"):
            completions = self.generator.generate(prompts, sampling, n=self.config.k)
        instructions = [Instruction(sample=s, messages=p, outputs=outs)
                        for s, p, outs in zip(self.train, prompts, _texts(completions))]
        return instructions, [c.completion_tokens for row in completions for c in row]

    def critique(self, r: int, instructions: list[Instruction]) -> list[Critiques]:
        """Lines 6 and 10 for the whole stage: c ~ pi_c(.|s, a) for every output of every
        instruction (N of them when the critic trains, one otherwise) in as few critic calls
        as there are answer schemas, then R(s, a, c) from the validator in one batch, every
        call counted. One `Critiques` per instruction, in order."""
        n = self.config.n if self.trained_critic else 1
        outputs = [(i.sample, a, self.domain.critic_prompt(i.sample, a)) for i in instructions for a in i.answers]
        sampling = self.config.sampling.critic.model_copy(update={"seed": self.config.seed * 1000 + r})
        texts = self.propose(outputs, sampling, n)
        items = [(sample, o, self.domain.proposal(sample, o, t)) for (sample, o, _), row in zip(outputs, texts)
                 for t in row]
        flat = iter(self.check(items))
        self.counts.rlac += len(items)
        self.counts.used += len(items)
        critiques, rows = [], iter(zip(outputs, texts))
        for instruction in instructions:
            mine = [next(rows) for _ in instruction.outputs]
            critiques.append(Critiques(prompts=[prompt for (_, _, prompt), _ in mine],
                                       texts=[row for _, row in mine],
                                       verdicts=[[next(flat) for _ in row] for _, row in mine]))
        return critiques

    def propose(self, outputs: list[tuple[Sample, str, Conversation]], sampling: Sampling, n: int) -> list[list[str]]:
        """n proposals of the current critic per (sample, output, critic prompt), uncounted."""
        assert self.critic is not None  # loaded whenever verification is `critic`
        return _propose(self.critic, self.domain, outputs, sampling, n)

    def check(self, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]:
        """The validator's verdicts on (sample, output, proposal) items, in order. Counted in
        the validator's own `calls` only: the caller counts what the run spends."""
        return _check(self.validator, items)

    def generator_dataset(self, instruction: Instruction, critiques: Critiques) -> list[PreferencePair]:
        """Line 7: D^g_s from R(s, a_i, c_i), c_i the first proposal on a_i; as DPO pairs."""
        rewards = [reward(row[0]) for row in critiques.verdicts]
        return generator_pairs(instruction.sample, instruction.messages, instruction.outputs, rewards,
                               self.config.max_pairs_per_instruction)

    def critic_dataset(self, instruction: Instruction, critiques: Critiques) -> list[PreferencePair]:
        """Line 11: D^c_(s,a) from the N proposals on each output; as DPO pairs."""
        pairs: list[PreferencePair] = []
        for prompt, texts, verdicts in zip(critiques.prompts, critiques.texts, critiques.verdicts):
            pairs += critic_pairs(instruction.sample, prompt, texts, verdicts, self.config.max_pairs_per_output)
        return pairs

    def count_enumerative_cost(self, instruction: Instruction) -> int:
        """What checking these outputs in full costs (facts: splits them into atomic facts),
        counted in `enumerative`; 0 when `count_enumerative` is off (saves the splitter)."""
        if not (self.config.count_enumerative or self.config.verification == "enumerative"):
            return 0
        cost = sum(self.domain.enumerative_cost(instruction.sample, instruction.answers))
        self.counts.enumerative += cost
        return cost

    def enumerative_pairs(self, r: int, instruction: Instruction, cost: int) -> list[PreferencePair]:
        """The baseline in place of lines 6-11: no critic; check everything (`cost` calls),
        pair higher- over lower-scoring outputs under RLAC's pair budget (FactTune-FS /
        AceCoder-Rule)."""
        sample = instruction.sample
        scores = self.domain.enumerate(sample, instruction.answers)
        self.counts.used += cost
        self.counts.rlac += len(instruction.outputs)  # what one critic proposal per output would have cost
        for i, (output, score) in enumerate(zip(instruction.outputs, scores)):
            self.store.put_record("rlac_enumerative", f"r{r}:{sample.id}:{i}", EnumerativeScore(
                round=r, sample_id=sample.id, output=output, score=score))
        return ranked_pairs(sample, instruction.messages, instruction.outputs, scores,
                            self.config.max_pairs_per_instruction, f"enumerative:{self.domain.name}")

    def reward_model_pairs(self, r: int, instructions: list[Instruction]) -> list[PreferencePair]:
        """The reward-model baseline (ArmoRM / AceCoder-RM) in place of lines 6-11: a learned
        scalar reward for each output, no validator, then pairs as the enumerative baseline
        makes them, under the same budget. Scores are stored as `rlac_reward` records."""
        assert self.reward_scorer is not None
        items = [(i.messages, answer) for i in instructions for answer in i.answers]
        flat = iter(self.reward_scorer.score(items))
        self.reward_scored += len(items)
        pairs: list[PreferencePair] = []
        for instruction in instructions:
            scores = [next(flat) for _ in instruction.outputs]
            self.counts.rlac += len(instruction.outputs)  # what one critic proposal per output would have cost
            for i, (output, score) in enumerate(zip(instruction.outputs, scores)):
                self.store.put_record("rlac_reward", f"r{r}:{instruction.sample.id}:{i}", EnumerativeScore(
                    round=r, sample_id=instruction.sample.id, output=output, score=score))
            pairs += ranked_pairs(instruction.sample, instruction.messages, instruction.outputs, scores,
                                  self.config.max_pairs_per_instruction, f"reward_model:{self.domain.name}")
        return pairs

    def record_critiques(self, r: int, instruction: Instruction, critiques: Critiques) -> None:
        """Every proposal with its verdict into the store; the first two outputs, side by
        side with their first proposal, as rollouts for the report."""
        sample = instruction.sample
        # The answers (reasoning stripped): what the critic read and the validator checked.
        for i, (output, texts, verdicts) in enumerate(zip(instruction.answers, critiques.texts, critiques.verdicts)):
            for j, (text, verdict) in enumerate(zip(texts, verdicts)):
                self.store.put_record("rlac_proposal", f"r{r}:{sample.id}:{i}:{j}", ProposalRecord(
                    round=r, sample_id=sample.id, output_index=i, proposal_index=j, output=output,
                    proposal=text, verdict=verdict.verdict, reason=verdict.reason, details=verdict.details))
            if i < 2:
                self.store.save_rollout(f"rlac:round{r}", Rollout(
                    sample_id=f"{sample.id}#{i}", x=instruction.prompt, y0=output, c=texts[0],
                    condition=f"round{r}:{verdicts[0].verdict}"), round=r)

    def record_pairs(self, r: int, pairs: list[PreferencePair]) -> None:
        """The iteration's DPO pairs into the store, keyed by content (a pair built twice is one)."""
        for p in pairs:
            asked = p.prompt if p.system is None else f"{p.system}\0{p.prompt}"
            digest = hashlib.sha256(f"{asked}\0{p.chosen}\0{p.rejected}".encode()).hexdigest()[:16]
            self.store.put_record("rlac_pair", f"r{r}:{p.source}:{digest}", RoundPair(round=r, **p.model_dump()))

    # -- policy improvement (lines 12-21) -------------------------------------------------
    def improve(self, role: str, r: int, pairs: list[PreferencePair]) -> TrainingInfo:
        """Lines 13-15 (generator) or 18-20 (critic): DPO on this iteration's pairs. train_dpo
        freezes the policy at entry as pi_ref, so the reference moves every iteration (16, 21)."""
        from coevo.train.dpo import train_dpo
        from coevo.train.stages import restore_checkpoint, run_stage

        policy, _ = self.policies()[role]
        # Through the shared stage runner: a round killed after this stage finished restores
        # it on --resume instead of training it again (train_dpo itself resumes a stage
        # killed mid-way from its last step).
        stage = run_stage(self.store, f"rlac/round{r}/{role}",
                          lambda: train_dpo(policy, pairs, self.config.dpo, self.store.run_dir / f"round{r}" / role),
                          lambda checkpoint: restore_checkpoint(policy, checkpoint, self.config.dpo.lora),
                          round=r, kind="dpo")
        result = stage.result
        self.checkpoints[role] = result.checkpoint
        return TrainingInfo(steps=result.steps, seconds=result.seconds, loss=result.metrics.get("train_loss"),
                            weight_delta=result.metrics.get("weight_delta"))

    # -- held-out evaluation ----------------------------------------------------------------
    def baseline(self) -> BaselineRecord:
        """Round 0: the base generator on the held-out instructions (once per run folder)."""
        done = self.store.step_result("rlac:round0")
        if done is not None:
            return BaselineRecord.model_validate(done)
        with tagged(stage="rlac:round0/eval"):
            baseline = BaselineRecord(round=0, eval=self.evaluate(0))
        # Before iteration 1: can the validator be gamed at all? (on the outputs just evaluated)
        baseline.audit = audit_validator(self, 0)
        self.store.log_metrics("generator", baseline.eval.store_metrics(), round=0)
        if baseline.audit:
            self.store.log_metrics(AUDIT_STAGE, baseline.audit, round=0)
        self.store.log_metrics("verification", {"calls_rlac": 0, "calls_enumerative": 0}, round=0)
        self.store.finish_step("rlac:round0", baseline)
        return baseline

    def evaluate(self, r: int) -> HeldoutEval:
        """The held-out metric of the generator's greedy outputs (its mode), and the KL from
        the base generator on sampled ones (what the policy actually does)."""
        prompts = [self.domain.generator_prompt(s) for s in self.heldout]
        with tagged(role="generator", step="respond"):
            greedy = [row[0] for row in _texts(self.generator.generate(prompts, self.config.sampling.eval))]
        # The judge audit's real items are the critic's proposals on these (rlac_audit.py).
        self.heldout_answers = [strip_reasoning(text) for text in greedy]
        evaluation = self.domain.evaluate(self.heldout, self.heldout_answers)
        if self.base is not None:
            sampling = self.config.sampling.generator.model_copy(update={"seed": self.config.seed + r})
            with tagged(role="generator", step="respond"):
                sampled = [row[0] for row in _texts(self.generator.generate(prompts, sampling, n=1))]
            evaluation.kl_from_base = kl_estimate(self.generator_policy, self.base, prompts, sampled)
        evaluation.heldout_output_chars = sum(map(len, greedy)) / max(1, len(greedy))
        return evaluation

    def summary(self, baseline: BaselineRecord, rounds: list[RoundRecord]) -> RlacSummary:
        """The run's summary: held-out metric per round and the verification-call ratio."""
        counts = self.counts
        return RlacSummary(
            base_model=self.base_paths["generator"], base_models=self.base_paths, task=self.config.task,
            condition=_condition(self.config), baseline=baseline.eval, rounds=rounds,
            verification_calls=counts.model_copy(),
            verification_call_ratio=counts.enumerative / counts.rlac if counts.rlac else None,
            pairs={_condition(self.config): {str(rec.round): dict(rec.pairs) for rec in rounds}},
            pair_budget={"per_instruction": self.config.max_pairs_per_instruction,
                         "per_output": self.config.max_pairs_per_output},
            reward_model=({"spec": self.config.reward_model, "outputs_scored": self.reward_scored}
                          if self.config.verification == "reward_model" else None),
            table=_table(baseline, rounds, self.config), audit=run_records(self.store))


def _propose(critic: ChatModel, domain: RlacDomain, outputs: list[tuple[Sample, str, Conversation]],
             sampling: Sampling, n: int) -> list[list[str]]:
    """n critic answers per (sample, output, prompt), each decoded under its domain's answer
    schema (the validator reads them; see roles/schemas.py): the whole stage in one call
    where the backend takes a schema per request (vLLM, servers), else one per schema."""
    from coevo.llm.base import generate_each
    from coevo.roles.schemas import as_text

    samplings = [sampling.model_copy(update={"json_schema": as_text(domain.critic_schema(sample, output))})
                 for sample, output, _ in outputs]
    # Not a `Role`: its calls are tagged here, for the viewer to file them under the critic.
    with tagged(role="critic", step="critique"):
        return _texts(generate_each(critic, [prompt for _, _, prompt in outputs], samplings, n=n))


def _check(validator: Validator, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]:
    # Validators that batch (the facts judge, the code sandbox) check the whole stage's
    # proposals in one go; the verdicts come back in the items' order either way.
    check_many = getattr(validator, "check_many", None)
    if check_many is not None:
        return check_many(items)
    return [validator.check(*item) for item in items]


def _condition(config: RlacConfig) -> str:
    if config.verification != "critic":
        return config.verification  # enumerative | reward_model
    parts = ["rlac", config.critic_training]
    if config.validator == "random":
        parts.append("noisy-validator")
    return "-".join(parts)


def _metric(config: RlacConfig) -> str:
    """The paper's held-out metric of the task."""
    return "factscore_precision" if config.task == "facts" else "pass_at_1"


def _table(baseline: BaselineRecord, rounds: list[RoundRecord], config: RlacConfig) -> Table:
    metric = _metric(config)
    columns = ["round", metric, "detection_rate", "kl_from_base", "calls_rlac", "calls_enumerative"]
    # The metric's cell carries its 95 % interval and n: "0.475 [0.329, 0.625] (n=40)".
    rows = [[0, baseline.eval.cell(metric), None, baseline.eval.kl_from_base, 0, 0]]
    for rec in rounds:
        rows.append([rec.round, rec.eval.cell(metric), rec.critic.detection_rate,
                     rec.eval.kl_from_base, rec.counts.rlac, rec.counts.enumerative])
    return Table(columns=columns, rows=[dict(zip(columns, row)) for row in rows])


def _tables(store: RunStore, baseline: BaselineRecord, rounds: list[RoundRecord], config: RlacConfig) -> None:
    table = _table(baseline, rounds, config).model_dump(mode="json")
    store.update_meta("tables", lambda tables: {**tables, "RLAC iterations": table}, {})
    # The paper's Fig. 2b: the held-out metric against verification calls spent so far, for
    # the calls this run made and the calls enumerative checking of the same outputs needs.
    metric = _metric(config)
    points = [(0, 0, baseline.eval.metric(metric))] + [
        (rec.counts.rlac, rec.counts.enumerative, rec.eval.metric(metric)) for rec in rounds]
    plot = {
        "_xlabel": "verification calls",
        f"{_condition(config)} (calls made)" if config.verification == "critic" else "critic (1 per output)":
            [(a, m) for a, _, m in points if m is not None],
        "enumerative (same generations)": [(e, m) for _, e, m in points if m is not None],
    }
    store.update_meta("plots", lambda plots: {**plots, f"{metric} vs verification calls (Fig. 2b)": plot}, {})
    critic_trains = config.critic_training == "adversarial" and config.verification == "critic"
    store.set_meta("warnings", _warnings(baseline, rounds, metric, critic_trains))


def _warnings(baseline: BaselineRecord, rounds: list[RoundRecord], metric: str,
              critic_trains: bool) -> list[str]:
    """The signs the paper reads in its curves: KL up with no held-out gain (Fig. 2c),
    a critic whose detection rate falls, rounds that produced nothing to learn from."""
    out = []
    for rec in rounds:
        for role in ("generator", "critic"):
            if rec.pairs[role] == 0 and (role == "generator" or critic_trains):
                out.append(f"round {rec.round}: no {role} preference pairs, so the {role} was not "
                           "updated (every verdict the same, or every proposal invalid)")
        for role, info in rec.training.items():
            if info.weight_delta == 0.0:
                out.append(f"round {rec.round}: the {role}'s DPO stage ran {info.steps} steps "
                           f"but changed no weight (max |delta| 0): it did not learn this round")
    if rounds:
        last, first = rounds[-1], baseline.eval.metric(metric)
        kl, now = last.eval.kl_from_base, last.eval.metric(metric)
        if kl is not None and kl > 1.0 and first is not None and now is not None and now <= first:
            out.append(f"KL from the base rose to {kl:.2f} nats with no held-out {metric} gain "
                       f"({first:.3f} -> {now:.3f}): the reward-hacking sign of the paper's Fig. 2c")
        rates = [r.critic.detection_rate for r in rounds if r.critic.detection_rate is not None]
        if len(rates) >= 2 and rates[-1] < rates[0]:
            out.append(f"critic detection rate fell from {rates[0]:.2f} to {rates[-1]:.2f}")
    return out
