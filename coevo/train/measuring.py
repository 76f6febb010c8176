"""What a training stage cost and did, measured around `trainer.train()`: wall time
(`Stopwatch`), peak resident memory (`PeakRSS`, `current_rss_mb`), peak GPU memory
(`PeakGPU`), how far the trainable weights moved (`weight_probe`), all of them at once
(`measured_train` -> `Measurement`), and the last value of each metric TRL logged
(`final_metrics`)."""

from __future__ import annotations

import resource
import threading
import time
from dataclasses import dataclass
from typing import Any

from coevo.train.common import drop_reference_adapter, unpatch_forward
from coevo.train.reporting import close_step_logs


@dataclass(frozen=True)
class Measurement:
    """What one `trainer.train()` cost and did: wall seconds, peak resident memory (MiB),
    the largest change of a trainable weight (see `weight_probe`) and, on a GPU, the peak
    memory torch allocated on it (MiB)."""

    seconds: float
    peak_rss_mb: float
    weight_delta: float
    peak_gpu_mb: float | None = None

    def metrics(self) -> dict[str, float]:
        """What a stage's result records of it besides time and resident memory."""
        gpu = {} if self.peak_gpu_mb is None else {"peak_gpu_mb": self.peak_gpu_mb}
        return {"weight_delta": self.weight_delta, **gpu}


def measured_train(trainer: Any, model: Any, resume_from: str | None, *, reference: Any = None) -> Measurement:
    """Run `trainer.train()` (from `resume_from`, if any), measuring time, memory and how far
    `model`'s trainable weights moved. Afterwards, even when training fails, drop TRL's frozen
    "ref" adapter and undo its forward patches on the model and the `reference` model, so the
    next stage starts from a clean model."""
    try:
        entry = getattr(trainer, "ref_model", None)  # the policy at entry, where TRL keeps one
        with PeakRSS() as rss, PeakGPU() as gpu, Stopwatch() as clock, weight_probe(model, entry) as moved:
            trainer.train(resume_from_checkpoint=resume_from)
    finally:
        close_step_logs(trainer)
        drop_reference_adapter(trainer.model)
        unpatch_forward(trainer.model)
        unpatch_forward(reference)
    return Measurement(seconds=clock.seconds, peak_rss_mb=rss.peak_mb, weight_delta=moved.max_abs_delta,
                       peak_gpu_mb=gpu.peak_mb)


def final_metrics(log_history: list[dict[str, Any]]) -> dict[str, float]:
    """The last logged value of every numeric metric, plus train_loss from the summary log."""
    metrics: dict[str, float] = {}
    for entry in log_history:
        for key, value in entry.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in ("step", "epoch"):
                metrics[key] = float(value)
    return metrics


class PeakRSS:
    """Peak resident memory (MiB) while the block runs, sampled from /proc every 50 ms.

    `ru_maxrss` is the peak of the whole process life, so it cannot tell a LoRA stage from
    the full stage that ran before it; sampling can. Falls back to ru_maxrss off Linux.
    """

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PeakRSS:
        self.peak_mb = current_rss_mb()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak_mb = max(self.peak_mb, current_rss_mb())

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.peak_mb = max(self.peak_mb, current_rss_mb())


def current_rss_mb() -> float:
    """Resident memory of this process now, in MiB."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class PeakGPU:
    """Peak GPU memory (MiB) torch allocated on this process's device while the block ran:
    everything held then (both roles' weights, the reference, gradients, optimizer state,
    activations), not only the stage's own. None without CUDA."""

    def __init__(self) -> None:
        self.peak_mb: float | None = None
        self._torch: Any = None

    def __enter__(self) -> PeakGPU:
        import torch

        if torch.cuda.is_available():
            self._torch = torch
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._torch is not None:
            self._torch.cuda.synchronize()
            self.peak_mb = self._torch.cuda.max_memory_allocated() / 2**20


class Stopwatch:
    """Wall-clock seconds of a block."""

    def __enter__(self) -> Stopwatch:
        self.start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: Any) -> None:
        self.seconds = time.perf_counter() - self.start


class weight_probe:
    """How far a block moved a model's trainable weights: `max_abs_delta`, the largest
    |w_after − w_before| over every trainable parameter (LoRA: the adapter's).

    A stage whose delta is 0 changed nothing (every GRPO group's rewards were equal, say);
    the algorithms surface that as a finding instead of a silent success. The snapshot is
    a CPU copy of the trainable parameters only: for full fine-tuning of a large model,
    give the stage LoRA or expect one extra copy of the weights in host memory.
    """

    def __init__(self, model: Any, entry: Any = None):
        """`entry`: a model holding the same weights as `model` now, under the same names (a
        full fine-tuning stage's KL reference): compared against instead of a copy."""
        self.model = model
        self.entry = entry
        self.max_abs_delta = 0.0
        self._before: dict[str, Any] = {}

    def __enter__(self) -> weight_probe:
        trainable = {name: p for name, p in self.model.named_parameters() if p.requires_grad}
        held = dict(self.entry.named_parameters()) if self.entry is not None else {}
        if trainable and all(name in held and held[name].shape == p.shape for name, p in trainable.items()):
            self._before = {name: held[name] for name in trainable}  # no second copy of the weights
        else:
            self._before = {name: p.detach().to("cpu", copy=True) for name, p in trainable.items()}
        return self

    def __exit__(self, *exc: Any) -> None:
        import torch

        delta = 0.0
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                before = self._before.get(name)
                if before is not None and before.shape == p.shape:
                    delta = max(delta, float((p.detach().to("cpu").float() - before.detach().to("cpu").float())
                                             .abs().max()))
        self.max_abs_delta = delta
        self._before = {}
