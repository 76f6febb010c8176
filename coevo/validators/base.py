"""The validator contract shared by the code and facts validators (RLAC, §4).

A validator answers R(s, a, c) in {caught, survived, invalid}: did the critic's proposal c
expose a real failure of output a on instruction s? Every call is counted in `calls`
because verification cost is a headline metric of the paper (Fig. 2b: metric vs calls).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from coevo.core.types import Proposal, Sample, Verdict


@runtime_checkable
class Validator(Protocol):
    """Checks one critic proposal against one generator output.

    `check` must increment `calls` once per invocation, whatever the verdict (an invalid
    proposal still costs a validation). Verdicts:
      - ``caught``: the proposal exposes a real failure of `output` (reward 0 for the output);
      - ``survived``: the output withstands the proposal (reward 1);
      - ``invalid``: the proposal itself is wrong or unreadable (rejected critic proposal).
    """

    name: str
    calls: int

    def check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict: ...


class CountingValidator:
    """Convenience base: subclasses implement `_check`; `check` counts every call."""

    name: str = "validator"

    def __init__(self) -> None:
        self.calls = 0

    def check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict:
        """Validate one proposal; counted even when it raises."""
        self.calls += 1
        return self._check(sample, output, proposal)

    def _check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict:
        raise NotImplementedError


class RandomValidator(CountingValidator):
    """The noisy-validator ablation: a seeded coin flip between caught and survived."""

    name = "random"

    def __init__(self, seed: int = 0, p_caught: float = 0.5) -> None:
        super().__init__()
        import random

        self._rng = random.Random(seed)
        self.p_caught = p_caught

    def _check(self, sample: Sample, output: str, proposal: Proposal) -> Verdict:
        caught = self._rng.random() < self.p_caught
        return Verdict(
            verdict="caught" if caught else "survived", reason="random label (noisy-validator ablation)"
        )
