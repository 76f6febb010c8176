"""Hardware profiles: `coevo plan CONFIG --hardware SPEC` times a run on GPUs it has not met.

SPEC: `cpu` (this machine's own calibration, `coevo plan --calibrate`), `NxGPU` (one node of N
GPUs: `8xH100`, `1xH200`) or `MxNxGPU` (M such nodes: `2x8xH100`); GPU one of H100, H200, A100.

A profile is a Calibration (coevo/plan/calibration.py), so the plan's estimate times every call and
training stage with it as it would with measured rates. Its rates, per GPU, then times the GPUs
the placement gives that work:

    vLLM generation (trained roles' copies, frozen `vllm:` roles, every local server)
        completion: 6,300 tokens/s for a 7B model on one H100 (HF's async-RL survey, a
        batched vLLM server), scaled by the HBM bandwidth (decoding reads every weight per
        step) and by 7B / the model's active weights; prompt: the GPU's bf16 peak at 50 %
        utilisation over 2 FLOPs per active weight and token (prefill is compute-bound)
    transformers generation
        the H200 calibration's Qwen3-8B rates (benchmarks/results/gpu_round_h200_calibration.json:
        launch-bound decoding, 9.6 tokens/s alone, 361.6 at a batch of 32), scaled by
        bandwidth and size, on every training rank
    training (DPO / GRPO steps)
        the bf16 peak at 35 % utilisation over 8 FLOPs per weight and token (forward and
        backward of the policy, 6, and the frozen reference's forward, 2)
    an API outside this hardware (an `openai:` URL not on localhost)
        80 completion tokens/s per request (published output speeds of GPT-4.1-mini-class
        APIs), times the role's `concurrency` option (the backend's default, 16)

Placement, as docs/scaling.md splits a node: one GPU holds everything; on a node of N ≥ 2,
half the GPUs train, one in eight (at least one) samples for the trained roles, the rest serve
the frozen models (the judge's replicas); on M ≥ 2 nodes the servers take every second node and
the others train and sample. A plan that trains nothing generates on every GPU. Stages run one
after another, as the loops run them, so a stage's time is its work over its GPUs' rate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from coevo.plan.calibration import Calibration, EngineRate, TrainingRate

#: bf16 dense peak FLOP/s, HBM bytes/s and memory of each known GPU (the vendors' data sheets).
GPUS = {"H100": (989e12, 3.35e12, 80e9), "H200": (989e12, 4.8e12, 141e9), "A100": (312e12, 2.0e12, 80e9)}
#: vLLM's batched decoding of a 7B model on one H100, completion tokens/s (HF's async-RL survey).
VLLM_7B_H100 = 6300.0
#: Transformers' decoding of Qwen3-8B on one H200: alone, and summed over batches of 8 and 32
#: (the H200 calibration, benchmarks/results/gpu_round_h200_calibration.json).
HF_8B_H200 = (3835.1, 9.6, {8: 69.8, 32: 361.6})
PREFILL_UTILISATION, TRAINING_UTILISATION = 0.5, 0.35
API_TOKENS_PER_S, API_CONCURRENCY = 80.0, 16
#: Mixture-of-experts models: (weights, active weights, bytes a weight as served), in billions.
MOE = {"gpt-oss-120b": (117.0, 5.1, 0.53), "gpt-oss-20b": (21.0, 3.6, 0.53)}
DEFAULT_BILLIONS = 8.0


class HardwareError(ValueError):
    """A hardware spec coevo has no profile for; the message lists the known ones."""


@dataclass(frozen=True)
class Hardware:
    nodes: int
    gpus_per_node: int
    gpu: str

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def __str__(self) -> str:
        return (f"{self.nodes}x" if self.nodes > 1 else "") + f"{self.gpus_per_node}x{self.gpu}"


@dataclass(frozen=True)
class Placement:
    """How many GPUs train, sample for the trained roles, and serve the frozen models."""

    train: int
    sampler: int
    servers: int
    shared: bool  # one GPU holds everything: each kind of work has all of it, in turn

    def text(self) -> str:
        if self.shared:
            return "one GPU holds every role, each stage in turn"
        return (f"{self.train} GPU(s) train, {self.sampler} sample for the trained roles (vLLM), "
                f"{self.servers} serve the frozen models (judge replicas)")


def parse_hardware(spec: str) -> Hardware | None:
    """`8xH100` -> Hardware(1, 8, "H100"); `cpu` -> None; anything else a HardwareError."""
    text = spec.strip()
    if text.lower() == "cpu":
        return None
    found = re.fullmatch(r"(?:(\d+)x)?(\d+)x([A-Za-z0-9]+)", text)
    gpu = found.group(3).upper() if found else ""
    if not found or gpu not in GPUS or int(found.group(2)) < 1 or int(found.group(1) or 1) < 1:
        raise HardwareError(f"--hardware {spec!r}: no profile for it; known: cpu (this machine's calibration), "
                            f"NxGPU or MxNxGPU with GPU one of {', '.join(GPUS)} (e.g. 1xH200, 8xH100, 2x8xH100)")
    return Hardware(nodes=int(found.group(1) or 1), gpus_per_node=int(found.group(2)), gpu=gpu)


def placement(hardware: Hardware, trains: bool) -> Placement:
    """The roles on the GPUs (see the module doc)."""
    if hardware.gpus == 1:
        return Placement(1, 1, 1, shared=True)
    if not trains:
        return Placement(0, hardware.gpus, hardware.gpus, shared=True)
    if hardware.nodes >= 2:
        servers = hardware.gpus_per_node * (hardware.nodes // 2)
        rest = hardware.gpus - servers
    else:
        rest = hardware.gpus_per_node // 2 + max(1, hardware.gpus_per_node // 8)
        servers = hardware.gpus - rest
    sampler = max(1, rest // 8)
    return Placement(train=rest - sampler, sampler=sampler, servers=servers, shared=False)


def model_billions(spec: str) -> tuple[float, float, float, bool]:
    """(weights, active weights, bytes a weight, whether the size was read from the name)."""
    name = spec.split("@")[0].split(":", 1)[-1]
    for moe, (total, active, size) in MOE.items():
        if moe in name.lower():
            return total, active, size, True
    if name.startswith("smollm2") or spec.startswith("smollm2"):
        return 0.135, 0.135, 2.0, True
    found = re.findall(r"(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", name)
    if found:
        billions = float(found[-1])
        return billions, billions, 2.0, True
    return DEFAULT_BILLIONS, DEFAULT_BILLIONS, 2.0, False


def hardware_calibration(spec: str, plan: Any, role_options: dict[str, dict[str, Any]] | None = None) -> Calibration:
    """The Calibration that times `plan` (a RunPlan) on the hardware `spec` names."""
    from coevo.plan.calibration import load_calibration

    hardware = parse_hardware(spec)
    if hardware is None:
        found = load_calibration()
        if found is None:
            raise HardwareError("--hardware cpu reads this machine's calibration, and it has none: run "
                                "`coevo plan CONFIG --calibrate` first")
        return found
    trains = any(role.trained for role in plan.roles)
    where = placement(hardware, trains)
    engines: dict[tuple[str, str], EngineRate] = {}
    for role in plan.roles:
        options = (role_options or {}).get(role.role.split("[")[0], {})
        rate = _engine_rate(hardware, where, role.engine, role.spec, options)
        if rate is not None:
            engines.setdefault((role.engine, role.spec), rate)
    training = [_training_rate(hardware, where, role.spec) for role in plan.roles if role.trained]
    unique = {rate.spec: rate for rate in training}
    return Calibration(machine=f"{hardware} (profile: {where.text()})", measured="published rates and a placement, not measured (coevo/plan/hardware.py)",
                       engines=list(engines.values()), training=list(unique.values()))


def _engine_rate(hardware: Hardware, where: Placement, engine: str, spec: str,
                 options: dict[str, Any]) -> EngineRate | None:
    peak, bandwidth, _ = GPUS[hardware.gpu]
    _, active, _, named = model_billions(spec)
    size = "" if named else f"; its size not in its name: {DEFAULT_BILLIONS:g}B assumed"
    if engine == "server" and not _local_server(spec):
        concurrency = int(options.get("concurrency") or API_CONCURRENCY)
        return EngineRate(engine=engine, spec=spec, prompt_tokens_per_s=50_000.0 * concurrency,
                          completion_tokens_per_s=API_TOKENS_PER_S * concurrency,
                          note=f"an API outside the hardware: {API_TOKENS_PER_S:g} completion tokens/s a request "
                               f"(published output speeds) x {concurrency} requests in flight")
    if engine in ("vllm", "server"):
        gpus = where.servers if engine == "server" else where.sampler
        decode = VLLM_7B_H100 * (bandwidth / GPUS["H100"][1]) * (7.0 / active)
        prefill = peak * PREFILL_UTILISATION / (2 * active * 1e9)
        return EngineRate(engine=engine, spec=spec, prompt_tokens_per_s=round(prefill * gpus, 1),
                          completion_tokens_per_s=round(decode * gpus, 1),
                          note=f"vLLM on {gpus} {hardware.gpu}: {VLLM_7B_H100:g} tokens/s for a 7B model on an H100 "
                               f"(HF async-RL survey) scaled by bandwidth and active weights; prefill at "
                               f"{PREFILL_UTILISATION:.0%} of bf16 peak{size}")
    if engine == "transformers":
        scale = (bandwidth / GPUS["H200"][1]) * (8.0 / active) * max(1, where.train)
        prompt, alone, batched = HF_8B_H200
        return EngineRate(engine=engine, spec=spec, prompt_tokens_per_s=round(prompt * (8.0 / active) * max(1, where.train), 1),
                          completion_tokens_per_s=round(alone * scale, 1),
                          batched_completion_tokens_per_s={b: round(r * scale, 1) for b, r in batched.items()},
                          note=f"transformers on {max(1, where.train)} {hardware.gpu}: the H200 calibration's "
                               f"Qwen3-8B rates scaled by bandwidth and weights{size}")
    return None  # llama.cpp has no GPU profile; python and replay cost nothing


def _training_rate(hardware: Hardware, where: Placement, spec: str) -> TrainingRate:
    peak, _, memory = GPUS[hardware.gpu]
    total, _, _, named = model_billions(spec)
    per_gpu = peak * TRAINING_UTILISATION / (8 * total * 1e9)
    gpus = max(1, where.train)
    # Full fine-tuning holds ~16 bytes a weight (bf16 weights and gradients, fp32 Adam and master
    # weights) plus the frozen reference's 2, sharded over the training GPUs (ZeRO-3 / FSDP).
    fits = 18 * total * 1e9 / gpus <= 0.8 * memory
    note = (f"{TRAINING_UTILISATION:.0%} of bf16 peak on {gpus} {hardware.gpu} over 8 FLOPs a weight and token"
            + ("" if fits else f"; full fine-tuning of {total:g}B does not fit {gpus} GPU(s): use LoRA or more GPUs")
            + ("" if named else f"; size not in its name: {DEFAULT_BILLIONS:g}B assumed"))
    return TrainingRate(spec=spec, tokens_per_s=round(per_gpu * gpus, 1), note=note)


def _local_server(spec: str) -> bool:
    urls = spec.split("@", 1)[1] if "@" in spec else ""
    return all(re.match(r"https?://(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])(:|/|$)", url.strip())
               for url in urls.split(",") if url.strip()) if urls else True


__all__ = ["GPUS", "Hardware", "HardwareError", "Placement", "hardware_calibration", "model_billions",
           "parse_hardware", "placement"]
