"""Run folders: start, resume and finish one experiment config.

A config names its `algorithm`; this module looks the name up in `_experiments()` (a plain
dict, no plugin system), validates the rest of the config against that experiment's
pydantic model, and gives the experiment a run store. Every experiment function returns a
JSON-able summary, written to `summary.json` beside `run.sqlite` and `report.html`.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from coevo.core.strict import ConfigError
from coevo.settings.config import apply_overrides, read_yaml, validate
from coevo.plan.cost import run_cost
from coevo.llm.call_tags import tagged
from coevo.run.logs import run_logging
from coevo.monitor.records import run_summary as monitor_summary
from coevo.run.provenance import provenance, timed
from coevo.rundir.lock import RunLock, holder
from coevo.settings.limits import check_scale
from coevo.rundir.store import STORE_FILE, RunStore

SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class Experiment:
    config: type[BaseModel]
    #: (config, store) -> the run's summary: a pydantic record (dumped as it is, fields left
    #: at None where the experiment did not set them are left out) or a plain dict.
    run: Callable[[Any, RunStore], BaseModel | dict[str, Any]]
    help: str
    #: The module of the paper this experiment reproduces (`PAPER`, `departures(config)`,
    #: `plan(config)`), or None for a tool that reproduces no paper (refine).
    paper: str | None = None

    def departures(self, config: BaseModel) -> list[Any] | None:
        """Where `config` departs from the paper (empty: it is the paper; None: no paper)."""
        return None if self.paper is None else importlib.import_module(self.paper).departures(config)


def summary_dict(summary: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """What `summary.json` holds for an experiment's summary record."""
    if isinstance(summary, BaseModel):
        return summary.model_dump(mode="json", exclude_unset=True)
    return dict(summary)


def _experiments() -> dict[str, Experiment]:
    # Imported here so `coevo --help` stays fast: each experiment pulls in its roles.
    from coevo.algorithms.controls import ControlsConfig, run_controls
    from coevo.algorithms.decoevo import DecoEvoConfig, run_decoevo
    from coevo.algorithms.refine import RefineRunConfig, run_refinement
    from coevo.algorithms.rlac import RlacConfig, run_rlac
    from coevo.algorithms.scaling import ScalingConfig, run_scaling
    from coevo.algorithms.taiscore import TaiScoreConfig, run_taiscore

    return {
        "refine": Experiment(RefineRunConfig, run_refinement,
                             "critique-guided refinement over a dataset, with judges"),
        "controls": Experiment(ControlsConfig, run_controls,
                               "critique-content controls: none / generic / shuffled / matched (Table 3b)",
                               paper="coevo.algorithms.controls.paper"),
        "taiscore": Experiment(TaiScoreConfig, run_taiscore,
                               "TAIScore co-evolving critic (GRPO) and actor (DPO), with the paper's baselines",
                               paper="coevo.algorithms.taiscore.paper"),
        "decoevo": Experiment(DecoEvoConfig, run_decoevo,
                              "DecoEvo skill co-evolution vs zero-shot, SkillOpt and SC-CoEvo",
                              paper="coevo.algorithms.decoevo.paper"),
        "rlac": Experiment(RlacConfig, run_rlac,
                           "RLAC adversarial critic + external validator (facts or code), with baselines",
                           paper="coevo.algorithms.rlac.paper"),
        "scaling": Experiment(ScalingConfig, run_scaling,
                              "TAIScore's controlled analysis: critic and refiner scaling on fixed y0 (Table 5)",
                              paper="coevo.algorithms.scaling.paper"),
    }


def resolve_config(data: dict[str, Any], source: str) -> tuple[str, BaseModel]:
    algorithm = data.get("algorithm")
    experiments = _experiments()
    if algorithm not in experiments:
        raise ConfigError(
            f"{source}: 'algorithm' must be one of {sorted(experiments)}; got {algorithm!r}"
        )
    return algorithm, validate(experiments[algorithm].config, data, source)


class DiskFull(RuntimeError):
    """The disk filled up while the run wrote a checkpoint or its store. Everything finished
    before is kept (a checkpoint cut short is skipped on --resume): free space and resume."""


def _disk_full(exc: BaseException) -> bool:
    """ENOSPC anywhere in the exception's chain, however the library reported it (an
    OSError, SQLite's "database or disk is full", safetensors' "StorageFull")."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno == errno.ENOSPC:
            return True
        text = str(seen)
        if "No space left on device" in text or "database or disk is full" in text or "StorageFull" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _disk_full_error(out: Path, exc: BaseException) -> DiskFull:
    return DiskFull(f"no space left on the disk of {out} ({str(exc).splitlines()[0][:200]}); free space, then "
                    "continue with --resume: finished stages and the last complete checkpoint are kept")


class Terminated(KeyboardInterrupt):
    """SIGTERM (what a cluster scheduler sends before it preempts a job): handled like
    Ctrl-C, so the run stops where it is, marks itself interrupted (resumable: every finished
    stage is kept, a trainer checkpoint cut short is skipped on --resume) and exits 143."""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Turn SIGTERM into `Terminated` while the run lives (main thread only: elsewhere
    Python cannot install handlers, and the default, an immediate exit, stays)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise Terminated(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def preflight(config: BaseModel) -> None:
    """What a run needs that can be checked before anything is created: every model spec
    names something that can load (`check_spec`), every data source reads and holds
    samples, and every training block's `report_to` integration is installed. A bad start
    then leaves no run folder behind to trip over once it is fixed."""
    from coevo.algorithms.scaling import ScalingConfig
    from coevo.algorithms.taiscore import ConditionSpec
    from coevo.settings.config import DataConfig
    from coevo.llm.specs import check_spec
    from coevo.settings.role_specs import RoleSet
    from coevo.tasks.loaders import load_samples
    from coevo.train.dpo import DPOSettings
    from coevo.train.grpo import GRPOSettings, vllm_sampling_refusal
    from coevo.train.reporting import require_reporters

    _check_python_scorers(config)
    for node in _walk(config):
        if isinstance(node, (RoleSet, ConditionSpec)):
            specs = ([node.spec(name) for name in node.role_names()] if isinstance(node, RoleSet)
                     else [node.critic, node.tailored_to])
            for spec in specs:
                if isinstance(spec, str) and isinstance(node, ConditionSpec) and spec.startswith("python:"):
                    raise ConfigError(f"condition {node.name!r}: {spec!r} is a Python scorer, not a model; "
                                      "a condition's critic and tailored_to name models")
                if isinstance(spec, str):
                    check_spec(spec)
        elif isinstance(node, DataConfig):
            load_samples(node.source, columns=node.columns or None, limit=node.limit)
        elif isinstance(node, ScalingConfig):  # its models are named in its comparisons, not its roles
            for spec in node.model_specs():
                check_spec(spec)
        elif isinstance(node, (DPOSettings, GRPOSettings)):  # tensorboard / wandb installed?
            require_reporters(node.report_to, "dpo" if isinstance(node, DPOSettings) else "grpo")
            if isinstance(node, GRPOSettings) and node.use_vllm and (refusal := vllm_sampling_refusal()):
                raise ConfigError(refusal)  # before hours of generation, not at the first GRPO step


def _check_python_scorers(config: BaseModel) -> None:
    """Probe every `python:` scorer a config names with the signature of each judge kind its
    place serves (`check_python_spec`), so a bad function ends the run before it starts. A
    `python:` spec is refused where no judge goes (an actor, a critic, a backbone)."""
    from coevo.algorithms.decoevo import DecoEvoConfig
    from coevo.algorithms.refine import RefineRunConfig
    from coevo.algorithms.scaling import ScalingConfig
    from coevo.algorithms.taiscore import TaiScoreConfig
    from coevo.algorithms.taiscore.config import check_python_judge
    from coevo.llm.python_functions import check_python_spec, is_python_spec
    from coevo.llm.specs import check_spec
    from coevo.settings.role_specs import RoleSet
    from coevo.roles.judges import KIND_OF_JUDGE

    monitor = getattr(config, "monitor", None)
    for anchor in (monitor.anchors if monitor is not None else []):
        # An anchor scores what the reward scores: the reward's signature.
        if is_python_spec(anchor):
            check_python_spec(anchor, ["reward"], "monitor.anchors")
        elif anchor.startswith("judge:"):
            check_spec(anchor.removeprefix("judge:"))
    roles = getattr(config, "roles", None)
    if not isinstance(roles, RoleSet):
        return
    for role in roles.role_names():
        spec = roles.spec(role)
        if not is_python_spec(spec):
            continue
        where = f"roles.{role}.model"
        if isinstance(config, TaiScoreConfig) and role == "judge":
            check_python_judge(config)
        elif isinstance(config, DecoEvoConfig) and role == "grader":
            check_python_spec(spec, ["grader"], where)
        elif isinstance(config, ScalingConfig) and role == "gold":
            check_python_spec(spec, ["gold"], where)
        elif isinstance(config, RefineRunConfig) and role == "judge":
            if config.data.filter_queries:
                raise ConfigError(f"{where} {spec!r} is a Python function, but data.filter_queries asks the "
                                  "judge model to grade queries; turn it off")
            unknown = [name for name in config.judges if name not in KIND_OF_JUDGE]
            if unknown:
                raise ConfigError(f"{where} {spec!r} is a Python function, which cannot stand for the "
                                  f"{', '.join(unknown)} judge(s); it can for {', '.join(KIND_OF_JUDGE)}")
            check_python_spec(spec, sorted({KIND_OF_JUDGE[name] for name in config.judges}), where)
        else:
            raise ConfigError(f"{where} {spec!r}: a Python scorer stands only where a judge goes (taiscore and "
                              "refine roles.judge.model, decoevo roles.grader.model, scaling roles.gold.model); "
                              "give a model spec here (`coevo models`)")


def _walk(node: Any):
    """Every pydantic model, list item and dict value under `node`, `node` first."""
    yield node
    if isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from _walk(getattr(node, name))
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _walk(item)
    elif isinstance(node, dict):
        for item in node.values():
            yield from _walk(item)


def run_experiment(
    config_path: str | Path | None,
    out: str | Path,
    *,
    resume: bool = False,
    overrides: list[str] = (),
    data: dict[str, Any] | None = None,
    fresh: bool = False,
    allow_large: bool = False,
) -> dict[str, Any]:
    """Run (or resume) the experiment a config describes in run folder `out` (`fresh`:
    delete the run already there first; run folders only). A config past coevo/settings/limits.py's
    limits is refused unless `allow_large`."""
    out = Path(out)
    source = str(config_path or "config")
    raw = apply_overrides(data if data is not None else read_yaml(config_path), list(overrides))
    algorithm, config = resolve_config(raw, source)
    check_scale(config, allow_large=allow_large, where=source)
    from coevo.train import distributed
    from coevo.train.memory import limit_heap_arenas

    distributed.die_with_launcher()
    limit_heap_arenas()  # before the models load and their threads start (coevo/train/memory.py)
    preflight(config)
    if resume and not (out / STORE_FILE).is_file() and holder(out) is None:  # (held: RunLock says by whom)
        raise ConfigError(f"nothing to resume: {out} holds no run; drop --resume to start one there")
    if not distributed.is_main():
        # Ranks 1..N-1 of a many-process launch train when rank 0 says so, and nothing else:
        # no generation, no judge, never the run folder (coevo/train/distributed.py).
        from coevo.run.ranks import follow

        follow()
        return {}
    if fresh:
        remove_run_folder(out)
    terminated = False
    try:
        # One writer per run folder, for as long as the run lives; library warnings and TRL's
        # per-step logs go to RUN/coevo.log, not the terminal (coevo/run/logs.py).
        with _sigterm_interrupts(), RunLock(out), run_logging(out):
            return _run_locked(out, algorithm, config, resume)
    except Terminated:
        terminated = True  # the other ranks got the signal too, or died with their launcher
        raise
    except Exception as exc:
        if _disk_full(exc) and not isinstance(exc, DiskFull):  # the store's own writes, say
            raise _disk_full_error(out, exc) from exc
        raise
    finally:
        if not terminated:
            distributed.end()


def _say_departures(departures: list[dict[str, Any]] | None) -> None:
    import logging

    log = logging.getLogger(__name__)
    if departures is None:
        return
    if departures:
        log.info("this run departs from its paper in %d setting(s): %s (summary.json -> departures)",
                 len(departures), ", ".join(d["setting"] for d in departures))
    else:
        log.info("this run uses its paper's settings (no departures)")


def plan_experiment(config_path: str | Path, overrides: list[str] = (), *, calibration: Any = None,
                    allow_large: bool = False) -> Any:
    """`coevo plan`: the RunPlan of a config (coevo.plan.planning) with its cost estimate
    (coevo.plan.estimate; seconds where `calibration` is given), made without loading a model;
    refused past coevo/settings/limits.py's limits unless `allow_large`."""
    raw = apply_overrides(read_yaml(config_path), list(overrides))
    algorithm, config = resolve_config(raw, str(config_path))
    check_scale(config, allow_large=allow_large, where=str(config_path))
    return plan_of(algorithm, config, calibration, where=str(config_path))


def plan_of(algorithm: str, config: BaseModel, calibration: Any = None, *, where: str = "the config") -> Any:
    from coevo.plan.estimate import estimate_plan

    experiment = _experiments()[algorithm]
    if experiment.paper is None:
        raise ConfigError(f"{where}: `coevo plan` covers the papers' algorithms (taiscore, rlac, decoevo, scaling, "
                          f"controls); {algorithm!r} reproduces no paper: see `coevo run --help`")
    paper = importlib.import_module(experiment.paper)
    plan = paper.plan(config)
    plan.estimate = estimate_plan(config, plan, paper, calibration)
    return plan


def _record_estimate(store: RunStore, algorithm: str, config: BaseModel) -> None:
    """Keep what `coevo plan` estimated for this run (`coevo runs --estimates` sets it beside
    the run's counted cost). An estimate that cannot be made is a log line, never a failed run."""
    import logging

    from coevo.plan.calibration import load_calibration

    if _experiments()[algorithm].paper is None:
        return
    try:
        plan = plan_of(algorithm, config, load_calibration())
    except Exception as exc:  # the estimate is a forecast: the run goes on without one
        logging.getLogger(__name__).warning("no cost estimate for this run: %s", exc)
        return
    if plan.estimate is not None:
        store.set_meta("estimate", plan.estimate.model_dump(mode="json"))


def remove_run_folder(out: str | Path) -> None:
    """What `--fresh` does: delete `out` when it is a coevo run folder no live process holds.
    Anything else (a folder without run.sqlite: someone's data, a home directory) is never
    deleted: the user is told to choose another --out."""
    out = Path(out)
    if not out.exists():
        return
    if not out.is_dir() or not (out / STORE_FILE).is_file():
        if out.is_dir() and not any(out.iterdir()):
            return  # an empty folder: nothing to start over from
        raise ConfigError(f"--fresh deletes only a coevo run folder, and {out} holds no {STORE_FILE}: "
                          "choose another --out (or delete it yourself)")
    with RunLock(out):  # refuses, naming the holder, while a run lives in it
        pass
    import shutil

    shutil.rmtree(out)


def _write_summary(out: Path, summary: dict[str, Any]) -> None:
    """Write `summary.json` whole or not at all: a `kill -9` in the middle of a plain write
    leaves half a JSON file, which `coevo show` and `coevo runs` then read; a temporary file
    renamed over it (atomic on POSIX) leaves the previous one or the new one."""
    part = out / f"{SUMMARY_FILE}.part"
    part.write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    os.replace(part, out / SUMMARY_FILE)


def _run_locked(out: Path, algorithm: str, config: BaseModel, resume: bool) -> dict[str, Any]:
    from coevo.train import distributed

    distributed.init()  # rank 0 of a many-process launch: join the group before any model loads
    store, started_over = _open_run(out, config, resume)
    try:
        departures = _record_start(store, algorithm, config)
        began, earlier = time.time(), (None if started_over else store.get_meta("provenance"))
        facts = provenance(store.get_meta("started"), earlier=earlier, duration_s=0.0)
        store.set_meta("provenance", facts)
        try:
            # Calls no algorithm stage claims (data loading, a query filter) are the run's own.
            with tagged(stage=algorithm):
                summary = summary_dict(_experiments()[algorithm].run(config, store))
        except BaseException as exc:
            _record_failure(out, store, exc, facts, began, earlier)
            raise
        _finish(out, store, summary, algorithm, departures, facts, began, earlier)
    finally:
        store.close()
    from coevo.view.report import build_report

    summary["report"] = str(build_report(out))
    _write_summary(out, summary)
    return summary


def _warnings_of(store: RunStore) -> list[dict[str, Any]]:
    """The run's warnings as {kind, about, text} rows; a bug in reading them is logged and
    gives none, so that it cannot cost the summary of a run that finished."""
    import logging

    from coevo.view.warnings import run_warnings

    try:
        return [{"kind": f.kind, "about": f.about, "text": f.text} for f in run_warnings(store)]
    except Exception:  # noqa: BLE001 - reading, not running: the run's results stand without it
        logging.getLogger(__name__).exception("could not read the run's warnings; summary.json has none")
        return []


def _open_run(out: Path, config: BaseModel, resume: bool) -> tuple[RunStore, bool]:
    """The run folder's store, refused where it holds another run (or, resuming, another
    config); and whether this start begins it over."""
    existing = (out / STORE_FILE).exists()
    store = RunStore(out)
    # A start that failed before recording anything does not hold its folder: it starts over
    # with whatever config is given now, with or without --resume.
    started_over = existing and not store.holds_work()
    if existing and not resume and not started_over:
        store.close()
        raise ConfigError(
            f"{out} already holds a run; pass --resume to continue it, --fresh to start over, or choose another --out"
        )
    stored = store.get_meta("config")
    if resume and not started_over and stored is not None and stored != config.model_dump(mode="json"):
        store.close()
        raise ConfigError(
            f"{out} was started with a different config; resume it with the same config "
            f"(see `coevo show {out} --config`) or start a new run folder"
        )
    return store, started_over


def _record_start(store: RunStore, algorithm: str, config: BaseModel) -> list[dict[str, Any]] | None:
    """The run's config, algorithm, departures and status, before anything runs; returns the
    departures (None: the algorithm reproduces no paper)."""
    store.set_meta("config", config.model_dump(mode="json"))
    store.set_meta("algorithm", algorithm)
    # Said before anything runs, so a run still going shows them in `coevo view` too.
    found = _experiments()[algorithm].departures(config)
    departures = None if found is None else [d.model_dump(mode="json") for d in found]
    store.set_meta("departures", departures)
    _say_departures(departures)
    if store.get_meta("estimate") is None:  # a resumed run keeps the estimate it started with
        _record_estimate(store, algorithm, config)
    store.set_meta("started", store.get_meta("started") or time.time())
    store.set_meta("status", "running")
    store.set_meta("error", None)
    return departures


def _record_failure(out: Path, store: RunStore, exc: BaseException, facts: dict[str, Any], began: float,
                    earlier: Any) -> None:
    """Mark a run that raised, so `coevo runs` / `coevo show` tell a crash from a run still
    going; a full disk is raised as its own error, naming the folder."""
    # The time it ran counts toward the run's duration when it is resumed.
    with contextlib.suppress(Exception):
        store.set_meta("provenance", timed(facts, store.get_meta("started"), earlier=earlier,
                                           duration_s=time.time() - began))
    interrupted = isinstance(exc, KeyboardInterrupt)
    full = not interrupted and _disk_full(exc)
    error = "interrupted" if interrupted else f"{type(exc).__name__}: {exc}"[:2000]
    with contextlib.suppress(Exception):  # (a full disk may refuse these writes too)
        store.set_meta("status", "interrupted" if interrupted else "failed")
        store.set_meta("error", error)
    if full:
        raise _disk_full_error(out, exc) from exc


def _finish(out: Path, store: RunStore, summary: dict[str, Any], algorithm: str,
            departures: list[dict[str, Any]] | None, facts: dict[str, Any], began: float, earlier: Any) -> None:
    """The run's own keys added to its summary, summary.json written, the run marked finished."""
    from coevo.train import distributed

    summary.setdefault("algorithm", algorithm)
    if departures is not None:
        summary["departures"] = departures
    # How many processes trained: a launch that silently fell back to one shows here.
    summary["world_size"] = distributed.world_size()
    summary["llm_cache"] = {"hits": store.cache_hits, "misses": store.cache_misses}
    # Calls, tokens, seconds and dollars per stage and role; each training stage's steps,
    # seconds, memory and tokens (coevo/plan/cost.py): what the run cost, counted.
    summary["cost"] = run_cost(store).model_dump(mode="json")
    # What the reward-hacking monitor saw in each watched stage (docs/monitor.md).
    summary["monitor"] = monitor_summary(store)
    # The run page's warnings (a role that got no pairs, a judge that was fooled, ...): a
    # script reading summary.json sees what a person reading the page sees.
    summary["warnings"] = _warnings_of(store)
    finished = time.time()
    summary["provenance"] = timed(facts, store.get_meta("started"), finished=finished, earlier=earlier,
                                  duration_s=finished - began)
    store.set_meta("provenance", summary["provenance"])
    _write_summary(out, summary)
    store.set_meta("status", "finished")
    store.set_meta("finished", finished)
