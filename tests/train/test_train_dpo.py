"""DPO glue: dataset shape, settings errors, and real TRL steps on the embedded model."""

from __future__ import annotations

import re
import shutil

from pathlib import Path

import pytest
import torch

from coevo.train import DPOSettings, LoRASettings, TrainError, pairs_to_dataset, train_dpo
from coevo.core.types import PreferencePair

PAIRS = [
    PreferencePair(prompt="Say hello.", chosen="Hello there, friend!", rejected="No."),
    PreferencePair(prompt="Name a color.", chosen="Blue, like a clear sky.", rejected="I will not."),
]


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from coevo.llm.embedded import hf_dir

    return AutoTokenizer.from_pretrained(str(hf_dir()))


def _tiny(**overrides) -> DPOSettings:
    # A large learning rate so that two steps visibly move the weights.
    base = dict(learning_rate=1e-4, max_steps=2, max_length=48, max_prompt_length=24, save_steps=100)
    return DPOSettings(**{**base, **overrides})


def test_pairs_to_dataset_is_conversational():
    ds = pairs_to_dataset(PAIRS, None)
    assert ds.column_names == ["prompt", "chosen", "rejected"]
    assert len(ds) == 2
    assert ds[0]["prompt"] == [{"role": "user", "content": "Say hello."}]
    assert ds[0]["chosen"] == [{"role": "assistant", "content": "Hello there, friend!"}]
    assert ds[1]["rejected"] == [{"role": "assistant", "content": "I will not."}]
    # A role's `thinking` switch: a column TRL applies the chat template with.
    thinking = pairs_to_dataset(PAIRS, None, chat_template_kwargs={"enable_thinking": False})
    assert thinking[1]["chat_template_kwargs"] == {"enable_thinking": False}


def test_a_system_message_goes_first_in_the_prompt_and_is_never_cut(tokenizer):
    pair = PreferencePair(prompt="Write a biography of Ada Lovelace.", chosen="Ada was...", rejected="No.",
                          system="You write biographies of exactly four sentences.")
    ds = pairs_to_dataset([pair, PAIRS[0]], None)
    assert ds[0]["prompt"] == [{"role": "system", "content": "You write biographies of exactly four sentences."},
                               {"role": "user", "content": "Write a biography of Ada Lovelace."}]
    assert ds[1]["prompt"] == [{"role": "user", "content": "Say hello."}]  # no system: none added
    # Over max_prompt_length the system message stays whole and the user message keeps its
    # start and its end, the two together within the limit.
    long = pair.model_copy(update={"prompt": "filler " * 200 + "Write a biography of Ada Lovelace."})
    system, user = pairs_to_dataset([long], tokenizer, max_prompt_length=20)[0]["prompt"]
    assert system["content"] == pair.system and user["content"].endswith("Ada Lovelace.")
    count = lambda text: len(tokenizer(text, add_special_tokens=False)["input_ids"])  # noqa: E731
    assert count(system["content"]) + count(user["content"]) <= 20 < count(long.prompt)


def test_long_prompts_lose_their_middle_not_their_header_or_question(tokenizer):
    long = PreferencePair(prompt="You are a critic. Name one error.\n" + "filler " * 200 + "Final question: what is 2+2?",
                          chosen="4", rejected="5")
    prompt = pairs_to_dataset([long], tokenizer, max_prompt_length=40)[0]["prompt"][0]["content"]
    assert prompt.startswith("You are a critic.") and prompt.endswith("what is 2+2?")
    assert re.search(r"\[… \d+ tokens of the prompt omitted …\]", prompt)
    assert len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) <= 40


def test_a_limit_too_small_for_the_marker_keeps_the_end(tokenizer):
    long = PreferencePair(prompt="filler " * 200 + "what is 2+2?", chosen="4", rejected="5")
    prompt = pairs_to_dataset([long], tokenizer, max_prompt_length=6)[0]["prompt"][0]["content"]
    assert prompt.endswith("2+2?") and len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) <= 6


def test_empty_pairs_are_a_clear_error(tmp_path):
    with pytest.raises(TrainError, match="no preference pairs"):
        pairs_to_dataset([], None)
    with pytest.raises(TrainError, match="no preference pairs"):
        train_dpo(object(), [], DPOSettings(), tmp_path)  # type: ignore[arg-type]


def test_settings_are_validated():
    with pytest.raises(ValueError, match="max_prompt_length"):
        DPOSettings(max_length=128, max_prompt_length=128)
    with pytest.raises(ValueError, match="beta"):
        DPOSettings(beta=0)
    with pytest.raises(ValueError, match="extra"):
        DPOSettings(betta=0.1)
    with pytest.raises(ValueError, match="lm_head"):
        LoRASettings(target_modules=["q_proj", "lm_head"])


def test_dpo_config_carries_the_settings_and_the_trl_block(tmp_path):
    from coevo.train.dpo import dpo_config

    args = dpo_config(_tiny(beta=0.2, grad_accum=3, trl={"loss_type": ["ipo"]}), tmp_path / "checkpoints")
    assert args.output_dir == str(tmp_path / "checkpoints")
    assert (args.beta, args.learning_rate, args.max_steps, args.max_length) == (0.2, 1e-4, 2, 48)
    assert (args.gradient_accumulation_steps, args.save_steps, args.save_total_limit) == (3, 100, 2)
    assert args.loss_type == ["ipo"]
    assert dpo_config(DPOSettings(), tmp_path).max_steps == -1
    with pytest.raises(TrainError, match="dpo.trl sets beta"):
        dpo_config(DPOSettings(trl={"beta": 0.5}), tmp_path)


def _snapshot(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


@pytest.mark.slow
@pytest.mark.tiny_model
def test_full_dpo_changes_weights_saves_and_resumes(tmp_path, monkeypatch, tiny_llama):
    import math

    import trl.trainer.dpo_trainer as trl_dpo
    from transformers import AutoModelForCausalLM

    from coevo.llm.specs import load_model

    # The reference is the policy at entry, loaded by TRL from the folder that holds it
    # (what works under ZeRO-3): watch where TRL loads it from.
    references = []
    build = trl_dpo.create_model_from_path
    monkeypatch.setattr(trl_dpo, "create_model_from_path",
                        lambda path, **kw: references.append(Path(path)) or build(path, **kw))
    # The tiny random model (tests/conftest.py): the stage's machinery does not depend on
    # what the weights say; the embedded model's DPO steps are the loops' end-to-end tests'.
    policy = load_model(f"hf:{tiny_llama}", trainable=True)
    before = _snapshot(policy.model)
    old_id = policy.model_id
    result = train_dpo(policy, PAIRS, _tiny(save_steps=1), tmp_path)
    assert references == [tiny_llama]
    # Policy == reference at the first step: the DPO loss is log 2.
    assert math.isclose(result.metrics["first_loss"], math.log(2), abs_tol=1e-3)
    assert policy.model.name_or_path == str(tiny_llama), "the origin lent to TRL was not put back"
    assert result.steps == 2 and result.resumed_from is None
    assert result.seconds_per_step > 0 and result.peak_rss_mb > 0
    assert "loss" in result.metrics and "rewards/margins" in result.metrics
    # The step after the first timed apart from it (warm-up), with TRL's token count; no GPU here.
    assert result.metrics["first_step_seconds"] > 0 and result.metrics["steady_step_seconds"] > 0
    assert result.metrics["steady_tokens_per_s"] > 0 and "peak_gpu_mb" not in result.metrics
    assert result.kind == "dpo" and [row["step"] for row in result.history if "loss" in row] == [1, 2]
    assert (Path(result.checkpoint) / "README.md").read_text().count("- dpo") == 1
    after = _snapshot(policy.model)
    name = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(before[name], after[name]), "DPO did not change the policy in place"
    assert policy.model_id != old_id

    saved = AutoModelForCausalLM.from_pretrained(result.checkpoint)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_llama))
    assert torch.equal(saved.state_dict()[name], after[name])
    assert not torch.equal(base.state_dict()[name], saved.state_dict()[name])

    # A finished stage is adopted, not retrained.
    again = train_dpo(policy, PAIRS, _tiny(save_steps=1), tmp_path)
    assert again.resumed_from == result.checkpoint and again.steps == 2

    # The next stage measures against this stage's output, not the base.
    following = train_dpo(policy, PAIRS, _tiny(max_steps=1), tmp_path / "next")
    assert references[-1] == Path(result.checkpoint)
    assert math.isclose(following.metrics["first_loss"], math.log(2), abs_tol=1e-3)

    # Killed after checkpoint-2 but before `final`: the stage continues from checkpoint-2.
    shutil.rmtree(tmp_path / "final")
    resumed = train_dpo(policy, PAIRS, _tiny(save_steps=1, max_steps=3), tmp_path)
    assert resumed.resumed_from is not None and resumed.resumed_from.endswith("checkpoint-2")
    assert resumed.steps == 3


@pytest.mark.slow
@pytest.mark.tiny_model
def test_lora_dpo_saves_an_adapter_over_the_base(tmp_path, tiny_llama):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from coevo.llm.specs import load_model

    policy = load_model(f"hf:{tiny_llama}", trainable=True)
    result = train_dpo(policy, PAIRS, _tiny(lora=LoRASettings(r=4, alpha=8)), tmp_path)
    assert (tmp_path / "final" / "adapter_config.json").exists()
    # Off the save_steps grid, no end-of-training checkpoint: `final` is the stage's output.
    assert not list((tmp_path / "checkpoints").glob("checkpoint-*"))
    assert not (tmp_path / "final" / "ref").exists(), "TRL's frozen reference adapter leaked into the checkpoint"
    assert list(policy.model.peft_config) == ["default"]

    base = AutoModelForCausalLM.from_pretrained(str(tiny_llama))
    ids = torch.tensor([[1, 42, 99, 7, 300]])
    with torch.no_grad():
        base_logits = base(ids).logits
        adapted = PeftModel.from_pretrained(base, result.checkpoint)
        adapted_logits = adapted(ids).logits
        policy_logits = policy.model(input_ids=ids).logits
    assert not torch.allclose(base_logits, adapted_logits), "the adapter did not learn anything"
    assert torch.allclose(adapted_logits, policy_logits, atol=1e-4), "checkpoint differs from the in-place policy"

    # The trained policy still generates (round t+1 samples from it) and a second stage trains the same adapter.
    from coevo.llm.base import user
    from coevo.core.types import Sampling

    out = policy.generate([user("Say hello.")], Sampling(temperature=0, max_tokens=8))
    assert out[0][0].completion_tokens > 0  # it generated from the trained weights
    second = train_dpo(policy, PAIRS, _tiny(lora=LoRASettings(r=4, alpha=8), max_steps=1), tmp_path / "round1")
    assert second.steps == 1 and list(policy.model.peft_config) == ["default"]
