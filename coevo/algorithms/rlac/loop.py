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
`evaluate` on the held-out instructions. With `detection` on, `detection(r)` then measures the
critic that proposes in iteration r+1 on fixed failing held-out outputs (rlac/detection.py).
The records it hands on, and the `RlacSummary` `run_rlac` returns, are in records.py; the
names it files a round's work under, in stages.py.

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
import time
from typing import TYPE_CHECKING

from coevo.algorithms.backend import Backend, default_backend
from coevo.algorithms.engines import GenerationCopy
from coevo.algorithms.rlac.audit import STAGE as AUDIT_STAGE
from coevo.algorithms.rlac.audit import audit_validator
from coevo.algorithms.rlac.config import RlacConfig
from coevo.algorithms.rlac.data import split_data
from coevo.algorithms.rlac.detection import DetectionEval, DetectionSet
from coevo.algorithms.rlac.detection import build_set as build_detection_set
from coevo.algorithms.rlac.detection import measure as measure_detection
from coevo.algorithms.rlac.domains import (
    DOMAINS,
    RlacDomain,
    check_proposals,
    completion_texts,
)
from coevo.algorithms.rlac.kl import kl_estimate
from coevo.algorithms.rlac.pairs import critic_pairs, generator_pairs, ranked_pairs, reward
from coevo.algorithms.rlac.records import (
    BaselineRecord,
    CriticStats,
    Critiques,
    EnumerativeScore,
    HeldoutEval,
    Instruction,
    IterationData,
    ProposalRecord,
    RlacSummary,
    RolloutStats,
    RoundPair,
    RoundRecord,
    TrainingInfo,
    VerdictCounts,
    VerificationCounts,
)
from coevo.algorithms.rlac.stages import BARE, DETECTION_SET, STAGE, round_stage
from coevo.audit.in_run import run_records
from coevo.llm.base import ChatModel
from coevo.llm.call_tags import tagged
from coevo.llm.specs import base_model_path
from coevo.monitor.rounds import RoundMonitor
from coevo.roles.parsing import strip_reasoning
from coevo.roles.rlac import RlacCritic, RlacGenerator
from coevo.rundir.store import RunStore
from coevo.core.types import (
    Conversation,
    PreferencePair,
    Proposal,
    Rollout,
    Sample,
    Sampling,
    Table,
    Verdict,
)
from coevo.validators.base import Validator

if TYPE_CHECKING:
    from coevo.llm.local import LocalModel

def run_rlac(config: RlacConfig, store: RunStore, backend: Backend | None = None) -> RlacSummary:
    """Algorithm 1 for `config.iterations` iterations; returns the run summary (the runner
    dumps it into summary.json). Models load and train through `backend`
    (coevo/algorithms/backend.py; default: the real one)."""
    backend = backend or default_backend()
    if not config.torch_threads:
        return _run_rlac(config, store, backend)
    import torch

    # Process-wide setting: restored afterwards so a caller's other work (a test session)
    # keeps its own thread count.
    before = torch.get_num_threads()
    torch.set_num_threads(config.torch_threads)
    try:
        return _run_rlac(config, store, backend)
    finally:
        torch.set_num_threads(before)


def _run_rlac(config: RlacConfig, store: RunStore, backend: Backend) -> RlacSummary:
    run = RlacRun(config, store, backend)
    try:
        baseline = run.baseline()
        if run.monitor is not None:  # the gold anchor's baseline: the untrained generator
            run.monitor.observe(0, gold=baseline.eval.per_item)
        rounds: list[RoundRecord] = []
        # The critic that proposes in iteration r+1, measured after iteration r (None: off).
        detection = [run.detection(0)]
        for r in range(1, config.iterations + 1):
            done = store.step_result(round_stage(r))
            if done is not None:
                rounds.append(run.resume(RoundRecord.model_validate(done)))
            else:
                rounds.append(run.iteration(r))
                _tables(store, baseline, rounds, config)  # after every round: a long run reads mid-way
            detection.append(run.detection(r))
    finally:
        run.close()
    _tables(store, baseline, rounds, config)
    return run.summary(baseline, rounds, [d for d in detection if d is not None])


class RlacRun:
    """Algorithm 1's state, one method per step of the box: the two policies and what each
    generates with, the validator, the train / held-out split, where each model's latest
    weights are, and the verification calls counted so far."""

    def __init__(self, config: RlacConfig, store: RunStore, backend: Backend):
        from coevo.validators.base import RandomValidator

        self.config, self.store, self.backend = config, store, backend
        self.domain: RlacDomain = DOMAINS[config.task](config, store, backend)
        self.train, self.heldout = split_data(config)
        # Line 1: initialise pi_g, pi_c (their references are frozen inside train_dpo).
        roles = config.roles
        self.generator_policy: LocalModel = backend.model(roles, "generator", trainable=True)
        #: The critic trains only in the adversarial condition; the enumerative baseline has none.
        self.trained_critic = config.critic_training == "adversarial" and config.verification == "critic"
        # The static critic is the adversarial one's starting weights, frozen ("we freeze the
        # critic model"): loaded the same way and generating on the same engine copy, so both
        # conditions' first proposals are the same draws and they differ only in training. A
        # critic that cannot train (an API model) can only be static: loaded frozen.
        proposes = config.verification == "critic"
        as_policy = self.trained_critic or (proposes and _trainable(roles.spec("critic")))
        self.critic_policy: LocalModel | None = backend.model(roles, "critic", trainable=True) if as_policy else None
        self.frozen_critic: ChatModel | None = (backend.model(roles, "critic", store=store)
                                                if proposes and not as_policy else None)
        self.base: LocalModel | None = backend.model(roles, "generator", trainable=True) if config.kl else None
        # What each trained policy generates with: itself, or an engine copy of its latest
        # weights (`generator_engine`, `critic_engine`; algorithms/engines.py).
        engines = store.run_dir / "engines"
        self.copies = {role: GenerationCopy(backend, role, roles.spec(role), roles.options_for(role), policy, engine,
                                            engines)
                       for role, policy, engine in (("generator", self.generator_policy, config.generator_engine),
                                                    ("critic", self.critic_policy, config.critic_engine))
                       if policy is not None}
        self.validator: Validator = (RandomValidator(seed=config.seed) if config.validator == "random"
                                     else self.domain.validator)
        self.base_paths = {"generator": base_model_path(roles.generator.model),
                           "critic": base_model_path(roles.critic.model)}
        self.checkpoints = dict(self.base_paths)  # each model's latest weights; the base until trained
        self.counts = VerificationCounts()
        #: The reward-model baseline's scorer (frozen, never trained) and outputs it scored.
        self.reward_scorer: RewardModelScorer | None = None
        if config.verification == "reward_model" and config.reward_model:
            from coevo.algorithms.rlac.reward_model import RewardModelScorer

            self.reward_scorer = RewardModelScorer(config.reward_model, config.reward_scoring)
        self.reward_scored = 0
        #: The latest held-out greedy outputs (reasoning stripped), as `evaluate` scored them.
        self.heldout_answers: list[str] = []
        #: The reward-hacking monitor, per iteration (`monitor:`, docs/monitor.md).
        self.monitor = (RoundMonitor(store, f"rlac/{_condition(config)}", config.monitor.anchors)
                        if config.monitor.enabled else None)

    def policies(self) -> dict[str, LocalModel | None]:
        """Each role's weights as loaded for training (None: a critic loaded frozen, or none;
        a static critic's are here but never trained)."""
        return {"generator": self.generator_policy, "critic": self.critic_policy}

    def generating(self, role: str) -> ChatModel | None:
        """What `role` generates with now, through the run's call cache: its engine copy of its
        latest weights (the base, then each of its DPO stages'), the trained model itself, or
        the frozen critic (None: a baseline that asks no critic)."""
        from coevo.llm.cache import CachedModel

        copy = self.copies.get(role)
        if copy is None:
            return self.frozen_critic if role == "critic" else None
        return CachedModel(copy.model(self.checkpoints[role]), self.store)

    @property
    def generator_role(self) -> RlacGenerator:
        """The generator as Algorithm 1 asks it (its template is the one the domain fills)."""
        generator = self.config.roles.generator
        return RlacGenerator(self.generating("generator"), generator.sampling.train, generator.template)

    @property
    def critic_role(self) -> RlacCritic | None:
        """The critic as Algorithm 1 asks it (None: a baseline that asks no critic)."""
        model, critic = self.generating("critic"), self.config.roles.critic
        return RlacCritic(model, critic.sampling, critic.template) if model is not None else None

    def close(self) -> None:
        """Stop the trained roles' engine copies."""
        for copy in self.copies.values():
            copy.close()

    # -- one iteration (lines 2-21) -------------------------------------------------------
    def iteration(self, r: int) -> RoundRecord:
        """Policy evaluation (lines 3-11), policy improvement of the generator (lines 12-16)
        and of the critic (lines 17-21), then the held-out metrics of the new generator."""
        started = time.perf_counter()
        with tagged(stage=round_stage(r)):  # the stage its rollouts are saved under
            data = self.policy_evaluation(r)
        training: dict[str, TrainingInfo] = {}
        if data.generator_pairs:
            training["generator"] = self.improve("generator", r, data.generator_pairs)
        # Optional in the box: a static critic (or the baseline's none) is never trained.
        if self.trained_critic and data.critic_pairs:
            training["critic"] = self.improve("critic", r, data.critic_pairs)
        with tagged(stage=round_stage(r, "eval")):
            evaluation = self.evaluate(r)
        if self.monitor is not None:
            self.monitor.observe(r, rewards=data.rewards, outputs=data.answers, cut=data.cut, gold=evaluation.per_item)
        # After the counts are taken: the audit's validator calls are its own (rlac/audit.py).
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
        self.store.finish_step(round_stage(r), record)
        return record

    def resume(self, done: RoundRecord) -> RoundRecord:
        """Adopt a round an earlier process finished: its weights, checkpoints and counts."""
        from coevo.train.stages import resolved_path

        # Stored relative to the run folder (absolute in runs recorded before that).
        # A new dict: later rounds must not rewrite the finished round's record.
        self.checkpoints = {role: resolved_path(path, self.store.run_dir) for role, path in done.checkpoints.items()}
        for role, policy in self.policies().items():
            if policy is not None and done.trained.get(role):
                self.backend.restore(policy, self.checkpoints[role], self.config.dpo)
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
        rewards: list[float] = []
        outcomes = VerdictCounts()
        if self.config.verification == "enumerative":
            for instruction, cost in zip(instructions, costs):
                generator_data += self.enumerative_pairs(r, instruction, cost, rewards)
        elif self.config.verification == "reward_model":
            generator_data += self.reward_model_pairs(r, instructions, rewards)
        else:
            for instruction, critiques in zip(instructions, self.critique(r, instructions)):
                outcomes.add([v for row in critiques.verdicts for v in row])
                generator_data += self.generator_dataset(instruction, critiques)
                rewards += [float(reward(row[0])) for row in critiques.verdicts]
                if self.trained_critic:
                    critic_data += self.critic_dataset(instruction, critiques)
                self.record_critiques(r, instruction, critiques)
        self.record_pairs(r, generator_data + critic_data)
        rollout = RolloutStats(output_tokens=sum(tokens) / max(1, len(tokens)),
                               generator_pairs=float(len(generator_data)), critic_pairs=float(len(critic_data)))
        limit = self.config.roles.generator.sampling.train.max_tokens
        return IterationData(generator_pairs=generator_data, critic_pairs=critic_data,
                             critic=CriticStats.of(outcomes), rollout=rollout, rewards=rewards,
                             answers=[a for i in instructions for a in i.answers],
                             cut=[limit is not None and t >= limit for t in tokens])

    def generate(self, r: int) -> tuple[list[Instruction], list[int]]:
        """Lines 4-5: a_1..a_K ~ pi_g(.|s) for every train instruction s, and the token
        count of every output (the rollout length metric)."""
        prompts = [self.domain.generator_prompt(s) for s in self.train]
        sampling = self.config.roles.generator.sampling.train.model_copy(update={"seed": self.config.seed * 1000 + r})
        completions = self.generator_role.respond(prompts, sampling, n=self.config.k)
        instructions = [Instruction(sample=s, messages=p, outputs=outs)
                        for s, p, outs in zip(self.train, prompts, completion_texts(completions))]
        return instructions, [c.completion_tokens for row in completions for c in row]

    def critique(self, r: int, instructions: list[Instruction]) -> list[Critiques]:
        """Lines 6 and 10 for the whole stage: c ~ pi_c(.|s, a) for every output of every
        instruction in as few critic calls as there are answer schemas, then R(s, a, c) from
        the validator in one batch, every call counted. One `Critiques` per instruction, in order.

        N proposals per output whether or not the critic trains: the paper's critic proposes N
        per output for every method (§4.1) and its static ablation only freezes the critic, so
        the conditions spend the same verification on the same draws; line 6's c_i is the first.
        """
        n = self.config.n
        outputs = [(i.sample, a, self.domain.critic_prompt(i.sample, a)) for i in instructions for a in i.answers]
        sampling = self.config.roles.critic.sampling.model_copy(update={"seed": self.config.seed * 1000 + r})
        texts = self.propose(outputs, sampling, n)
        items = [(sample, o, self.domain.proposal(sample, o, t)) for (sample, o, _), row in zip(outputs, texts)
                 for t in row]
        flat = iter(self.check(items))
        cost = len(items) * self.domain.verifications_per_proposal  # the paper's unit (domains.py)
        self.counts.rlac += cost
        self.counts.used += cost
        critiques, rows = [], iter(zip(outputs, texts))
        for instruction in instructions:
            mine = [next(rows) for _ in instruction.outputs]
            critiques.append(Critiques(prompts=[prompt for (_, _, prompt), _ in mine],
                                       texts=[row for _, row in mine],
                                       verdicts=[[next(flat) for _ in row] for _, row in mine]))
        return critiques

    def propose(self, outputs: list[tuple[Sample, str, Conversation]], sampling: Sampling, n: int) -> list[list[str]]:
        """n proposals of the current critic per (sample, output, critic prompt), uncounted."""
        critic = self.critic_role
        assert critic is not None  # loaded whenever verification is `critic`
        return critic.propose([prompt for _, _, prompt in outputs],
                                        [self.domain.critic_schema(sample, output) for sample, output, _ in outputs],
                                        sampling, n)

    def check(self, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]:
        """The validator's verdicts on (sample, output, proposal) items, in order. Counted in
        the validator's own `calls` only: the caller counts what the run spends."""
        return check_proposals(self.validator, items)

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

    def enumerative_pairs(self, r: int, instruction: Instruction, cost: int,
                          rewards: list[float]) -> list[PreferencePair]:
        """The baseline in place of lines 6-11: no critic; check everything (`cost` calls),
        pair higher- over lower-scoring outputs under RLAC's pair budget (FactTune-FS /
        AceCoder-Rule). The scores are appended to `rewards`."""
        sample = instruction.sample
        scores = self.domain.enumerate(sample, instruction.answers)
        rewards += [float(score) for score in scores]
        self.counts.used += cost
        # What one critic proposal per output would have cost.
        self.counts.rlac += len(instruction.outputs) * self.domain.verifications_per_proposal
        for i, (output, score) in enumerate(zip(instruction.outputs, scores)):
            self.store.put_record("rlac_enumerative", f"r{r}:{sample.id}:{i}", EnumerativeScore(
                round=r, sample_id=sample.id, output=output, score=score))
        return ranked_pairs(sample, instruction.messages, instruction.outputs, scores,
                            self.config.max_pairs_per_instruction, f"enumerative:{self.domain.name}")

    def reward_model_pairs(self, r: int, instructions: list[Instruction], rewards: list[float]) -> list[PreferencePair]:
        """The reward-model baseline (ArmoRM / AceCoder-RM) in place of lines 6-11: a learned
        scalar reward for each output, no validator, then pairs as the enumerative baseline
        makes them, under the same budget. Scores are stored as `rlac_reward` records and
        appended to `rewards`."""
        assert self.reward_scorer is not None
        items = [(i.messages, answer) for i in instructions for answer in i.answers]
        flat = iter(self.reward_scorer.score(items))
        self.reward_scored += len(items)
        pairs: list[PreferencePair] = []
        for instruction in instructions:
            scores = [next(flat) for _ in instruction.outputs]
            rewards += [float(score) for score in scores]
            # What one critic proposal per output would have cost.
            self.counts.rlac += len(instruction.outputs) * self.domain.verifications_per_proposal
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
                self.store.save_rollout(round_stage(r), Rollout(
                    sample_id=f"{sample.id}#{i}", x=instruction.prompt, y0=output, c=texts[0],
                    condition=f"{round_stage(r, prefix=BARE)}:{verdicts[0].verdict}"), round=r)

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
        from coevo.train.stages import run_stage

        policy, name = self.policies()[role], round_stage(r, role, prefix=STAGE)
        output_dir = self.store.run_dir / round_stage(r, role, prefix=BARE)
        # Through the shared stage runner: a round killed after this stage finished restores
        # it on --resume instead of training it again (train_dpo itself resumes a stage
        # killed mid-way from its last step). The role's engine copy of the weights it starts
        # from serves nothing while it trains: closed for the stage.
        with self.copies[role].training(name):
            stage = run_stage(self.store, name,
                              lambda: self.backend.train_dpo(policy, pairs, self.config.dpo, output_dir),
                              lambda checkpoint: self.backend.restore(policy, checkpoint, self.config.dpo),
                              round=r, kind="dpo")
        result = stage.result
        self.checkpoints[role] = result.checkpoint
        return TrainingInfo(steps=result.steps, seconds=result.seconds, loss=result.metrics.get("train_loss"),
                            weight_delta=result.metrics.get("weight_delta"))

    # -- the critic's detection rate (a measurement; rlac/detection.py) --------------------
    def detection(self, r: int) -> DetectionEval | None:
        """After iteration r (0: before the first), the critic that proposes in iteration r+1,
        on the fixed failing held-out outputs: its N proposals on each, checked. None where
        `detection` is off or no critic proposes (the enumerative and reward-model baselines)."""
        if not self.config.detection.enabled or self.config.verification != "critic":
            return None
        name = round_stage(r, "detection")
        done = self.store.step_result(name)
        if done is not None:
            return DetectionEval.model_validate(done)
        with tagged(stage=name):
            found = self.detection_set()
            result = measure_detection(self, r, found, self.stored_checkpoints()["critic"])
        self.store.log_metrics("detection", result.store_metrics(), round=r)
        self.store.finish_step(name, result)
        return result

    def detection_set(self) -> DetectionSet:
        """The fixed failing outputs, drawn once per run folder. First asked for by
        `detection(0)`, before any iteration runs or resumes: the base generator draws them."""
        done = self.store.step_result(DETECTION_SET)
        if done is not None:
            return DetectionSet.model_validate(done)
        found = build_detection_set(self)
        self.store.finish_step(DETECTION_SET, found)
        return found

    # -- held-out evaluation ----------------------------------------------------------------
    def baseline(self) -> BaselineRecord:
        """Round 0: the base generator on the held-out instructions (once per run folder)."""
        done = self.store.step_result(round_stage(0))
        if done is not None:
            return BaselineRecord.model_validate(done)
        with tagged(stage=round_stage(0, "eval")):
            baseline = BaselineRecord(round=0, eval=self.evaluate(0))
        # Before iteration 1: can the validator be gamed at all? (on the outputs just evaluated)
        baseline.audit = audit_validator(self, 0)
        self.store.log_metrics("generator", baseline.eval.store_metrics(), round=0)
        if baseline.audit:
            self.store.log_metrics(AUDIT_STAGE, baseline.audit, round=0)
        self.store.log_metrics("verification", {"calls_rlac": 0, "calls_enumerative": 0}, round=0)
        self.store.finish_step(round_stage(0), baseline)
        return baseline

    def evaluate(self, r: int) -> HeldoutEval:
        """The held-out metric of the generator's greedy outputs (its mode), and the KL from
        the base generator on sampled ones (what the policy actually does)."""
        prompts = [self.domain.generator_prompt(s) for s in self.heldout]
        sampling = self.config.roles.generator.sampling
        greedy = [row[0] for row in completion_texts(self.generator_role.respond(prompts, sampling.eval))]
        # The judge audit's real items are the critic's proposals on these (rlac/audit.py).
        self.heldout_answers = [strip_reasoning(text) for text in greedy]
        evaluation = self.domain.evaluate(self.heldout, self.heldout_answers)
        if self.base is not None:
            seeded = sampling.train.model_copy(update={"seed": self.config.seed + r})
            sampled = [row[0] for row in completion_texts(self.generator_role.respond(prompts, seeded))]
            evaluation.kl_from_base = kl_estimate(self.generator_policy, self.base, prompts, sampled)
        evaluation.heldout_output_chars = sum(map(len, greedy)) / max(1, len(greedy))
        return evaluation

    def summary(self, baseline: BaselineRecord, rounds: list[RoundRecord],
                detection: list[DetectionEval] | None = None) -> RlacSummary:
        """The run's summary: held-out metric per round, the verification-call ratio and the
        critic's detection rate on the fixed outputs per round (where measured)."""
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
            table=_table(baseline, rounds, self.config), audit=run_records(self.store),
            detection=list(detection or []))


def _trainable(spec: str) -> bool:
    """Whether a model spec loads as trainable weights (`smollm2`, `hf:`; llm/specs.py)."""
    return spec.strip().partition(":")[0] in ("smollm2", "hf")


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
    store.set_meta("warnings", _warnings(baseline, rounds, metric))


def _warnings(baseline: BaselineRecord, rounds: list[RoundRecord], metric: str) -> list[str]:
    """The signs the paper reads in its curves: KL up with no held-out gain (Fig. 2c), a
    critic whose detection rate falls, a DPO stage that moved no weight. A round with too few
    pairs is view/pair_warnings.py's (`no-pairs`, with its cause), read off the same records."""
    out = []
    for rec in rounds:
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
