"""The actor's DPO pairs (Appendix D.3): revisions a critique-blind pairwise judge prefers over
the initial response; M of them sampled uniformly without replacement."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from coevo.core.types import Rollout


@dataclass
class PairCounts:
    candidates: int = 0
    y1_wins: int = 0
    ties: int = 0
    y0_wins: int = 0
    invalid: int = 0
    selected: int = 0
    #: Pool queries whose y0 the critic read shortened (its prompt over the budget).
    critic_prompts_shortened: int = 0

    def add(self, other: PairCounts) -> None:
        """Count another pool's pairs in with these."""
        for key, value in vars(other).items():
            setattr(self, key, getattr(self, key) + value)


def select_pairs(rollouts: Sequence[Rollout], m: int, seed: int,
                 judge: str = "pairwise") -> tuple[list[Rollout], PairCounts]:
    """D.3's filter: keep rollouts whose y1 the (order-randomised, critique-blind) pairwise
    judge preferred over y0; ties, y0 wins and unreadable verdicts are dropped; then `m`
    of the eligible ones are sampled uniformly without replacement (seeded)."""
    counts = PairCounts(candidates=len(rollouts))
    eligible = []
    for rollout in rollouts:
        verdict = rollout.judgments.get(judge)
        # `winner` is the judge's decision (with expected scoring: the most probable answer);
        # `score` may then be a probability, so it is not compared with 1.0.
        winner = getattr(verdict, "winner", None) if verdict is not None and verdict.valid else None
        if winner is None:
            counts.invalid += 1
        elif winner == "y1":
            counts.y1_wins += 1
            eligible.append(rollout)
        elif winner == "tie":
            counts.ties += 1
        else:
            counts.y0_wins += 1
    chosen = random.Random(seed).sample(eligible, min(m, len(eligible)))
    counts.selected = len(chosen)
    return chosen, counts
