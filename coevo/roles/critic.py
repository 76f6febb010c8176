"""The critic: writes natural-language critiques c of an initial response y0.

The critique prompt is Table 6 of the TAIScore paper. `critique_prompt` is public because
GRPO trains the critic on exactly this text: TRL generates the critiques itself, and the
dataset it reads must hold the same prompt the frozen-critic path sends.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from coevo.llm.base import user
from coevo.prompts import load_template
from coevo.roles.base import Role
from coevo.roles.parsing import strip_reasoning


def generic_critique(template: str | Path | None = None) -> str:
    """The fixed, prompt-agnostic critique of the D.6 control (same text for every item)."""
    return load_template(str(template or "generic_critique")).text.strip()


class Critic(Role):
    """Evaluator role of critique-guided refinement: (x, y0) -> n critiques.

    A config's `templates.critic` overrides the bundled Table 6 prompt (it needs `{prompt}`
    and `{response}`).
    """

    default_template = "critic"

    def critique_prompt(self, prompt: str, response: str) -> str:
        """The text the critic is asked: used for generation and as the GRPO prompt."""
        return self.template.render(prompt=prompt, response=response)

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
        outputs = self.model.generate(conversations, self.sampling, n=n)
        # Pad a short answer list with "" so every response still gets n (empty) critiques.
        return [
            [strip_reasoning(c.text) for c in completions[:n]] + [""] * (n - len(completions))
            for completions in outputs
        ]
