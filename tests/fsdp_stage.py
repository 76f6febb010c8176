"""One DPO and one GRPO stage through coevo's glue, under FSDP when launched so, writing per
rank what the rank held and what TRL logged (tests/train/test_fsdp_cpu.py runs it).

    accelerate launch --config_file examples/accelerate/fsdp_cpu.yaml tests/fsdp_stage.py MODEL OUT
    python tests/fsdp_stage.py MODEL OUT          # the one-process baseline

MODEL is a transformers folder (the tiny random Llama of tests/real_runs.py). Rank 0 does
what `coevo run` does (load_trainable, train_dpo, train_grpo, distributed.end); the other
ranks follow it (coevo.run.ranks.follow), as in a real many-process run. Each rank writes
OUT/rank<N>.json: the accelerate distributed type, and per stage the parameter elements the
rank held while training (FSDP2 holds DTensors: their local shard), the model's full size,
the losses TRL logged and where `final/` was saved.

Why a shim (`fsdp_on_cpu`): accelerate 1.16 turns FSDP on only where PartialState found an
accelerator (AcceleratorState.__init__ sets DistributedType.FSDP only from MULTI_GPU, MULTI_XPU,
...); on a CPU it stays MULTI_CPU and the model is wrapped in DDP, silently, config or not.
Torch's `fully_shard` itself runs on CPU tensors over gloo. The shim makes that one decision
accelerate's way on a CPU and nothing else: the plugin, the wrapping, the sharded optimizer,
the full-state-dict save and TRL's reference models are accelerate's and TRL's own code.

Why a scripted GRPO rollout: a step's completions are sampled, and one process sampling a
group of four draws other random numbers than two processes sampling two each, so the
losses of a sampled stage could not be compared. Each completion here is a fixed function
of the prompt and of the row's place in the whole step (rank-aware), the same in both
layouts; log-probabilities, advantages, KL and the update are still TRL's.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

PAIRS = [("Say hello.", "Hello there, friend!", "No."),
         ("Name a color.", "Blue, like a clear sky.", "I will not.")]
PROMPTS = ["Write a word.", "Count to three."]
NUM_GENERATIONS = 4


def fsdp_on_cpu() -> None:
    """Let accelerate take the FSDP branch on a CPU-only machine (see the module docstring)."""
    import torch
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    if os.environ.get("ACCELERATE_USE_FSDP", "false").lower() != "true" or torch.cuda.is_available():
        return
    original = AcceleratorState.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, fsdp_plugin: Any = None, **kwargs: Any) -> None:
        original(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = PartialState._shared_state["distributed_type"] = DistributedType.FSDP
            self.fsdp_plugin = fsdp_plugin

    AcceleratorState.__init__ = init


class Recorder:
    """What this rank saw of each stage, filled by a TrainerCallback every stage gets."""

    def __init__(self) -> None:
        self.stages: list[dict[str, Any]] = []

    def callback(self) -> Any:
        from transformers import TrainerCallback

        recorder = self

        class RecordShards(TrainerCallback):
            def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                recorder.stages.append({})

            def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
                recorder.stages[-1].update(held_elements(model))

            def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                logged = [row for row in state.log_history if "loss" in row]
                recorder.stages[-1].update(losses=[row["loss"] for row in logged],
                                           grad_norms=[row.get("grad_norm") for row in logged])

        return RecordShards()


def held_elements(model: Any) -> dict[str, Any]:
    """Parameter elements this rank holds (a DTensor's local shard) and the model's full count."""
    local = full = 0
    kinds = set()
    for parameter in model.parameters():
        kinds.add(type(parameter).__name__)
        local += parameter.to_local().numel() if hasattr(parameter, "to_local") else parameter.numel()
        full += parameter.numel()
    return {"local_elements": local, "full_elements": full, "parameter_types": sorted(kinds)}


def scripted_rollout(prompts: list[Any], trainer: Any) -> dict[str, list]:
    """TRL's `rollout_func`: row i of this rank is row `rank * len(prompts) + i` of the step
    (accelerate hands rank r the r-th slice), and its completion a fixed function of the
    prompt and of that row's place in its group: the same tokens whatever the process layout."""
    tokenizer = trainer.processing_class
    rank = trainer.accelerator.process_index
    out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
    for i, prompt in enumerate(prompts):
        prompt_ids = list(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                        return_dict=True)["input_ids"])
        place = (rank * len(prompts) + i) % NUM_GENERATIONS
        completion = [(sum(prompt_ids) + 37 * place + 11 * j) % 1500 + 300 for j in range(3 + 2 * place)]
        completion.append(tokenizer.eos_token_id)
        out["prompt_ids"].append(prompt_ids)
        out["completion_ids"].append(completion)
        out["logprobs"].append([0.0] * len(completion))
    return out


def length_reward(prompts: list, completions: list, **_: Any) -> list[float]:
    """A raw reward with spread in every group: the completion's length in characters."""
    return [float(len(completion[0]["content"])) for completion in completions]


class ScriptedRollout:
    """`scripted_rollout` with the `close` train_grpo calls on a rollout."""

    __call__ = staticmethod(scripted_rollout)

    def close(self) -> None:
        pass


def record_every_stage(recorder: Recorder) -> None:
    """Give every stage's trainer, on every rank, the recorder's callback; and GRPO the
    scripted rollout. Module attributes, since ranks 1.. enter the stages by themselves."""
    from coevo.train import dpo, grpo

    for module in (dpo, grpo):
        module.stage_callbacks = functools.partial(
            lambda extra=None, *, original: original([*(extra or []), recorder.callback()]),
            original=module.stage_callbacks)
    grpo.rollout_for = lambda policy, settings, workdir: ScriptedRollout()


def train_both_stages(model: Path, out: Path) -> dict[str, str]:
    """Rank 0: load the policy, run a DPO then a GRPO stage of 2 steps each, end the run."""
    from coevo.train import DPOSettings, GRPOSettings, distributed, load_trainable, train_dpo, train_grpo
    from coevo.core.types import PreferencePair

    policy = load_trainable(f"hf:{model}")
    pairs = [PreferencePair(prompt=p, chosen=c, rejected=r) for p, c, r in PAIRS]
    dpo = DPOSettings(learning_rate=1e-3, batch_size=2, max_steps=2, max_length=48, max_prompt_length=24,
                      save_steps=100)
    grpo = GRPOSettings(learning_rate=1e-3, num_generations=NUM_GENERATIONS, batch_size=1, max_steps=2,
                        max_completion_length=16, beta=0.02, save_steps=100)
    try:
        return {"dpo": train_dpo(policy, pairs, dpo, out / "dpo", resume=False).checkpoint,
                "grpo": train_grpo(policy, PROMPTS, length_reward, grpo, out / "grpo", resume=False).checkpoint}
    finally:
        distributed.end()


def main(model: Path, out: Path) -> None:
    fsdp_on_cpu()
    from accelerate.state import PartialState

    from coevo.run import ranks
    from coevo.train import distributed

    recorder = Recorder()
    record_every_stage(recorder)
    checkpoints = train_both_stages(model, out) if distributed.is_main() else ranks.follow() or {}
    report = {"rank": distributed.rank(), "world_size": distributed.world_size(),
              "distributed_type": str(PartialState._shared_state.get("distributed_type")),
              "stages": dict(zip(("dpo", "grpo"), recorder.stages)), "checkpoints": checkpoints}
    out.mkdir(parents=True, exist_ok=True)
    (out / f"rank{distributed.rank()}.json").write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
