"""Model cards for saved checkpoints: README.md in every `final/` folder, with the hub's
metadata header (huggingface_hub's ModelCardData), so the folder can be pushed as it is
(`huggingface-cli upload ORG/NAME RUN/.../final`) and tells what it is without coevo:
base model, algorithm, stage, round, data, key metrics and the run's config.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

#: The embedded model's converted folder name and the hub model it was quantized from.
_EMBEDDED = {"smollm2-135m-instruct": "HuggingFaceTB/SmolLM2-135M-Instruct"}
#: Shown first in the metrics table: what says whether the stage learned.
_HEADLINE = ("train_loss", "first_loss", "step_loss", "reward_mean", "reward_group_sd", "zero_std_fraction",
             "grad_norm", "weight_delta", "pairs", "prompts")
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")


def hub_base_model(origin: str | None) -> str | None:
    """The hub id a model was loaded from, or None for a local folder the hub does not know
    (a hub card's `base_model` must name a hub model). The embedded model's converted folder
    maps to the SmolLM2 model its GGUF was quantized from."""
    if not origin:
        return None
    path = Path(origin).expanduser()
    if path.name in _EMBEDDED and path.is_dir():
        return _EMBEDDED[path.name]
    if path.exists() or not _HUB_ID.fullmatch(origin):
        return None
    return origin


def card_text(*, kind: str, origin: str | None, steps: int, metrics: dict[str, float], lora: bool,
              stage: str | None = None, round: int | None = None, algorithm: str | None = None,
              config: dict[str, Any] | None = None) -> str:
    """README.md of a checkpoint: the hub metadata header, then what it is and how it was made."""
    from huggingface_hub import ModelCard, ModelCardData

    base = hub_base_model(origin)
    data_source = _data_source(config or {})
    tags = ["coevo", "trl", kind] + ([algorithm] if algorithm else []) + (["lora"] if lora else [])
    data = ModelCardData(base_model=base, library_name="peft" if lora else "transformers", tags=tags,
                         pipeline_tag="text-generation", datasets=None)
    title = stage or "coevo checkpoint"
    rows = [("base model", f"`{base}`" if base else f"`{origin}` (a local folder)"),
            ("algorithm", algorithm or "?"), ("stage", f"`{stage}`" if stage else "?"),
            ("round", "?" if round is None else str(round)),
            ("training", f"{kind.upper()} with TRL, {steps} optimizer steps" + (", LoRA adapter" if lora else "")),
            ("data", f"`{data_source}`" if data_source else "?")]
    body = [f"# {title}", "",
            f"A {kind.upper()} checkpoint written by coevo"
            + (f" ({algorithm})" if algorithm else "") + ".", "",
            "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows), "",
            "## Key metrics", "", *_metrics_table(metrics), "",
            "## Use it", "", "```python", *_usage(lora), "```", ""]
    if config:
        body += ["## Run config", "", "```yaml", yaml.safe_dump(config, sort_keys=False).rstrip(), "```", ""]
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body)))


def write_model_card(folder: str | Path, **fields: Any) -> Path:
    """Write README.md (see `card_text`) into a checkpoint folder; returns its path."""
    path = Path(folder) / "README.md"
    path.write_text(card_text(**fields), encoding="utf-8")
    return path


def _data_source(config: dict[str, Any]) -> str | None:
    data = config.get("data")
    source = data.get("source") if isinstance(data, dict) else None
    if source is None and config.get("task"):  # RLAC: the bundled corpus or HumanEval of its task
        source = f"{config['task']} (bundled)"
    return source


def _metrics_table(metrics: dict[str, float]) -> list[str]:
    if not metrics:
        return ["(none recorded)"]
    names = [k for k in _HEADLINE if k in metrics] + sorted(k for k in metrics if k not in _HEADLINE)
    return ["| metric | value |", "|---|---|", *(f"| {k} | {metrics[k]:.4g} |" for k in names)]


def _usage(lora: bool) -> list[str]:
    if lora:
        return ["from peft import AutoPeftModelForCausalLM",
                "model = AutoPeftModelForCausalLM.from_pretrained('PATH_OR_HUB_ID')"]
    return ["from transformers import AutoModelForCausalLM, AutoTokenizer",
            "model = AutoModelForCausalLM.from_pretrained('PATH_OR_HUB_ID')",
            "tokenizer = AutoTokenizer.from_pretrained('PATH_OR_HUB_ID')"]
