"""What every role is: a prompt template, a parser, a model and its generation settings.

`Role.ask_messages` is the one way a role talks to its model (`Role.ask` is it on one user
message per item): the items that share an answer schema sent as one batched `generate`
call (backends batch better than callers can), n completions per item back, in order, each
call tagged with the role that made it. `ScoringRole` adds scoring by
expectation over the score's tokens (G-Eval) where the backend returns log-probabilities.

`Scorer` is the one call signature of everything that judges rollouts, whichever inputs it
reads from them (Inspect AI's `Scorer`): a batch of rollouts, and the samples they came
from by id, in; one `Judgment` per rollout out, in order. Pipelines, rewards and
`coevo judge` hold judges only through it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol, runtime_checkable

from coevo.llm.base import ChatModel, generate_each, user
from coevo.llm.call_tags import tagged
from coevo.prompts import Template, load_template
from coevo.roles import schemas
from coevo.roles.expected import TOP_LOGPROBS
from coevo.core.types import Completion, Conversation, Judgment, Rollout, Sample, Sampling

log = logging.getLogger(__name__)

Scoring = Literal["expected", "sampled"]


@runtime_checkable
class Scorer(Protocol):
    """Judges rollouts: `score(rollouts, samples)` -> one Judgment per rollout, in order.

    `samples` maps sample id to its Sample, for scorers that read more than the rollout
    holds (a gold rubric); the others ignore it.
    """

    name: str

    def score(self, rollouts: Sequence[Rollout],
              samples: Mapping[str, Sample] | None = None) -> list[Judgment]: ...


class Role:
    """A model with its generation settings and one (hashed) prompt template."""

    #: The bundled template a role uses unless a config names another file.
    default_template: ClassVar[str]
    #: Who this role is in the model calls it makes (kept with each cached call, so the
    #: viewer files a call under the role that made it; see llm/call_tags.py).
    call_role: ClassVar[str] = "model"
    #: What the role's `ask` is for, where one word says it (a judge's "judge").
    call_step: ClassVar[str | None] = None

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None):
        self.model = model
        self.sampling = sampling
        self.template: Template = load_template(str(template or self.default_template))

    def ask(self, prompts: Sequence[str],
            answer_schemas: Sequence[dict[str, Any] | None] | None = None,
            sampling: Sampling | None = None) -> list[Completion]:
        """One completion per prompt (a user message each), in order: `ask_messages` with n=1."""
        outputs = self.ask_messages([user(p) for p in prompts], answer_schemas, sampling)
        # A backend that returns no completion for an item is a model failure, not ours.
        return [completions[0] if completions else Completion(text="") for completions in outputs]

    def ask_messages(self, conversations: Sequence[Conversation],
                     answer_schemas: Sequence[dict[str, Any] | None] | None = None,
                     sampling: Sampling | None = None, n: int = 1) -> list[list[Completion]]:
        """`n` completions per conversation, in order, each decoded under its own answer schema
        (JSON Schema; a rubric's criterion names, or the output a critic quotes, make it
        differ per item): one call for the whole list where the backend takes per-request
        settings, else one per schema. The calls are tagged with the role (`call_tags`)."""
        if not conversations:
            return []
        answer_schemas = answer_schemas if answer_schemas is not None else [None] * len(conversations)
        base = sampling or self.sampling
        samplings = [base.model_copy(update={"json_schema": schemas.as_text(schema)}) for schema in answer_schemas]
        with tagged(**self.call_tags()):
            return generate_each(self.model, list(conversations), samplings, n=n)

    def call_tags(self, step: str | None = None) -> dict[str, str | None]:
        """The tags of this role's calls: its name and (`step`, else `call_step`) what for."""
        return {"role": self.call_role, "step": step or self.call_step}


class ScoringRole(Role):
    """A role whose answer holds a score it may give by expectation over the score's tokens."""

    #: False where the score is a decision rule's input (the query filter's 1–5 grade), so
    #: only the integer written counts.
    expectable: ClassVar[bool] = True

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None,
                 *, scoring: Scoring | None = None):
        """`scoring` (default: the sampling's own, else `expected`) picks the integer the
        role wrote or its expectation; `expected` needs a backend that returns token
        log-probabilities and falls back to `sampled`, saying so once."""
        super().__init__(model, sampling, template)
        wanted = scoring or getattr(sampling, "scoring", "expected")
        self.scoring: Scoring = resolve_scoring(model, wanted) if self.expectable else "sampled"

    def scoring_sampling(self, **update: Any) -> Sampling:
        """The role's sampling, asking for the top alternatives of every token when expected."""
        logprobs = TOP_LOGPROBS if self.scoring == "expected" else 0
        return self.sampling.model_copy(update={"logprobs": logprobs, **update})


def resolve_scoring(model: ChatModel, wanted: str) -> Scoring:
    """`expected` where it is wanted and the backend returns token log-probabilities, else
    `sampled`, said once per model in the run's log."""
    if wanted != "expected":
        return "sampled"
    if getattr(model, "supports_logprobs", False):
        return "expected"
    _say_once(f"{model.model_id} returns no token log-probabilities: judges on it score "
              "by the integer they write (scoring=sampled)")
    return "sampled"


_said: set[str] = set()


def _say_once(message: str) -> None:
    if message not in _said:
        _said.add(message)
        log.warning(message)
