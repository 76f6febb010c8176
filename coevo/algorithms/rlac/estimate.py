"""What an RLAC run will cost: its model calls per stage and role, and its DPO stages,
counted from the config and the plan's data (coevo/plan/estimate.py turns them into tokens,
seconds and dollars). The counts follow the loop (rlac/loop.py) under the stage tags its
cost rows carry:

- `rlac:round0/eval` and `rlac:round<r>/eval`: one greedy generator output per held-out
  instruction, and one sampled one when `kl` is on (the KL's samples); facts: the judge
  splits each greedy output into atomic facts and checks them against the corpus (FactScore);
- `rlac:round<r>`: K outputs per train instruction; the critic's N proposals on each (trained
  or static alike); facts: the judge splits every output into atomic facts (the enumerative
  count) and checks each proposal (authenticity, then support) or, in the enumerative
  baseline, every atomic fact;
- `rlac:round<r>/detection` (with `detection` on and a critic proposing; round 0 first):
  round 0 also samples the base generator's outputs on the held-out instructions and checks
  them in full (facts: splits and supports them); each round, the critic's N proposals on the
  failing ones kept (taken as `detection.max_outputs`, or every sampled output where fewer),
  then the validator on those;
- `rlac` (the run's own tag: the audit runs outside the rounds' tags): the judge audit of a
  facts run with a real validator, before iteration 1 and after each: the critic's N
  proposals on a few held-out outputs, the validator's judge on them and on the probes;
- DPO `rlac/round<r>/generator` and `rlac/round<r>/critic`: at most the pairs the loop can
  make (the pair budget, and no more than positives x negatives of K outputs or N proposals).

The code validator runs in a sandbox and the reward model scores outside the call cache:
neither is a model call.
"""

from __future__ import annotations

import math
import re
from typing import Any

from coevo.algorithms.rlac.stages import STAGE, round_stage
from coevo.plan.estimate import CallEstimate, TrainingEstimate, call_estimate, completion_tokens, text_tokens

#: A judge's answer under its schema: {"answer": "yes"} is about six tokens.
ANSWER_TOKENS = 6
#: A code critic's schema-bound answer: the JSON object's braces, then a key and a value per
#: parameter of the function under test ({"a": 5, "h": 3}: about 12 tokens, as measured).
ARGUMENTS_BASE, ARGUMENT_TOKENS = 4, 5
#: The filled-in instruction where the data is not on this machine: a HumanEval /
#: AceCode problem statement (code), a person's name (facts); a Wikipedia paragraph.
UNKNOWN_PROMPT = {"code": 150, "facts": 4}
UNKNOWN_PASSAGE = 120
#: The code critic prompt's answer form ("the arguments of ONE call of `f(a, b)`, as ..."),
#: where no problem is here to spell it for.
UNKNOWN_FORMAT = 40
#: The numbered paragraph's "[i] " markers the facts critic reads, per sentence.
MARKER_TOKENS = 2
#: Atomic facts the LLM splitter finds per sentence of a biography (it may list more, up
#: to factscore.MAX_FACTS; a fact that shares too few words with the text is dropped).
FACTS_PER_SENTENCE = 1
#: `facts.judge: hybrid` asks the support judge only where a fact's words are in the
#: passages: the share of facts (FactScore) and of claims (the validator) that pass that
#: gate. Measured on examples/rlac_bio_tiny.yaml (the 135M generator): 1 of ~8 held-out
#: facts, 0 of 24 claims; a stronger generator writes more facts the passages share.
HYBRID_SHARE = 0.1
#: The audit's validator checks that reach the judge per confirmed item: the quote probe
#: and the padded proposal (authenticity and support each); the content-free claims stop
#: at the word-overlap gate.
AUDIT_JUDGED_PER_ITEM = 4

STAGE_RUN = "rlac"  # the runner's tag (runner.py), on the calls no round tags: the audit's


class Sizes:
    """The token sizes the counts multiply: the data's mean filled-in prompts and each
    role's expected output."""

    def __init__(self, config: Any, train: list[Any], heldout: list[Any]):
        roles, self.task, self.schema = config.roles, config.task, config.critic_form == "schema"
        self.train_size = len(train) or config.data.train
        self.heldout_size = len(heldout) or config.data.heldout
        self.generated = completion_tokens(roles.generator.sampling.train)
        self.greedy = completion_tokens(roles.generator.sampling.eval)
        self.sentences = config.data.sentences if config.task == "facts" else 0
        self.train_prompt = self._mean(train, self._instruction, UNKNOWN_PROMPT[self.task])
        self.heldout_prompt = self._mean(heldout, self._instruction, UNKNOWN_PROMPT[self.task])
        unknown = UNKNOWN_PROMPT[self.task] + (UNKNOWN_FORMAT if self.task == "code" else 0)
        # The critic reads the problem (or the person) and the output: the code extracted
        # from it, or its numbered sentences.
        self.critic_train = self._mean(train, self._critic_fields, unknown) + self._read(self.generated)
        self.critic_heldout = self._mean(heldout, self._critic_fields, unknown) + self._read(self.greedy)
        self.critique = _critique_tokens(config, train)
        self.split = completion_tokens(roles.judge.sampling.split)
        self.facts = config.data.sentences * (1 if config.facts.atomic_facts == "sentences" else FACTS_PER_SENTENCE)
        self.fact = max(1, round(self.generated / max(1, self.facts)))  # one fact: its share of the output
        self.passages = _passage_tokens(config, train + heldout) if config.task == "facts" else 0

    @staticmethod
    def _mean(samples: list[Any], tokens: Any, unknown: int) -> int:
        return round(sum(tokens(s) for s in samples) / len(samples)) if samples else unknown

    def _instruction(self, sample: Any) -> int:
        # Facts: the person's name and the sentence count fill the template; code: the problem.
        return text_tokens(str(sample.meta["entity"])) + 1 if self.task == "facts" else text_tokens(sample.prompt)

    def _critic_fields(self, sample: Any) -> int:
        if self.task == "facts":
            return text_tokens(str(sample.meta["entity"]))
        from coevo.validators.code import answer_format

        # The problem again, and (schema form) how the answer is spelled for its function.
        return text_tokens(sample.prompt) + (text_tokens(answer_format(sample)) if self.schema else 0)

    def _read(self, output: int) -> int:
        return output + MARKER_TOKENS * self.sentences


def _critique_tokens(config: Any, samples: list[Any]) -> int:
    """What one critic answer writes: free text fills its limit as any completion; the code
    schema's answer is one call's arguments, as short as the function's signature."""
    sampling = config.roles.critic.sampling
    if config.task == "facts" or config.critic_form == "paper":
        return completion_tokens(sampling)
    from coevo.validators.code import entry_parameters

    params = [len(entry_parameters(s) or [None]) for s in samples] or [2]
    return min(sampling.max_tokens, ARGUMENTS_BASE + round(ARGUMENT_TOKENS * sum(params) / len(params)))


def _passage_tokens(config: Any, samples: list[Any]) -> int:
    """The `facts.passages` paragraphs of a person's page the support judge reads, in tokens."""
    from coevo.tasks.bios import BUNDLED_CORPUS, load_corpus

    try:
        docs = {d["title"].lower(): d["text"] for d in load_corpus(config.data.source or BUNDLED_CORPUS)}
    except (OSError, ValueError):
        return config.facts.passages * UNKNOWN_PASSAGE
    sizes = []
    for sample in samples:
        # BM25 ranks the page's own paragraphs; the k it returns are of the page's mean size.
        paragraphs = [text_tokens(p) for p in re.split(r"\n\s*\n", docs.get(str(sample.meta["entity"]).lower(), ""))
                      if p.strip()]
        if paragraphs:
            sizes.append(sum(paragraphs) / len(paragraphs) * min(config.facts.passages, len(paragraphs)))
    return round(sum(sizes) / len(sizes)) if sizes else config.facts.passages * UNKNOWN_PASSAGE


class Calls:
    """The calls of a run, summed per (stage, role) as its cost rows are."""

    def __init__(self, config: Any, sizes: Sizes):
        self.config, self.s = config, sizes
        roles = config.roles
        self.specs = {"generator": roles.generator.model, "critic": roles.critic.model, "judge": roles.judge.model}
        self.rows: dict[tuple[str, str], CallEstimate] = {}
        facts = config.facts
        #: The share of claims / facts the judge is asked about (the rest the word gate settles).
        self.judged = 0.0 if facts.judge == "lexical" else HYBRID_SHARE if facts.judge == "hybrid" else 1.0
        self.splits = config.task == "facts" and facts.atomic_facts == "llm"

    def add(self, stage: str, role: str, calls: float, *, template: str | None, filled: int, completion: int) -> None:
        calls = math.ceil(calls)
        if calls <= 0:
            return
        row = call_estimate(stage, role, self.specs[role], calls, template=template, filled=filled,
                            completion=completion)
        found = self.rows.get((stage, role))
        if found is None:
            self.rows[(stage, role)] = row
            return
        found.calls += row.calls
        found.prompt_tokens += row.prompt_tokens
        found.completion_tokens += row.completion_tokens

    def generator(self, stage: str, calls: int, prompt: int, completion: int) -> None:
        self.add(stage, "generator", calls, template=self.config.roles.generator.template, filled=prompt,
                 completion=completion)

    def split(self, stage: str, outputs: int, output: int) -> None:
        """The atomic-fact splitter on `outputs` biographies of `output` tokens."""
        if self.splits:
            self.add(stage, "judge", outputs, template="atomic_facts", filled=UNKNOWN_PROMPT["facts"] + output,
                     completion=self.s.split)

    def support(self, stage: str, claims: float) -> None:
        """The support judge on `claims` (entity, fact) pairs, each with its passages."""
        self.add(stage, "judge", claims * self.judged, template="fact_support",
                 filled=UNKNOWN_PROMPT["facts"] + self.s.fact + self.s.passages, completion=ANSWER_TOKENS)

    def authenticity(self, stage: str, claims: float) -> None:
        """The authenticity judge on `claims` (sentence, claimed fact) pairs."""
        sentence = max(1, round(self.s.generated / max(1, self.s.sentences)))
        # A quoted claim passes the word gate of `hybrid`: the judge is asked unless `lexical`.
        asked = 0.0 if self.config.facts.judge == "lexical" else claims
        self.add(stage, "judge", asked, template="fact_authenticity",
                 filled=UNKNOWN_PROMPT["facts"] + sentence + self.s.fact, completion=ANSWER_TOKENS)

    def critic(self, stage: str, calls: int, filled: int) -> None:
        self.add(stage, "critic", calls, template=self.config.roles.critic.template, filled=filled,
                 completion=self.s.critique)

    def evaluation(self, stage: str) -> None:
        """`RlacRun.evaluate`: greedy outputs, the KL's sampled ones, FactScore's judge calls."""
        s = self.s
        self.generator(stage, s.heldout_size, s.heldout_prompt, s.greedy)
        if self.config.kl:
            self.generator(stage, s.heldout_size, s.heldout_prompt, s.generated)
        if self.config.task == "facts":
            self.split(stage, s.heldout_size, s.greedy)
            self.support(stage, s.heldout_size * s.facts)

    def round(self, r: int) -> None:
        """Policy evaluation of round r: `generate`, the enumerative count, `critique` and
        the validator, or the enumerative baseline's checks."""
        config, s, stage = self.config, self.s, round_stage(r)
        outputs = s.train_size * config.k
        self.generator(stage, outputs, s.train_prompt, s.generated)
        if config.count_enumerative or config.verification == "enumerative":
            self.split(stage, outputs, s.generated)
        if config.verification == "enumerative" and config.task == "facts":
            self.support(stage, outputs * s.facts)
        if config.verification != "critic":
            return
        proposals = outputs * config.n
        self.critic(stage, proposals, s.critic_train)
        if config.task == "facts" and config.validator == "real":
            # Expected path: every proposal readable and its claim in the named sentence.
            self.authenticity(stage, proposals)
            self.support(stage, proposals)

    def detection(self, r: int) -> None:
        """`RlacRun.detection(r)`: round 0 draws the fixed set (the base generator's samples,
        checked in full); every round, N proposals on each kept output, then the validator."""
        config, s, stage = self.config, self.s, round_stage(r, "detection")
        if not config.detection.enabled or config.verification != "critic":
            return
        sampled = s.heldout_size * config.detection.samples
        if r == 0:
            self.generator(stage, sampled, s.heldout_prompt, s.generated)
            if config.task == "facts":
                self.split(stage, sampled, s.generated)
                self.support(stage, sampled * s.facts)
        proposals = min(sampled, config.detection.max_outputs) * config.n
        self.critic(stage, proposals, s.critic_heldout)
        if config.task == "facts" and config.validator == "real":
            self.authenticity(stage, proposals)
            self.support(stage, proposals)

    def audit(self) -> None:
        """`audit_validator` once: the critic's N proposals on the first held-out outputs, the
        validator on them, then on the probes of the confirmed ones (rlac/audit.py)."""
        from coevo.algorithms.rlac.audit import not_audited

        config = self.config
        if not config.audit.enabled or not_audited(config) is not None:
            return
        outputs = min(2 * config.audit.prompts, self.s.heldout_size)
        proposals = outputs * config.n
        self.critic(STAGE_RUN, proposals, self.s.critic_heldout)
        self.authenticity(STAGE_RUN, proposals)
        self.support(STAGE_RUN, proposals)
        items = min(config.audit.prompts, outputs)
        self.authenticity(STAGE_RUN, items * AUDIT_JUDGED_PER_ITEM / 2)
        self.support(STAGE_RUN, items * AUDIT_JUDGED_PER_ITEM / 2)


def pairs_per_instruction(config: Any) -> int:
    """The most generator pairs one instruction yields: the budget, and no more than
    positives x negatives of K outputs (RLAC) or the score-ordered pairs of K (baselines)."""
    k = config.k
    most = (k // 2) * (k - k // 2) if config.verification == "critic" else k * (k - 1) // 2
    return min(config.max_pairs_per_instruction, most)


def pairs_per_output(config: Any) -> int:
    """The most critic pairs one output yields: confirmed x rejected of its N proposals."""
    n = config.n
    return min(config.max_pairs_per_output, (n // 2) * (n - n // 2))


def dpo_stage(config: Any, stage: str, role: str, pairs: int, prompt: int, completion: int) -> TrainingEstimate:
    """One DPO stage on `pairs` pairs: `dpo.max_steps` when set (TRL then cycles the pairs),
    else an epoch of batches per epoch; its tokens, two sequences per pair (prompt + chosen,
    prompt + rejected: TRL's `num_tokens` counts the prompt in both)."""
    dpo = config.dpo
    batch = dpo.batch_size * dpo.grad_accum
    if dpo.max_steps:
        steps, seen = dpo.max_steps, dpo.max_steps * min(batch, pairs)
    else:
        steps, seen = math.ceil(pairs / batch) * dpo.epochs, pairs * dpo.epochs
    per_pair = 2 * (min(prompt, dpo.max_prompt_length) + completion)
    return TrainingEstimate(stage=stage, kind="dpo", role=role, spec=config.roles.spec(role), steps=steps,
                            tokens=seen * per_pair)


def training(config: Any, sizes: Sizes, r: int) -> list[TrainingEstimate]:
    """Round r's DPO stages, as the run store names them (`rlac/round<r>/<role>`)."""
    from coevo.plan.estimate import template_tokens

    roles = config.roles
    out = [dpo_stage(config, round_stage(r, "generator", prefix=STAGE), "generator",
                     sizes.train_size * pairs_per_instruction(config),
                     template_tokens(roles.generator.template) + sizes.train_prompt, sizes.generated)]
    critic_pairs = sizes.train_size * config.k * pairs_per_output(config)
    if config.critic_training == "adversarial" and config.verification == "critic" and critic_pairs:
        out.append(dpo_stage(config, round_stage(r, "critic", prefix=STAGE), "critic", critic_pairs,
                             template_tokens(roles.critic.template) + sizes.critic_train, sizes.critique))
    return out


def instructions(config: Any, plan: Any, notes: list[str]) -> tuple[list[Any], list[Any]]:
    """The run's train and held-out instructions (their texts size the prompts); none where
    the plan found no data here (then its sizes are the config's, and a note says so)."""
    if not plan.data.get("train_size"):
        notes.append(f"data not on this machine: {config.data.train} train and {config.data.heldout} held-out "
                     f"instructions counted from the config, each prompt taken as "
                     f"{UNKNOWN_PROMPT[config.task]} tokens of {'problem' if config.task == 'code' else 'name'}")
        return [], []
    from coevo.algorithms.rlac.data import split_data

    return split_data(config)


def estimate(config: Any, plan: Any) -> tuple[list[CallEstimate], list[TrainingEstimate], list[str]]:
    """The model calls and DPO stages of a run of `config` (see the module docstring), and
    in plain words what was guessed."""
    notes: list[str] = []
    train, heldout = instructions(config, plan, notes)
    sizes = Sizes(config, train, heldout)
    calls = Calls(config, sizes)
    calls.evaluation(round_stage(0, "eval"))
    calls.audit()
    calls.detection(0)
    stages: list[TrainingEstimate] = []
    for r in range(1, config.iterations + 1):
        calls.round(r)
        stages += training(config, sizes, r)
        calls.evaluation(round_stage(r, "eval"))
        calls.audit()
        calls.detection(r)
    return list(calls.rows.values()), stages, notes + guesses(config)


def guesses(config: Any) -> list[str]:
    """What the counts took for the run's data-dependent branches, in plain words."""
    notes = [f"DPO: the most pairs the loop can make each round ({pairs_per_instruction(config)} per instruction"
             + (f"; {pairs_per_output(config)} per output for the critic" if config.verification == "critic" else "")
             + "); the verdicts decide how many it makes, and a round with none trains no stage"
             + (f" (steps are dpo.max_steps={config.dpo.max_steps} whenever it trains)" if config.dpo.max_steps else "")]
    facts = config.task == "facts"
    if facts and config.verification == "critic" and config.validator == "real":
        notes.append("validator: every critic proposal taken as readable and its claim as quoted from the named "
                     "sentence, so each costs an authenticity judgment, then a support judgment where the judge is asked")
    if facts and config.facts.judge == "hybrid":
        notes.append(f"facts.judge hybrid: the judge taken as asked about {HYBRID_SHARE:.0%} of the facts it checks "
                     "against the corpus (the word-overlap gate settles the rest without a call)")
    if facts and config.facts.atomic_facts == "llm":
        notes.append(f"atomic facts: the splitter taken to find {FACTS_PER_SENTENCE} per sentence "
                     f"({config.data.sentences} per biography)")
    from coevo.algorithms.rlac.audit import not_audited

    if config.audit.enabled and not_audited(config) is None:
        notes.append(f"judge audit: {AUDIT_JUDGED_PER_ITEM} judge calls per confirmed item for the probes that pass "
                     "the word-overlap gate, with a confirmed proposal on every audited output")
    if config.verification == "reward_model":
        notes.append("the reward model scores each output outside the call cache: not counted as calls")
    if config.detection.enabled and config.verification == "critic":
        notes.append("detection: every sampled held-out output taken as failing, up to detection.max_outputs; a "
                     "static critic asks the same proposals every round, which the call cache answers")
    notes.append("a completion the run's cache already holds (the same greedy output after an update that changed "
                 "little, a judge asked the same question again) is a cache hit, not a call: counted here as a call")
    return notes
