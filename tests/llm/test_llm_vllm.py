"""The vLLM backend on the embedded model (its CPU build is part of `make install` on
Linux x86-64). One engine for the whole test session: it takes ~45 s to start."""

import json
import platform

import pytest

from coevo.llm import specs
from coevo.llm.base import ModelError, generate_each, user
from coevo.roles.judges import TaiScoreJudge
from coevo.core.types import JudgeSampling, Rollout, Sampling

pytestmark = pytest.mark.slow

INSTALLED_BY_MAKE = platform.system() == "Linux" and platform.machine() == "x86_64"
SCORE = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}},
         "required": ["score"], "additionalProperties": False}


@pytest.fixture(scope="module")
def engine():
    from coevo.llm.vllm_backend import vllm_available

    if not vllm_available():
        if INSTALLED_BY_MAKE:
            pytest.fail("vLLM is missing although `make install` installs it here: a broken install")
        pytest.skip("vLLM is not installed on this platform (llama.cpp serves frozen roles)")
    model = specs.load_model("smollm2:vllm")
    yield model
    # Stopped here, while pytest still captures output: vLLM's shutdown logs otherwise
    # land on closed streams at interpreter exit.
    model.close()
    specs.clear_loaded()


def test_a_whole_batch_under_a_schema_in_one_call_with_token_logprobs(engine):
    prompts = [user(f"Rate from 1 to 10 how well this answers '2+2': '{n}'. Reply in JSON.") for n in range(8)]
    out = engine.generate(prompts, Sampling(temperature=0.2, max_tokens=24, seed=0, logprobs=5,
                                            json_schema=json.dumps(SCORE)))
    assert [len(group) for group in out] == [1] * 8
    for [completion] in out:
        assert 1 <= json.loads(completion.text)["score"] <= 10
        assert completion.prompt_tokens > 10 and completion.completion_tokens > 0
        # The token map spells the answer, and every position holds the token it chose.
        assert "".join(completion.tokens) == completion.text
        assert all(token in top for token, top in zip(completion.tokens, completion.top_logprobs))
    assert engine.model_id.startswith("vllm:smollm2-135m-instruct@")


def test_each_request_decodes_under_its_own_schema_in_one_call(engine, monkeypatch):
    calls = []
    chat = engine.llm.chat
    monkeypatch.setattr(engine.llm, "chat", lambda messages, params, **kw: (calls.append(len(messages)),
                                                                            chat(messages, params, **kw))[1])
    color = {"type": "object", "properties": {"color": {"enum": ["red", "blue"]}}, "required": ["color"],
             "additionalProperties": False}
    samplings = [Sampling(temperature=0.0, max_tokens=24, json_schema=json.dumps(schema))
                 for schema in (SCORE, color, SCORE)]
    out = generate_each(engine, [user("Rate the sky from 1 to 10. JSON.")] * 3, samplings)
    assert calls == [3]
    assert [sorted(json.loads(row[0].text)) for row in out] == [["score"], ["color"], ["score"]]


def test_a_seeded_call_repeats_and_its_n_samples_differ(engine):
    # Not asserted: the same samples when OTHER requests share the batch. On CPU in bf16 the
    # batch's shape changes the logits' last bits, and a sample at T 1 can then diverge
    # (measured: sample 2 of 3 did). The run store's cache is what makes reruns repeat.
    prompts = [user("Name a fruit and say why you like it."), user("Write one line about the sea.")]
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=16, seed=7)
    both = engine.generate(prompts, sampling, n=3)
    again = engine.generate(prompts, sampling, n=3)
    assert [[c.text for c in row] for row in again] == [[c.text for c in row] for row in both]
    assert len({c.text for c in both[0]}) > 1
    greedy = engine.generate(prompts[:1], Sampling(temperature=0.0, max_tokens=12), n=2)[0]
    assert greedy[0].text == greedy[1].text


def test_stop_strings_are_cut(engine):
    # Greedy, so the stopped answer is the start of the unstopped one. The reference must run
    # on past a comma, or a short answer would pass with the stop string ignored.
    prompt, free = [user("Write a sentence about cats.")], Sampling(temperature=0.0, max_tokens=30)
    [[reference]] = engine.generate(prompt, free)
    [[stopped]] = engine.generate(prompt, free.model_copy(update={"stop": (",",)}))
    head, comma, _ = reference.text.partition(",")
    assert head.strip() and comma, reference.text
    assert stopped.text == head, (stopped.text, reference.text)
    # Generation itself stopped there, not only the returned text.
    assert stopped.completion_tokens < reference.completion_tokens


def test_the_taiscore_judge_scores_by_expectation_on_vllm(engine):
    rollouts = [Rollout(sample_id=str(i), x="Describe the moon in two sentences.",
                        y0="The moon is big.", c="Add detail about its surface and light.",
                        y1="The moon is Earth's rocky satellite. Its cratered surface reflects sunlight.")
                for i in range(2)]
    judgments = TaiScoreJudge(engine, JudgeSampling(temperature=0.2, max_tokens=320, seed=0)).score(rollouts)
    valid = [j for j in judgments if j.valid]
    assert valid and all(j.expected is not None and 1 <= j.expected <= 10 for j in valid)


def test_frozen_smollm2_stays_on_llama_cpp_and_vllm_can_be_chosen(engine):
    assert specs.frozen_engine() == "llamacpp"
    assert specs.frozen_engine("vllm") == "vllm"
    with pytest.raises(ModelError, match="unknown engine 'tpu'.*llamacpp, vllm, hf"):
        specs.frozen_engine("tpu")
