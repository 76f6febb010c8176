"""Run folders: start, resume and finish one experiment config.

A config names its `algorithm`; this module looks the name up in `EXPERIMENTS` (a plain
dict, no plugin system), validates the rest of the config against that experiment's
pydantic model, and gives the experiment a run store. Every experiment function returns a
JSON-able summary, written to `summary.json` beside `run.sqlite` and `report.html`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from coevo.config import ConfigError, apply_overrides, read_yaml, validate
from coevo.runlock import RunLock, run_status
from coevo.store import STORE_FILE, RunStore, StoreError

SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class Experiment:
    config: type[BaseModel]
    #: (config, store) -> the run's summary: a pydantic record (dumped as it is, fields left
    #: at None where the experiment did not set them are left out) or a plain dict.
    run: Callable[[Any, RunStore], BaseModel | dict[str, Any]]
    help: str


def summary_dict(summary: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """What `summary.json` holds for an experiment's summary record."""
    if isinstance(summary, BaseModel):
        return summary.model_dump(mode="json", exclude_unset=True)
    return dict(summary)


def _experiments() -> dict[str, Experiment]:
    # Imported here so `coevo --help` stays fast: each experiment pulls in its roles.
    from coevo.algorithms.decoevo import DecoEvoConfig, run_decoevo
    from coevo.algorithms.rlac import RlacConfig, run_rlac
    from coevo.algorithms.taiscore import TaiScoreConfig, run_taiscore
    from coevo.eval.controls import ControlsConfig, run_controls
    from coevo.algorithms.refine import RefineRunConfig, run_refinement

    return {
        "refine": Experiment(RefineRunConfig, run_refinement,
                             "critique-guided refinement over a dataset, with judges"),
        "controls": Experiment(ControlsConfig, run_controls,
                               "critique-content controls: none / generic / shuffled / matched"),
        "taiscore": Experiment(TaiScoreConfig, run_taiscore,
                               "TAIScore co-evolving critic (GRPO) and actor (DPO), with the paper's baselines"),
        "decoevo": Experiment(DecoEvoConfig, run_decoevo,
                              "DecoEvo skill co-evolution vs zero-shot, SkillOpt and SC-CoEvo"),
        "rlac": Experiment(RlacConfig, run_rlac,
                           "RLAC adversarial critic + external validator (facts or code), with baselines"),
    }


def resolve_config(data: dict[str, Any], source: str) -> tuple[str, BaseModel]:
    algorithm = data.get("algorithm")
    experiments = _experiments()
    if algorithm not in experiments:
        raise ConfigError(
            f"{source}: 'algorithm' must be one of {sorted(experiments)}; got {algorithm!r}"
        )
    return algorithm, validate(experiments[algorithm].config, data, source)


def run_experiment(
    config_path: str | Path | None,
    out: str | Path,
    *,
    resume: bool = False,
    overrides: list[str] = (),
    data: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run (or resume) the experiment a config describes in run folder `out`."""
    out = Path(out)
    source = str(config_path or "config")
    raw = apply_overrides(data if data is not None else read_yaml(config_path), list(overrides))
    algorithm, config = resolve_config(raw, source)
    from coevo.train import distributed

    distributed.die_with_launcher()
    if not distributed.is_main():
        # Ranks 1..N-1 of a many-process launch train when rank 0 says so, and nothing else:
        # no generation, no judge, never the run folder (coevo/train/distributed.py).
        distributed.follow()
        return {}
    try:
        with RunLock(out):  # one writer per run folder, for as long as the run lives
            return _run_locked(out, algorithm, config, resume)
    finally:
        distributed.end()


def _run_locked(out: Path, algorithm: str, config: BaseModel, resume: bool) -> dict[str, Any]:
    from coevo.train import distributed

    distributed.init()  # rank 0 of a many-process launch: join the group before any model loads
    existing = (out / STORE_FILE).exists()
    if existing and not resume:
        raise ConfigError(
            f"{out} already holds a run; pass --resume to continue it, or choose another --out"
        )
    store = RunStore(out)
    try:
        stored = store.get_meta("config")
        if resume and stored is not None and stored != config.model_dump(mode="json"):
            raise ConfigError(
                f"{out} was started with a different config; resume it with the same config "
                f"(see `coevo show {out} --config`) or start a new run folder"
            )
        store.set_meta("config", config.model_dump(mode="json"))
        store.set_meta("algorithm", algorithm)
        store.set_meta("started", store.get_meta("started") or time.time())
        store.set_meta("status", "running")
        store.set_meta("error", None)
        try:
            summary = summary_dict(_experiments()[algorithm].run(config, store))
        except BaseException as exc:
            # Marked, so `coevo runs` / `coevo show` tell a crash from a run still going.
            interrupted = isinstance(exc, KeyboardInterrupt)
            store.set_meta("status", "interrupted" if interrupted else "failed")
            store.set_meta("error", "interrupted" if interrupted else f"{type(exc).__name__}: {exc}"[:2000])
            raise
        summary.setdefault("algorithm", algorithm)
        # How many processes trained: a launch that silently fell back to one shows here.
        summary["world_size"] = distributed.world_size()
        summary["llm_cache"] = {"hits": store.cache_hits, "misses": store.cache_misses}
        (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
        store.set_meta("status", "finished")
        store.set_meta("finished", time.time())
    finally:
        store.close()
    from coevo.report import build_report

    summary["report"] = str(build_report(out))
    (out / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")
    return summary


def list_runs(root: str | Path) -> list[dict[str, Any]]:
    """Every run folder under `root` (any depth up to 2) with its status."""
    root = Path(root)
    rows = []
    for path in sorted({*root.glob(STORE_FILE), *root.glob(f"*/{STORE_FILE}"), *root.glob(f"*/*/{STORE_FILE}")}):
        try:
            store = RunStore(path.parent)
        except StoreError as exc:  # listed, not fatal: one bad folder must not hide the others
            rows.append({"run": str(path.parent.relative_to(root)), "algorithm": "?",
                         "status": f"unreadable: {exc}", "started": "?", "rollouts": 0, "cached_calls": 0})
            continue
        started = store.get_meta("started")
        rows.append({
            "run": str(path.parent.relative_to(root)),
            "algorithm": store.get_meta("algorithm", "?"),
            "status": run_status(path.parent, store.get_meta("status")),
            "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)) if started else "?",
            "rollouts": len(store.rollouts()),
            "cached_calls": store.cache_size(),
        })
        store.close()
    return rows
