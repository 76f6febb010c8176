"""Actor and critic: one generate call per batch, n critiques per response, prompts."""

import pytest

from coevo.prompts import load_template
from coevo.roles.actor import Actor
from coevo.roles.critic import Critic, generic_critique
from coevo.core.types import Sample, Sampling

ROLLOUT = Sampling(temperature=0.8, top_p=0.95)
REFINER = Sampling(temperature=0.2, top_p=0.95)


def test_respond_sends_the_prompt_as_is_in_one_call(replay):
    model = replay([{"match": "story", "completions": ["Y0 story"]},
                    {"match": "poem", "completions": ["<think>plan</think>\nY0 poem"]}])
    actor = Actor(model, ROLLOUT, revise_sampling=REFINER)
    samples = [Sample(id="a", prompt="Write a story"), Sample(id="b", prompt="Write a poem")]
    assert actor.respond(samples) == ["Y0 story", "Y0 poem"]
    assert model.batches == [(2, 1, ROLLOUT)]
    assert model.prompts() == ["Write a story", "Write a poem"]


def test_respond_template(replay, tmp_path):
    path = tmp_path / "solver.md"
    path.write_text("Follow the skill.\n\nTask: {prompt}\n")
    model = replay([{"completions": ["ok"]}])
    actor = Actor(model, ROLLOUT, respond_template=str(path))
    actor.respond([Sample(id="a", prompt="Write")])
    assert model.prompts() == ["Follow the skill.\n\nTask: Write\n"]


def test_revise_batches_with_refiner_sampling(replay):
    model = replay([{"match": "C-1", "completions": ["Y1-1"]},
                    {"match": "C-2", "completions": ["Y1-2"]}])
    actor = Actor(model, ROLLOUT, revise_sampling=REFINER)
    out = actor.revise(["X-1", "X-2"], ["Y0-1", "Y0-2"], ["C-1", "C-2"])
    assert out == ["Y1-1", "Y1-2"]
    assert model.batches == [(2, 1, REFINER)]
    asked = model.prompts()[0]
    assert asked == load_template("reviser").render(prompt="X-1", response="Y0-1",
                                                    critique="C-1")
    assert asked.index("X-1") < asked.index("Y0-1") < asked.index("C-1")
    assert asked.rstrip().endswith("Revised Response:")


def test_revise_without_critique_shows_no_critique(replay):
    model = replay([{"completions": ["Y1"]}])
    actor = Actor(model, ROLLOUT)
    assert actor.revise_without_critique(["X"], ["Y0"]) == ["Y1"]
    asked = model.prompts()[0]
    assert "Critique" not in asked and "critique" not in asked
    assert "X" in asked and "Y0" in asked and model.batches == [(1, 1, ROLLOUT)]


def test_generic_critique_goes_through_the_reviser(replay):
    text = generic_critique()
    for word in ("correct", "clear", "relevant", "overall quality"):
        assert word in text
    model = replay([{"completions": ["Y1"]}])
    Actor(model, ROLLOUT).revise(["X1", "X2"], ["A", "B"], [text, text])
    assert all(text in asked for asked in model.prompts())
    assert len(model.batches) == 1


def test_actor_rejects_mismatched_batches(replay):
    actor = Actor(replay([{"completions": ["x"]}]), ROLLOUT)
    with pytest.raises(ValueError, match="differ in length"):
        actor.revise(["X"], ["Y0", "Y0b"], ["C"])
    assert actor.revise([], [], []) == [] and actor.respond([]) == []


def test_critic_returns_n_critiques_per_response_in_one_call(replay):
    model = replay([{"match": "X-1", "completions": ["c1a", "c1b", "c1c", "c1d"]},
                    {"match": "X-2", "completions": ["c2a", "c2b", "c2c", "c2d"]},
                    {"match": "X-3", "completions": ["<think>hm</think> c3"]}])
    critic = Critic(model, ROLLOUT)
    out = critic.critique(["X-1", "X-2", "X-3"], ["Y-1", "Y-2", "Y-3"], n=4)
    assert out == [["c1a", "c1b", "c1c", "c1d"], ["c2a", "c2b", "c2c", "c2d"], ["c3"] * 4]
    assert model.batches == [(3, 4, ROLLOUT)]
    asked = model.prompts()[0]
    assert asked == critic.critique_prompt("X-1", "Y-1")
    assert asked.startswith("You are a helpful writing critic.")
    assert asked.rstrip().endswith("Your Critique:")


def test_critic_default_n_and_errors(replay):
    model = replay([{"completions": ["only"]}])
    critic = Critic(model, ROLLOUT)
    assert critic.critique(["x"], ["y"]) == [["only"]]
    assert critic.critique([], []) == []
    with pytest.raises(ValueError):
        critic.critique(["x"], [])
    with pytest.raises(ValueError):
        critic.critique(["x"], ["y"], n=0)


def test_critic_pads_short_backend_answers():
    class Short:
        model_id = "short"

        def generate(self, conversations, sampling, n=1):
            from coevo.core.types import Completion
            return [[Completion(text="one")] for _ in conversations]

    assert Critic(Short(), ROLLOUT).critique(["x"], ["y"], n=3) == [["one", "", ""]]
