"""coevo.roles — a role is a prompt template + a parser + a ChatModel.

`Actor` writes and revises responses, `Critic` writes critiques, and the judges in
`coevo.roles.judges` score them; `coevo.roles.parsing` reads the judges' answers.
"""

from coevo.roles.actor import Actor
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
    "Judge", "OutcomeGainJudge", "PairwiseJudge", "QueryFilterJudge", "TaiScoreJudge",
    "generic_critique", "order_swapped",
]
