"""The critic's GRPO reward follows the TAIScore authors' reward code row by row
(`taiscore/reward/taiscore.py`, `compute_score_batched` and its helpers), on replay judges.

The four-critique group of the issue (three unreadable answers and one 7 -> advantages
-0.5, -0.5, -0.5, +1.5 after TRL's normalisation) is pinned with a real TRL step in
tests/algorithms/test_taiscore_e2e.py::test_group_normalisation_happens_once_in_trl.
"""

import json

from coevo.algorithms.taiscore import make_reward_fn
from coevo.settings.role_specs import RefinementRoleSpecs
from coevo.llm.replay import ReplayModel
from coevo.roles import schemas
from coevo.roles.actor import Actor
from coevo.roles.judges import TaiScoreJudge
from coevo.core.types import Completion, Rollout, Sampling

DIMS = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")


def answer(score, **dims):
    return json.dumps({**{d: dims.get(d, {"score": 5, "reason": "r"}) for d in DIMS}, "score": score})


class Recording(ReplayModel):
    """A replay model that keeps every prompt and sampling it was asked with."""

    def __init__(self, rules):
        super().__init__(rules=rules)
        self.asked: list[tuple[str, Sampling]] = []

    def generate(self, conversations, sampling, n=1):
        self.asked += [(c[-1].content, sampling) for c in conversations]
        return super().generate(conversations, sampling, n)


def reward_of(critiques, judge_rules, reviser_rules=None, invalid_reward=0.0):
    judge_model = Recording(judge_rules)
    actor_model = Recording(reviser_rules or [{"completion": "a revision"}])
    actor = Actor(actor_model, Sampling(), revise_sampling=Sampling(temperature=0.2))
    judge = TaiScoreJudge(judge_model, Sampling(temperature=0.2))
    seen = []
    fn = make_reward_fn(actor, judge, "taiscore", invalid_reward=invalid_reward, on_scored=seen.extend)
    n = len(critiques)
    rewards = fn(prompts=[[]] * n, completions=[[{"role": "assistant", "content": c}] for c in critiques],
                 x=["x"] * n, y0=["y0"] * n, sample_id=["s"] * n)
    return rewards, seen, judge_model, actor_model


def test_the_final_score_alone_is_the_reward_even_with_unreadable_diagnostics():
    missing = json.dumps({"critique_quality": {"score": 9, "reason": "r"}, "score": 6})
    non_integer = answer(8, quality_gain={"score": 7.5, "reason": "r"})
    rewards, seen, _, _ = reward_of(["C-missing", "C-float"], [
        {"match": "C-missing", "completion": missing}, {"match": "C-float", "completion": non_integer}])
    assert rewards == [6.0, 8.0]
    first, second = (r.judgments["taiscore"] for r in seen)
    assert first.valid and first.scores == {"critique_quality": 9.0}  # diagnostics stored where readable
    assert "critique_uptake" in first.diagnostics_error and first.sampled == 6.0
    assert second.valid and "quality_gain" not in second.scores and "7.5" in second.diagnostics_error


def test_a_nested_diagnostic_score_is_never_taken_for_the_missing_final_score():
    no_final = json.dumps({d: {"score": 9, "reason": "r"} for d in DIMS})
    rewards, seen, _, _ = reward_of(["C"], [{"completion": no_final}])
    assert rewards == [0.0] and not seen[0].judgments["taiscore"].valid


class SeededJudge:
    """A judge model whose answer depends on the call's seed: unreadable at first, readable
    for C-late on the re-ask (seed 1), never for C-never."""

    model_id = "seeded-judge"

    def __init__(self):
        self.calls = []

    def generate(self, conversations, sampling, n=1):
        self.calls.append((len(conversations), sampling.seed))
        late = sampling.seed == 1
        return [[Completion(text=answer(7) if late and "C-late" in c[-1].content else '{"score": ')]
                for c in conversations]


def test_an_unreadable_answer_is_asked_once_more_then_counts_invalid_reward():
    model = SeededJudge()
    actor = Actor(ReplayModel(rules=[{"completion": "rev"}]), Sampling())
    fn = make_reward_fn(actor, TaiScoreJudge(model, Sampling(temperature=0.2)), "taiscore",
                        invalid_reward=-1.0)
    rewards = fn(prompts=[[]] * 2, completions=[[{"role": "assistant", "content": c}] for c in ("C-never", "C-late")],
                 x=["x"] * 2, y0=["y0"] * 2, sample_id=["s"] * 2)
    assert rewards == [-1.0, 7.0]  # invalid_reward is the config's; the re-ask's answer counts
    assert model.calls == [(2, None), (2, 1)]  # one batched call, then one batched, seeded re-ask


def test_empty_critiques_and_empty_revisions_get_invalid_reward_without_a_judge_call():
    rewards, seen, judge_model, actor_model = reward_of(
        ["", "   ", "C-good", "C-norev"], [{"completion": answer(9)}],
        reviser_rules=[{"match": "C-norev", "completion": ""}, {"completion": "revised"}])
    assert rewards == [0.0, 0.0, 9.0, 0.0]
    assert len(judge_model.asked) == 1 and "C-good" in judge_model.asked[0][0]
    assert len(actor_model.asked) == 2  # empty critiques are not even revised
    errors = [r.judgments["taiscore"].error for r in seen]
    assert errors[:2] == ["an empty critique: not judged"] * 2 and errors[3] == "an empty revision: not judged"
    assert [r.judgments["taiscore"].reward for r in seen] == rewards


def test_reasoning_is_stripped_from_critiques_before_the_refiner_sees_them():
    critiques = ["<think>plan the critique</think>Cut the second line.",
                 "the template opened the thinking...</think>Name the city."]
    _, seen, judge_model, actor_model = reward_of(critiques, [{"completion": answer(5)}])
    assert [r.c for r in seen] == ["Cut the second line.", "Name the city."]
    assert actor_model.asked and judge_model.asked  # the refiner and the judge both read the critiques
    for prompt, _ in actor_model.asked + judge_model.asked:
        assert "think" not in prompt and "plan the critique" not in prompt


def test_the_judge_sees_the_authors_input_block_with_trimmed_inputs():
    judge_model = Recording([{"completion": answer(4)}])
    TaiScoreJudge(judge_model, Sampling()).judge(
        [Rollout(sample_id="s", x="  Write a haiku. \n", y0="\nRain.  ", c=" Add sound. ", y1=" Rain taps. \n")])
    prompt = judge_model.asked[0][0]
    block = prompt[prompt.index("---"):]
    assert block == ("---\n\nUser prompt:\nWrite a haiku.\n\nResponse A:\nRain.\n\nCritique:\nAdd sound.\n\n"
                     "Response B:\nRain taps.\n\n"
                     "Return valid JSON only. Every score field must be an integer from 1 to 10.\n")


def test_the_taiscore_schema_keeps_the_form_but_does_not_cap_reasons():
    judge_model = Recording([{"completion": answer(4)}])
    TaiScoreJudge(judge_model, Sampling()).judge([Rollout(sample_id="s", x="x", y0="a", c="c", y1="b")])
    schema = json.loads(judge_model.asked[0][1].json_schema)
    reason = schema["properties"]["critique_quality"]["properties"]["reason"]
    assert reason == {"type": "string"}
    assert schema["required"] == [*DIMS, "score"]
    other = schemas.scored_dimensions(("a",), None)  # other judges keep their short reasons
    assert other["properties"]["a"]["properties"]["reason"]["maxLength"] == schemas.REASON_LIMIT


def test_the_authors_token_limits_are_the_library_defaults():
    roles = RefinementRoleSpecs()
    revision, judge = roles.actor.sampling.revision, roles.judge.sampling
    assert (revision.max_tokens, judge.max_tokens) == (2048, 2048)
    assert (judge.temperature, judge.top_p) == (0.2, 1.0)  # Table 12
    assert (revision.temperature, revision.top_p) == (0.2, 0.95)
