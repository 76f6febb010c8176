"""The llama.cpp backend on the wheel's GGUF (llama-cpp-python is a required install)."""

import pytest

from coevo.llm.llamacpp import LlamaCppModel
from coevo.llm.specs import clear_loaded, load_model
from coevo.core.types import Sampling

pytestmark = pytest.mark.slow

GREEDY = Sampling(temperature=0.0, max_tokens=16)


def test_llama_cpp_is_installed():
    import llama_cpp  # noqa: F401  - a missing install must fail here, not skip


def test_greedy_batch_and_copies(llama_model, prompts):
    out = llama_model.generate(prompts, GREEDY, n=2)
    assert [len(row) for row in out] == [2, 2]
    assert all(row[0].text == row[1].text and row[0].text.strip() for row in out)
    assert all(row[0].prompt_tokens > 10 and 0 < row[0].completion_tokens <= 16 for row in out)
    assert llama_model.model_id.startswith("gguf:SmolLM2-135M-Instruct.Q4_1.gguf@")


def test_seeded_samples_differ_and_do_not_depend_on_call_history(llama_model, prompts):
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=12, seed=11)
    first = llama_model.generate(prompts[1:], sampling, n=3)[0]
    assert len({c.text for c in first}) > 1
    # Another prompt in between, then the same call: the same samples.
    llama_model.generate(prompts[:1], sampling)
    again = llama_model.generate(prompts[1:], sampling, n=3)[0]
    assert [c.text for c in again] == [c.text for c in first]
    # Sample i is seeded with seed + i: the second sample of seed 11 is the first of seed 12.
    shifted = llama_model.generate(prompts[1:], sampling.model_copy(update={"seed": 12}))[0]
    assert shifted[0].text == first[1].text


def test_same_chat_template_as_the_transformers_copy(llama_model, local_model, prompts):
    # Both read the template the GGUF carries, so prompts tokenise to the same length.
    a = llama_model.generate(prompts, Sampling(temperature=0.0, max_tokens=1))
    b = local_model.generate(prompts, Sampling(temperature=0.0, max_tokens=1))
    assert [row[0].prompt_tokens for row in a] == [row[0].prompt_tokens for row in b]


def test_stop_strings(llama_model, prompts):
    # Greedy, so the stopped answer is the start of the unstopped one. The reference must run
    # on past a comma, or a short answer would pass with the stop string ignored.
    free = Sampling(temperature=0.0, max_tokens=30)
    [[reference]] = llama_model.generate(prompts[1:], free)
    [[stopped]] = llama_model.generate(prompts[1:], free.model_copy(update={"stop": (",",)}))
    head, comma, _ = reference.text.partition(",")
    assert head.strip() and comma, reference.text
    assert stopped.text == head, (stopped.text, reference.text)
    # Generation itself stopped there, not only the returned text.
    assert stopped.completion_tokens < reference.completion_tokens


def test_smollm2_on_llama_cpp_is_shared_and_takes_its_options_leniently():
    clear_loaded()
    try:
        # batch_size belongs to the transformers backend: ignored here, not an error.
        model = load_model("smollm2:llamacpp", n_threads=2, batch_size=4)
        assert isinstance(model, LlamaCppModel)
        assert load_model("smollm2:llamacpp", n_threads=2, batch_size=4) is model
    finally:
        clear_loaded()
