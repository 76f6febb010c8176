"""What each check of benchmarks/hacking_onset.py's anchor sees: several critiques of one
held-out prompt are drawn with distinct seeds and averaged into one item (the anchor's n is
prompts, not critiques), each check's cost is kept, and a larger anchor takes its extra
prompts from outside the training prompts, which stay the same."""

from __future__ import annotations

import pytest

from learning import hacking
from learning.common import split_prompts
from coevo.core.types import Sample, Sampling
from test_hacking_wiring import REWARDS, gamed  # noqa: F401  (the replay backend fixture)


class SeededCritic:
    """A critic whose critique names the prompt and the sampling seed it was drawn with."""

    def __init__(self) -> None:
        self.sampling = Sampling(seed=7)
        self.seeds: list[int | None] = []

    def critique(self, prompts, responses, n=1):
        self.seeds.append(self.sampling.seed)
        return [[f"{p}|{self.sampling.seed}"] for p in prompts]


def by_seed(prompts, completions, **columns):
    """An anchor value of item index + the critique's sample number (seed // stride)."""
    return [int(c.split("|")[0][1:]) + int(c.split("|")[1]) // hacking.SAMPLE_SEED_STRIDE for c in completions]


def test_each_prompt_is_one_item_averaging_its_critiques_drawn_with_distinct_seeds():
    critic, checks = SeededCritic(), []
    scored = [Sample(id=f"s{i}", prompt=f"p{i}") for i in range(5)]
    anchor = hacking.costed_anchor(critic, by_seed, scored, {s.id: "y0" for s in scored},
                                   hacking.sample_seeds(7, 3), None, checks)
    values = anchor()
    # Three critiques a prompt, at seeds 7, 1007, 2007: values i, i+1, i+2, averaged to i+1.
    assert critic.seeds == [7, 1007, 2007]
    assert values == {f"s{i}": pytest.approx(i + 1.0) for i in range(5)}
    assert len(checks) == 1 and checks[0]["critiques"] == 15 and checks[0]["seconds"] >= 0
    anchor()
    assert len(checks) == 2


def test_one_critique_a_prompt_is_the_first_measurement_unchanged():
    # The first sample's seed is the seed itself: --anchor-samples 1 draws what the first runs drew.
    assert hacking.sample_seeds(2, 1) == [2]
    assert hacking.per_item({"a#0": 0.5, "b#0": 1.0}) == {"a": 0.5, "b": 1.0}
    assert hacking.per_item({"wp-1#0": 0.0, "wp-1#1000": 1.0}) == {"wp-1": 0.5}


def test_held_out_prompts_never_meet_the_training_prompts_and_the_training_prompts_stay():
    for heldout in (3, 8, 16):
        assert hacking.monitor_split(heldout, 16) == split_prompts(heldout, 16, score_train=False)
    base_train, _ = hacking.monitor_split(16, 16)
    for heldout in (17, 32, 56):
        train, held = hacking.monitor_split(heldout, 16)
        assert [s.id for s in train] == [s.id for s in base_train]
        assert len(held) == heldout == len({s.id for s in held})
        assert not {s.id for s in train} & {s.id for s in held}
    with pytest.raises(ValueError, match="at most 56 can be held out"):
        hacking.monitor_split(57, 16)


def test_the_monitor_counts_prompts_not_critiques(gamed, tmp_path):  # noqa: F811
    (tmp_path / "rewards.py").write_text(REWARDS)
    result = hacking.measure(reward=f"python:{tmp_path}/rewards.py:by_words",
                             anchor=f"python:{tmp_path}/rewards.py:by_characters", steps=4, every=2, seeds=[0],
                             work_dir=tmp_path / "w", heldout=3, train_prompts=4, anchor_samples=2)
    run = result.seeds[0]
    assert [p[2] for p in run.anchor_curve] == [3, 3, 3]
    assert [c["critiques"] for c in run.anchor_checks] == [6, 6, 6]
    assert sorted(run.anchor_items) == [0, 2, 4] and all(len(v) == 3 for v in run.anchor_items.values())
    assert result.settings["anchor_samples"] == 2 and result.settings["heldout_prompts"] == 3
    assert result.anchor_cost["checks"] == 3 and result.anchor_cost["critiques_per_check"] == 6
    assert result.anchor_flagged["n"] == 1
    if run.anchor_flag_step is not None:
        assert next(f for f in run.flags if f["anchor"] == "anchor")["anchor_trend"]["n"] == 3


def test_anchor_samples_under_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--anchor-samples must be at least 1"):
        hacking.measure(reward="python:benchmarks/hacking/concision.py:by_words",
                        anchor="python:benchmarks/hacking/concision.py:by_characters", steps=4, every=2,
                        work_dir=tmp_path, anchor_samples=0)
