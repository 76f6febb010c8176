"""RLAC's DPO pairs (§3): the generator's a+ / a- by the validator's verdict on the critic's
proposal, the critic's c+ / c- by whether it exposed a real failure, and the baselines' ranked pairs."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from coevo.core.types import Conversation, PreferencePair, Sample, Verdict

if TYPE_CHECKING:
    pass

# --------------------------------------------------------------------------- pairs


def reward(verdict: Verdict) -> int:
    """R(s, a, c) for the generator: 0 only when the critic exposed a real failure."""
    return 0 if verdict.verdict == "caught" else 1


def generator_pairs(sample: Sample, prompt: Conversation, outputs: list[str], rewards: list[int],
                    limit: int) -> list[PreferencePair]:
    """a+ (r=1) vs a- (r=0) of the same instruction, at most `limit`, distinct texts; on
    `prompt`, the conversation the outputs were sampled from.

    Pairs are taken round-robin over the positives so a few outputs do not fill every slot.
    """
    pos = [o for o, r in zip(outputs, rewards) if r == 1]
    neg = [o for o, r in zip(outputs, rewards) if r == 0]
    combos = sorted(itertools.product(range(len(pos)), range(len(neg))), key=lambda ij: (ij[1], ij[0]))
    pairs = [PreferencePair.asked(prompt, pos[i], neg[j], sample_id=sample.id, source="rlac:generator")
             for i, j in combos if pos[i] != neg[j]]
    return pairs[:limit]


def critic_pairs(sample: Sample, prompt: Conversation, proposals: list[str], verdicts: list[Verdict],
                 limit: int) -> list[PreferencePair]:
    """c+ (the validator confirmed a failure) vs c- (invalid, or the output satisfies it)."""
    pos = [p for p, v in zip(proposals, verdicts) if v.verdict == "caught"]
    neg = [p for p, v in zip(proposals, verdicts) if v.verdict != "caught"]
    pairs = [PreferencePair.asked(prompt, c, r, sample_id=sample.id, source="rlac:critic")
             for c, r in itertools.product(pos, neg) if c != r]
    return pairs[:limit]


def ranked_pairs(sample: Sample, prompt: Conversation, outputs: list[str], scores: list[float],
                 limit: int, source: str) -> list[PreferencePair]:
    """The baselines' pairs (enumerative, reward model): higher- over lower-scoring outputs
    of the same instruction, widest score gap first (so the first is best vs worst), at most
    `limit` — the budget RLAC's pairs have — and only where the scores and texts differ.

    Why not one best-vs-worst pair: RLAC gets up to `max_pairs_per_instruction` pairs, and a
    baseline trained on a quarter of the pairs loses for want of data, not of method.
    """
    order = sorted(((i, j) for i in range(len(outputs)) for j in range(len(outputs))
                    if scores[i] > scores[j] and outputs[i] != outputs[j]),
                   key=lambda ij: (-(scores[ij[0]] - scores[ij[1]]), -scores[ij[0]], ij))
    pairs: list[PreferencePair] = []
    seen: set[tuple[str, str]] = set()
    for i, j in order:
        if len(pairs) == limit:
            break
        if (outputs[i], outputs[j]) in seen:  # the same text sampled twice is one pair
            continue
        seen.add((outputs[i], outputs[j]))
        pairs.append(PreferencePair.asked(prompt, outputs[i], outputs[j], sample_id=sample.id, source=source))
    return pairs
