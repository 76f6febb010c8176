"""The actor: writes the initial response y0 and revises it into y1.

One `generate` call per batch, always: backends batch better than callers can (see
`coevo.llm.base`). Initial responses and revisions get separate sampling settings because
the paper decodes them differently (rollouts at T 0.8, the refiner at T 0.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coevo.llm.base import ChatModel, user
from coevo.llm.call_tags import tagged
from coevo.prompts import Template, load_template
from coevo.roles.base import Role
from coevo.roles.parsing import strip_reasoning
from coevo.core.types import Sample, Sampling


class Actor(Role):
    """Generator role of critique-guided refinement: x -> y0, and (x, y0, c) -> y1.

    Its role template is the Table 7 reviser prompt; the no-critique control and an optional
    initial-response prompt have templates of their own.
    """

    default_template = "reviser"
    call_role = "actor"

    def __init__(
        self,
        model: ChatModel,
        sampling: Sampling,
        *,
        revise_sampling: Sampling | None = None,
        respond_template: str | Path | None = None,
        revise_template: str | Path | None = None,
        revise_no_critique_template: str | Path | None = None,
    ):
        """`sampling` decodes y0; `revise_sampling` (default: `sampling`) decodes y1.

        Without `respond_template` the sample's prompt is sent as it is, the way the
        paper's initial responses were produced; a template needs a `{prompt}` field.
        """
        super().__init__(model, sampling, revise_template)
        self.revise_sampling = revise_sampling or sampling
        self.respond_template: Template | None = (
            load_template(str(respond_template)) if respond_template else None
        )
        self.revise_template = self.template
        self.revise_no_critique_template = load_template(
            str(revise_no_critique_template or "reviser_no_critique")
        )

    def respond_prompt(self, prompt: str) -> str:
        """The text the actor is asked for an initial response (also the DPO prompt)."""
        return self.respond_template.render(prompt=prompt) if self.respond_template else prompt

    def revision_prompt(self, prompt: str, response: str, critique: str | None) -> str:
        """The text the actor is asked for a revision; `critique=None` is the no-critique
        control of D.6, which uses its own template rather than an empty critique."""
        if critique is None:
            return self.revise_no_critique_template.render(prompt=prompt, response=response)
        return self.revise_template.render(prompt=prompt, response=response, critique=critique)

    def respond(self, samples: Sequence[Sample]) -> list[str]:
        """One initial response y0 per sample, in order."""
        return self._generate([self.respond_prompt(s.prompt) for s in samples], self.sampling, "respond")

    def revise(
        self, prompts: Sequence[str], responses: Sequence[str], critiques: Sequence[str]
    ) -> list[str]:
        """One revision y1 per (x, y0, c) with the Table 7 reviser prompt, in order."""
        _same_length(prompts=prompts, responses=responses, critiques=critiques)
        texts = [self.revision_prompt(x, y, c) for x, y, c in zip(prompts, responses, critiques)]
        return self._generate(texts, self.revise_sampling, "revise")

    def revise_without_critique(
        self, prompts: Sequence[str], responses: Sequence[str]
    ) -> list[str]:
        """The no-critique control (D.6): revise (x, y0) with no feedback at all."""
        _same_length(prompts=prompts, responses=responses)
        texts = [self.revision_prompt(x, y, None) for x, y in zip(prompts, responses)]
        return self._generate(texts, self.revise_sampling, "revise_no_critique")

    def _generate(self, texts: list[str], sampling: Sampling, step: str) -> list[str]:
        if not texts:
            return []
        # The step tells a revision from the y0 it may equal word for word (the viewer).
        with tagged(**self.call_tags(step)):
            outputs = self.model.generate([user(t) for t in texts], sampling, n=1)
        # A reasoning model's <think> block is not part of the answer the judge should see.
        return [strip_reasoning(c[0].text) if c else "" for c in outputs]


def _same_length(**sequences: Sequence[str]) -> None:
    lengths = {name: len(seq) for name, seq in sequences.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"batch inputs differ in length: {lengths}")
