"""KL(π_θ || π_base) on held-out samples: how far training moved the generator (Figure 3's x-axis)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from coevo.core.types import Conversation

if TYPE_CHECKING:
    from coevo.llm.local import LocalModel

# --------------------------------------------------------------------------- KL


def _next_token_logprobs(model: Any, tokenizer: Any, prompt: Conversation, completion: str) -> Any:
    """log pi(. | x, y_<t) over the vocabulary at each position of y, a [T, V] tensor (None for
    an empty y). x is the conversation the generator was asked (system message included),
    under the chat template, as the generator saw it."""
    import torch

    head = tokenizer.apply_chat_template([m.model_dump() for m in prompt], tokenize=False,
                                         add_generation_prompt=True)
    p_ids = tokenizer(head, add_special_tokens=False)["input_ids"]
    c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    if not c_ids:
        return None
    ids = torch.tensor([p_ids + c_ids], device=model.device)
    logits = model(ids).logits[0, len(p_ids) - 1:-1].float()
    return torch.log_softmax(logits, dim=-1)


def kl_estimate(policy: LocalModel, base: LocalModel, prompts: list[Conversation], samples: list[str]) -> float:
    """KL(pi || pi_base) per sequence, y sampled from pi (the paper's Fig. 2c reward-hacking
    sign): at each position of y the exact KL between the two next-token distributions,
    summed over y, averaged over samples. `prompts` are the conversations y was sampled
    from, system message included: the KL is of the policy as it is asked.

    Why not the plain Monte-Carlo mean of log pi(y|x) - log pi_base(y|x): with the one or two
    samples a held-out prompt gets, it is often negative (measured: -0.49 nats after two RLAC
    rounds), which reads as nonsense. The per-position sum is the same quantity in
    expectation, never negative, and zero exactly when the two models agree on y's prefixes.
    """
    import torch

    if not samples:
        return 0.0
    total = 0.0
    with torch.inference_mode():
        for prompt, sample in zip(prompts, samples):
            logp = _next_token_logprobs(policy.model, policy.tokenizer, prompt, sample)
            if logp is None:
                continue
            logb = _next_token_logprobs(base.model, base.tokenizer, prompt, sample)
            # max(0, .): float rounding when the two models barely differ, nothing more.
            total += max(0.0, float((logp.exp() * (logp - logb)).sum()))
    return total / len(samples)
