"""coevo.train: thin glue over TRL (DPO and GRPO), shared by the co-evolution algorithms.

Heavy libraries (torch, trl, peft) load only when a trainer runs.
"""

from coevo.train.checkpoints import save_checkpoint
from coevo.train.common import TrainResult
from coevo.train.dpo import DPOSettings, pairs_to_dataset, train_dpo
from coevo.train.errors import TrainError
from coevo.train.grpo import GRPOSettings, prompts_to_dataset, train_grpo
from coevo.train.settings import LoRASettings, machine_training_args
from coevo.train.trainable import load_trainable

__all__ = [
    "DPOSettings",
    "GRPOSettings",
    "LoRASettings",
    "TrainError",
    "TrainResult",
    "load_trainable",
    "machine_training_args",
    "pairs_to_dataset",
    "prompts_to_dataset",
    "save_checkpoint",
    "train_dpo",
    "train_grpo",
]
