"""RLAC: Reinforcement Learning with Adversarial Critic (Algorithm 1 of the RLAC paper).

    for each iteration:
      # Policy evaluation for the generator
      for each instruction s: a_1..a_K ~ pi_g(.|s); c_i ~ pi_c(.|s, a_i); r_i = R(s, a_i, c_i)
      # Policy evaluation for the critic (optional)
      for each (s, a): c_1..c_N ~ pi_c(.|s, a); R(s, a, c_j)
      # Policy improvement: DPO for pi_g on (a+ survived, a- caught) of the same s,
      #                     DPO for pi_c on (c+ confirmed failure, c- rejected) of the same (s, a)
      pi_ref <- pi   (train_dpo freezes the policy at entry: the reference moves every iteration)

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
from typing import Any, Literal

from pydantic import Field

from coevo.config import StrictModel
from coevo.llm.base import user
from coevo.llm.specs import base_model_path
from coevo.prompts import load_template
from coevo.store import RunStore
from coevo.train.dpo import DPOSettings
from coevo.types import Completion, PreferencePair, Proposal, Rollout, Sample, Sampling, Verdict

# --------------------------------------------------------------------------- config


class RlacData(StrictModel):
    """Instructions: biographies of corpus people (facts) or code problems (code)."""

    #: facts: a {title, text} corpus (`bundled:bios` or a JSONL path); code: `humaneval` or a JSONL.
    source: str | None = None
    train: int = Field(4, ge=1)
    heldout: int = Field(2, ge=1)
    #: Pin the people / problem ids instead of a seeded draw (train first, then held-out).
    train_ids: list[str] | None = None
    heldout_ids: list[str] | None = None
    sentences: int = Field(4, ge=1)  # facts: "exactly n sentences" (the paper: 4 or 8)
    seed: int = 0


class RlacModels(StrictModel):
    generator: str = "smollm2"
    critic: str = "smollm2"
    #: The facts validator's entailment judge and the atomic-fact splitter (frozen).
    judge: str = "smollm2"
    #: Backend options of the frozen roles (judge, static critic), e.g. {n_threads: 1}.
    frozen_options: dict[str, Any] = Field(default_factory=dict)


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
    unsafe_exec: bool = False
    #: critic_form=paper only: fill the paper prompt's {optional_examples_block} with one
    #: answer in its <testcase> format, built from a call in the problem's own docstring
    #: (`>>> f(3.5)`). The schema form needs no example: its grammar fixes the form.
    critic_examples: bool = False


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
    verification: Literal["critic", "enumerative"] = "critic"
    validator: Literal["real", "random"] = "real"
    #: Also count (facts: split into atomic facts) what enumerative checking of the same
    #: generations would cost; off saves the splitter calls but loses the ratio.
    count_enumerative: bool = True
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
    seed: int = 0


# --------------------------------------------------------------------------- pairs


def reward(verdict: Verdict) -> int:
    """R(s, a, c) for the generator: 0 only when the critic exposed a real failure."""
    return 0 if verdict.verdict == "caught" else 1


def generator_pairs(sample: Sample, prompt: str, outputs: list[str], rewards: list[int],
                    limit: int) -> list[PreferencePair]:
    """a+ (r=1) vs a- (r=0) of the same instruction, at most `limit`, distinct texts.

    Pairs are taken round-robin over the positives so a few outputs do not fill every slot.
    """
    pos = [o for o, r in zip(outputs, rewards) if r == 1]
    neg = [o for o, r in zip(outputs, rewards) if r == 0]
    combos = sorted(itertools.product(range(len(pos)), range(len(neg))), key=lambda ij: (ij[1], ij[0]))
    pairs = [PreferencePair(prompt=prompt, chosen=pos[i], rejected=neg[j], sample_id=sample.id,
                            source="rlac:generator")
             for i, j in combos if pos[i] != neg[j]]
    return pairs[:limit]


def critic_pairs(sample: Sample, prompt: str, proposals: list[str], verdicts: list[Verdict],
                 limit: int) -> list[PreferencePair]:
    """c+ (the validator confirmed a failure) vs c- (invalid, or the output satisfies it)."""
    pos = [p for p, v in zip(proposals, verdicts) if v.verdict == "caught"]
    neg = [p for p, v in zip(proposals, verdicts) if v.verdict != "caught"]
    pairs = [PreferencePair(prompt=prompt, chosen=c, rejected=r, sample_id=sample.id,
                            source="rlac:critic")
             for c, r in itertools.product(pos, neg) if c != r]
    return pairs[:limit]


def best_vs_worst(sample: Sample, prompt: str, outputs: list[str], scores: list[float],
                  source: str) -> list[PreferencePair]:
    """The enumerative baseline's pair: highest- vs lowest-scoring output, when they differ."""
    if not outputs:
        return []
    best = max(range(len(outputs)), key=lambda i: scores[i])
    worst = min(range(len(outputs)), key=lambda i: scores[i])
    if scores[best] <= scores[worst] or outputs[best] == outputs[worst]:
        return []
    return [PreferencePair(prompt=prompt, chosen=outputs[best], rejected=outputs[worst],
                           sample_id=sample.id, source=source)]


# --------------------------------------------------------------------------- domains


class FactsDomain:
    """Biographies of exactly n sentences; FactScore precision on held-out people."""

    name = "facts"

    def __init__(self, config: RlacConfig, store: RunStore):
        from coevo.llm.specs import load_model
        from coevo.tasks.bios import BUNDLED_CORPUS
        from coevo.validators.facts import EntailmentJudge, FactValidator, KnowledgeSource

        self.config = config
        self.corpus = config.data.source or BUNDLED_CORPUS
        judge_model = None if config.facts.judge == "lexical" and config.facts.atomic_facts == "sentences" \
            else load_model(config.models.judge, store=store, **config.models.frozen_options)
        self.judge_model = judge_model
        self.validator = FactValidator(
            KnowledgeSource.load(self.corpus),
            EntailmentJudge(judge_model, config.sampling.judge, mode=config.facts.judge),
            k=config.facts.passages, min_overlap=config.facts.min_overlap)
        self.generator_template = load_template("generator_bio")
        self.critic_template = load_template("critic_fact" if config.critic_form == "paper" else "critic_fact_schema")
        self._facts_cache: dict[tuple[str, str], list[str]] = {}

    def samples(self) -> list[Sample]:
        from coevo.tasks.bios import bio_samples

        return bio_samples(self.corpus, sentences=self.config.data.sentences)

    def sample_key(self, sample: Sample) -> str:
        return str(sample.meta["entity"])

    def generator_prompt(self, sample: Sample) -> str:
        from coevo.tasks.bios import number_word

        return self.generator_template.render(n=number_word(int(sample.meta["sentences"])),
                                              topic=sample.meta["entity"])

    def critic_prompt(self, sample: Sample, output: str) -> str:
        from coevo.tasks.bios import numbered, split_sentences

        return self.critic_template.render(topic=sample.meta["entity"],
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
        scores = []
        for facts in self.atomic_facts(sample, outputs):
            verdicts = self.validator.verify_many(str(sample.meta["entity"]), facts) if facts else []
            scores.append(sum(ok for ok, _, _ in verdicts) / len(verdicts) if verdicts else 0.0)
        return scores

    def evaluate(self, heldout: list[Sample], outputs: list[str]) -> dict[str, float | None]:
        from coevo.eval.factscore import FactScoreResult, summarize

        results = []
        for sample, output in zip(heldout, outputs):
            [facts] = self.atomic_facts(sample, [output])
            verdicts = self.validator.verify_many(str(sample.meta["entity"]), facts) if facts else []
            results.append(FactScoreResult(str(sample.meta["entity"]),
                                           [(f, ok) for f, (ok, _, _) in zip(facts, verdicts)]))
        return summarize(results)


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
        self.generator_template = load_template("generator_code")
        self.critic_template = load_template("critic_code" if config.critic_form == "paper" else "critic_code_schema")

    def samples(self) -> list[Sample]:
        from coevo.tasks.code import load_code_problems

        return load_code_problems(self.config.data.source or "humaneval")

    def sample_key(self, sample: Sample) -> str:
        return sample.id

    def generator_prompt(self, sample: Sample) -> str:
        return self.generator_template.render(problem=sample.prompt)

    def critic_prompt(self, sample: Sample, output: str) -> str:
        from coevo.tasks.code import extract_code
        from coevo.validators.code import answer_format

        code = extract_code(output, sample.meta.get("entry_point"))
        if self.config.critic_form == "paper":
            return self.critic_template.render(question=sample.prompt, code=code,
                                               optional_examples_block=self._examples(sample))
        return self.critic_template.render(question=sample.prompt, code=code, answer_format=answer_format(sample))

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

    def evaluate(self, heldout: list[Sample], outputs: list[str]) -> dict[str, float | None]:
        outcomes = self.tests.run_many(list(zip(heldout, outputs)))
        return {"pass_at_1": sum(o.passed for o in outcomes) / len(outcomes) if outcomes else None}


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


DOMAINS = {"facts": FactsDomain, "code": CodeDomain}


# --------------------------------------------------------------------------- KL


def _next_token_logprobs(model: Any, tokenizer: Any, prompt: str, completion: str) -> Any:
    """log pi(. | x, y_<t) over the vocabulary at each position of y, a [T, V] tensor (None for
    an empty y). The prompt gets the chat template, as the generator saw it."""
    import torch

    head = tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                         add_generation_prompt=True)
    p_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
    c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    if not c_ids:
        return None
    ids = torch.tensor([p_ids + c_ids], device=model.device)
    logits = model(ids).logits[0, len(p_ids) - 1:-1].float()
    return torch.log_softmax(logits, dim=-1)


def kl_estimate(policy: Any, base: Any, prompts: list[str], samples: list[str]) -> float:
    """KL(pi || pi_base) per sequence, y sampled from pi (the paper's Fig. 2c reward-hacking
    sign): at each position of y the exact KL between the two next-token distributions,
    summed over y, averaged over samples.

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


def split_data(domain: Any, data: RlacData) -> tuple[list[Sample], list[Sample]]:
    """Disjoint train / held-out instructions: pinned ids, or a seeded draw."""
    from coevo.tasks.loaders import DataError

    samples = domain.samples()
    by_key = {domain.sample_key(s).lower(): s for s in samples} | {s.id.lower(): s for s in samples}

    def pick(ids: list[str]) -> list[Sample]:
        missing = [i for i in ids if i.lower() not in by_key]
        if missing:
            raise DataError(f"data ids not found: {missing}; e.g. {[domain.sample_key(s) for s in samples[:4]]}")
        return [by_key[i.lower()] for i in ids]

    if data.train_ids or data.heldout_ids:
        train, heldout = pick(data.train_ids or []), pick(data.heldout_ids or [])
    else:
        if len(samples) < data.train + data.heldout:
            raise DataError(f"need {data.train + data.heldout} instructions, the source has {len(samples)}")
        order = list(samples)
        random.Random(data.seed).shuffle(order)
        train, heldout = order[:data.train], order[data.train:data.train + data.heldout]
    if {s.id for s in train} & {s.id for s in heldout}:
        raise DataError("train and held-out instructions overlap; give disjoint train_ids / heldout_ids")
    return train, heldout


def _sync(cached: Any) -> None:
    """After training in place: new weights, new cache identity (or the cache answers stale)."""
    inner = getattr(cached, "inner", cached)
    if hasattr(inner, "refresh_model_id"):
        inner.refresh_model_id()  # CachedModel reads its id through from the inner model


def _texts(completions: list[list[Completion]]) -> list[list[str]]:
    # Raw texts, <think> blocks kept: DPO must train on what the policy actually wrote, and
    # the validators' parsers skip the reasoning themselves.
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
    from coevo.llm.cache import CachedModel
    from coevo.llm.specs import load_model
    from coevo.train.common import load_final
    from coevo.train.dpo import train_dpo
    from coevo.validators.base import RandomValidator

    domain = DOMAINS[config.task](config, store)
    train, heldout = split_data(domain, config.data)
    # Line 1: initialise pi_g, pi_c (and their references, frozen inside train_dpo).
    generator_policy = load_model(config.models.generator, trainable=True)
    generator = CachedModel(generator_policy, store)
    trained_critic = config.critic_training == "adversarial" and config.verification == "critic"
    critic_policy = load_model(config.models.critic, trainable=True) if trained_critic else None
    critic = (CachedModel(critic_policy, store) if trained_critic
              else load_model(config.models.critic, store=store, **config.models.frozen_options))
    base = load_model(config.models.generator, trainable=True) if config.kl else None
    validator = RandomValidator(seed=config.seed) if config.validator == "random" else domain.validator
    base_paths = {"generator": base_model_path(config.models.generator),
                  "critic": base_model_path(config.models.critic)}
    checkpoints = dict(base_paths)  # where each model's latest weights are; the base until trained
    counts = {"rlac": 0, "enumerative": 0, "used": 0}
    rounds: list[dict[str, Any]] = []

    def evaluate(r: int) -> dict[str, Any]:
        prompts = [domain.generator_prompt(s) for s in heldout]
        greedy = [row[0] for row in _texts(generator.generate([user(p) for p in prompts], config.sampling.eval))]
        metrics = domain.evaluate(heldout, greedy)
        if base is not None:
            sampled = _texts(generator.generate([user(p) for p in prompts],
                                                config.sampling.generator.model_copy(update={"seed": config.seed + r}), n=1))
            metrics["kl_from_base"] = kl_estimate(generator_policy, base, prompts, [row[0] for row in sampled])
        metrics["heldout_output_chars"] = sum(map(len, greedy)) / max(1, len(greedy))
        return metrics

    baseline = store.step_result("rlac:round0")
    if baseline is None:
        baseline = {"round": 0, "eval": evaluate(0)}
        store.log_metrics("generator", baseline["eval"], round=0)
        store.log_metrics("verification", {"calls_rlac": 0, "calls_enumerative": 0}, round=0)
        store.finish_step("rlac:round0", baseline)

    for r in range(1, config.iterations + 1):
        done = store.step_result(f"rlac:round{r}")
        if done is not None:  # resume: adopt the finished round's weights and counters
            for role, policy, cached in (("generator", generator_policy, generator), ("critic", critic_policy, critic)):
                path = done["checkpoints"][role]
                if policy is not None and done["trained"].get(role):
                    load_final(policy.model, path)
                    _sync(cached)
            checkpoints, counts = done["checkpoints"], done["counts"]
            rounds.append(done)
            continue
        started = time.perf_counter()
        stats = _one_iteration(r, config, store, domain, validator, train, generator, critic,
                               trained_critic, counts)
        trained = {"generator": False, "critic": False}
        train_info: dict[str, Any] = {}
        # Lines 12-16: policy improvement for the generator; the reference moves with it.
        if stats["generator_pairs"]:
            result = train_dpo(generator_policy, stats["generator_pairs"], config.dpo,
                               store.run_dir / f"round{r}" / "generator")
            checkpoints["generator"], trained["generator"] = result.checkpoint, True
            train_info["generator"] = {"steps": result.steps, "seconds": result.seconds,
                                       "loss": result.metrics.get("train_loss"),
                                       "weight_delta": result.metrics.get("weight_delta")}
            _sync(generator)
        # Lines 17-21: policy improvement for the critic (optional: static critic skips it).
        if trained_critic and stats["critic_pairs"]:
            result = train_dpo(critic_policy, stats["critic_pairs"], config.dpo,
                               store.run_dir / f"round{r}" / "critic")
            checkpoints["critic"], trained["critic"] = result.checkpoint, True
            train_info["critic"] = {"steps": result.steps, "seconds": result.seconds,
                                    "loss": result.metrics.get("train_loss"),
                                    "weight_delta": result.metrics.get("weight_delta")}
            _sync(critic)
        evaluation = evaluate(r)
        store.log_metrics("generator", evaluation, round=r)
        store.log_metrics("critic", stats["critic_metrics"], round=r)
        store.log_metrics("verification", {"calls_rlac": counts["rlac"], "calls_enumerative": counts["enumerative"],
                                           "calls_used": counts["used"]}, round=r)
        store.log_metrics("rollout", stats["rollout_metrics"], round=r)
        record = {"round": r, "checkpoints": dict(checkpoints), "trained": trained, "eval": evaluation,
                  "critic": stats["critic_metrics"], "rollout": stats["rollout_metrics"],
                  "pairs": {"generator": len(stats["generator_pairs"]), "critic": len(stats["critic_pairs"])},
                  "training": train_info, "counts": dict(counts), "seconds": time.perf_counter() - started}
        store.finish_step(f"rlac:round{r}", record)
        rounds.append(record)
        _tables(store, baseline, rounds, config)

    _tables(store, baseline, rounds, config)
    ratio = counts["enumerative"] / counts["rlac"] if counts["rlac"] else None
    return {
        "base_model": base_paths["generator"],
        "base_models": base_paths,
        "task": config.task,
        "condition": _condition(config),
        "baseline": baseline["eval"],
        "rounds": rounds,
        "verification_calls": {"rlac": counts["rlac"], "enumerative": counts["enumerative"],
                               "used": counts["used"]},
        "verification_call_ratio": ratio,
        "table": _table(baseline, rounds, config),
    }


def _one_iteration(r: int, config: RlacConfig, store: RunStore, domain: Any, validator: Any,
                   train: list[Sample], generator: Any, critic: Any, trained_critic: bool,
                   counts: dict[str, int]) -> dict[str, Any]:
    """Lines 3-11: sample K outputs, one proposal each (N when the critic trains), validate."""
    from coevo.progress import progress_bar

    prompts = [domain.generator_prompt(s) for s in train]
    gen_sampling = config.sampling.generator.model_copy(update={"seed": config.seed * 1000 + r})
    completions = generator.generate([user(p) for p in prompts], gen_sampling, n=config.k)
    outputs = _texts(completions)
    lengths = [c.completion_tokens for row in completions for c in row]
    gen_pairs: list[PreferencePair] = []
    crit_pairs: list[PreferencePair] = []
    outcomes = {"caught": 0, "survived": 0, "invalid": 0}
    proposals_total = 0
    n_props = config.n if trained_critic else 1
    critic_sampling = config.sampling.critic.model_copy(update={"seed": config.seed * 1000 + r})
    with progress_bar(f"RLAC round {r}: critic + validator", total=len(train)) as advance:
        for sample, prompt, outs in zip(train, prompts, outputs):
            if config.count_enumerative or config.verification == "enumerative":
                cost = sum(domain.enumerative_cost(sample, outs))
                counts["enumerative"] += cost
            if config.verification == "enumerative":
                # Baseline: no critic; check everything, pair best vs worst (FactTune-FS / AceCoder-Rule).
                scores = domain.enumerate(sample, outs)
                counts["used"] += cost
                counts["rlac"] += len(outs)  # what one critic proposal per output would have cost
                gen_pairs += best_vs_worst(sample, prompt, outs, scores, f"enumerative:{domain.name}")
                for i, (out, score) in enumerate(zip(outs, scores)):
                    store.put_record("rlac_enumerative", f"r{r}:{sample.id}:{i}",
                                     {"round": r, "sample_id": sample.id, "output": out, "score": score})
                advance()
                continue
            critic_prompts = [domain.critic_prompt(sample, o) for o in outs]
            texts = _propose(critic, domain, sample, outs, critic_prompts, critic_sampling, n_props)
            items = [(sample, o, domain.proposal(sample, o, t)) for o, row in zip(outs, texts) for t in row]
            verdicts = _check(validator, items)
            counts["rlac"] += len(items)
            counts["used"] += len(items)
            proposals_total += len(items)
            for v in verdicts:
                outcomes[v.verdict] += 1
            # Line 7: the generator's reward uses the first proposal per output (c_i ~ pi_c).
            rewards = [reward(verdicts[i * n_props]) for i in range(len(outs))]
            gen_pairs += generator_pairs(sample, prompt, outs, rewards, config.max_pairs_per_instruction)
            for i, out in enumerate(outs):
                mine = verdicts[i * n_props:(i + 1) * n_props]
                props = texts[i]
                if trained_critic:
                    crit_pairs += critic_pairs(sample, critic_prompts[i], props, mine, config.max_pairs_per_output)
                for j, (text, verdict) in enumerate(zip(props, mine)):
                    store.put_record("rlac_proposal", f"r{r}:{sample.id}:{i}:{j}", {
                        "round": r, "sample_id": sample.id, "output_index": i, "proposal_index": j,
                        "output": out, "proposal": text, "verdict": verdict.verdict, "reason": verdict.reason,
                        "details": verdict.details})
                if i < 2:  # a few examples for the report, side by side
                    store.save_rollout(f"rlac:round{r}", Rollout(
                        sample_id=f"{sample.id}#{i}", x=prompt, y0=out, c=props[0],
                        condition=f"round{r}:{mine[0].verdict}"), round=r)
            advance()
    for p in gen_pairs + crit_pairs:
        digest = hashlib.sha256(f"{p.prompt}\0{p.chosen}\0{p.rejected}".encode()).hexdigest()[:16]
        store.put_record("rlac_pair", f"r{r}:{p.source}:{digest}",
                         {"round": r, **p.model_dump()})
    total = max(1, proposals_total)
    critic_metrics = {
        "detection_rate": outcomes["caught"] / total if proposals_total else None,
        "outcome_caught": outcomes["caught"] / total if proposals_total else None,
        "outcome_survived": outcomes["survived"] / total if proposals_total else None,
        "outcome_invalid": outcomes["invalid"] / total if proposals_total else None,
        "proposals": float(proposals_total),
    }
    rollout_metrics = {"output_tokens": sum(lengths) / max(1, len(lengths)),
                       "generator_pairs": float(len(gen_pairs)), "critic_pairs": float(len(crit_pairs))}
    return {"generator_pairs": gen_pairs, "critic_pairs": crit_pairs,
            "critic_metrics": critic_metrics, "rollout_metrics": rollout_metrics}


def _propose(critic: Any, domain: Any, sample: Sample, outputs: list[str], prompts: list[str],
             sampling: Sampling, n: int) -> list[list[str]]:
    """n critic answers per output, each decoded under its domain's answer schema (the
    validator reads them; see roles/schemas.py). Outputs whose answers share a schema (code:
    all of one problem; facts: outputs with as many sentences) share one batched call."""
    from coevo.roles.schemas import as_text

    groups: dict[Sampling, list[int]] = {}
    for i, output in enumerate(outputs):
        schema = as_text(domain.critic_schema(sample, output))
        groups.setdefault(sampling.model_copy(update={"json_schema": schema}), []).append(i)
    texts: list[list[str]] = [[] for _ in outputs]
    for group_sampling, members in groups.items():
        answers = _texts(critic.generate([user(prompts[i]) for i in members], group_sampling, n=n))
        for i, row in zip(members, answers):
            texts[i] = row
    return texts


def _check(validator: Any, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]:
    if hasattr(validator, "check_many"):
        return validator.check_many(items)
    return [validator.check(*item) for item in items]


def _condition(config: RlacConfig) -> str:
    if config.verification == "enumerative":
        return "enumerative"
    parts = ["rlac", config.critic_training]
    if config.validator == "random":
        parts.append("noisy-validator")
    return "-".join(parts)


def _table(baseline: dict[str, Any], rounds: list[dict[str, Any]], config: RlacConfig) -> dict[str, Any]:
    metric = "factscore_precision" if config.task == "facts" else "pass_at_1"
    columns = ["round", metric, "detection_rate", "kl_from_base", "calls_rlac", "calls_enumerative"]
    rows = [[0, baseline["eval"].get(metric), None, baseline["eval"].get("kl_from_base"), 0, 0]]
    for rec in rounds:
        rows.append([rec["round"], rec["eval"].get(metric), rec["critic"].get("detection_rate"),
                     rec["eval"].get("kl_from_base"), rec["counts"]["rlac"], rec["counts"]["enumerative"]])
    return {"columns": columns, "rows": [dict(zip(columns, row)) for row in rows]}


def _tables(store: RunStore, baseline: dict[str, Any], rounds: list[dict[str, Any]], config: RlacConfig) -> None:
    tables = store.get_meta("tables", {})
    tables["RLAC iterations"] = _table(baseline, rounds, config)
    store.set_meta("tables", tables)
    # The paper's Fig. 2b: the held-out metric against verification calls spent so far, for
    # the calls this run made and the calls enumerative checking of the same outputs needs.
    metric = "factscore_precision" if config.task == "facts" else "pass_at_1"
    points = [(0, 0, baseline["eval"].get(metric))] + [
        (rec["counts"]["rlac"], rec["counts"]["enumerative"], rec["eval"].get(metric)) for rec in rounds]
    plots = store.get_meta("plots", {})
    plots[f"{metric} vs verification calls (Fig. 2b)"] = {
        "_xlabel": "verification calls",
        f"{_condition(config)} (calls made)" if config.verification == "critic" else "critic (1 per output)":
            [(a, m) for a, _, m in points if m is not None],
        "enumerative (same generations)": [(e, m) for _, e, m in points if m is not None],
    }
    store.set_meta("plots", plots)
    critic_trains = config.critic_training == "adversarial" and config.verification == "critic"
    store.set_meta("warnings", _warnings(baseline, rounds, metric, critic_trains))


def _warnings(baseline: dict[str, Any], rounds: list[dict[str, Any]], metric: str,
              critic_trains: bool) -> list[str]:
    """The signs the paper reads in its curves: KL up with no held-out gain (Fig. 2c),
    a critic whose detection rate falls, rounds that produced nothing to learn from."""
    out = []
    for rec in rounds:
        for role in ("generator", "critic"):
            if rec["pairs"][role] == 0 and (role == "generator" or critic_trains):
                out.append(f"round {rec['round']}: no {role} preference pairs, so the {role} was not "
                           "updated (every verdict the same, or every proposal invalid)")
        for role, info in rec.get("training", {}).items():
            if info.get("weight_delta") == 0.0:
                out.append(f"round {rec['round']}: the {role}'s DPO stage ran {info.get('steps')} steps "
                           f"but changed no weight (max |delta| 0): it did not learn this round")
    if rounds:
        last, first = rounds[-1], baseline["eval"].get(metric)
        kl, now = last["eval"].get("kl_from_base"), last["eval"].get(metric)
        if kl is not None and kl > 1.0 and first is not None and now is not None and now <= first:
            out.append(f"KL from the base rose to {kl:.2f} nats with no held-out {metric} gain "
                       f"({first:.3f} -> {now:.3f}): the reward-hacking sign of the paper's Fig. 2c")
        rates = [r["critic"].get("detection_rate") for r in rounds if r["critic"].get("detection_rate") is not None]
        if len(rates) >= 2 and rates[-1] < rates[0]:
            out.append(f"critic detection rate fell from {rates[0]:.2f} to {rates[-1]:.2f}")
    return out
