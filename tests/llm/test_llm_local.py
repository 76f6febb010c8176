"""The transformers backend on the real embedded model (converted from the wheel's GGUF)."""

import pytest
import torch

from coevo.llm import embedded
from coevo.llm.base import user
from coevo.llm.local import LocalModel
from coevo.llm.specs import load_model
from coevo.core.types import Sampling

pytestmark = pytest.mark.slow

GREEDY = Sampling(temperature=0.0, max_tokens=16)


def test_converted_folder_is_a_plain_transformers_model(local_model):
    folder = embedded.hf_dir()
    assert embedded.is_converted()
    names = {p.name for p in folder.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"} <= names
    assert "quantization_config" not in (folder / "config.json").read_text()
    assert local_model.model_id.startswith("hf:smollm2-135m-instruct@")


def test_batched_left_padded_greedy_equals_one_at_a_time(local_model, prompts):
    batched = local_model.generate(prompts, GREEDY)
    alone = [local_model.generate([p], GREEDY)[0][0] for p in prompts]
    assert [row[0].text for row in batched] == [c.text for c in alone]
    assert [row[0].completion_tokens for row in batched] == [c.completion_tokens for c in alone]
    # The two prompts differ in length, so the batch really was padded.
    assert batched[0][0].prompt_tokens != batched[1][0].prompt_tokens
    assert all(row[0].text.strip() and 0 < row[0].completion_tokens <= 16 for row in batched)


def test_samples_are_seeded_chunked_and_distinct(local_model, prompts):
    sampling = Sampling(temperature=1.0, top_p=0.95, max_tokens=12, seed=7)
    # 2 prompts x 3 samples = 6 rows, more than batch_size=4: generation is chunked.
    first = local_model.generate(prompts, sampling, n=3)
    again = local_model.generate(prompts, sampling, n=3)
    assert [[c.text for c in row] for row in first] == [[c.text for c in row] for row in again]
    assert all(len(row) == 3 for row in first)
    assert len({c.text for c in first[1]}) > 1


def test_greedy_n_gives_identical_copies(local_model, prompts):
    [row] = local_model.generate(prompts[:1], GREEDY, n=3)
    assert len({c.text for c in row}) == 1 and len(row) == 3


def test_stop_strings_cut_the_text(local_model):
    # Greedy, so the stopped answer is the start of the unstopped one. The reference must run
    # on past a comma, or a short answer would pass with the stop string ignored.
    prompt, free = [user("Write a long sentence about the sea.")], Sampling(temperature=0.0, max_tokens=40)
    [[reference]] = local_model.generate(prompt, free)
    [[stopped]] = local_model.generate(prompt, free.model_copy(update={"stop": (",",)}))
    head, comma, _ = reference.text.partition(",")
    assert head.strip() and comma, reference.text
    assert stopped.text == head, (stopped.text, reference.text)
    # Generation itself stopped there, not only the returned text.
    assert stopped.completion_tokens < reference.completion_tokens


def test_from_loaded_shares_weights_and_tracks_them(local_model, prompts):
    wrapped = LocalModel.from_loaded(local_model.model, local_model.tokenizer, batch_size=2)
    assert wrapped.model is local_model.model
    assert wrapped.generate(prompts[:1], GREEDY)[0][0].text == local_model.generate(prompts[:1], GREEDY)[0][0].text
    before = wrapped.model_id
    assert before.startswith("hf:smollm2-135m-instruct@w")
    # A trainer changing the weights in place must get a new cache identity.
    weight = wrapped.model.get_input_embeddings().weight
    with torch.no_grad():
        weight[0, 0] += 1.0
        try:
            assert wrapped.refresh_model_id() != before
        finally:
            weight[0, 0] -= 1.0
    assert wrapped.refresh_model_id() == before
    named = LocalModel.from_loaded(local_model.model, local_model.tokenizer, model_id="hf:policy@round1")
    assert named.model_id == "hf:policy@round1"


def test_train_mode_is_restored_after_generation(local_model, prompts):
    # Each forward records whether every module was in eval mode (no dropout) while it ran.
    in_eval: list[bool] = []
    hook = local_model.model.register_forward_pre_hook(
        lambda module, args: in_eval.append(not any(m.training for m in module.modules())))
    local_model.model.train()
    try:
        local_model.generate(prompts[:1], Sampling(temperature=0.0, max_tokens=2))
        assert in_eval and all(in_eval), in_eval
        assert local_model.model.training
    finally:
        hook.remove()
        local_model.model.eval()


def test_trainable_spec_gives_a_fresh_local_model_each_time(local_model):
    first = load_model("smollm2", trainable=True, batch_size=2, n_ctx=512)
    second = load_model("smollm2", trainable=True)
    assert isinstance(first, LocalModel) and isinstance(second, LocalModel)
    assert first.model is not second.model
    assert first.model_id == local_model.model_id
