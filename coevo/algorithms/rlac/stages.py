"""RLAC's names for a round's stages, built in one place.

A round's work is filed under several names, which must agree with each other and with run
folders written before (a resumed run finds its finished rounds by them, the run page joins
calls, rollouts and training by them):

    rlac:round1             the round's step in the run store, its rollouts and its calls' tags
    rlac:round1/eval        the held-out evaluation's calls (round 0: the base generator's)
    rlac:round1/detection   the critic's detection rate on the fixed failing outputs after
                            round 1 (round 0: the base critic's; rlac/detection.py)
    rlac:detection/set      those fixed outputs, drawn once per run folder
    rlac/round1/generator   a DPO stage in the shared stage runner (train/stages.py: its first
                            part names the algorithm), and `coevo plan`'s stages
    round1/generator        that stage's folder in the run folder
    audit/round1            the judge audit's record of the round (rlac/audit.py)
"""

from __future__ import annotations

#: The run store's steps, rollouts and call tags.
STORE = "rlac:"
#: Named stages: the stage runner's training stages and the plan's.
STAGE = "rlac/"
#: No prefix: folders under the run folder, and labels within a run.
BARE = ""
#: The run store's step holding the detection measurement's fixed outputs.
DETECTION_SET = f"{STORE}detection/set"


def round_stage(r: int, *parts: str, prefix: str = STORE) -> str:
    """Round r's name under `prefix`, then `parts`: `round_stage(1, "eval")` is
    `rlac:round1/eval`, `round_stage(1, "critic", prefix=STAGE)` is `rlac/round1/critic`."""
    return "/".join((f"{prefix}round{r}", *parts))
