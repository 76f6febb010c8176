"""The critic's detection rate on a fixed set of failing held-out outputs (the RLAC paper's
Fig. 4, measured apart from training).

Fig. 4 reads "the fraction of test cases generated that correctly expose real errors" off each
round's proposals, on that round's generator outputs: a rate that moves there mixes a critic
that changed with outputs that changed (a static critic's rate falls because the generator
learned its patterns, not because it got worse). Held still, the outputs show the critic alone:

- the set, once per run folder before iteration 1: the BASE generator samples `samples`
  outputs per held-out instruction under a seed of `data.seed` (so every run of the same data,
  each condition and each run seed, draws the same ones); the hidden checks keep those that
  fail (code: a reference test fails; facts: an atomic fact the corpus does not support),
  less, with `beyond_examples`, those the instruction's own examples already expose (code: the
  problem statement's example calls), at most `max_outputs`, taken round-robin over the
  instructions, one text once per instruction. Why drop those: a small model's failing code
  mostly crashes on any input, so every critic that writes a valid call exposes it and the
  rate sits at its ceiling whatever the critic learned; the failures left are the ones a
  critic has to look for, as in the paper's set (its base critic detected 42 %);
- the measurement, before iteration 1 (the base critic) and after each iteration (the critic
  that proposes in the next one): the loop's N proposals on each kept output, under one
  sampling seed for every round (common random numbers: two rounds differ by the critic's
  weights, not by its luck). An output is detected when the validator confirms one of its N.

Its validator calls are a measurement's: counted in its record, never in the run's
verification counts (what training spent).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from pydantic import Field

from coevo.core.strict import StrictModel
from coevo.core.types import Proposal, Record, Sample, Verdict


class RlacRun(Protocol):
    """What the measurement reads of the running loop (loop.RlacRun): named here rather than
    imported, so the loop, its config and its records can import this module without a circle."""

    config: Any
    store: Any
    domain: Any
    heldout: list[Sample]

    @property
    def generator_role(self) -> Any: ...

    def check(self, items: list[tuple[Sample, str, Proposal]]) -> list[Verdict]: ...

    def propose(self, outputs: list[tuple[Sample, str, Any]], sampling: Any, n: int) -> list[list[str]]: ...


#: Seeds the set's generator samples (from `data.seed`) and the critic's proposals on it (from
#: `seed`) apart from the loop's own (seed * 1000 + r) and the audit's (+ 500 + r).
SET_SEED_OFFSET = 800
PROPOSAL_SEED_OFFSET = 900


class DetectionSettings(StrictModel):
    """`detection:` — the critic's detection rate on fixed failing held-out outputs, before
    iteration 1 and after each (not in the paper's loop: a measurement, not a departure)."""

    enabled: bool = False
    #: Outputs the base generator samples per held-out instruction (its training sampling).
    samples: int = Field(2, ge=1)
    #: At most this many failing outputs are kept: the measurement's cost is N critic
    #: proposals and N validator checks on each, every round.
    max_outputs: int = Field(48, ge=1)
    #: Keep only the failures the instruction's own examples do not expose (see the module
    #: docstring); false keeps every failing output.
    beyond_examples: bool = True


class DetectionItem(Record):
    """One failing output of the set: `key` is `<sample id>:<sample index>`."""

    key: str
    sample_id: str
    output: str


class DetectionSet(Record):
    """The fixed set (step `rlac:detection/set`): the failing outputs kept, how many were
    sampled and how many failed, and a digest of the kept ones (equal digests: the same set)."""

    items: list[DetectionItem]
    sampled: int
    failing: int
    #: Failing outputs left out because an example of the instruction exposes them.
    shown_by_examples: int = 0
    digest: str


class DetectionEval(Record):
    """One measurement (step `rlac:round<r>/detection`; summary.json → `detection`).

    `detection_rate`: the share of the set's outputs with a confirmed proposal among their
    N, with its Wilson 95 % interval (`_lo`, `_hi`) and `outputs` (n); `proposal_catch_rate`:
    the share of all proposals confirmed (Fig. 4's own unit); `per_item`: each output's
    1.0 / 0.0, by item key, for paired comparisons between rounds and conditions.
    """

    round: int
    critic: str | None             # the critic's weights measured (as the round record stores them)
    digest: str
    outputs: int
    proposals_per_output: int
    detected: int
    proposals_caught: int
    detection_rate: float | None
    detection_rate_lo: float | None
    detection_rate_hi: float | None
    proposal_catch_rate: float | None
    invalid_rate: float | None
    validator_calls: int
    per_item: dict[str, float] = Field(default_factory=dict)

    def store_metrics(self) -> dict[str, float | None]:
        """The numbers the run store logs per round (counts named `*_count`: tabled, not plotted)."""
        return {"detection_rate": self.detection_rate, "detection_rate_lo": self.detection_rate_lo,
                "detection_rate_hi": self.detection_rate_hi, "proposal_catch_rate": self.proposal_catch_rate,
                "invalid_rate": self.invalid_rate, "outputs_count": float(self.outputs),
                "validator_calls_count": float(self.validator_calls)}


def digest(items: list[DetectionItem]) -> str:
    """A short hash of the set's keys and texts, in order."""
    text = json.dumps([[i.key, i.output] for i in items], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_set(run: RlacRun) -> DetectionSet:
    """The base generator's failing outputs on the held-out instructions (see the module
    docstring). The caller makes sure the generator is still its base (before iteration 1)."""
    from coevo.roles.parsing import strip_reasoning

    config, settings = run.config, run.config.detection
    prompts = [run.domain.generator_prompt(s) for s in run.heldout]
    sampling = config.roles.generator.sampling.train.model_copy(
        update={"seed": config.data.seed * 1000 + SET_SEED_OFFSET})
    texts = [[c.text.strip() for c in row] for row in run.generator_role.respond(prompts, sampling, n=settings.samples)]
    failing: list[list[DetectionItem]] = []
    sampled = n_failing = 0
    for sample, row in zip(run.heldout, texts):
        answers = [strip_reasoning(t) for t in row]
        sampled += len(answers)
        scores = run.domain.enumerate(sample, answers)
        mine: list[DetectionItem] = []
        for j, (answer, score) in enumerate(zip(answers, scores)):
            if float(score) < 1.0:
                n_failing += 1
                # The same text sampled twice is one output: counted twice it would weigh double.
                if answer not in {i.output for i in mine}:
                    mine.append(DetectionItem(key=f"{sample.id}:{j}", sample_id=sample.id, output=answer))
        failing.append(mine)
    shown = 0
    if settings.beyond_examples:
        failing, shown = _beyond_examples(run, failing)
    # Round-robin over the instructions: a cap keeps every instruction with a failing output
    # in the set rather than the first few instructions' every sample.
    items: list[DetectionItem] = []
    for depth in range(settings.samples):
        items += [row[depth] for row in failing if depth < len(row)]
    items = items[:settings.max_outputs]
    return DetectionSet(items=items, sampled=sampled, failing=n_failing, shown_by_examples=shown,
                        digest=digest(items))


def _beyond_examples(run: RlacRun, failing: list[list[DetectionItem]]) -> tuple[list[list[DetectionItem]], int]:
    """`failing` less the outputs one of their instruction's example checks catches, and how
    many that left out. Those checks are the measurement's: not counted anywhere."""
    samples = {s.id: s for s in run.heldout}
    checks = [(item, (samples[item.sample_id], item.output, proposal)) for row in failing for item in row
              for proposal in run.domain.example_proposals(samples[item.sample_id], item.output)]
    verdicts = run.check([check for _, check in checks]) if checks else []
    exposed = {item.key for (item, _), verdict in zip(checks, verdicts) if verdict.verdict == "caught"}
    kept = [[item for item in row if item.key not in exposed] for row in failing]
    return kept, len(exposed)


def measure(run: RlacRun, r: int, found: DetectionSet, critic: str | None) -> DetectionEval:
    """The current critic's N proposals on every output of `found`, checked by the validator;
    every proposal is stored (kind `rlac_detection`, key `r<r>:<item>:<j>`)."""
    from coevo.eval.stats import wilson_interval

    config, n = run.config, run.config.n
    samples: dict[str, Sample] = {s.id: s for s in run.heldout}
    outputs = [(samples[i.sample_id], i.output, run.domain.critic_prompt(samples[i.sample_id], i.output))
               for i in found.items]
    verdicts: list[list[str]] = []
    if outputs:
        # One seed for every round (see the module docstring).
        sampling = config.roles.critic.sampling.model_copy(update={"seed": config.seed * 1000 + PROPOSAL_SEED_OFFSET})
        texts = run.propose(outputs, sampling, n)
        checked = [(s, o, run.domain.proposal(s, o, t)) for (s, o, _), row in zip(outputs, texts) for t in row]
        flat = iter(run.check(checked))
        for item, row in zip(found.items, texts):
            mine = []
            for j, text in enumerate(row):
                verdict = next(flat)
                mine.append(verdict.verdict)
                run.store.put_record("rlac_detection", f"r{r}:{item.key}:{j}", {
                    "round": r, "item": item.key, "sample_id": item.sample_id, "proposal_index": j,
                    "proposal": text, "verdict": verdict.verdict, "reason": verdict.reason})
            verdicts.append(mine)
    per_item = {item.key: float("caught" in row) for item, row in zip(found.items, verdicts)}
    proposals = sum(len(row) for row in verdicts)
    caught = sum(row.count("caught") for row in verdicts)
    detected = int(sum(per_item.values()))
    rate = lo = hi = None
    if per_item:
        rate, lo, hi = wilson_interval(detected, len(per_item))
    return DetectionEval(
        round=r, critic=critic, digest=found.digest, outputs=len(per_item), proposals_per_output=n,
        detected=detected, proposals_caught=caught, detection_rate=rate, detection_rate_lo=lo, detection_rate_hi=hi,
        proposal_catch_rate=caught / proposals if proposals else None,
        invalid_rate=sum(row.count("invalid") for row in verdicts) / proposals if proposals else None,
        validator_calls=proposals, per_item=per_item)
