"""TAIScore co-evolving critic–actor training (TAIScore paper §4, §5, Appendix D).

One module per part of the paper's method, read in this order:

    config.py      the settings (Table 12 defaults) and the paper's conditions as presets
    data.py        queries rated and pooled into disjoint shards (App. C); the held-out prompts
    loop.py        the algorithm: per shard, critic GRPO (§4.2) then actor DPO (§4.3)
    rewards.py     the critic's GRPO reward: critique -> revision -> judge
    pairs.py       the actor's DPO pairs: revisions a critique-blind judge prefers (D.3)
    context.py     what the conditions share (models load and train through ../backend.py)
    evaluation.py  a round measured on held-out prompts (Tables 1, 3a)
    checkpoint_table.py  Table 1 afterwards: every saved actor on benchmark sets
    audit.py       the judges probed for gaming every round
    monitoring.py  the reward-hacking monitor's anchors on each critic GRPO stage
    records.py     what a run writes: rounds, conditions, summary.json
    paper.py       the paper's settings, the departures from them, and `coevo plan`
"""

from coevo.algorithms.taiscore.config import ConditionSpec, TaiScoreConfig
from coevo.algorithms.taiscore.loop import run_taiscore
from coevo.algorithms.taiscore.records import TaiScoreSummary
from coevo.algorithms.taiscore.rewards import completion_text, make_reward_fn

__all__ = ["ConditionSpec", "TaiScoreConfig", "TaiScoreSummary", "completion_text", "make_reward_fn", "run_taiscore"]
