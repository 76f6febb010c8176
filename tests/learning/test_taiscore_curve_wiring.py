"""The TAIScore learning curves' wiring, without a model or a trainer: a replay model writes
every text, a fake trainer steps through TRL's callbacks, and the curve's points, pairs,
prompts, caches and notes are checked (the measurement itself: benchmarks/learning_curves.py)."""

from __future__ import annotations

import json

import pytest

import coevo.algorithms.backend as backend_module
from coevo.algorithms.backend import Backend
from learning import actor, critic
from coevo.llm import specs
from coevo.llm.replay import ReplayModel
from fake_training import PREFER_REVISED_JUDGE, stepped, taiscore_rules

#: Revisions, critiques (a short one: concise_critique's 1.0) and initial responses.
RULES = taiscore_rules("Too long here.")
JUDGE = PREFER_REVISED_JUDGE + """

def never_prefers(x, a, b):
    return "tie"
"""


@pytest.fixture
def fakes(monkeypatch):
    """A Backend (the trainer seam every loop and curve trains through) whose models are one
    replay model for every spec (python: rewards stay real), and whose trainers run the
    callbacks for `max_steps` steps."""
    engine = ReplayModel(rules=RULES)
    real = specs.load_model
    trained: dict = {}

    def fake_train(kind):
        def train(policy, data, *args, callbacks, **kwargs):
            settings = next(a for a in args if hasattr(a, "max_steps"))
            trained.update(kind=kind, policy=policy, data=data, args=args, kwargs=kwargs, settings=settings)
            return stepped(settings, callbacks, zero_std_fraction=0.0)
        return train

    backend = Backend(load_trainable=lambda spec, **kw: engine,
                      load_frozen=lambda spec, **kw: real(spec, **kw) if spec.startswith("python:") else engine,
                      train_dpo=fake_train("dpo"), train_grpo=fake_train("grpo"))
    monkeypatch.setattr(backend_module, "default_backend", lambda: backend)
    return engine, trained


def revised(sample, response):
    return float("REVISED" in response)


def test_actor_curve_trains_dpo_on_the_judged_revisions_and_measures_before_between_after(fakes, tmp_path):
    engine, trained = fakes
    (tmp_path / "judge.py").write_text(JUDGE)
    curve = actor.measure(reward=f"python:{tmp_path}/judge.py:prefer_revised", seeds=[0, 1], work_dir=tmp_path / "w",
                          heldout=2, train_prompts=3, rollouts=2, batch_size=4, learning_rate=3e-5, target=revised)
    # 3 prompts x 2 rollouts, every revision preferred: 6 pairs, 3 passes of 4 = 6 steps, measured every 3.
    assert trained["kind"] == "dpo" and trained["policy"] is engine
    pairs = trained["data"]
    assert len(pairs) == 6 and {(p.chosen, p.rejected) for p in pairs} == {("REVISED answer", "First answer.")}
    assert sorted(p.sample_id.rpartition("#")[2] for p in pairs) == ["0", "0", "0", "1", "1", "1"]
    settings = trained["settings"]
    assert (settings.max_steps, settings.beta, settings.learning_rate, settings.batch_size, settings.seed) == (
        6, 0.1, 3e-5, 4, 0)
    assert trained["kwargs"] == {"reference": None, "resume": False}
    assert str(trained["args"][1]) == str(tmp_path / "w" / "actor")
    assert [step for step, _ in curve.curve] == [0, 3, 6] and curve.steps == 6
    assert curve.n == 4 and curve.before == curve.after == 0.0  # 2 held-out prompts x 2 seeds, never revised
    assert curve.target == "held-out revised (one sampled response per prompt and seed)"
    assert curve.settings == {"model": "smollm2", "train_prompts": 3, "scored_prompts": 2, "scored": "held-out",
                              "rollouts": 2, "learning_rate": 3e-5, "batch_size": 4, "beta": 0.1, "max_tokens": 256}
    assert curve.notes == ["6 DPO pairs from 6 candidates (y1 preferred over y0 by the judge)",
                           "DPO: 6 steps, 1 s, weights moved 0.5"]
    for name in ("y0_0", "critique_0", "y1_0", "y0_1", "critique_1", "y1_1"):
        assert len(json.loads((tmp_path / "w" / f"{name}.json").read_text())) == 3


def test_actor_curve_without_a_preferred_revision_says_so(fakes, tmp_path):
    (tmp_path / "judge.py").write_text(JUDGE)
    with pytest.raises(ValueError, match=r"preferred no revision over its y0 in 3 candidates"):
        actor.measure(reward=f"python:{tmp_path}/judge.py:never_prefers", seeds=[0], work_dir=tmp_path / "w",
                      heldout=2, train_prompts=3)
    assert not fakes[1], "nothing to train on: no trainer started"


def test_critic_curve_trains_grpo_on_the_critique_prompts_and_measures_the_reward(fakes, tmp_path):
    engine, trained = fakes
    curve = critic.measure(steps=4, seeds=[0, 1], work_dir=tmp_path / "w", heldout=2, train_prompts=3,
                           score_train=True, num_generations=2, batch_size=2, trl={"gradient_checkpointing": False})
    assert trained["kind"] == "grpo" and trained["policy"] is engine
    prompts, settings = trained["data"], trained["settings"]
    assert settings.trl == {"gradient_checkpointing": False}  # to TRL, as a config's grpo.trl: block
    assert curve.settings["trl"] == {"gradient_checkpointing": False}
    assert len(prompts) == 3 and all("Your Critique:" in p[0]["content"] for p in prompts)
    assert (settings.max_steps, settings.beta, settings.num_generations, settings.grad_accum, settings.seed) == (
        4, 0.0, 2, 2, 0)
    extra = trained["kwargs"]["extra_columns"]
    assert extra["y0"] == ["First answer."] * 3 and len(extra["x"]) == len(extra["sample_id"]) == 3
    assert [step for step, _ in curve.curve] == [0, 1, 2, 3, 4]  # every quarter of 4 steps
    assert curve.n == 6 and curve.before == curve.after == 1.0  # 3 training prompts x 2 seeds, a short critique
    assert curve.target == "training reward (critique_quality) of one sampled critique per prompt and seed"
    assert curve.settings["scored"] == "training" and curve.settings["train_prompts"] == 3
    assert curve.notes == ["GRPO: 4 steps, 1 s, weights moved 0.5, groups with no reward spread 0.00, "
                           "train reward mean 0.250"]
    assert len(json.loads((tmp_path / "w" / "y0.json").read_text())) == 3


def test_critic_curve_on_named_failures_keeps_the_prompts_whose_y0_breaks_a_constraint(fakes, tmp_path):
    from coevo.eval.checkable import broken

    curve = critic.measure(reward=critic.NAMES_FAILURES, steps=2, seeds=[0], work_dir=tmp_path / "w", heldout=2,
                           train_prompts=3)
    y0 = json.loads((tmp_path / "w" / "y0.json").read_text())
    assert len(y0) == 5
    # "First answer." breaks a constraint of all but one training and one held-out prompt here.
    assert curve.notes[0] == "prompts whose y0 breaks at least one constraint: 2 of 3 training, 1 of 2 scored"
    trained = fakes[1]["kwargs"]["extra_columns"]["x"]
    assert len(trained) == 2 and all(broken(x, "First answer.") for x in trained)
    assert curve.n == 1 and curve.settings["train_prompts"] == 2 and curve.settings["scored_prompts"] == 1


def test_critic_curve_refuses_an_unknown_reward_kind(tmp_path):
    with pytest.raises(ValueError, match="reward_kind must be critique_quality or taiscore"):
        critic.measure(reward_kind="nicest", work_dir=tmp_path)


def test_critic_curve_on_llamacpp_measures_copies_of_the_weights_as_they_are_then(fakes, tmp_path):
    """`rollout_engine="llamacpp"`: each measurement's critiques come from a new engine copy
    of the policy (here a long critique: reward 0, where the policy itself writes a short
    one), closed and its file removed after; GRPO's prompts stay the policy's."""
    engine, trained = fakes
    copies = []

    class Copy(ReplayModel):
        def __init__(self, local, path):
            super().__init__(rules=[{"completions": ["word " * 80]}])
            self.path, self.closed = path, False
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("gguf")
            assert local is engine  # a copy of the trained policy
            copies.append(self)

        def close(self):
            self.closed = True

    backend_module.default_backend().load_gguf_copy = Copy
    curve = critic.measure(steps=2, seeds=[0, 1], work_dir=tmp_path / "w", heldout=2, train_prompts=3,
                           score_train=True, num_generations=2, eval_every=1, rollout_engine="llamacpp")
    assert [step for step, _ in curve.curve] == [0, 1, 2] and curve.before == curve.after == 0.0
    assert len(copies) == 3 and all(c.closed and not c.path.exists() for c in copies)
    assert [c.path.name for c in copies] == ["critic-1.gguf", "critic-2.gguf", "critic-3.gguf"]
    assert trained["policy"] is engine and curve.settings["rollout_engine"] == "llamacpp"
    assert all(len(c.calls) == 6 for c in copies)  # 3 prompts x 2 seeds
