"""TAIScore's critic stage changes what the embedded model DOES the way its reward asks
(issue 22), in the spirit of TRL's trainer tests: a Python reward whose answer is known, real
TRL GRPO steps, and the rewarded property measured on the training prompts before and after.
A moved weight says nothing about direction; this says the direction is the reward's.

The critiques GRPO trains on are sampled the way the shipped configs sample them: by
llama.cpp from the policy's weights, re-exported after every optimizer step
(`rollout_engine="llamacpp"`, coevo/train/rollout.py), so a rollout that fell behind the
weights would show here as no gain. The measured critiques come from llama.cpp too, a copy of
the weights as they are at each measurement, as the loop's evaluation writes them (0.74x the
measurement's time in transformers: BENCHMARKS.md).

Kept small for CI (4 prompts, 3 steps at a high learning rate: about 3 minutes here); benchmarks/learning_curves.py
runs the loops at full size on held-out prompts (BENCHMARKS.md, "Learning curves"). The
actor's DPO has no such test: 6 steps on 5 pairs picked by a shorter-answer judge left its sampled
length where it was at lr 3e-5 (brevity 0.334 -> 0.306, n=8; the DPO loss fell 0.69 -> 0.37) and
moved it the wrong way at 1e-4 (0.220 -> 0.149, -0.071 [-0.139, -0.009]): BENCHMARKS.md.
"""

from __future__ import annotations

import pytest

from coevo.learning import critic

pytestmark = pytest.mark.slow


def test_critic_grpo_makes_critiques_as_short_as_its_reward_asks(tmp_path):
    curve = critic.measure(reward="python:coevo.learning.rewards:concise_critique", steps=3, seeds=[0, 1],
                           work_dir=tmp_path, heldout=1, train_prompts=4, score_train=True, learning_rate=2e-4,
                           batch_size=2, eval_every=3, rollout_engine="llamacpp",
                           # Activations held, not recomputed: 0.8x the update's time at these
                           # shapes, the same gradients (BENCHMARKS.md, "Gradient checkpointing").
                           trl={"gradient_checkpointing": False})
    print(curve.model_dump_json(indent=1))
    assert curve.steps == 3 and curve.n == 8
    # The reward is 1 at <= 150 characters, 0 at >= 360; the base critic fills its 64 tokens
    # (about 290 characters). Measured here under the character count (issue 43): 3 steps at
    # 2e-4 moved it 0.227 -> 0.933 (+0.706, its interval above 0): the critiques now end early.
    # Under the old word count the same run went 0.207 -> 1.000, a reward fewer, longer words
    # could raise at the same token cap (the loophole). The margin leaves room for another CPU.
    assert curve.gain >= 0.25, curve
    assert curve.gain_ci[0] > 0, curve
