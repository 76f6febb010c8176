"""The reward-model baseline's scorer: a learned scalar reward for each (instruction, output).

The RLAC paper compares against reward-model optimisation — ArmoRM (facts) and AceCoder-RM
(code) — where a fixed, offline-trained model replaces the validator. Both are transformers
sequence-classification models with one output: the conversation (user instruction,
assistant output) in, one number out. This module reads such a model from `hf:PATH_OR_ID`
and scores batches; the loop turns the scores into DPO pairs exactly as it does the
enumerative baseline's (`rlac.ranked_pairs`), under the same pair budget as RLAC.

torch and transformers are imported only when a scorer is built (the CLI starts fast).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from coevo.core.strict import StrictModel
from coevo.llm.base import ModelError
from coevo.core.types import Conversation


class RewardModelSettings(StrictModel):
    """How the reward-model baseline's scorer reads (prompt, output) pairs."""

    #: (prompt, output) pairs per forward pass.
    batch_size: int = Field(4, ge=1)
    #: Tokens of prompt + output the reward model reads; longer ones are cut on the right
    #: (the prompt and the start of the output are what a reward model is trained to read).
    max_length: int = Field(4096, ge=8)
    #: ArmoRM ships its own model class (`LlamaForRewardModelWithGating`): it loads only with
    #: the model repository's code, which you must trust to run.
    trust_remote_code: bool = False


class RewardModelScorer:
    """A frozen sequence-classification reward model, loaded once, scoring in batches."""

    def __init__(self, spec: str, settings: RewardModelSettings):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        kind, _, path = spec.strip().partition(":")
        if kind != "hf" or not path:
            raise ModelError(f"reward_model {spec!r}: write it as hf:PATH_OR_ID (a transformers "
                             "sequence-classification model)")
        self.spec, self.settings = spec, settings
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        # bf16 on a GPU (an 8B reward model in fp32 does not fit beside the policies); fp32 on
        # CPU, where bf16 matmuls are slow.
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=settings.trust_remote_code)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                path, torch_dtype=dtype, trust_remote_code=settings.trust_remote_code).to(self.device).eval()
        except (OSError, ValueError) as exc:
            raise ModelError(f"reward_model {spec!r} does not load as a transformers sequence-classification "
                             f"model ({exc}); give a folder or hub id of one (ArmoRM needs "
                             "reward_scoring.trust_remote_code: true)") from exc
        if self.tokenizer.pad_token is None:  # Llama-family tokenizers ship none; batches need one
            self.tokenizer.pad_token = self.tokenizer.eos_token
        # Pads after the text: no position ids are passed, so left pads would shift every
        # position and a row's reward would depend on the longest row of its batch.
        self.tokenizer.padding_side = "right"
        # The classification head reads the last non-pad token: it must know which id pads.
        self.model.config.pad_token_id = self.tokenizer.pad_token_id

    def text(self, prompt: Conversation, output: str) -> str:
        """The conversation as the reward model was trained to read it: its chat template
        when it has one (ArmoRM's and AceCodeRM's do), else the messages and output in turn.
        `prompt` is what the generator was asked, system message included: the bio
        prompt's length rule ("exactly four sentences") is in it."""
        messages = [m.model_dump() for m in prompt] + [{"role": "assistant", "content": output}]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False)
        return "\n\n".join(m["content"] for m in messages)

    def score(self, items: list[tuple[Conversation, str]]) -> list[float]:
        """One reward per (conversation asked, output), in order."""
        import torch

        scores: list[float] = []
        size = self.settings.batch_size
        with torch.inference_mode():
            for start in range(0, len(items), size):
                texts = [self.text(prompt, output) for prompt, output in items[start:start + size]]
                # The chat template already wrote the special tokens.
                batch = self.tokenizer(texts, return_tensors="pt", padding=True, truncation=True,
                                       max_length=self.settings.max_length, add_special_tokens=False)
                out = self.model(**batch.to(self.device))
                scores += _rewards(out, self.spec)
        return scores


def _rewards(out: Any, spec: str) -> list[float]:
    # ArmoRM returns its preference score as `.score` (its logits are the 19 objectives);
    # a plain sequence-classification model returns one logit per row.
    score = getattr(out, "score", None)
    if score is None:
        logits = out.logits
        if logits.shape[-1] != 1:
            raise ModelError(f"reward_model {spec!r} has {logits.shape[-1]} outputs per row; a reward model "
                             "gives one (num_labels=1) or a `.score` (ArmoRM)")
        score = logits[:, 0]
    return [float(x) for x in score.float().reshape(-1).cpu()]


__all__ = ["RewardModelScorer"]
