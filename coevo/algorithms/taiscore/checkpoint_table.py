"""Table 1 over a finished TAIScore run's saved checkpoints (`coevo eval checkpoints`).

The paper's Table 1 scores the actor checkpoints on benchmarks the run never trained on
(WritingBench, HelloBench's OEQA and HTG; DeepResearch-Gym for deep research): "each
checkpoint generates three independent output sets under the same decoding configuration;
each set is evaluated separately, and the table reports the mean and sd of the three
scores" (§5.1). A run scores its own held-out prompts after every round; this scores every
actor it saved afterwards, on any number of benchmark sets:

    rows      π_0 (the base actor, once) and every condition's and seed's π_r, r = 1 … R
    columns   per benchmark set: the gold-rubric score (samples with a rubric: the
              benchmark's checklist) and, for samples with reference key points,
              DeepResearch-Gym's KPR, KPC and report quality
    cell      mean ± sd over the output sets of each set's mean, with the items per set (n)

Generation is the run's: the actor's response decoding on its `actor_engine`, output set j
seeded as the run's own output sets are (seed + 7919 (j − 1); coevo/algorithms/taiscore/
evaluation.py), so set 1 of a held-out prompt is the answer the run itself saw. Scoring is
the run's judge (or `--judge`) with each sample's rubric — not each benchmark's official
evaluator, the departure the run's `evaluation.evaluator` row already names.

Resumable: each (checkpoint, benchmark, set) cell is a record in the run store, written
when it is scored, and never redone (the command holds the folder's run lock meanwhile); the model calls are cached in the store as the run's
are. The table goes to RUN/table1.json, RUN/table1.md and the store's "tables" meta, which
the run page shows.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from coevo.algorithms.taiscore.config import TaiScoreConfig
from coevo.eval.deepresearch_gym import judge_reports, set_metrics
from coevo.eval.stats import mean_sd
from coevo.core.progress import map_batches
from coevo.roles.actor import Actor
from coevo.roles.deepresearch import key_points_of
from coevo.roles.deepresearch_official import report_judges
from coevo.roles.judging import judge_for, judge_model
from coevo.rundir.store import RunStore
from coevo.core.types import Sample

log = logging.getLogger(__name__)

#: The records of scored cells in the run store, one per (checkpoint, benchmark, output set).
RECORD_KIND = "table1_cell"
#: Where the table shows on the run page (the store's "tables" meta).
TABLE_TITLE = "Table 1: saved checkpoints on benchmark sets (mean ± sd over output sets)"
#: The seed offset between output sets: the run's own (`evaluation._set_actor`).
SET_SEED_STEP = 7919
GOLD = "gold_score"
REPORT_METRICS = ("kpr", "kpc", "report_quality")


class TableError(ValueError):
    """A run or data set Table 1 cannot be made from; the message names the fix."""


@dataclass(frozen=True)
class Checkpoint:
    """One saved actor: `path` None is the base weights (π_0)."""

    label: str
    condition: str
    seed: int
    round: int
    path: str | None


@dataclass(frozen=True)
class BenchmarkSet:
    """One `--data` set: its column name, its source spec and its samples."""

    name: str
    source: str
    samples: list[Sample]


class Cell(BaseModel):
    """One checkpoint's score on one benchmark set under one metric, over its output sets."""

    mean: float | None
    sd: float | None
    sets: int
    n: int
    set_means: list[float | None]

    def text(self) -> str:
        if self.mean is None:
            return "—"
        spread = f" ± {self.sd:.3f}" if self.sets > 1 and self.sd is not None else ""
        return f"{self.mean:.3f}{spread} (n={self.n}, {self.sets} set{'s' if self.sets != 1 else ''})"


class Table1(BaseModel):
    """RUN/table1.json: the rows, the benchmark columns, and how they were made."""

    run: str
    output_sets: int
    judge: str
    columns: list[str]
    sources: dict[str, str]
    rows: list[dict[str, Any]]
    notes: list[str]

    def markdown(self) -> str:
        head = ["checkpoint", *self.columns]
        lines = [f"# {TABLE_TITLE}", "", f"run {self.run}; judge {self.judge}; {self.output_sets} output set(s)", "",
                 "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(str(row.get(c) or "—") for c in head) + " |" for row in self.rows]
        return "\n".join([*lines, "", *(f"- {note}" for note in self.notes), ""])


def saved_checkpoints(summary: dict[str, Any], seed: int) -> list[Checkpoint]:
    """π_0, then each condition's (and seed's) actor after every round, from summary.json;
    a round whose actor was not retrained (no preferred revision) keeps its predecessor's."""
    conditions = summary.get("conditions") or [{"condition": summary.get("condition"), "seed": seed,
                                                "tag": summary.get("condition"), "rounds": summary.get("rounds")}]
    found = [Checkpoint("π_0 (base)", "base", seed, 0, None)]
    for result in conditions:
        for record in result.get("rounds") or []:
            path = (record.get("checkpoints") or {}).get("actor")
            found.append(Checkpoint(f"{result['tag']} π_{record['round']}", result["condition"], int(result["seed"]),
                                    int(record["round"]), path))
    return found


def benchmark_set(named_source: str, limit: int | None) -> BenchmarkSet:
    """`NAME=SPEC` or `SPEC` (named by its file's stem) loaded; a set with nothing Table 1 can
    score (no rubric, no key points) is refused."""
    from coevo.tasks.loaders import load_samples

    # NAME=SPEC: the "=" before the spec's own "kind:" (a path may hold "=" itself).
    name, _, source = named_source.partition("=") if "=" in named_source.split(":", 1)[0] else ("", "", named_source)
    name = name or Path(source.split(":", 1)[-1]).stem or source
    samples = load_samples(source, limit=limit)
    if not any(_scorable(s) for s in samples):
        raise TableError(f"--data {named_source}: none of its {len(samples)} samples has a gold rubric (a checklist) "
                         "or reference key points, so nothing could score the answers; give writingbench:PATH, "
                         "hellobench:PATH, deepresearch_gym:PATH or a file whose rows carry a rubric")
    return BenchmarkSet(name, source, samples)


def _scorable(sample: Sample) -> bool:
    return bool(sample.rubric is not None and sample.rubric.criteria) or bool(key_points_of(sample))


class CheckpointScorer:
    """Scores checkpoints on benchmark sets cell by cell, the run's way (see the module doc)."""

    def __init__(self, run_dir: Path, store: RunStore, config: TaiScoreConfig, judge_spec: str | None,
                 backend: Any = None):
        from coevo.algorithms.backend import default_backend

        self.run_dir, self.store, self.config = run_dir, store, config
        self.backend = backend or default_backend()
        self.judge_spec = judge_spec or config.roles.judge.model
        self._judge: Any = None
        self._copy: Any = None

    def judges(self) -> tuple[Any, Any]:
        """(gold-rubric judge, DeepResearch-Gym judges or None): the run's judge, loaded once."""
        if self._judge is None:
            from coevo.llm.cache import CachedModel
            from coevo.llm.python_functions import PythonFunction

            roles = self.config.roles
            model = judge_model(self.judge_spec, self.backend.load_frozen, **roles.options_for("judge"))
            cached = model.bound(self.store) if isinstance(model, PythonFunction) else CachedModel(model, self.store)
            reports = (None if isinstance(model, PythonFunction) else
                       report_judges(cached, roles.judge.sampling, self.config.evaluation.deepresearch_protocol))
            self._judge = (judge_for("gold_rubric", cached, roles.judge.sampling), reports)
        return self._judge

    def generator(self, checkpoint: Checkpoint) -> Any:
        """The actor's generation model on `checkpoint`'s weights, on the run's `actor_engine`."""
        from coevo.algorithms.engines import GenerationCopy
        from coevo.train.stages import resolved_path

        roles = self.config.roles
        options = roles.options_for("actor")
        if self._copy is None or checkpoint.path is None:  # the base: fresh weights, whatever was restored before
            if self._copy is not None:
                self._copy.close()
            local = self.backend.load_trainable(roles.actor.model, **options)
            self._copy = GenerationCopy(self.backend, "actor", roles.actor.model, options, local,
                                        self.config.actor_engine, self.run_dir / "engines" / "table1")
        path = resolved_path(checkpoint.path, self.run_dir)
        if path is not None:
            if not Path(path).exists():
                raise TableError(f"{checkpoint.label}: its checkpoint {path} is missing from the run folder; "
                                 "restore the folder's checkpoints/ (or finish the run with --resume)")
            self.backend.restore(self._copy.local, path, self.config.dpo)
        return self._copy.model(path)

    def close(self) -> None:
        if self._copy is not None:
            self._copy.close()

    def score_cell(self, checkpoint: Checkpoint, bench: BenchmarkSet, output_set: int, model: Any) -> dict[str, Any]:
        """One output set of `checkpoint` on `bench`, scored: {metric: set mean, metric_n: items}."""
        from coevo.llm.cache import CachedModel

        sampling = self.config.roles.actor.sampling.response
        seed = (checkpoint.seed or 0) + SET_SEED_STEP * (output_set - 1)
        actor = Actor(CachedModel(model, self.store), sampling.model_copy(update={"seed": seed}))
        label = f"{checkpoint.label} on {bench.name}, set {output_set}"
        size = self.config.batch_size
        answers = map_batches(actor.respond, bench.samples, size, f"{label}: answers")
        gold, reports = self.judges()
        found: dict[str, Any] = {}
        rubric = [i for i, s in enumerate(bench.samples) if s.rubric is not None and s.rubric.criteria]
        if rubric:
            judged = map_batches(lambda rows: gold.judge([s for s, _ in rows], [y for _, y in rows]),
                                 [(bench.samples[i], answers[i]) for i in rubric], size, f"{label}: gold rubric")
            scores = [j.score for j in judged if j.valid and j.score is not None]
            found |= {GOLD: sum(scores) / len(scores) if scores else None, f"{GOLD}_n": len(scores),
                      f"{GOLD}_invalid": len(judged) - len(scores)}
        keyed = [i for i, s in enumerate(bench.samples) if key_points_of(s)]
        if keyed and reports is not None:
            rows = [(bench.samples[i], answers[i]) for i in keyed]
            judged = map_batches(lambda part: judge_reports(*reports, [s for s, _ in part], [y for _, y in part]),
                                 rows, size, f"{label}: DeepResearch-Gym")
            found |= {k: v for k, v in set_metrics(judged).items() if not k.endswith(("_lo", "_hi"))}
        return found


def score_checkpoints(run_dir: Path, sources: list[str], *, output_sets: int = 3, limit: int | None = None,
                      judge: str | None = None, backend: Any = None) -> Table1:
    """Table 1 of the TAIScore run in `run_dir` on `sources` (see the module doc), written
    beside the run and returned. Cells scored by an earlier call are read back, not redone."""
    from coevo.llm.python_functions import is_python_spec

    check_run_folder(run_dir)
    store = RunStore(run_dir)
    config = _stored_config(run_dir, store)
    checkpoints = saved_checkpoints(_summary(run_dir), config.seed)
    benches = [benchmark_set(source, limit) for source in sources]
    _distinct_names(benches)
    scorer = CheckpointScorer(run_dir, store, config, judge, backend)
    try:
        cells = _scored_cells(scorer, checkpoints, benches, output_sets)
    finally:
        scorer.close()
    table = _table(run_dir, checkpoints, benches, cells, output_sets, scorer.judge_spec,
                   no_report_judge=is_python_spec(scorer.judge_spec))
    _write(run_dir, store, table)
    return table


def check_run_folder(run_dir: Path) -> None:
    """Refuse a folder that holds no run store (before anything is written into it)."""
    from coevo.rundir.store import STORE_FILE

    if not (run_dir / STORE_FILE).is_file():
        raise TableError(f"{run_dir} is not a run folder (no {STORE_FILE}): give the folder `coevo run` wrote")


def _scored_cells(scorer: CheckpointScorer, checkpoints: list[Checkpoint], benches: list[BenchmarkSet],
                  output_sets: int) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every (checkpoint, benchmark)'s output-set records: read from the store where an
    earlier call scored them, else generated and scored now and stored at once."""
    cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for checkpoint in _base_first(checkpoints):
        model = None  # loaded only when a cell of this checkpoint is still to score
        for bench in benches:
            for j in range(1, output_sets + 1):
                key = _record_key(checkpoint, bench, j, scorer.judge_spec)
                record = scorer.store.get_record(RECORD_KIND, key)
                if record is None:
                    model = model if model is not None else scorer.generator(checkpoint)
                    record = scorer.score_cell(checkpoint, bench, j, model)
                    scorer.store.put_record(RECORD_KIND, key, record)  # a killed command resumes after it
                cells.setdefault((checkpoint.label, bench.name), []).append(record)
    return cells


def _stored_config(run_dir: Path, store: RunStore) -> TaiScoreConfig:
    stored = store.get_meta("config")
    if not stored or stored.get("algorithm") != "taiscore":
        found = stored.get("algorithm") if stored else "no config"
        raise TableError(f"{run_dir}: Table 1 scores a TAIScore run's actor checkpoints; this run is {found}")
    return TaiScoreConfig.model_validate(stored)


def _summary(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        summary = {}
    if not summary.get("rounds") and not summary.get("conditions"):
        raise TableError(f"{run_dir}: the run has no finished rounds in summary.json (is it still running, or was "
                         "it stopped?); finish it with `coevo run CONFIG --out RUN --resume` first")
    return summary


def _distinct_names(benches: list[BenchmarkSet]) -> None:
    names = [b.name for b in benches]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise TableError(f"two --data sets are both named {', '.join(twice)}: name them, e.g. --data OEQA=hellobench:PATH")


def _base_first(checkpoints: list[Checkpoint]) -> list[Checkpoint]:
    """The base weights first (one load of them), then each saved actor, restored in turn."""
    return sorted(checkpoints, key=lambda c: c.path is not None)


def _record_key(checkpoint: Checkpoint, bench: BenchmarkSet, output_set: int, judge: str) -> str:
    """A cell's identity: the weights, their seed, the data (source and size), the set, the
    judge: a changed file or judge is scored anew instead of answered by an old cell."""
    ids = ",".join(s.id for s in bench.samples)
    return json.dumps([checkpoint.path or "base", checkpoint.seed, bench.source, ids, output_set, judge])


def _table(run_dir: Path, checkpoints: list[Checkpoint], benches: list[BenchmarkSet],
           cells: dict[tuple[str, str], list[dict[str, Any]]], output_sets: int, judge: str, *,
           no_report_judge: bool) -> Table1:
    columns: list[str] = []
    rows = [{"checkpoint": c.label, "condition": c.condition, "seed": c.seed, "round": c.round, "cells": {}}
            for c in checkpoints]
    for bench in benches:
        for metric in (GOLD, *REPORT_METRICS):
            column = bench.name if metric == GOLD else f"{bench.name} {metric}"
            found = [_cell(cells[(c.label, bench.name)], metric) for c in checkpoints]
            if all(cell.mean is None for cell in found):
                continue
            columns.append(column)
            for row, cell in zip(rows, found):
                row["cells"][column] = cell.model_dump()
                row[column] = cell.text()
    notes = ["cells: mean over output sets of each set's mean score, ± the sd over sets; n = items scored per set",
             f"scored by {judge} with each sample's rubric, not each benchmark's official evaluator"]
    if no_report_judge and any(key_points_of(s) for b in benches for s in b.samples):
        notes.append("key-point samples left unscored: KPR, KPC and report quality need a model judge (--judge)")
    return Table1(run=str(run_dir), output_sets=output_sets, judge=judge, columns=columns,
                  sources={b.name: b.source for b in benches}, rows=rows, notes=notes)


def _cell(records: list[dict[str, Any]], metric: str) -> Cell:
    means = [r.get(metric) for r in records]
    present = [m for m in means if m is not None]
    n = int(records[0].get(f"{metric}_n") or 0) if records else 0
    if not present:
        return Cell(mean=None, sd=None, sets=0, n=n, set_means=means)
    mean, sd = mean_sd(present)
    return Cell(mean=mean, sd=sd if len(present) > 1 else None, sets=len(present), n=n, set_means=means)


def _write(run_dir: Path, store: RunStore, table: Table1) -> None:
    (run_dir / "table1.json").write_text(table.model_dump_json(indent=2), encoding="utf-8")
    (run_dir / "table1.md").write_text(table.markdown(), encoding="utf-8")
    shown = {"columns": ["checkpoint", *table.columns],
             "rows": [{c: row.get(c) for c in ["checkpoint", *table.columns]} for row in table.rows]}

    def add(tables: dict[str, Any]) -> dict[str, Any]:
        return {**(tables or {}), TABLE_TITLE: shown}

    store.update_meta("tables", add, {})
