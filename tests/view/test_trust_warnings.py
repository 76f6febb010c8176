"""The run warnings about numbers that look surer than they are (view/trust_warnings.py):
too few items, generations cut at their token limit, and weight changes that only show
Adam's first steps. Each is made to fire on a store built for it and to stay quiet just
past its threshold."""

from __future__ import annotations

from coevo.rundir.store import RunStore
from coevo.core.types import Completion
from coevo.view.trust_warnings import adam_first_steps, cut_off_generations, too_few_items
from coevo.view.warnings import run_warnings


def _calls(store: RunStore, role: str, stage: str, lengths: list[int], limit: int, tagged: bool = True) -> None:
    for i, length in enumerate(lengths):
        request = {"messages": [{"role": "user", "content": f"{role} {i}"}], "sampling": {"max_tokens": limit}}
        if tagged:
            request["call"] = {"role": role, "stage": stage}
        store.cache_put(f"{role}-{stage}-{i}", "m", {0: Completion(text=f"out {i}", completion_tokens=length)},
                        request=request)


def test_a_role_whose_outputs_hit_their_limit_is_named_with_its_share(tmp_path):
    store = RunStore(tmp_path)
    _calls(store, "actor", "taiscore/round1/eval", [128, 128, 128, 40], limit=128)  # 3 of 4 cut
    _calls(store, "actor", "taiscore/round1/y0", [128, 10], limit=128)  # 1 of 2
    _calls(store, "critic", "taiscore/round1/eval", [320, 100, 90, 80, 70], limit=320)  # 1 of 5: under 25 %
    found = cut_off_generations(store, store.metrics())
    # One warning per role (not per stage), its stages named with their counts.
    assert [f.kind for f in found] == ["cut-off"]
    assert found[0].text.startswith("actor: 4 of 6 outputs (67%) stopped at their token limit (by stage: "
                                    "taiscore/round1/eval 3/4, taiscore/round1/y0 1/2)")


def test_untagged_calls_of_older_runs_are_grouped_by_their_limit(tmp_path):
    store = RunStore(tmp_path)
    _calls(store, "a", "s", [128] * 12 + [30], limit=128, tagged=False)
    _calls(store, "j", "s", [10] * 20, limit=320, tagged=False)
    found = cut_off_generations(store, store.metrics())
    assert len(found) == 1 and "128-token limit" in found[0].text and "12 of 13" in found[0].text


def test_grpo_clipped_ratio_is_a_cut_off_warning(tmp_path):
    store = RunStore(tmp_path)
    store.log_metrics("coevolution", {"grpo_clipped_ratio": 0.5}, round=1)
    store.log_metrics("coevolution", {"grpo_clipped_ratio": 0.2}, round=2)
    found = cut_off_generations(store, store.metrics())
    assert len(found) == 1 and "round 1: 50% of the critic's GRPO samples" in found[0].text


def test_a_short_stage_whose_change_is_about_the_learning_rate_is_flagged():
    results = {
        "r1/critic": {"steps": 2, "metrics": {"weight_delta": 1.5e-5, "learning_rate": 5e-6}},  # 3x lr
        "r1/actor": {"steps": 2, "metrics": {"weight_delta": 1e-3, "learning_rate": 5e-6}},  # far past Adam's step
        "r2/critic": {"steps": 40, "metrics": {"weight_delta": 1e-5, "learning_rate": 5e-6}},  # long enough
        "r2/actor": {"steps": 1, "metrics": {"weight_delta": 0.0, "learning_rate": 5e-6}},  # no-learning's job
    }
    found = adam_first_steps(results)
    assert [f.text.split(":")[0] for f in found] == ["r1/critic"]
    assert "largest absolute weight change 1.5e-05; its last logged learning rate: 5e-06" in found[0].text


def test_the_adam_warning_names_each_steps_learning_rate():
    """A scheduled rate differs per step: the warning names each one TRL logged, never one
    rate scaled by the number of steps (which named a rate the stage never used)."""
    history = [{"step": 1, "loss": 0.69, "learning_rate": 1e-5}, {"step": 2, "loss": 0.6, "learning_rate": 5e-6},
               {"step": 2, "train_loss": 0.645, "train_runtime": 1.0}]
    results = {"r1/critic": {"steps": 2, "history": history,
                             "metrics": {"weight_delta": 1.5e-5, "learning_rate": 5e-6}}}
    (found,) = adam_first_steps(results)
    assert "the learning rate TRL logged at each step: 1e-05 (step 1), 5e-06 (step 2)" in found.text
    assert "x its learning rate" not in found.text
    # each step's rate is the yardstick: a change far past their sum is learning, not Adam's first steps
    assert adam_first_steps({"r1/critic": {**results["r1/critic"], "metrics": {"weight_delta": 1e-3}}}) == []


def test_headline_numbers_from_fewer_than_five_items_are_too_few_to_tell(tmp_path):
    store = RunStore(tmp_path)
    store.log_metrics("coevolution", {"gold_score": 6.3, "gold_score_n": 2.0, "gold_score_lo": 1.0,
                                      "gold_score_hi": 9.0, "pass_at_1": 0.5, "heldout_count": 40.0}, round=1)
    found = too_few_items(store.metrics(), ["gold_score", "pass_at_1"])
    assert len(found) == 1 and "gold_score, n=2" in found[0].text and "pass_at_1" not in found[0].text
    assert {f.kind for f in run_warnings(store)} >= {"small-n"}
