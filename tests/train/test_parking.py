"""A trained role's weights freed while the other role trains, and loaded back bit for bit
(coevo/train/parking.py, algorithms/engines.py), on a tiny random Llama saved to disk (fast)."""

from __future__ import annotations

import pytest

from coevo.algorithms.engines import GenerationCopy
from coevo.llm.base import user
from coevo.train.errors import TrainError
from coevo.train.parking import parked
from coevo.core.types import Sampling


def _save_tiny(folder, hidden=16):
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from coevo.llm.embedded import hf_dir

    tokenizer = AutoTokenizer.from_pretrained(str(hf_dir()))
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True)
    LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def tiny(tmp_path):
    from coevo.llm.local import LocalModel

    return LocalModel(_save_tiny(tmp_path / "tiny"), dtype="float32")


def _weights(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()}


GREEDY = Sampling(temperature=0.0, max_tokens=8)


def test_parked_weights_are_freed_and_come_back_bit_for_bit_with_their_ties(tiny, tmp_path):
    before, said = _weights(tiny.model), tiny.generate([user("Say hi.")], GREEDY)[0][0].text
    with parked(tiny, "test") as freed:
        assert freed
        assert all(p.numel() == 0 for p in tiny.model.parameters())
    after = _weights(tiny.model)
    assert after.keys() == before.keys() and all(after[k].equal(before[k]) for k in before)
    assert tiny.model.lm_head.weight is tiny.model.model.embed_tokens.weight  # still tied
    assert tiny.generate([user("Say hi.")], GREEDY)[0][0].text == said


def test_trained_weights_come_back_from_the_folder_their_stage_saved(tiny, tmp_path):
    import torch

    with torch.no_grad():
        for p in tiny.model.parameters():
            p.add_(0.5)
    tiny.model.save_pretrained(tmp_path / "final")
    tiny.weights_on_disk = tmp_path / "final"  # as refresh_model_id(final) sets it after a stage
    trained = _weights(tiny.model)
    with parked(tiny, "test") as freed:
        assert freed
    assert all(p.equal(trained[n]) for n, p in tiny.model.named_parameters())


def test_weights_no_folder_holds_stay_in_memory(tiny):
    import torch

    with torch.no_grad():
        next(tiny.model.parameters()).add_(1.0)
    tiny.refresh_model_id()  # changed in place since loaded: no folder holds them any more
    before = _weights(tiny.model)
    with parked(tiny, "test") as freed:
        assert not freed
        assert all(p.equal(before[n]) for n, p in tiny.model.named_parameters())


def test_a_folder_of_another_shape_is_refused_naming_the_parameter(tiny, tmp_path):
    tiny.weights_on_disk = _save_tiny(tmp_path / "other", hidden=32)
    with pytest.raises(TrainError, match="cannot reload the parked weights from .*other: its .* is"):
        with parked(tiny, "test"):
            pass


class _Backend:
    """Stands in for the backend's GGUF export: the copy is a named object."""

    def __init__(self):
        self.copies, self.closed = [], []

    def load_gguf_copy(self, local, path):
        self.copies.append(path)
        return type("Copy", (), {"path": None, "close": lambda _: self.closed.append(path)})()


def test_a_role_on_an_engine_copy_is_parked_while_the_other_trains(tiny, tmp_path):
    backend = _Backend()
    copy = GenerationCopy(backend, "actor", "smollm2", {}, tiny, "llamacpp", tmp_path / "engines")
    with copy.parked(None, "round1/critic"):
        assert len(backend.copies) == 1  # made before the weights went
        assert all(p.numel() == 0 for p in tiny.model.parameters())
        assert copy.model(None) is copy.model(None)  # the copy serves; no new export
        with pytest.raises(RuntimeError, match="the actor's weights are parked"):
            copy.model("checkpoints/round1/actor/final")
    assert all(p.numel() > 0 for p in tiny.model.parameters()) and len(backend.copies) == 1


def test_a_role_that_generates_with_its_own_weights_keeps_them(tiny, tmp_path):
    copy = GenerationCopy(_Backend(), "actor", "smollm2", {}, tiny, "transformers", tmp_path / "engines")
    with copy.parked(None, "round1/critic"):
        assert all(p.numel() > 0 for p in tiny.model.parameters())


def test_a_role_training_itself_holds_no_copy_of_the_weights_it_starts_from(tiny, tmp_path, caplog):
    backend = _Backend()
    copy = GenerationCopy(backend, "critic", "smollm2", {}, tiny, "llamacpp", tmp_path / "engines")
    copy.model(None)  # round 0's evaluation wrote with a copy of the base weights
    with caplog.at_level("INFO", logger="coevo.algorithms.engines"), copy.training("round1/critic"):
        assert backend.closed == backend.copies  # closed as the stage starts, not after it
        assert "round1/critic: the critic's llamacpp copy of its previous weights closed" in caplog.text
        with pytest.raises(RuntimeError, match="the critic is training in round1/critic"):
            copy.model(None)
    copy.model("checkpoints/round1/critic/final")  # the stage's weights, after it
    assert len(backend.copies) == 2 and len(backend.closed) == 1
