"""llama.cpp's prefix reuse, cut to whole blocks: the shared beginning of prompts is evaluated
once, and every answer is still the one a fresh evaluation gives, bit for bit (texts and every
log-probability), whatever was asked before and in whatever order."""

import pytest

from coevo.llm.llamacpp import LlamaCppModel
from coevo.core.types import Message, Sampling

pytestmark = pytest.mark.slow

BLOCK = 16  # small blocks, so short prompts share several
SHARED = ("You grade answers to questions. Read the question, the answer and the notes, then give a "
          "score from 1 to 10 and one reason. Question: why is the sky blue? Answer: ")
ANSWERS = ["Because of Rayleigh scattering.", "Because the sea reflects onto it, mostly.",
           "Because of Rayleigh scattering of sunlight by the gas molecules of the air.", "No idea."]


def conversations() -> list[list[Message]]:
    return [[Message(role="user", content=f"{SHARED}{answer}\nReply with the score only, as a number.")]
            for answer in ANSWERS]


def answers(model: LlamaCppModel, convs: list, sampling: Sampling, one_at_a_time: bool = False) -> list:
    if one_at_a_time:
        out = [model.generate([c], sampling)[0][0] for c in convs]
    else:
        out = [row[0] for row in model.generate(convs, sampling)]
    return [(c.text, c.top_logprobs) for c in out]


@pytest.fixture(scope="module")
def fresh(gguf):
    return LlamaCppModel(gguf, n_ctx=1024, n_threads=2, reuse_prefix=False, prefix_block=BLOCK)


@pytest.fixture(scope="module")
def reused(gguf):
    return LlamaCppModel(gguf, n_ctx=1024, n_threads=2, prefix_block=BLOCK)


def test_reused_prefix_gives_the_fresh_logits_bit_for_bit(fresh, reused):
    greedy = Sampling(temperature=0.0, max_tokens=24, logprobs=3)
    convs = conversations()
    expected = answers(fresh, convs, greedy)
    # Log-probabilities come with the answers that ended by themselves (not at max_tokens).
    assert all(text for text, _ in expected) and sum(top is not None for _, top in expected) >= 2
    evaluated = []
    inner = reused._prefix._eval
    reused._prefix._eval = lambda tokens: (evaluated.append(len(tokens)), inner(tokens))[1]
    try:
        assert answers(reused, convs, greedy) == expected
        assert answers(reused, convs[::-1], greedy) == expected[::-1]
        assert answers(reused, [convs[2], convs[0], convs[2], convs[1]], greedy, one_at_a_time=True) == \
            [expected[2], expected[0], expected[2], expected[1]]
    finally:
        reused._prefix._eval = inner
    # The shared beginning (several blocks) was evaluated once per batch, not once per prompt.
    prompt_evals = [n for n in evaluated if n > 1]
    full = sum(row[0].prompt_tokens for row in fresh.generate(convs, Sampling(temperature=0.0, max_tokens=1)))
    assert sum(prompt_evals[:len(ANSWERS)]) < 0.7 * full


def test_seeded_samples_do_not_depend_on_what_the_cache_held(fresh, reused):
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=10, seed=5)
    convs = conversations()
    expected = [row[0].text for row in fresh.generate(convs, sampling)]
    reused.generate(convs[1:2], sampling)  # something else in the cache first
    assert [row[0].text for row in reused.generate(convs[::-1], sampling)] == expected[::-1]
