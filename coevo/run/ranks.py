"""What ranks 1..N-1 of a many-process run do: follow rank 0's instructions until it ends.

`runner.run` starts this on every rank but 0 (coevo/train/distributed.py explains the
launch and the messages). It sits here, beside the runner, and not in distributed.py: it
loads models and enters both trainers, while distributed.py is the message layer those
trainers themselves use, and must import none of them.
"""

from __future__ import annotations

import logging
from typing import Any

from coevo.train import distributed

log = logging.getLogger(__name__)


def follow() -> None:
    """Ranks 1..N-1: do what rank 0 says until it says `end`."""
    # Looked up when called: tests (tests/train/test_distributed.py) stand in for each.
    from coevo.train.dpo import train_dpo
    from coevo.train.grpo import train_grpo
    from coevo.train.stages import restore_checkpoint
    from coevo.train.trainable import load_trainable

    distributed.init()
    policies: dict[str, Any] = {}
    while True:
        kind, payload = distributed.next_instruction()
        log.debug("rank %d: %s", distributed.rank(), kind)
        if kind == "end":
            distributed.leave()
            return
        if kind == "load":
            policies[payload["key"]] = load_trainable(payload["spec"], **payload["options"])
        elif kind == "restore":
            restore_checkpoint(policies[payload["key"]], payload["checkpoint"], payload["lora"])
        elif kind == "dpo":
            reference = policies.get(payload.pop("reference_key") or "")
            train_dpo(policies[payload.pop("key")], reference=reference, **payload)
        elif kind == "grpo":
            train_grpo(policies[payload.pop("key")], reward_fn=distributed.shared_reward(None), **payload)
        else:
            raise RuntimeError(f"rank {distributed.rank()}: unknown instruction {kind!r} from rank 0")
