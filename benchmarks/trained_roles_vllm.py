"""Trained roles on vLLM: what runs on this machine's vLLM build, and what fails, with the error.

Two trials, each on the embedded model, each reported as {"ok": ..., "seconds": ..., "error": ...}:

1. `grpo_colocate`: one step of coevo's GRPO glue (`train_grpo`) with TRL sampling the
   completions through vLLM in the training process (`use_vllm: true, vllm_mode: colocate`),
   which must also push the updated weights into the engine after the step.
2. `lora_revisions`: a trained role's LoRA adapter served by vLLM (`VLLMModel(lora=...)`):
   a PEFT adapter with non-zero weights is saved, loaded beside the base weights, and its
   greedy answers are compared with the base model's (an adapter that changed nothing would
   mean it was not applied).

    .venv/bin/python benchmarks/trained_roles_vllm.py [--json FILE]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)


def trial(fn) -> dict:
    started = time.perf_counter()
    try:
        detail = fn()
        return {"ok": True, "seconds": round(time.perf_counter() - started, 1), **(detail or {})}
    except Exception as exc:  # noqa: BLE001 - the error IS the result being recorded
        last = traceback.extract_tb(exc.__traceback__)[-1]
        return {"ok": False, "seconds": round(time.perf_counter() - started, 1),
                "error": f"{type(exc).__name__}: {exc}"[:600], "where": f"{last.filename}:{last.lineno}"}


def grpo_colocate(folder: Path) -> dict:
    from coevo.llm.specs import load_model
    from coevo.train.grpo import GRPOSettings, train_grpo

    policy = load_model("smollm2", trainable=True)
    settings = GRPOSettings(num_generations=2, batch_size=1, max_steps=1, max_completion_length=16,
                            learning_rate=1e-5, save_steps=1, use_vllm=True, vllm_mode="colocate",
                            # On CPU this share is of the machine's RAM (vLLM's CPU backend).
                            trl={"vllm_gpu_memory_utilization": 0.2, "vllm_max_model_length": 1024})

    def reward(prompts, completions, **_):
        return [float(len(c[0]["content"])) for c in completions]

    result = train_grpo(policy, ["Say hello in five words."] * 2, reward, settings, folder / "grpo", resume=False)
    return {"steps": result.steps}


def lora_revisions(folder: Path) -> dict:
    import torch
    from peft import LoraConfig, get_peft_model

    from coevo.llm import embedded
    from coevo.llm.base import user
    from coevo.llm.vllm_backend import VLLMModel
    from coevo.core.types import Sampling

    base_dir = embedded.hf_dir()
    from transformers import AutoModelForCausalLM

    model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir),
                           LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"]))
    with torch.no_grad():  # a fresh adapter's B is zero (no change): give it weights
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(std=0.05)
    adapter = folder / "adapter"
    model.save_pretrained(adapter)
    prompts = [user("Name three colours."), user("What is the capital of France?")]
    greedy = Sampling(temperature=0.0, max_tokens=24)
    engine = VLLMModel(base_dir, lora=adapter, max_lora_rank=8)
    with_adapter = [row[0].text for row in engine.generate(prompts, greedy)]
    engine.lora_request = None
    without = [row[0].text for row in engine.generate(prompts, greedy)]
    engine.close()
    return {"adapter_changed_answers": with_adapter != without, "with_adapter": with_adapter, "base": without}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--only", choices=["lora_revisions", "grpo_colocate"], help="run one trial")
    args = parser.parse_args()
    trials = {"lora_revisions": lora_revisions, "grpo_colocate": grpo_colocate}
    with tempfile.TemporaryDirectory(prefix="coevo-trained-vllm-") as tmp:
        result = {name: trial(lambda fn=fn: fn(Path(tmp))) for name, fn in trials.items()
                  if args.only in (None, name)}
    report(result, args.json)


if __name__ == "__main__":
    main()
