"""TAIScore's miniature (benchmarks/learning/mini_taiscore*.py): its two new checkable rewards, and its
wiring on fakes: a replay model writes every text, fake trainers step through the callbacks
and record what they were asked, llama.cpp copies are replay models too."""

from __future__ import annotations

import json
import shutil

import pytest

from coevo.algorithms.backend import Backend
from learning import mini_taiscore, mini_taiscore_actor_arms, mini_taiscore_shared
from learning.mini_taiscore_critique import names_a_broken_constraint, names_a_met_constraint
from coevo.eval.checkable import checkable_taiscore, outcome_gain
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
        check_python_spec(f"python:coevo.eval.checkable:{name}", ["reward"], "--reward")


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
        self.loaded: list[str] = []
        self.backend = Backend(load_trainable=self._trainable,
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

    def _trainable(self, spec, **options):
        self.loaded.append(spec)
        return self.engine

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
    monkeypatch.setattr(mini_taiscore_actor_arms, "PAIRWISE_JUDGE", f"python:{tmp_path}/judge.py:prefer_revised")
    # A replay model has no weights: a saved checkpoint is an empty folder.
    monkeypatch.setattr(mini_taiscore_shared, "write_checkpoint", lambda policy, folder: folder.mkdir(parents=True))
    return Fakes()


def run(fakes, tmp_path, **options):
    # 4 actor prompts (3 with a y0 that breaks a constraint), 1 rollout each and 3 pairs a
    # round: every revision is preferred.
    settings = dict(seeds=[0, 1], work_dir=tmp_path / "w", steps=2, rounds=2, heldout=3, train_prompts=4,
                    actor_prompts=4, rollouts=1, pairs_per_round=3, num_generations=2, backend=fakes.backend)
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


def test_the_actor_arms_share_round_0_and_co_evolution_retrains_its_critic_from_round_1(fakes, tmp_path):
    result = run(fakes, tmp_path, arms=["taiscore", "static_critic", "co_evolution"])
    kinds = [(t["kind"], t["out"].split("/w/")[1]) for t in fakes.trained]
    # Round 0 once for both arms (co-evolution's critic against π0 is the taiscore critic).
    assert kinds == [("grpo", "taiscore/critic"), ("dpo", "round_0/actor"),
                     ("dpo", "static_critic/round_1/actor"),
                     ("grpo", "co_evolution/round_1/critic"), ("dpo", "co_evolution/round_1/actor")]
    w = tmp_path / "w"
    # Each later round's actor is π1 from round 0's weights; the co-evolving critic continues
    # from the taiscore critic's.
    assert fakes.loaded.count(f"hf:{w}/round_0/actor-weights") == 2
    assert f"hf:{w}/taiscore/critic-weights" in fakes.loaded
    dpo = [t for t in fakes.trained if t["kind"] == "dpo"]
    assert all({(p.chosen, p.rejected) for p in t["data"]} == {("REVISED answer", "First answer.")} for t in dpo)
    # One DPO pass over the round's 3 pairs at batch 4.
    assert all(t["settings"].max_steps == 1 and t["settings"].learning_rate == 1e-5 for t in dpo)
    notes = result.arms["co_evolution"].notes
    assert notes[0].startswith("round 0: 3 DPO pairs from 3 rollouts (1 per y0 of 3 of the 3")
    assert notes[1].startswith("round 1 critic (") and notes[2].startswith("round 1: 3 DPO pairs")
    assert result.arms["static_critic"].notes[0] == notes[0]
    assert result.arms["static_critic"].scores_before == result.arms["taiscore"].scores_before
    assert all(c.closed and not c.path.exists() for c in fakes.copies)
    assert "co_evolution_minus_static_critic" in result.comparisons
    assert ("co_evolution: round 1: 3 DPO pairs from 3 rollouts (1 per y0 of 3 of the 3 prompts whose y0 breaks a "
            "constraint), 1 steps, 1 s, weights moved 0.5") in result.notes


def test_one_round_runs_no_actor_arm(fakes, tmp_path):
    result = run(fakes, tmp_path, rounds=1, arms=["frozen", "co_evolution"])
    assert list(result.arms) == ["frozen"] and result.comparisons == {}
    with pytest.raises(ValueError, match="unknown arms"):
        run(fakes, tmp_path, arms=["nicest"])


def test_a_rerun_keeps_the_finished_arms_and_retrains_the_critic_only_when_its_weights_are_gone(fakes, tmp_path):
    first = run(fakes, tmp_path, arms=["frozen", "taiscore"])
    fakes.trained.clear()
    again = run(fakes, tmp_path, arms=["frozen", "taiscore", "static_critic"])
    assert again.arms["taiscore"] == first.arms["taiscore"] and again.arms["frozen"] == first.arms["frozen"]
    # Only static_critic ran, with the kept arm's saved critic.
    assert [t["out"].split("/w/")[1] for t in fakes.trained] == ["round_0/actor", "static_critic/round_1/actor"]
    fakes.trained.clear()
    shutil.rmtree(tmp_path / "w" / "taiscore" / "critic-weights")
    evolved = run(fakes, tmp_path, arms=["taiscore", "static_critic", "co_evolution"])
    # Its weights gone, the taiscore critic trains again, and round 0 (made with the old one) again.
    assert [t["out"].split("/w/")[1] for t in fakes.trained] == [
        "taiscore_critic/critic", "round_0/actor", "co_evolution/round_1/critic", "co_evolution/round_1/actor"]
    assert evolved.arms["co_evolution"].notes[0] == "taiscore critic trained again (its arm's weights were not kept)"
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


# ---- the critique measure: the critic arms' critiques scored at the critic ----


def naming(sample, y0):
    """A critique that names every constraint of `sample` that y0 breaks, by its words, number
    or phrase (a kind with none of those is named by its own name: "no_commas", "title")."""
    from coevo.eval.constraints import check, constraints_of

    failed = [c for c in constraints_of(sample) if not check(y0, c)]
    return " ".join(str(v) for c in failed for v in (c.get("words") or [c.get("value") or c.get("phrase")
                                                                          or c["kind"]]))


def test_a_critique_scores_one_where_it_names_a_constraint_y0_breaks():
    y0 = "A cat by the lantern."                      # breaks include_words (no "harbour") only
    assert names_a_broken_constraint(LIGHTHOUSE, y0, "Mention the harbour.") == 1.0
    assert names_a_broken_constraint(LIGHTHOUSE, y0, "Lovely story.") == 0.0
    assert names_a_broken_constraint(LIGHTHOUSE, y0, "It is too long.") == 0.0  # a met one
    assert names_a_met_constraint(LIGHTHOUSE, y0, "It is too long.") == 1.0
    assert names_a_broken_constraint(LIGHTHOUSE, "The lantern lit the harbour.", "Hm.") is None


def test_the_critique_measure_is_computed_from_the_critiques_each_arm_wrote(fakes, tmp_path):
    first = run(fakes, tmp_path, arms=["frozen", "outcome_gain", "taiscore"])
    measure = first.measures["critique"]
    assert list(measure.arms) == ["frozen", "outcome_gain", "taiscore"]
    assert list(measure.comparisons) == ["taiscore_minus_outcome_gain", "taiscore_minus_frozen"]
    frozen, taiscore = measure.arms["frozen"], measure.arms["taiscore"]
    # Every critique is "Mention the harbour.": no held-out y0 "First answer." misses a harbour.
    assert frozen.scores_before == frozen.scores_after == taiscore.scores_after
    # Scored where y0 breaks a constraint: 2 of the 3 held-out prompts, x 2 seeds.
    assert set(taiscore.scores_after.values()) == {0.0} and taiscore.n == 4
    # The taiscore critic's kept critiques rewritten to name what each y0 breaks: a rerun keeps
    # every arm and scores the new critiques, the refinement measure untouched.
    texts_path = tmp_path / "w" / "texts_taiscore.json"
    texts = json.loads(texts_path.read_text())
    by_id = {s.id: s for s in load_samples("bundled:writing")}
    for key, row in texts.items():
        row["critique"] = naming(by_id[key.rpartition("#")[0]], "First answer.")
    texts_path.write_text(json.dumps(texts))
    fakes.trained.clear()
    again = run(fakes, tmp_path, arms=["frozen", "outcome_gain", "taiscore"])
    assert fakes.trained == [] and again.arms == first.arms
    named = again.measures["critique"].arms["taiscore"]
    assert set(named.scores_after.values()) == {1.0} and named.gain == 1.0 and named.learned
    assert again.measures["critique"].comparisons["taiscore_minus_outcome_gain"].value == 1.0
    share = named.metrics["names_a_broken_constraint"]
    assert share["value"] == 1.0 and share["n"] == 4 and share["ci"][0] < 1.0  # Wilson: 4 of 4 is not certainty
    assert named.metrics["frozen_names_a_met_constraint"]["n"] == 6


def test_one_round_runs_the_critique_measure_without_the_actor_arms(fakes, tmp_path):
    result = run(fakes, tmp_path, rounds=1, arms=["static_critic"])
    assert result.arms == {} and result.measures == {}  # no critic arm: nothing to measure


# ---- the actor's DPO pairs ----

#: A pairwise judge preferring the revision in 1 of every 8 rollouts: the rate the checkable judge
#: gave the frozen actor under the static critic (BENCHMARKS.md, "TAIScore on checkable
#: constraints": 4 of 32 rollouts).
ONE_IN_EIGHT_JUDGE = """
CALLS = [0]
def one_in_eight(x, a, b):
    CALLS[0] += 1
    if CALLS[0] % 8:
        return "tie"
    return "a" if "REVISED" in a else "b"
"""


def test_the_default_settings_reach_the_pair_floor_each_round_at_the_measured_pair_rate(fakes, tmp_path,
                                                                                         monkeypatch):
    (tmp_path / "rare.py").write_text(ONE_IN_EIGHT_JUDGE)
    monkeypatch.setattr(mini_taiscore_actor_arms, "PAIRWISE_JUDGE", f"python:{tmp_path}/rare.py:one_in_eight")
    # The actor's settings left at their defaults: every training prompt, ROLLOUTS critiques of each y0.
    result = mini_taiscore.measure(seeds=[0], work_dir=tmp_path / "w", steps=1, train_prompts=4,
                                   num_generations=2, arms=["static_critic"], backend=fakes.backend)
    dpo = [t for t in fakes.trained if t["kind"] == "dpo"]
    assert len(dpo) == result.settings["rounds"] >= 2
    assert all(len(t["data"]) == mini_taiscore.PAIRS_PER_ROUND >= 32 for t in dpo)
    # Drawn from the preferred pairs of every wave, not the first 32 found.
    assert all(len({p.sample_id.rpartition("#")[2] for p in t["data"]}) > 1 for t in dpo)
    assert result.settings["actor_prompts"] == 60 and "under the" not in " ".join(result.notes)
    notes = result.arms["static_critic"].notes
    # The 32nd pair is the 256th judgment, in the 11th chunk of 4 prompts x 6 rollouts; 49 of
    # the 60 training prompts' y0 "First answer." break a constraint.
    assert notes[2].startswith("round 0: 32 DPO pairs from 264 rollouts (6 per y0 of 44 of the 49 prompts whose y0 "
                               "breaks a constraint), 8 steps")
