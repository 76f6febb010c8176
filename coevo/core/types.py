"""Records that cross layers and land on disk.

Every record is a pydantic model so that it round-trips through JSON (the run store,
JSONL exports, `--json` CLI output) without hand-written (de)serialisers.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Record(BaseModel):
    """Base for every record: unknown fields are kept, not dropped, so user data survives."""

    model_config = ConfigDict(extra="allow")


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str


Conversation = list[Message]


#: The most tokens a role may ask for in one answer (more than any model's context).
MAX_TOKENS = 1_048_576


class Sampling(BaseModel):
    """Decoding settings of one call. Part of the cache key, so keep it small and explicit.
    Unknown keys are refused (a typo in a config's `sampling:` block is an error, not ignored)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Bounded where a config is read, so a bad value is one line before any model loads, not a
    # backend's traceback mid-run: temperature 0 (greedy) to 10, top-p in (0, 1], at least one
    # token and no more than any model's context, a seed every backend takes (0 to 2^31 - 1).
    temperature: float = Field(0.7, ge=0, le=10, allow_inf_nan=False)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int = Field(512, ge=1, le=MAX_TOKENS)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)
    stop: tuple[str, ...] = ()
    #: A JSON Schema (as JSON text, so Sampling stays hashable) that the answer must follow.
    #: The model backends decode under it (a grammar: llama.cpp's own, xgrammar in
    #: transformers, the server's behind the OpenAI API), which is what lets a small judge
    #: return readable scores; parsers stay lenient for servers that ignore it.
    json_schema: str | None = None
    #: How many of the most likely tokens to return with their log-probabilities at every
    #: generated position (0: none). Judges ask for them to score by expectation (G-Eval).
    logprobs: int = Field(0, ge=0, le=20)
    #: Divides the logits of tokens already in the text (above 1: less repetition; 1: off, as
    #: the papers sample). A small model at a low temperature falls into loops that run to its
    #: token limit, and a judge then scores the loop; transformers, vLLM and llama.cpp take it
    #: as it is, an OpenAI-compatible server in `extra_body` (vLLM's, SGLang's, llama.cpp's).
    repetition_penalty: float = Field(1.0, gt=0, le=10, allow_inf_nan=False)


class JudgeSampling(Sampling):
    """A judge's decoding settings plus how its integer answer becomes a score.

    `expected` (default) scores by the probability-weighted mean over the score's tokens
    (G-Eval, Liu et al. 2023) where the backend returns token log-probabilities, and falls
    back to `sampled` (the integer the judge wrote) where it does not, saying so once.
    Continuous scores are what let a small judge separate two answers it would both call 4.
    """

    scoring: Literal["expected", "sampled"] = "expected"
    #: Longest free-text reason the answer schema lets a dimension judge write (TAIScore,
    #: critique quality, adherence); None keeps the judge's own (TAIScore: no cap, as in its
    #: authors' code; the others: 160). A small judge needs one: uncapped, the 135M model
    #: can repeat itself inside a reason until its token budget ends and no score is written.
    reason_limit: int | None = Field(None, ge=20)
    #: How the answer is decoded: `schema` (default) under the answer's JSON Schema, which a
    #: small judge needs to answer at all; `free`: generated freely and parsed after
    #: (json-repair, then patterns), as the papers' judges answer (TAIScore's prompts ask for
    #: JSON, FactScore's for True/False). A free answer may reason first and is not capped
    #: (`reason_limit` shapes only the schema), so give it the tokens (`max_tokens`).
    output: Literal["schema", "free"] = "schema"


class Completion(BaseModel):
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: list[float] | None = None
    #: With `Sampling.logprobs > 0`: the generated tokens' texts (joined, they spell the raw
    #: completion) and, per position, the top alternatives {token text: log-probability}.
    tokens: list[str] | None = None
    top_logprobs: list[dict[str, float]] | None = None
    cached: bool = False


class Criterion(Record):
    name: str
    description: str = ""
    weight: float = 1.0


class Rubric(Record):
    criteria: list[Criterion]


class Sample(Record):
    """One task instance. `reference`/`rubric` are gold fields: evaluation only."""

    id: str
    prompt: str
    genre: str | None = None
    reference: str | None = None
    rubric: Rubric | None = None
    meta: dict[str, Any] = Field(default_factory=dict)


class Judgment(Record):
    """A judge's verdict. `valid=False` keeps the raw text when it could not be read."""

    judge: str
    scores: dict[str, float] = Field(default_factory=dict)
    score: float | None = None
    reasons: dict[str, str] = Field(default_factory=dict)
    raw: str = ""
    valid: bool = True
    error: str | None = None
    #: The integer the judge wrote and the probability-weighted mean over its score tokens
    #: (None where the backend gave no log-probabilities); `score` is the one the judge's
    #: `scoring` setting uses.
    sampled: float | None = None
    expected: float | None = None
    #: The training reward this judgment gave, where it was one (TAIScore's GRPO: the score,
    #: or `invalid_reward` for an unreadable answer, an empty critique or revision).
    reward: float | None = None
    #: How many times the judge was asked for this answer (2: the first was unreadable).
    asked: int = 1
    #: What gave it: "model" (a judge model's answer) or "python" (a `python:` scorer function).
    source: str = "model"


class Rollout(Record):
    """One pass of critique-guided refinement: x -> y0 -> c -> y1, with its judgments."""

    sample_id: str
    x: str
    y0: str
    c: str | None = None
    y1: str | None = None
    condition: str = "matched"
    judgments: dict[str, Judgment] = Field(default_factory=dict)


class PreferencePair(Record):
    """Two answers to one prompt, the chosen one preferred (a DPO row).

    `prompt` is the user message; `system` the system message the answers were sampled with,
    if any (RLAC's paper prompts have one): DPO must train on the conversation as it was asked.
    """

    prompt: str
    chosen: str
    rejected: str
    sample_id: str | None = None
    source: str = ""
    system: str | None = None

    @classmethod
    def asked(cls, conversation: Conversation, chosen: str, rejected: str, **fields: Any) -> PreferencePair:
        """A pair on the conversation its answers were sampled from: [user] or [system, user]."""
        roles = [m.role for m in conversation]
        if roles not in (["user"], ["system", "user"]):
            raise ValueError(f"a preference pair's prompt is [user] or [system, user], not {roles}")
        system = conversation[0].content if len(conversation) == 2 else None
        return cls(prompt=conversation[-1].content, chosen=chosen, rejected=rejected, system=system, **fields)

    def conversation(self) -> Conversation:
        """The prompt as the model was asked it: [system, user], or [user]."""
        asked = [Message(role="user", content=self.prompt)]
        if self.system is not None:
            asked.insert(0, Message(role="system", content=self.system))
        return asked


class Proposal(Record):
    """A critic's claim that an output fails (a wrong fact, a failing test)."""

    sample_id: str
    output: str
    text: str
    parsed: dict[str, Any] = Field(default_factory=dict)
    valid: bool = True


class Verdict(Record):
    verdict: Literal["caught", "survived", "invalid"]
    reason: str = ""
    details: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0


class Skill(Record):
    name: str
    version: int
    text: str
    parent: int | None = None
    accepted: bool = False
    why: str = ""


class Table(BaseModel):
    """A result table as `summary.json` and the report show it: named columns, one dict per row."""

    columns: list[str]
    rows: list[dict[str, Any]]
