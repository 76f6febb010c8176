"""The critic: writes natural-language critiques c of an initial response y0.

The critique prompt is Table 6 of the TAIScore paper. `critique_prompt` is public because
GRPO trains the critic on exactly this text: TRL generates the critiques itself, and the
dataset it reads must hold the same prompt the frozen-critic path sends.

With a token budget (`max_prompt_tokens`; TAIScore passes `grpo.max_prompt_length`), a
prompt over it keeps Table 6's header and the instruction and loses the middle of y0 behind
a visible marker (`coevo.roles.prompt_budget`): one rule for every place the critic reads a
y0 (GRPO's dataset, the actor's DPO pairs, held-out evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coevo.llm.base import ChatModel, user
from coevo.llm.call_tags import tagged
from coevo.prompts import load_template
from coevo.roles.base import Role
from coevo.roles.parsing import strip_reasoning
from coevo.roles.prompt_budget import Fitted, TokenCounter, fit_middle, token_counter
from coevo.core.types import Sampling


def generic_critique(template: str | Path | None = None) -> str:
    """The fixed, prompt-agnostic critique of the D.6 control (same text for every item)."""
    return load_template(str(template or "generic_critique")).text.strip()


class Critic(Role):
    """Evaluator role of critique-guided refinement: (x, y0) -> n critiques.

    A config's `roles.critic.template` overrides the bundled Table 6 prompt (it needs `{prompt}`
    and `{response}`). `max_prompt_tokens` (None: no limit) bounds the prompt, counted by
    `count_tokens` (default: the model's own tokenizer, see `prompt_budget.token_counter`).
    """

    default_template = "critic"
    call_role = "critic"
    call_step = "critique"

    def __init__(self, model: ChatModel, sampling: Sampling, template: str | Path | None = None, *,
                 max_prompt_tokens: int | None = None, count_tokens: TokenCounter | None = None):
        super().__init__(model, sampling, template)
        if max_prompt_tokens is not None and max_prompt_tokens < 1:
            raise ValueError(f"max_prompt_tokens must be at least 1, got {max_prompt_tokens}")
        self.max_prompt_tokens = max_prompt_tokens
        self._count_tokens = count_tokens

    @property
    def count_tokens(self) -> TokenCounter:
        """The token counter the budget is measured with (resolved on first use)."""
        if self._count_tokens is None:
            self._count_tokens = token_counter(self.model)
        return self._count_tokens

    def critique_prompt(self, prompt: str, response: str) -> str:
        """The text the critic is asked: used for generation and as the GRPO prompt."""
        return self.fitted_prompt(prompt, response).text

    def fitted_prompt(self, prompt: str, response: str) -> Fitted:
        """The critique prompt within the budget: y0 shortened in its middle if need be."""
        def render(y0: str) -> str:
            return self.template.render(prompt=prompt, response=y0)

        if self.max_prompt_tokens is None:
            return Fitted(render(response))
        return fit_middle(render, response, self.max_prompt_tokens, self.count_tokens)

    def count_shortened(self, prompts: Sequence[str], responses: Sequence[str]) -> int:
        """How many of these (x, y0) have their y0 shortened to fit the budget (0 without one)."""
        if self.max_prompt_tokens is None:
            return 0
        budget, count = self.max_prompt_tokens, self.count_tokens
        return sum(count(self.template.render(prompt=x, response=y)) > budget for x, y in zip(prompts, responses))

    def critique(
        self, prompts: Sequence[str], responses: Sequence[str], n: int = 1
    ) -> list[list[str]]:
        """`n` critiques per (x, y0), one `generate` call for the whole batch.

        The paper samples N=4 critiques per prompt as one GRPO group; they come back as
        one inner list per response, in order.
        """
        if len(prompts) != len(responses):
            raise ValueError(
                f"prompts ({len(prompts)}) and responses ({len(responses)}) differ in length"
            )
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        if not prompts:
            return []
        conversations = [user(self.critique_prompt(x, y)) for x, y in zip(prompts, responses)]
        with tagged(**self.call_tags()):
            outputs = self.model.generate(conversations, self.sampling, n=n)
        # Pad a short answer list with "" so every response still gets n (empty) critiques.
        return [
            [strip_reasoning(c.text) for c in completions[:n]] + [""] * (n - len(completions))
            for completions in outputs
        ]
