"""A trained model's weights on llama.cpp: the GGUF export answers as the transformers model
does, follows its weights as they change, and GRPO's samples come from it (train/rollout.py)."""

from __future__ import annotations

import pytest
import torch

from coevo.llm.gguf_export import _permute, gguf_name
from coevo.train import GRPOSettings


def test_names_and_the_rotary_permutation_are_llama_cpps():
    assert gguf_name("model.layers.3.self_attn.q_proj.weight") == "blk.3.attn_q.weight"
    assert gguf_name("model.layers.0.mlp.down_proj.weight") == "blk.0.ffn_down.weight"
    assert gguf_name("model.embed_tokens.weight") == "token_embd.weight"
    assert gguf_name("model.rotary_emb.inv_freq") is None
    # Per head, the first and second halves of the rotary dimensions are interleaved.
    rows = torch.arange(8.0).reshape(8, 1).numpy()  # 2 heads of 4 rows: halves (0,1)(2,3), (4,5)(6,7)
    assert _permute(rows, 2)[:, 0].tolist() == [0, 2, 1, 3, 4, 6, 5, 7]


def test_a_rollout_engine_and_vllm_cannot_both_write_the_samples():
    with pytest.raises(ValueError, match="keep one"):
        GRPOSettings(num_generations=2, use_vllm=True, rollout_engine="llamacpp")


def _greedy(model, tokenizer, text, n=8):
    ids = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                        tokenize=True, return_dict=True)["input_ids"]
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False)
    return ids, out[0, len(ids):].tolist()


@pytest.mark.slow
def test_the_exported_weights_answer_as_the_trained_model_and_follow_its_changes(tmp_path):
    from llama_cpp import Llama

    from coevo.llm.gguf_export import _template_reader, export_gguf
    from coevo.llm.specs import load_model

    _template_reader.cache_clear()
    policy = load_model("smollm2", trainable=True)
    model, tokenizer = policy.model, policy.tokenizer

    def llama_greedy(path, ids, n=8):
        llama = Llama(model_path=str(path), n_ctx=512, verbose=False)
        out = []
        for token in llama.generate(ids, temp=0.0, top_k=1, repeat_penalty=1.0):
            out.append(int(token))
            if len(out) == n:
                break
        llama.close()
        return out

    ids, expected = _greedy(model, tokenizer, "Name three colours.")
    assert llama_greedy(export_gguf(model, tmp_path / "a.gguf"), ids) == expected
    # Change the weights: the next export answers as the changed model, not the old one.
    with torch.no_grad():
        model.lm_head.weight[expected[0]] -= 5.0  # tied to the embeddings: the first token loses
    ids, changed = _greedy(model, tokenizer, "Name three colours.")
    assert changed != expected
    assert llama_greedy(export_gguf(model, tmp_path / "b.gguf"), ids) == changed
    # The template (metadata, vocabulary) was read once: the second export reused it (~4 s each).
    assert _template_reader.cache_info().misses == 1


@pytest.mark.slow
def test_grpo_samples_on_llama_cpp_and_still_trains_the_policy(tmp_path):
    from coevo.llm.specs import load_model
    from coevo.train import rollout as rollout_module
    from coevo.train import train_grpo

    made = []
    original = rollout_module.LlamaCppRollout.__call__

    def recording(self, prompts, trainer):
        out = original(self, prompts, trainer)
        made.append((self.exports, out))
        return out

    rollout_module.LlamaCppRollout.__call__ = recording
    try:
        policy = load_model("smollm2", trainable=True)
        name = "model.layers.0.mlp.down_proj.weight"
        before = policy.model.state_dict()[name].clone()
        settings = GRPOSettings(num_generations=2, batch_size=2, max_steps=2, max_completion_length=24,
                                learning_rate=1e-4, temperature=1.0, save_steps=100, rollout_engine="llamacpp")
        seen = []

        def reward(prompts, completions, **_):
            texts = [c[-1]["content"] for c in completions]
            seen.append(texts)
            return [float(len(t)) + 0.1 * i for i, t in enumerate(texts)]

        result = train_grpo(policy, ["Write one word.", "Name an animal."], reward, settings, tmp_path)
    finally:
        rollout_module.LlamaCppRollout.__call__ = original
    assert result.steps == 2
    assert [exports for exports, _ in made] == [1, 2]  # the weights written again after the first update
    for _, out in made:
        assert len(out["completion_ids"]) == 4 and all(0 < len(c) <= 24 for c in out["completion_ids"])
    assert all(text for texts in seen for text in texts)  # TRL decoded llama.cpp's tokens for the reward
    assert not torch.equal(before, policy.model.state_dict()[name]), "GRPO did not change the policy"
    assert "clipped_ratio" in result.metrics  # TRL read the samples' ends as its own


def test_a_model_llama_cpp_cannot_take_generates_where_it_trains_said_once(tmp_path, caplog):
    from coevo.algorithms.backend import Backend
    from coevo.algorithms.engines import GenerationCopy
    from coevo.llm.replay import ReplayModel

    local = ReplayModel(rules=[{"completion": "ok"}])  # no transformers Llama behind it
    copy = GenerationCopy(Backend(), "actor", "replay:x", {}, local, "llamacpp", tmp_path)
    with caplog.at_level("WARNING", logger="coevo"):
        assert copy.model(None) is local and copy.model("ckpt") is local
    said = [r.message for r in caplog.records if "actor_engine llamacpp" in r.message]
    assert len(said) == 1 and "transformers instead" in said[0]
    assert not list(tmp_path.glob("*.gguf"))


def test_without_llama_cpp_installed_a_role_generates_where_it_trains_said_once(tmp_path, caplog, monkeypatch):
    # The GPU image has no llama-cpp-python: a CPU example's `generator_engine: llamacpp` (RLAC)
    # must still run there (scripts/gpu_smoke.sh runs rlac_code_tiny), on the trained weights.
    import coevo.llm.specs as specs
    from coevo.algorithms.backend import Backend
    from coevo.algorithms.engines import GenerationCopy
    from coevo.llm.replay import ReplayModel

    monkeypatch.setattr(specs, "llama_cpp_available", lambda: False)
    local = ReplayModel(rules=[{"completion": "ok"}])
    copy = GenerationCopy(Backend(), "generator", "replay:x", {}, local, "llamacpp", tmp_path)
    with caplog.at_level("WARNING", logger="coevo"):
        assert copy.model(None) is local and copy.model("ckpt") is local
    said = [r.message for r in caplog.records if "generator_engine llamacpp" in r.message]
    assert len(said) == 1 and "not installed" in said[0] and "transformers instead" in said[0]


def test_a_llama_of_another_shape_is_not_written_with_the_embedded_models_metadata(tmp_path):
    # The copy takes its template's metadata and vocabulary: another Llama's weights under
    # SmolLM2's header would be a broken model, not a faster copy of this one.
    from transformers import LlamaConfig, LlamaForCausalLM

    from coevo.llm.gguf_export import ExportError, export_gguf

    tiny = LlamaForCausalLM(LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                        num_attention_heads=2, num_key_value_heads=1))
    with pytest.raises(ExportError, match="llama.block_count 2 vs 30.*vocabulary 64 vs 49152"):
        export_gguf(tiny, tmp_path / "tiny.gguf")
    assert not (tmp_path / "tiny.gguf").exists()


def test_grpo_rollouts_llama_cpp_cannot_take_are_sampled_by_trl_said_before_the_stage(tmp_path, caplog, monkeypatch):
    # Asked before the stage starts, not found in its first step: another Llama's weights under
    # the template's header (a broken model), or no llama.cpp at all (the GPU image).
    from types import SimpleNamespace

    from transformers import LlamaConfig, LlamaForCausalLM

    import coevo.llm.specs as specs
    from coevo.train.rollout import rollout_for

    settings = GRPOSettings(rollout_engine="llamacpp", max_completion_length=8)
    tiny = SimpleNamespace(model=LlamaForCausalLM(LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1)))
    with caplog.at_level("WARNING", logger="coevo"):
        assert rollout_for(tiny, settings, tmp_path) is None
        monkeypatch.setattr(specs, "llama_cpp_available", lambda: False)
        assert rollout_for(tiny, settings, tmp_path) is None
    said = [r.message for r in caplog.records if r.message.startswith("grpo.rollout_engine llamacpp")]
    assert len(said) == 2 and all("TRL samples with transformers instead" in text for text in said)
    assert "llama.block_count 2 vs 30" in said[0] and "not installed" in said[1]
    assert not list(tmp_path.rglob("*.gguf"))


def test_each_process_samples_with_a_seed_of_its_own(tmp_path):
    """Two ranks of a many-process run each sample their share of a group: with one seed they
    would write the same critique and every group's rewards would tie."""
    from types import SimpleNamespace

    from coevo.train.rollout import LlamaCppRollout

    draws = {}
    for rank in (0, 1):
        rollout = LlamaCppRollout(None, tmp_path, temperature=1.0, top_p=1.0, max_tokens=4, seed=7)
        rollout.sync = lambda step: None  # no weights here: the seeds are what is checked
        rollout._sample = lambda ids, stop, r=rollout: [r.rng.randrange(10**9)]
        trainer = SimpleNamespace(accelerator=SimpleNamespace(process_index=rank), state=SimpleNamespace(global_step=0),
                                  processing_class=lambda text, add_special_tokens=False: {"input_ids": [1, 2]},
                                  eos_token_ids=[2])
        draws[rank] = rollout(["a", "b"], trainer)["completion_ids"]
        assert rollout.rank == rank
    assert draws[0] != draws[1]


def test_the_ranks_on_one_machine_share_its_cores(monkeypatch, tmp_path):
    from types import SimpleNamespace

    import llama_cpp

    import coevo.llm.gguf_export as gguf_export
    import coevo.llm.llamacpp as llamacpp
    from coevo.train.rollout import LlamaCppRollout

    threads = []

    class Loaded:
        def __init__(self, model_path, n_threads, **_):
            threads.append(n_threads)

        def close(self):
            pass

    monkeypatch.setattr(llama_cpp, "Llama", Loaded)
    monkeypatch.setattr(gguf_export, "export_gguf", lambda model, path: path)
    monkeypatch.setattr(llamacpp, "_cpus", lambda: 8)

    def loaded_threads(local_processes):
        if local_processes is None:
            monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
        else:
            monkeypatch.setenv("LOCAL_WORLD_SIZE", local_processes)
        LlamaCppRollout(SimpleNamespace(model=None), tmp_path, temperature=1.0, top_p=1.0, max_tokens=4).sync(0)
        return threads[-1]

    assert loaded_threads(None) == 8  # one process: every core
    assert loaded_threads("2") == 4
    assert loaded_threads("16") == 1  # never none
