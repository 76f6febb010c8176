"""Where `coevo quickstart`'s time and memory go, phase by phase.

Runs the quickstart's own config (coevo/run/quickstart.py: one TAIScore round on the embedded
model) through the real runner, with timers wrapped around each phase, and a thread that
samples the process's resident memory every 20 ms and files each sample under the phase
running then:

  * every model load (trainable: the actor and the critic; frozen: the judge's engine),
  * GRPO (the critic): TRL's sampling of critiques, the reward (the actor's revisions and the
    judge's scores, each model call filed under its role), the old-policy and reference
    log-probabilities, the loss's forward pass, the backward pass, the optimizer, checkpoints,
    and the trainer's set-up (where TRL builds the reference model);
  * DPO (the actor): the reference log-probabilities, the forward pass, backward, optimizer,
    checkpoints, set-up;
  * every model call outside training, filed under its stage and role (y0, the pairs, the
    evaluation, the audit).

Phases nest: `seconds` includes the phases inside, `self_s` does not. Memory: `peak_rss_mb`
is the highest sample taken inside the phase; the load table gives each load's growth of the
resident set. `--ledger` adds what holds the resident set at each optimizer step of either
stage (gradients and the optimizer's state present, the step's activations freed): every
model's weights and gradients by owner, the optimizer's state, and as Rss and Pss the
safetensors files the weights are mapped from, llama.cpp's GGUF files, shared libraries and
the anonymous rest (`memory_ledger`). `--no-parking` keeps an idle role's weights in memory.

    .venv/bin/python benchmarks/stage_profile.py [--engine llamacpp] [--prompts 5] [--ledger] [--no-parking]
        [--json FILE] [--out DIR]
    .venv/bin/python benchmarks/stage_profile.py --compare A.json B.json ...   # a markdown table
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


class Phases:
    """Nested phase timers and a resident-memory sampler that files samples by phase."""

    def __init__(self, interval: float = 0.02):
        from coevo.train.measuring import current_rss_mb

        self.rss = current_rss_mb
        self.stack: list[str] = []
        self.seconds: dict[tuple[str, ...], float] = defaultdict(float)
        self.child_seconds: dict[tuple[str, ...], float] = defaultdict(float)
        self.calls: dict[tuple[str, ...], int] = defaultdict(int)
        self.peak: dict[tuple[str, ...], float] = defaultdict(float)
        self.loads: list[dict[str, Any]] = []
        self.ledgers: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, args=(interval,), daemon=True)
        self._sampler.start()

    def _sample(self, interval: float) -> None:
        while not self._stop.wait(interval):
            path, rss = tuple(self.stack), self.rss()
            for depth in range(len(path) + 1):  # a phase's peak covers the phases inside it
                key = path[:depth]
                self.peak[key] = max(self.peak[key], rss)

    def close(self) -> None:
        self._stop.set()
        self._sampler.join()

    def wrap(self, label: Any, fn: Any, *, load: bool = False) -> Any:
        """`fn` timed as phase `label` (a string, or a function of fn's arguments giving one)."""
        phases = self

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            name = label(*args, **kwargs) if callable(label) else label
            phases.stack.append(name)
            path = tuple(phases.stack)
            before, began = phases.rss(), time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - began
                phases.stack.pop()
                phases.seconds[path] += spent
                phases.calls[path] += 1
                if len(path) > 1:
                    phases.child_seconds[path[:-1]] += spent
                if load:
                    phases.loads.append({"load": name, "seconds": round(spent, 1),
                                         "rss_before_mb": round(before), "rss_after_mb": round(phases.rss())})

        return timed

    def rows(self) -> list[dict[str, Any]]:
        out = []
        for path in sorted(self.seconds):
            out.append({"phase": " > ".join(path), "calls": self.calls[path], "seconds": round(self.seconds[path], 2),
                        "self_s": round(self.seconds[path] - self.child_seconds[path], 2),
                        "peak_rss_mb": round(self.peak.get(path, 0.0))})
        return out


def instrument(phases: Phases) -> None:
    """Wrap the phases of a quickstart run (TRL's private methods where they exist: a TRL that
    renamed one leaves that phase unmeasured, never broken)."""
    import accelerate
    import trl

    from coevo.llm import cache, specs
    from coevo.llm.call_tags import current_tags
    from coevo.train import trainable
    from coevo.train.grpo import trl_grpo_trainer

    # Loaded as the runner loads it (without vLLM): `trl.GRPOTrainer` straight away would bring
    # vLLM in, ~190 MB the quickstart itself never holds.
    trl_grpo_trainer(use_vllm=False)

    trainable.load_trainable = phases.wrap(lambda spec, **_: f"load trainable {spec}", trainable.load_trainable,
                                           load=True)
    specs.load_model = phases.wrap(lambda spec, **kw: f"load {'trainable' if kw.get('trainable') else 'frozen'} "
                                   f"{spec}", specs.load_model, load=True)

    def call_label(self: Any, conversations: Any, *_: Any, **__: Any) -> str:
        tags = current_tags()
        stage = str(tags.get("stage") or "").rsplit("/", 1)[-1]
        return f"call {tags.get('role') or '?'}" + (f" ({stage})" if stage and not phases.stack else "")

    cache.CachedModel.generate_each = phases.wrap(call_label, cache.CachedModel.generate_each)
    grpo, dpo = trl.GRPOTrainer, trl.DPOTrainer
    for cls, kind in ((grpo, "grpo"), (dpo, "dpo")):
        cls.__init__ = phases.wrap(f"{kind} set-up (reference model)", cls.__init__, load=True)
        cls.train = phases.wrap(f"{kind} stage", cls.train)
        cls.training_step = phases.wrap(f"{kind} step", cls.training_step)
        cls._save_checkpoint = phases.wrap(f"{kind} checkpoint", cls._save_checkpoint)
        cls.compute_loss = phases.wrap("forward (loss)", cls.compute_loss)
    for name, label in (("_generate", "sampling (TRL)"), ("_calculate_rewards", "reward")):
        if hasattr(grpo, name):
            setattr(grpo, name, phases.wrap(label, getattr(grpo, name)))
    if hasattr(grpo, "_get_per_token_logps_and_entropies"):
        grpo._get_per_token_logps_and_entropies = phases.wrap(
            lambda self, model, *a, **k: "log-probs (reference)" if model is getattr(self, "ref_model", None)
            else "log-probs (policy)", grpo._get_per_token_logps_and_entropies)
    if hasattr(dpo, "compute_ref_log_probs"):
        dpo.compute_ref_log_probs = phases.wrap("log-probs (reference)", dpo.compute_ref_log_probs)
    accelerate.Accelerator.backward = phases.wrap("backward", accelerate.Accelerator.backward)
    from accelerate.optimizer import AcceleratedOptimizer

    AcceleratedOptimizer.step = phases.wrap("optimizer", AcceleratedOptimizer.step)


def memory_ledger(trainer: Any, optimizer: Any) -> dict[str, Any]:
    """What holds this process's resident memory now, in MB: each model in memory (found by the
    garbage collector; a model inside another counted once, with its owner) by its weights and
    gradients, the optimizer's state, and from /proc/self/smaps (Rss and Pss) the safetensors
    files transformers maps the weights from, the GGUF files llama.cpp has mapped in, the
    shared libraries, and the anonymous rest (gradients, the optimizer's state, weights
    written since loaded, Python objects, torch's and llama.cpp's buffers, the free heap)."""
    import gc
    import warnings

    import torch

    def tensor_mb(tensors: Any) -> float:
        seen: dict[int, int] = {}  # tied weights share storage: counted once
        for t in tensors:
            if isinstance(t, torch.Tensor) and t.device.type == "cpu" and not t.is_meta:
                seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return sum(seen.values()) / 2**20

    with warnings.catch_warnings():  # isinstance() touches torch's deprecated module attributes
        warnings.simplefilter("ignore")
        modules = [o for o in gc.get_objects() if isinstance(o, torch.nn.Module) and hasattr(o, "config")]
    inner = {id(m) for o in modules for m in o.modules() if m is not o}
    names = {id(getattr(trainer, "model", None)): "trained policy",
             id(getattr(trainer, "ref_model", None)): "reference"}
    models = []
    for model in (m for m in modules if id(m) not in inner):
        params = list(model.parameters())
        models.append({"model": names.get(id(model), f"other ({type(model).__name__})"),
                       "weights_mb": round(tensor_mb(params), 1),
                       "grads_mb": round(tensor_mb(p.grad for p in params if p.grad is not None), 1)})
    state = getattr(optimizer, "optimizer", optimizer).state
    optimizer_mb = tensor_mb(t for entry in state.values() for t in entry.values())
    # Rss counts a page once per mapping of it, Pss once in all (shared pages split between
    # their mappings): two models mapping the same safetensors file count twice in Rss only.
    smaps: dict[str, float] = defaultdict(float)
    path = ""
    with open("/proc/self/smaps") as handle:
        for line in handle:
            head = line.split()
            if head and "-" in head[0] and ":" not in head[0]:  # a mapping's header line
                path = head[5] if len(head) > 5 else ""
            elif line.startswith(("Rss:", "Pss:")):
                kind = "gguf" if path.endswith(".gguf") else "libraries" if ".so" in path else (
                    "safetensors" if path.endswith(".safetensors") else "other files" if path.startswith("/")
                    else "anonymous")
                smaps[f"{head[0][:-1].lower()}_{kind}"] += int(head[1]) / 1024
    totals = {f"{k}_mb": round(sum(mb for key, mb in smaps.items() if key.startswith(k))) for k in ("rss", "pss")}
    return {**totals, "models": models, "optimizer_state_mb": round(optimizer_mb, 1),
            **{f"{kind}_mb": round(mb) for kind, mb in sorted(smaps.items())}}


def take_ledgers(phases: Phases) -> None:
    """File a `memory_ledger` under `phases.ledgers` at every optimizer step, just before it."""
    import trl
    from accelerate.optimizer import AcceleratedOptimizer

    current: dict[str, Any] = {}
    for cls in (trl.GRPOTrainer, trl.DPOTrainer):
        def remembering(self: Any, *args: Any, _step: Any = cls.training_step, **kwargs: Any) -> Any:
            current["trainer"] = self
            return _step(self, *args, **kwargs)
        cls.training_step = functools.wraps(cls.training_step)(remembering)
    step = AcceleratedOptimizer.step

    def with_ledger(self: Any, *args: Any, **kwargs: Any) -> Any:
        trainer = current.get("trainer")
        phases.ledgers.append({"stage": type(trainer).__name__, **memory_ledger(trainer, self)})
        return step(self, *args, **kwargs)

    AcceleratedOptimizer.step = functools.wraps(step)(with_ledger)


def _stage_signals(summary: dict[str, Any]) -> dict[str, Any]:
    """The quickstart's learning signals (issue 9's targets), to check a faster path kept them."""
    keys = ("grpo_zero_std_fraction", "grpo_clipped_ratio", "critic_weight_delta", "actor_weight_delta",
            "grpo_seconds_per_step", "dpo_seconds_per_step", "grpo_peak_rss_mb", "dpo_peak_rss_mb")
    found: dict[str, Any] = {}
    for row in summary.get("rounds") or []:
        metrics = row.get("metrics") or {}
        found.update({k: metrics[k] for k in keys if metrics.get(k) is not None})
    return found


def compare(paths: list[Path]) -> str:
    """A markdown table of several runs' phases side by side (seconds, peak MB), in order."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    phases = list(dict.fromkeys(row["phase"] for run in runs for row in run["phases"]))
    head = " | ".join(f"{run.get('engine', '?')} s | peak MB" for run in runs)
    lines = [f"| phase | {head} |", "|---|" + "---:|" * (2 * len(runs))]
    for phase in phases:
        cells = []
        for run in runs:
            row = next((r for r in run["phases"] if r["phase"] == phase), None)
            cells += [f"{row['seconds']:.1f}", str(row["peak_rss_mb"])] if row else ["–", "–"]
        lines.append(f"| {phase} | " + " | ".join(cells) + " |")
    lines.append("| **wall** | " + " | ".join(f"**{run['wall_s']}** | **{run['peak_rss_mb']}**" for run in runs) + " |")
    return "\n".join(lines)


def main() -> int:
    if sys.argv[1:2] == ["--compare"]:
        print(compare([Path(p) for p in sys.argv[2:]]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=None, help="the quickstart's --prompts (default: its own)")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default: a fresh temporary one)")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/results/stage_profile.json"))
    parser.add_argument("--engine", choices=("transformers", "llamacpp"), default="llamacpp",
                        help="what the trained actor and critic generate with (actor_engine, critic_engine; "
                             "llamacpp: the critic's GRPO samples too)")
    parser.add_argument("--no-prefix-reuse", action="store_true",
                        help="every llama.cpp model evaluates each prompt from its first token (coevo before "
                             "issue 25's prefix reuse): the A/B of benchmarks/judge_prefix.py on a whole run")
    parser.add_argument("--grammar-first", action="store_true",
                        help="schema-bound llama.cpp calls mask every candidate before each draw (coevo before "
                             "issue 25's grammar-last sampling): the A/B of benchmarks/grammar_sampling.py on a "
                             "whole run")
    parser.add_argument("--no-parking", action="store_true",
                        help="a role's transformers weights stay in memory while the other role trains (coevo "
                             "before issue 25's parking, coevo/train/parking.py)")
    parser.add_argument("--ledger", action="store_true",
                        help="also record what holds the memory at each optimizer step (memory_ledger)")
    args = parser.parse_args()
    from coevo.llm.llamacpp import LlamaCppModel

    if args.no_prefix_reuse:
        LlamaCppModel.__init__ = functools.partialmethod(LlamaCppModel.__init__, reuse_prefix=False)
    if args.grammar_first:
        LlamaCppModel.__init__ = functools.partialmethod(LlamaCppModel.__init__, grammar_last=False)
    if args.no_parking:
        import contextlib

        from coevo.algorithms.engines import GenerationCopy

        GenerationCopy.parked = lambda self, checkpoint, stage: contextlib.nullcontext()

    from coevo.run.quickstart import PROMPTS, quickstart_config
    from coevo.run.runner import run_experiment

    args.prompts = args.prompts or PROMPTS
    phases = Phases()
    instrument(phases)
    if args.ledger:  # after instrument(): the optimizer's timer then holds no ledger's time
        take_ledgers(phases)
    out = args.out or Path(tempfile.mkdtemp(prefix="stage-profile-")) / "run"
    began = time.perf_counter()
    run = phases.wrap("run", run_experiment)
    config = quickstart_config(args.prompts, "smollm2", "smollm2") | {"actor_engine": args.engine,
                                                                       "critic_engine": args.engine}
    summary = run(None, out, data=config)
    wall = time.perf_counter() - began
    phases.close()
    report = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
              "load_average_at_end": os.getloadavg(), "wall_s": round(wall, 1), "prompts": args.prompts,
              "engine": args.engine, "prefix_reuse": not args.no_prefix_reuse,
              "parking": not args.no_parking, "grpo": _stage_signals(summary),
              "run": str(out), "peak_rss_mb": round(max(phases.peak.values(), default=0.0)),
              "phases": phases.rows(), "loads": phases.loads, "ledgers": phases.ledgers,
              "cost": summary.get("cost")}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    width = max(len(row["phase"]) for row in report["phases"])
    print(f"{'phase':<{width}}  calls  seconds   self_s  peak_rss_mb")
    for row in report["phases"]:
        print(f"{row['phase']:<{width}}  {row['calls']:>5}  {row['seconds']:>7}  {row['self_s']:>7}  "
              f"{row['peak_rss_mb']:>11}")
    for load in report["loads"]:
        print(json.dumps(load))
    for ledger in report["ledgers"]:
        print(json.dumps(ledger))
    print(f"wall {report['wall_s']} s, peak RSS {report['peak_rss_mb']} MB -> {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
