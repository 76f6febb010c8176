"""RLAC's two trained roles (RLAC paper, Algorithm 1): the generator π_g and the critic π_c.

Their prompts are their templates' messages (a system message where the template has one),
filled by the task's domain (coevo/algorithms/rlac/domains.py: which fields a biography or a
code problem gives); what they do with their model is a `Role`'s, so their calls are batched,
seeded and tagged like every other role's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coevo.roles.base import Role
from coevo.core.types import Completion, Conversation, Sampling


class RlacGenerator(Role):
    """π_g: K sampled outputs per instruction (lines 4-5), or one greedy output (held out)."""

    call_role = "generator"
    call_step = "respond"

    def respond(self, conversations: Sequence[Conversation], sampling: Sampling | None = None,
                n: int = 1) -> list[list[Completion]]:
        """`n` outputs per instruction's messages, in order (their token counts kept: the
        rollout length metric reads them)."""
        return self.ask_messages(conversations, None, sampling, n)


class RlacCritic(Role):
    """π_c: names one likely failure of an output (a wrong fact, a failing test case)."""

    call_role = "critic"
    call_step = "critique"

    def propose(self, conversations: Sequence[Conversation], answer_schemas: Sequence[dict[str, Any] | None],
                sampling: Sampling | None = None, n: int = 1) -> list[list[str]]:
        """`n` proposals per output's messages, each decoded under its domain's answer schema
        for that output (the validator reads it), as raw texts in order."""
        return [[c.text.strip() for c in row] for row in self.ask_messages(conversations, answer_schemas, sampling, n)]
