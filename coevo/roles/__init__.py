"""coevo.roles — a role is a prompt template + a parser + a ChatModel + its sampling.

Every role builds on `coevo.roles.base.Role` (one batched `ask`); every judge is a
`coevo.roles.base.Scorer` (`score(rollouts, samples) -> judgments`). `Actor` writes and
revises responses, `Critic` writes critiques, the judges in `coevo.roles.judges` score them,
DecoEvo's roles are in `coevo.roles.decoevo`, DeepResearch-Gym's report judges (key points,
report quality) in `coevo.roles.deepresearch`, and `coevo.roles.refinement` chains actor,
critic and judges into critique-guided refinement. `coevo.roles.parsing` reads answers.
"""

from coevo.roles.actor import Actor
from coevo.roles.base import Role, Scorer, ScoringRole
from coevo.roles.critic import Critic, generic_critique
from coevo.roles.judges import (
    JUDGES,
    AdherenceJudge,
    CritiqueQualityJudge,
    GoldRubricJudge,
    Judge,
    OutcomeGainJudge,
    PairwiseJudge,
    QueryFilterJudge,
    TaiScoreJudge,
    order_swapped,
)

__all__ = [
    "JUDGES", "Actor", "AdherenceJudge", "Critic", "CritiqueQualityJudge", "GoldRubricJudge",
    "Judge", "OutcomeGainJudge", "PairwiseJudge", "QueryFilterJudge", "Role", "Scorer", "ScoringRole",
    "TaiScoreJudge",
    "generic_critique", "order_swapped",
]
