"""RLAC's records: what one iteration hands on, what lands in the run store and summary.json.

Each record dumps to exactly the keys the loop wrote as plain dicts before it had types, so
`summary.json`, the store's records and a run folder from an older version read the same.
All are `Record`s (unknown fields kept): a round record written by a newer version still
loads on `--resume`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_serializer

from coevo.algorithms.rlac.detection import DetectionEval
from coevo.roles.parsing import strip_reasoning
from coevo.core.types import Conversation, PreferencePair, Record, Sample, Table, Verdict


class HeldoutEval(Record):
    """The held-out metrics of one round: FactScore (facts) or pass@1 (code), the KL from
    the base generator when `kl` is on, and the mean greedy output length.

    The headline metric comes with its 95 % interval (`<metric>_lo` / `_hi`: Wilson for
    pass@1, Student t over people for FactScore precision; None where there is none, one
    person say), the n behind it (`heldout_n`: problems, or people with a scorable fact) and
    each held-out item's own score (`per_item`: sample id -> 1.0 / 0.0 passed, or the
    person's precision), so two rounds can be compared item by item (a paired test), not
    only by their means.

    Only the metrics a run measured are dumped: a code run's summary has no FactScore keys
    and a run with `kl: false` no `kl_from_base` key, as before these were typed. A measured
    metric that came out None (no scorable fact) is still dumped, as None.
    """

    factscore_precision: float | None = None
    factscore_precision_lo: float | None = None
    factscore_precision_hi: float | None = None
    facts_correct: float | None = None
    facts_incorrect: float | None = None
    pass_at_1: float | None = None
    pass_at_1_lo: float | None = None
    pass_at_1_hi: float | None = None
    heldout_n: int | None = None
    per_item: dict[str, float] | None = None
    kl_from_base: float | None = None
    heldout_output_chars: float | None = None

    @model_serializer(mode="wrap")
    def _measured_only(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        measured = self.model_fields_set | set(self.model_extra or {})
        return {key: value for key, value in data.items() if key in measured}

    def metric(self, name: str) -> float | None:
        """A metric by name (the table's column), None when it was not measured."""
        return getattr(self, name, None)

    def store_metrics(self) -> dict[str, float | None]:
        """The numbers the run store logs per round (one value per metric name): not the
        per-item scores, and the n as `heldout_count`, a name the run page takes for a count
        (`.*_count`: tabled, never plotted as if it were a result)."""
        values = {key: value for key, value in self.model_dump().items()
                  if key != "per_item" and not isinstance(value, (dict, list))}
        if "heldout_n" in values:
            values["heldout_count"] = values.pop("heldout_n")
        return values

    def cell(self, name: str) -> float | str | None:
        """A rounds-table cell: the metric, as ``"0.475 [0.329, 0.625] (n=40)"`` where it
        carries an interval and its n (TAIScore's tables write theirs the same way)."""
        from coevo.eval.metric_defs import estimate_text

        value, lo, hi = self.metric(name), self.metric(f"{name}_lo"), self.metric(f"{name}_hi")
        if value is None or lo is None or hi is None:
            return value
        return estimate_text(value, lo, hi, self.heldout_n)


class VerificationCounts(Record):
    """Verifications so far, in the paper's unit (facts: validator calls; code: sandbox
    executions, 2 per critic proposal and 1 per hidden test, App. B.2): made by this run
    (`rlac`: its critic proposals', or what one proposal per output would cost in the
    enumerative baseline), needed by enumerative checking of the same generations, and
    actually `used` (the condition's real cost)."""

    rlac: int = 0
    enumerative: int = 0
    used: int = 0

    @model_serializer(mode="wrap")
    def _every_count(self, handler: Any) -> dict[str, Any]:
        # A count never added to is still a count (0): dumped even where the dump leaves out
        # fields never set, as the runner's dump of summary.json does.
        return {**{name: getattr(self, name) for name in type(self).model_fields}, **handler(self)}


class VerdictCounts(Record):
    """How the validator judged the critic's proposals of one iteration."""

    caught: int = 0
    survived: int = 0
    invalid: int = 0

    def add(self, verdicts: list[Verdict]) -> None:
        """Count these verdicts in."""
        for verdict in verdicts:
            setattr(self, verdict.verdict, getattr(self, verdict.verdict) + 1)

    @property
    def total(self) -> int:
        return self.caught + self.survived + self.invalid


class CriticStats(Record):
    """The critic's side of a round, logged under the `critic` metrics stage. Rates are None
    when no proposal was made (the enumerative baseline has no critic)."""

    detection_rate: float | None
    outcome_caught: float | None
    outcome_survived: float | None
    outcome_invalid: float | None
    proposals: float

    @classmethod
    def of(cls, outcomes: VerdictCounts) -> CriticStats:
        """Rates over every proposal of the iteration; detection rate = share caught."""
        n = outcomes.total

        def rate(k: int) -> float | None:
            return k / n if n else None

        return cls(detection_rate=rate(outcomes.caught), outcome_caught=rate(outcomes.caught),
                   outcome_survived=rate(outcomes.survived), outcome_invalid=rate(outcomes.invalid),
                   proposals=float(n))


class RolloutStats(Record):
    """The generator's side of a round, logged under the `rollout` metrics stage."""

    output_tokens: float
    generator_pairs: float
    critic_pairs: float


class Instruction(Record):
    """One train instruction s of an iteration with its K outputs a_1..a_K (lines 4-5).

    `outputs` are the texts as the generator wrote them (DPO trains on those); `answers` are
    the same with reasoning models' `<think>` blocks stripped, which is what the critic reads,
    facts are split from, code is extracted from and scorers score: a fact stated inside the
    reasoning is not a claim of the biography. `messages` is the conversation the outputs
    were sampled from ([system, user] for the paper's bio prompt): DPO trains on it.
    """

    sample: Sample
    messages: Conversation
    outputs: list[str]

    @property
    def answers(self) -> list[str]:
        return [strip_reasoning(output) for output in self.outputs]

    @property
    def prompt(self) -> str:
        """The user message: the instruction itself (the rollouts' x, the reward model's input)."""
        return self.messages[-1].content


class Critiques(Record):
    """The critic's proposals on one instruction's outputs and the validator's verdicts on
    them (lines 6 and 10): `texts[i][j]` is proposal j on output i, `verdicts[i][j]` its
    verdict, `prompts[i]` the critic's conversation for output i (the critic's DPO prompt)."""

    prompts: list[Conversation]
    texts: list[list[str]]
    verdicts: list[list[Verdict]]


class IterationData(Record):
    """Lines 3-11 of Algorithm 1, done: the DPO datasets of both models and their stats."""

    generator_pairs: list[PreferencePair] = Field(default_factory=list)
    critic_pairs: list[PreferencePair] = Field(default_factory=list)
    critic: CriticStats
    rollout: RolloutStats
    #: Each output's training reward (R from the critic's first proposal, or the enumerative /
    #: reward-model score), its text as scored, and whether it ended at its token limit: what
    #: the reward-hacking monitor follows (docs/monitor.md).
    rewards: list[float] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)
    cut: list[bool] = Field(default_factory=list)


class TrainingInfo(Record):
    """One DPO stage of a round, as the round record and the warnings read it."""

    steps: int
    seconds: float
    loss: float | None = None
    weight_delta: float | None = None


class BaselineRecord(Record):
    """Round 0: the base generator on the held-out instructions (step `rlac:round0`)."""

    round: int = 0
    eval: HeldoutEval
    #: The judge audit before iteration 1 (`audit_validator_*`; empty when not audited).
    audit: dict[str, float | None] = Field(default_factory=dict)


class RoundRecord(Record):
    """One finished iteration (step `rlac:round{r}`, and `rounds[r-1]` of summary.json).

    `checkpoints` holds each model's latest weights (its base until first trained) and
    `counts` the verification calls of the run so far, so a resumed run restarts from here.
    """

    round: int
    checkpoints: dict[str, str | None]
    trained: dict[str, bool]
    eval: HeldoutEval
    critic: CriticStats
    rollout: RolloutStats
    pairs: dict[str, int]
    training: dict[str, TrainingInfo] = Field(default_factory=dict)
    counts: VerificationCounts
    #: The judge audit after this iteration: `audit_validator_*` (fooled rate with its CI and
    #: n, flags, and the audit's own validator calls, never in `counts`); empty when not audited.
    audit: dict[str, float | None] = Field(default_factory=dict)
    seconds: float


class ProposalRecord(Record):
    """One critic proposal and its verdict (store kind `rlac_proposal`)."""

    round: int
    sample_id: str
    output_index: int
    proposal_index: int
    output: str
    proposal: str
    verdict: str
    reason: str
    details: dict[str, Any]


class EnumerativeScore(Record):
    """One output's score under enumerative checking (store kind `rlac_enumerative`)."""

    round: int
    sample_id: str
    output: str
    score: float


class RoundPair(PreferencePair):
    """A DPO pair with the round that built it (store kind `rlac_pair`)."""

    round: int


class RlacSummary(Record):
    """What `run_rlac` returns: `summary.json` of an RLAC run (the runner adds `algorithm`,
    `llm_cache` and its other keys). Every field is set where it is built, and every record
    in it dumps whole, so the runner's dump (`summary_dict`) is the full record."""

    base_model: str | None
    base_models: dict[str, str | None]
    task: str
    condition: str
    baseline: HeldoutEval
    rounds: list[RoundRecord]
    verification_calls: VerificationCounts
    verification_call_ratio: float | None
    #: DPO pairs per method and round: `{condition: {round: {"generator": n, "critic": n}}}`
    #: (rounds as strings, JSON's keys), beside the budget every method shares
    #: (`pair_budget`: `per_instruction` generator pairs, `per_output` critic pairs), so
    #: runs of RLAC and of a baseline show they trained on comparable amounts of data.
    pairs: dict[str, dict[str, dict[str, int]]] = Field(default_factory=dict)
    pair_budget: dict[str, int] = Field(default_factory=dict)
    #: The reward-model baseline's scorer and how many outputs it scored (absent otherwise).
    reward_model: dict[str, Any] | None = None
    table: Table
    #: The critic's detection rate on fixed failing held-out outputs (rlac/detection.py):
    #: before iteration 1 (round 0, the base critic), then after each iteration, the critic
    #: that proposes in the next; empty where `detection` is off or no critic proposes.
    detection: list[DetectionEval] = Field(default_factory=list)
    #: The judge audits (rlac/audit.py): one record per audited round ({"round": "audit/round<r>",
    #: "judge_role": "validator", the `coevo audit judge --json` object, `real_items`,
    #: `validator_calls`}), or one note saying why the run has nothing to audit (code).
    audit: list[dict[str, Any]] = Field(default_factory=list)
