"""Shared helpers for role tests: a replay model that also counts `generate` calls."""

import pytest

from coevo.llm.replay import ReplayModel
from coevo.core.types import Sampling


class CountingReplay(ReplayModel):
    """ReplayModel that records each `generate` call (batch size, n, sampling)."""

    def __init__(self, rules):
        super().__init__(rules=rules)
        self.batches: list[tuple[int, int, Sampling]] = []
        self.schemas: list[str | None] = []  # the answer schema of each call, kept apart

    def generate(self, conversations, sampling, n=1):
        self.batches.append((len(conversations), n, sampling.model_copy(update={"json_schema": None})))
        self.schemas.append(sampling.json_schema)
        return super().generate(conversations, sampling, n)

    def prompts(self) -> list[str]:
        """The user text of every conversation asked, in order."""
        return [conversation[-1].content for conversation in self.calls]


@pytest.fixture
def replay():
    """Build a counting replay model from (match, completions) rules."""
    return lambda rules: CountingReplay(rules)


@pytest.fixture
def judge_sampling():
    return Sampling(temperature=0.2, top_p=1.0)
