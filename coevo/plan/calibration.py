"""How fast this machine runs a config's models: `coevo plan CONFIG --calibrate`.

The plan's estimate (coevo/plan/estimate.py) counts calls and tokens from the config alone; its
seconds need rates only a measurement gives. For every (engine, model) the config's roles
generate with, one short measurement: a long prompt with a one-token answer (prompt
tokens/s), then the same prompt, numbered apart so that no engine reuses the first one's
prefix, with a 64-token answer (the difference: completion tokens/s). For every trained
model, two DPO steps on one pair (tokens through forward, backward and the optimizer per
second). The rates are kept per machine under
`$COEVO_HOME/calibration.json` and read by every later `coevo plan` and run on it.

Rates are of one call at a time, every prompt evaluated from its first token: a stage that
batches many prompts into one engine call (vLLM), or whose prompts repeat a long beginning
(llama.cpp keeps the shared blocks: the judge audit's variants), runs faster than its estimate,
which errs towards too long. Where a rate at a batch was measured (`batched_completion_tokens_per_s`:
a GPU decodes many sequences in about the time of one), a stage whose batch is known (GRPO's
completions of a step, written in one generate call) is timed at it.

A calibration measured on another machine (a GPU node's, `benchmarks/gpu_round.py`) is read
with `coevo plan CONFIG --calibration FILE`: the plan then says whose rates it used.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

log = logging.getLogger(__name__)

#: A prompt long enough that its processing time is measured, not its overhead (~420 tokens).
_PROSE = ("The committee met on a grey morning to review the harbour plans, the budget for the new "
          "library and the schedule of the summer festival, and each member spoke in turn. ")
PROMPT = _PROSE * 12 + "Summarise the meeting in one paragraph."
ANSWER_TOKENS = 64


class EngineRate(BaseModel):
    engine: str
    spec: str
    prompt_tokens_per_s: float
    completion_tokens_per_s: float
    #: Completion tokens/s summed over a batch of prompts decoded together, by batch size.
    batched_completion_tokens_per_s: dict[int, float] = Field(default_factory=dict)
    #: Where the rate comes from when it was not measured as such (an extrapolation's assumption).
    note: str = ""

    def completion_rate(self, batch: int = 1) -> float:
        """Completion tokens/s of a batch of `batch` prompts: the rate measured at the largest
        batch not above it (one call at a time when none was)."""
        fits = [b for b in self.batched_completion_tokens_per_s if b <= batch]
        return self.batched_completion_tokens_per_s[max(fits)] if fits else self.completion_tokens_per_s


class TrainingRate(BaseModel):
    spec: str
    #: Tokens of (prompt + answer) pairs trained on per second: forward and backward of the
    #: policy, the reference's forward, the optimizer step.
    tokens_per_s: float
    note: str = ""


class Calibration(BaseModel):
    machine: str
    measured: str
    engines: list[EngineRate] = Field(default_factory=list)
    training: list[TrainingRate] = Field(default_factory=list)

    def engine_rate(self, engine: str, spec: str) -> EngineRate | None:
        """The rate measured for `spec` on `engine`; else the engine's rate of another model
        of this machine (the best guess a different model gets; `coevo plan --calibrate` on
        its config measures it)."""
        same = [rate for rate in self.engines if rate.engine == engine]
        return next((rate for rate in same if rate.spec == spec), same[0] if same else None)

    def generation_seconds(self, engine: str, spec: str, prompt_tokens: int, completion_tokens: int,
                           batch: int = 1) -> float | None:
        """Seconds to read `prompt_tokens` and write `completion_tokens`, `batch` prompts a call."""
        if engine in ("python", "replay"):
            return 0.0  # code, not a model: no time worth counting
        rate = self.engine_rate(engine, spec)
        if rate is None:
            return None
        return prompt_tokens / rate.prompt_tokens_per_s + completion_tokens / rate.completion_rate(batch)

    def training_rate(self, spec: str) -> TrainingRate | None:
        """The training rate measured for `spec`; else that of another model of this machine."""
        return next((r for r in self.training if r.spec == spec), self.training[0] if self.training else None)

    def training_seconds(self, spec: str, tokens: int, sampled_tokens: int, engine: str,
                         sampling_batch: int = 1) -> float | None:
        """A training stage's time: its tokens through training, and the tokens it samples
        itself (GRPO's completions, `sampling_batch` at a time) on the engine the role generates with."""
        rate = self.training_rate(spec)
        if rate is None:
            return None
        sampling = 0.0
        if sampled_tokens:
            engine_rate = self.engine_rate(engine, spec) or self.engine_rate("transformers", spec)
            if engine_rate is None:
                return None
            sampling = sampled_tokens / engine_rate.completion_rate(sampling_batch)
        return tokens / rate.tokens_per_s + sampling


def machine() -> str:
    """What a calibration is valid for: the host, its CPU count, its GPU if one is seen."""
    gpu = ""
    try:
        import torch

        if torch.cuda.is_available():
            gpu = f", {torch.cuda.get_device_name(0)}"
    except Exception:  # torch missing or broken: the CPU is what runs then
        pass
    return f"{platform.node()} ({os.cpu_count()} CPUs{gpu})"


def calibration_path() -> Path:
    from coevo.llm.embedded import coevo_home

    return coevo_home() / "calibration.json"


def load_calibration() -> Calibration | None:
    """This machine's calibration, or None (none measured, or measured on another machine)."""
    path = calibration_path()
    if not path.is_file():
        return None
    try:
        found = read_calibration(path)
    except ValueError:
        log.warning("%s is unreadable: run `coevo plan CONFIG --calibrate` again", path)
        return None
    return found if found.machine == machine() else None


def read_calibration(path: str | Path) -> Calibration:
    """A calibration file named by the user, whatever machine measured it (ValueError, naming
    the file and what is wrong, when it is not one)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such calibration file (`coevo plan CONFIG --calibrate` writes one under "
                         "$COEVO_HOME; benchmarks/results/ has a GPU node's)")
    try:
        return Calibration.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise ValueError(f"{path} is not a coevo calibration ({first}); give a file `coevo plan --calibrate` "
                         "or benchmarks/gpu_round.py wrote") from None


#: Engines a calibration cannot or need not time: code, recorded answers, a paid server.
NOT_MEASURED = ("python", "replay", "server")


def targets(plan: Any, roles: Any) -> tuple[list[tuple[str, str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """What `--calibrate` measures for a plan: each (engine, spec, options) its roles generate
    with (servers, Python scorers and replays left out) and each (spec, options) it trains."""
    engines: dict[tuple[str, str], dict[str, Any]] = {}
    trained: dict[str, dict[str, Any]] = {}
    names = set(roles.role_names())
    for role in plan.roles:
        base = role.role.split("[")[0]
        options = roles.options_for(base) if base in names else {}
        if role.engine not in NOT_MEASURED:
            engines.setdefault((role.engine, role.spec), options)
        if role.trained:
            trained.setdefault(role.spec, options)
    return [(engine, spec, options) for (engine, spec), options in engines.items()], list(trained.items())


def calibrate(engines: list[tuple[str, str, dict[str, Any]]], trained: list[tuple[str, dict[str, Any]]],
              progress: Any = None) -> Calibration:
    """Measure each (engine, spec, options) and each trained (spec, options); merge the rates
    into this machine's calibration file (other models' rates are kept) and return it."""
    found = load_calibration() or Calibration(machine=machine(), measured="")
    for engine, spec, options in engines:
        if progress:
            progress(f"generation: {spec} on {engine}")
        rate = measure_engine(engine, spec, options)
        found.engines = [r for r in found.engines if (r.engine, r.spec) != (engine, spec)] + [rate]
    for spec, options in trained:
        if progress:
            progress(f"training: {spec} (2 DPO steps)")
        rate = measure_training(spec, options)
        found.training = [r for r in found.training if r.spec != spec] + [rate]
    found.measured = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path = calibration_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found.model_dump(), indent=1), encoding="utf-8")
    return found


def measure_engine(engine: str, spec: str, options: dict[str, Any]) -> EngineRate:
    """Prompt and completion tokens/s of one call of `spec` on `engine` (after a warm-up)."""
    from coevo.llm.specs import load_model

    wanted = dict(options)
    if spec.split(":")[0] == "smollm2" and ":" not in spec:
        wanted["engine"] = {"transformers": "hf"}.get(engine, engine)
    wanted.pop("price", None)
    model = load_model(spec, **wanted)
    try:
        return engine_rate(model, engine, spec)
    finally:
        close = getattr(model, "close", None)
        if callable(close):
            close()


def engine_rate(model: Any, engine: str, spec: str) -> EngineRate:
    """Prompt and completion tokens/s of one call of a loaded `model` (after a warm-up)."""
    from coevo.core.types import Message, Sampling

    def timed(tokens: int, call: int) -> tuple[float, Any]:
        # Each call's prompt differs from its first word on: an engine that keeps the previous
        # prompt's prefix (llama.cpp, vLLM's prefix cache) must evaluate all of it again.
        conversation = [Message(role="user", content=f"({call}) {PROMPT}")]
        started = time.perf_counter()
        [[completion]] = model.generate([conversation], Sampling(temperature=0.0, max_tokens=tokens, seed=0))
        return time.perf_counter() - started, completion

    timed(1, 0)  # warm-up: the first call pays for loading and compiling
    prompt_s, first = timed(1, 1)
    both_s, answer = timed(ANSWER_TOKENS, 2)
    prompt_tokens = first.prompt_tokens or round(len(PROMPT) / 4)
    written = max(1, answer.completion_tokens or ANSWER_TOKENS)
    return EngineRate(engine=engine, spec=spec, prompt_tokens_per_s=round(prompt_tokens / max(prompt_s, 1e-6), 1),
                      completion_tokens_per_s=round(written / max(both_s - prompt_s, 1e-6), 1))


def batched_completion_rate(model: Any, batch: int, tokens: int = ANSWER_TOKENS) -> float:
    """Completion tokens/s of `batch` short prompts decoded together, `tokens` each (after a
    warm-up at that batch); the model's own batch limit is lifted to `batch` for it."""
    from coevo.core.types import Message, Sampling

    conversations = [[Message(role="user", content=f"({i}) Write a short story about a lighthouse.")]
                     for i in range(batch)]
    own = getattr(model, "batch_size", None)
    if own is not None:
        model.batch_size = max(own, batch)
    try:
        model.generate(conversations, Sampling(temperature=0.8, max_tokens=4, seed=0))  # warm-up
        started = time.perf_counter()
        answers = model.generate(conversations, Sampling(temperature=0.8, max_tokens=tokens, seed=1))
        seconds = time.perf_counter() - started
    finally:
        if own is not None:
            model.batch_size = own
    written = sum(max(1, c.completion_tokens or tokens) for [c] in answers)
    return round(written / max(seconds, 1e-6), 1)


def measure_training(spec: str, options: dict[str, Any]) -> TrainingRate:
    """Tokens/s of DPO steps on `spec` (one pair a step; the second step timed apart from the first)."""
    from coevo.train.dpo import DPOSettings, train_dpo
    from coevo.train.trainable import load_trainable
    from coevo.core.types import PreferencePair

    wanted = {k: v for k, v in options.items() if k != "price"}
    policy = load_trainable(spec, **wanted)
    pair = PreferencePair(prompt=PROMPT, chosen=_PROSE * 2, rejected=_PROSE)
    tokenizer = policy.tokenizer
    tokens = sum(len(tokenizer(text)["input_ids"]) for text in (pair.prompt, pair.prompt, pair.chosen, pair.rejected))
    with tempfile.TemporaryDirectory(prefix="coevo-calibrate-") as folder:
        result = train_dpo(policy, [pair, pair, pair], DPOSettings(max_steps=3, batch_size=1, learning_rate=1e-7,
                                                                   max_length=1024, max_prompt_length=768),
                           Path(folder), resume=False)
    return TrainingRate(spec=spec, tokens_per_s=round(tokens / max(result.seconds_per_step, 1e-6), 1))


__all__ = ["NOT_MEASURED", "Calibration", "EngineRate", "TrainingRate", "batched_completion_rate", "calibrate",
           "calibration_path", "engine_rate", "load_calibration", "machine", "measure_engine", "measure_training",
           "read_calibration", "targets"]
