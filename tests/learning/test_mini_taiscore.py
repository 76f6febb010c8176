"""TAIScore's miniature (coevo/learning/mini_taiscore.py): its two new checkable rewards, and its
wiring on fakes: a replay model writes every text, fake trainers step through the callbacks
and record what they were asked, llama.cpp copies are replay models too."""

from __future__ import annotations

import json

import pytest

from coevo.algorithms.backend import Backend
from coevo.learning import mini_taiscore
from coevo.learning.rewards import checkable_taiscore, outcome_gain
from coevo.llm import specs
from coevo.llm.replay import ReplayModel
from coevo.tasks.loaders import load_samples
from fake_training import PREFER_REVISED_JUDGE, stepped, taiscore_rules

LIGHTHOUSE = next(s for s in load_samples("bundled:writing") if s.id == "wp-001")  # max 350 words, lantern + harbour
NO_COMMAS = next(s for s in load_samples("bundled:writing") if s.id == "wp-006")   # September, no commas

# ---- the rewards ----


def test_outcome_gain_is_one_half_or_zero_by_the_share_of_constraints_met():
    y0 = "A cat by the lantern."                       # meets max_words and half of include_words: breaks one
    assert outcome_gain(LIGHTHOUSE.prompt, y0, "anything", "The lantern and the harbour.") == 1.0
    assert outcome_gain(LIGHTHOUSE.prompt, y0, "anything", "The lantern glows.") == 0.5
    assert outcome_gain(LIGHTHOUSE.prompt, y0, "anything", "word " * 400) == 0.0
    # The critique is never read: a critique naming nothing is credited alike.
    assert outcome_gain(LIGHTHOUSE.prompt, y0, "", "The lantern and the harbour.") == 1.0
    assert outcome_gain(LIGHTHOUSE.prompt, y0, "anything", None) is None


def test_checkable_taiscore_orders_fixed_over_acted_on_over_named_over_nothing():
    x, y0 = LIGHTHOUSE.prompt, "A cat."   # breaks include_words (no "lantern", no "harbour") only
    names_it = "Use the words lantern and harbour."
    fixed = checkable_taiscore(x, y0, names_it, "A cat by the lantern and the harbour.")
    acted_on = checkable_taiscore(x, y0, names_it, "A cat by the lantern.")  # one word of two: still broken
    ignored = checkable_taiscore(x, y0, names_it, "A dog.")                 # changed, not in that aspect
    unchanged = checkable_taiscore(x, y0, names_it, y0)
    nothing = checkable_taiscore(x, y0, "Lovely story.", "A cat by the lantern and the harbour.")
    assert (fixed, acted_on, ignored, unchanged, nothing) == (
        1.0, pytest.approx(2 / 3), pytest.approx(1 / 3), pytest.approx(1 / 3), 0.0)


def test_checkable_taiscore_gives_partial_credit_for_a_change_in_the_measured_quantity():
    x, y0 = NO_COMMAS.prompt, "In September, leaves fall, and we rake, sing, dance."  # 4 commas
    names_commas = "Remove the commas."
    one_comma_left = "In September leaves fall, and we rake and sing."
    assert checkable_taiscore(x, y0, names_commas, one_comma_left) == pytest.approx(2 / 3)
    assert checkable_taiscore(x, y0, names_commas, "In September leaves fall and we rake and sing.") == 1.0
    assert checkable_taiscore(x, y0, names_commas, "On September, leaves fall, and we rake, sing, dance.") == (
        pytest.approx(1 / 3))


def test_checkable_taiscore_charges_false_alarms_and_is_zero_where_y0_breaks_nothing():
    x, y0 = LIGHTHOUSE.prompt, "A cat by the lantern."
    fixed = "A cat by the lantern and the harbour."
    # Naming the met word limit too: half its share (1 of 1 met constraint) is taken off.
    assert checkable_taiscore(x, y0, "Mention the harbour; it is too long.", fixed) == pytest.approx(0.5)
    good = "The lantern lit the harbour."
    assert checkable_taiscore(x, good, "Mention the harbour.", "The harbour.") == 0.0
    assert checkable_taiscore(x, y0, "Mention the harbour.", None) is None


def test_the_new_rewards_pass_the_python_scorer_probe():
    from coevo.llm.python_functions import check_python_spec

    for name in ("outcome_gain", "checkable_taiscore"):
        check_python_spec(f"python:coevo.learning.rewards:{name}", ["reward"], "--reward")


# ---- the wiring ----

RULES = taiscore_rules("Mention the harbour.")
JUDGE = PREFER_REVISED_JUDGE


class Fakes:
    """A Backend whose models are one replay engine (python: specs stay real), whose trainers
    run the callbacks and call the GRPO reward on one completion, and whose llama.cpp copies
    are replay models writing a file at their path."""

    def __init__(self):
        self.engine = ReplayModel(rules=RULES)
        self.trained: list[dict] = []
        self.copies: list[ReplayModel] = []
        self.backend = Backend(load_trainable=lambda spec, **kw: self.engine,
                               load_frozen=lambda spec, **kw: specs.load_model(spec, **kw)
                               if spec.startswith("python:") else self.engine,
                               train_dpo=self._train("dpo"), train_grpo=self._train("grpo"),
                               load_gguf_copy=self._copy)

    def _train(self, kind):
        def train(policy, data, *args, callbacks, **kwargs):
            settings = next(a for a in args if hasattr(a, "max_steps"))
            record = {"kind": kind, "data": data, "settings": settings, "out": str(args[-1])}
            if kind == "grpo":  # the reward as TRL would call it, on one critique
                extra = kwargs["extra_columns"]
                record["reward"] = args[0]([data[0]], ["Mention the harbour."], **{k: v[:1] for k, v in extra.items()})
            self.trained.append(record)
            return stepped(settings, callbacks, zero_std_fraction=0.5)
        return train

    def _copy(self, policy, path):
        assert policy is self.engine
        copy = ReplayModel(rules=RULES)
        copy.path, copy.closed = path, False
        copy.close = lambda: setattr(copy, "closed", True)
        path.write_text("gguf")
        self.copies.append(copy)
        return copy


@pytest.fixture
def fakes(monkeypatch, tmp_path):
    (tmp_path / "judge.py").write_text(JUDGE)
    # fewer_broken_constraints ties "REVISED answer" with "First answer."; this judge makes pairs.
    monkeypatch.setattr(mini_taiscore, "PAIRWISE_JUDGE", f"python:{tmp_path}/judge.py:prefer_revised")
    return Fakes()


def run(fakes, tmp_path, **options):
    settings = dict(seeds=[0, 1], work_dir=tmp_path / "w", steps=2, rounds=2, heldout=3, train_prompts=4,
                    num_generations=2, backend=fakes.backend)
    return mini_taiscore.measure(**(settings | options))


def test_every_arm_is_scored_against_the_same_y0_and_compared_by_name(fakes, tmp_path):
    result = run(fakes, tmp_path)
    assert list(result.arms) == ["frozen", "critique_quality", "outcome_gain", "taiscore", "static_critic",
                                 "co_evolution"]
    befores = [arm.scores_before for arm in result.arms.values()]
    assert all(b == befores[0] for b in befores) and len(befores[0]) == 6  # 3 held-out prompts x 2 seeds
    assert all(k.rpartition("#")[2] in ("0", "1") for k in befores[0])
    assert list(result.comparisons) == ["taiscore_minus_outcome_gain", "taiscore_minus_critique_quality",
                                        "taiscore_minus_frozen", "co_evolution_minus_static_critic"]
    assert all(c.n == 6 for c in result.comparisons.values())
    assert result.settings["revision_tokens"] == 192 and result.settings["critique_tokens"] == 64
    assert result.settings["heldout_prompts"] == 3 and result.settings["rounds"] == 2
    for arm in mini_taiscore.ARMS:
        assert (tmp_path / "w" / f"arm_{arm}.json").exists()


def test_the_critic_arms_train_grpo_on_their_own_reward_on_llamacpp(fakes, tmp_path):
    run(fakes, tmp_path, arms=["critique_quality", "outcome_gain", "taiscore"])
    grpo = [t for t in fakes.trained if t["kind"] == "grpo"]
    assert [t["out"].split("/")[-2] for t in grpo] == ["critique_quality", "outcome_gain", "taiscore"]
    assert all(t["settings"].rollout_engine == "llamacpp" and t["settings"].max_completion_length == 64
               for t in grpo)
    assert all(t["settings"].max_steps == 2 and t["settings"].num_generations == 2 for t in grpo)
    # y0 "First answer." breaks a constraint of the prompt the reward was called on: the
    # critique-quality reward is its named share, the two others read the revision.
    assert [len(t["reward"]) for t in grpo] == [1, 1, 1]
    assert grpo[1]["reward"] == [0.5]  # outcome_gain: the revision meets as many constraints as y0
    assert all(c.closed and not c.path.exists() for c in fakes.copies)
    texts = json.loads((tmp_path / "w" / "texts_taiscore.json").read_text())
    assert {v["y1"] for v in texts.values()} == {"REVISED answer"} and len(texts) == 6


def test_the_actor_arms_train_dpo_each_round_and_co_evolution_retrains_its_critic(fakes, tmp_path):
    result = run(fakes, tmp_path, arms=["taiscore", "static_critic", "co_evolution"])
    kinds = [(t["kind"], t["out"].split("/w/")[1]) for t in fakes.trained]
    assert kinds == [("grpo", "taiscore/critic"),
                     ("dpo", "static_critic/round_0/actor"), ("dpo", "static_critic/round_1/actor"),
                     ("grpo", "co_evolution/round_0/critic"), ("dpo", "co_evolution/round_0/actor"),
                     ("grpo", "co_evolution/round_1/critic"), ("dpo", "co_evolution/round_1/actor")]
    dpo = [t for t in fakes.trained if t["kind"] == "dpo"]
    assert all({(p.chosen, p.rejected) for p in t["data"]} == {("REVISED answer", "First answer.")} for t in dpo)
    assert all(t["settings"].max_steps == 2 and t["settings"].learning_rate == 1e-5 for t in dpo)
    notes = result.arms["co_evolution"].notes
    assert notes[0].startswith("round 0 critic (") and notes[1].startswith("round 0: 4 DPO pairs from 4 rollouts")
    assert result.arms["static_critic"].notes[0].startswith("round 0: 4 DPO pairs")
    assert result.arms["static_critic"].scores_before == result.arms["taiscore"].scores_before
    assert all(c.closed and not c.path.exists() for c in fakes.copies)
    assert "co_evolution_minus_static_critic" in result.comparisons
    assert "co_evolution: round 1: 4 DPO pairs from 4 rollouts, 2 steps, 1 s, weights moved 0.5" in result.notes


def test_one_round_runs_no_actor_arm(fakes, tmp_path):
    result = run(fakes, tmp_path, rounds=1, arms=["frozen", "co_evolution"])
    assert list(result.arms) == ["frozen"] and result.comparisons == {}
    with pytest.raises(ValueError, match="unknown arms"):
        run(fakes, tmp_path, arms=["nicest"])


def test_a_rerun_keeps_the_finished_arms_and_retrains_the_static_critic_it_needs(fakes, tmp_path):
    first = run(fakes, tmp_path, arms=["frozen", "taiscore"])
    fakes.trained.clear()
    again = run(fakes, tmp_path, arms=["frozen", "taiscore", "static_critic"])
    assert again.arms["taiscore"] == first.arms["taiscore"] and again.arms["frozen"] == first.arms["frozen"]
    # Only static_critic ran: the taiscore critic trained again for it (its weights were gone).
    assert [t["out"].split("/w/")[1] for t in fakes.trained] == [
        "static_critic/critic", "static_critic/round_0/actor", "static_critic/round_1/actor"]
    assert again.arms["static_critic"].notes[0] == (
        "taiscore critic trained again (its arm was kept from an earlier run)")
    fakes.trained.clear()
    other_seeds = run(fakes, tmp_path, seeds=[0], arms=["taiscore"])  # other keys: the kept arm is not theirs
    assert [t["kind"] for t in fakes.trained] == ["grpo"] and other_seeds.arms["taiscore"].n == 3


def test_a_heldout_file_is_scored_by_its_own_constraints(fakes, tmp_path):
    rows = [{"id": "mine-1", "prompt": "Say hi.", "meta": {"constraints": [{"kind": "include_words",
                                                                               "words": ["REVISED"]}]}},
            {"id": "mine-2", "prompt": "Say bye.", "meta": {"constraints": [{"kind": "max_words", "value": 1}]}}]
    path = tmp_path / "held.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = run(fakes, tmp_path, arms=["frozen"], heldout_file=str(path))
    frozen = result.arms["frozen"]
    # y0 "First answer." lacks REVISED and has two words; the revision "REVISED answer" has the word.
    assert frozen.scores_before == {"mine-1#0": 0.0, "mine-2#0": 0.0, "mine-1#1": 0.0, "mine-2#1": 0.0}
    assert frozen.scores_after == {"mine-1#0": 1.0, "mine-2#0": 0.0, "mine-1#1": 1.0, "mine-2#1": 0.0}
    assert frozen.gain == 0.5 and result.settings["heldout_prompts"] == 2
