"""Configs: YAML files validated by pydantic, with `--set a.b=c` overrides.

Each algorithm declares its own config model beside its loop; this module holds what they
share (the audit and data blocks) and the loading rules; the roles block is
coevo/role_specs.py. Unknown keys are errors
that name the key: a typo must never silently fall back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

# The old role blocks' rule lives with the roles block; ExperimentConfig applies it.
from coevo.role_specs import refuse_old_role_blocks

# Defined in a leaf module (the training glue needs them without loading models); kept
# importable from here, where every config imports them.
from coevo.strict import ConfigError, StrictModel


def refuse_moved_keys(data: Any, moved: dict[str, str]) -> Any:
    """A `model_validator(mode="before")` body: name the new place of a key that moved."""
    if isinstance(data, dict):
        for old, new in moved.items():
            if old in data:
                raise ValueError(f"key {old!r} is now {new!r} (docs/config.md)")
    return data


class ExperimentConfig(StrictModel):
    """The base of a run's config (the file with `algorithm:`): a key that moved is refused
    with its new place, by one rule for every algorithm.

    `MOVED_KEYS` maps each old key to its new place: a top-level one (`model`) is refused
    as itself; the old per-kind blocks (`models`, `sampling`, `templates`) are refused whole,
    in one line naming the new place of each key they hold (`models.actor` ->
    `roles.actor.model`; a key not listed is sent to `roles.<role>`).
    """

    MOVED_KEYS: ClassVar[dict[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        data = refuse_moved_keys(data, cls.MOVED_KEYS)
        return refuse_old_role_blocks(data, cls.MOVED_KEYS)


class AuditConfig(StrictModel):
    """`audit:` — the judge audit inside a run (coevo/audit/, `coevo audit judge` by hand).

    Before round 1 and after every round, the run's frozen judges are probed on the first
    `prompts` held-out prompts, with the items the run's current models write: content-free
    answers ("master keys"), padding, an instruction to the judge, a second sampling seed
    and (pairwise) both shown orders. Each figure lands in the round's metrics
    (`audit_<judge>_<measure>` with `_lo`, `_hi`, `_n`), every round's record in
    summary.json -> audit, and each flag as a warning in the log and on the run page.
    """

    #: On by default: a judge that can be gamed should be said before its rewards are trusted.
    enabled: bool = True
    #: Held-out prompts the audit reads (each costs about a dozen judge calls per judge).
    prompts: int = Field(4, ge=1)
    #: Audit again after every round (taiscore), not only before the first: the judges are
    #: frozen, so the later audits ask whether the trained models' texts still beat
    #: content-free ones; off, the judges are audited once, on the starting models' items.
    after_rounds: bool = True
    #: More master keys: JSONL, one {"name": ..., "text": ...} per line (docs/audit.md).
    probes: str | None = None
    #: A trained evaluator's update whose audit is flagged for master keys is not accepted
    #: for the next round (recorded with the decision, counted, warned); off by default so
    #: the papers' loops stay as published. Independent of `enabled` (the per-round audits).
    #: Honoured by DecoEvo's rubric-generator updates; TAIScore and RLAC refuse it (their
    #: audits watch frozen judges only: docs/audit.md).
    gate: bool = False

    def refuse_gate(self, algorithm: str, why: str) -> None:
        """A loop whose audits watch no trained evaluator's own verdicts has no update for
        the gate to refuse: `gate: true` there is an error, not a silent no-op."""
        if self.gate:
            raise ValueError(f"audit.gate: {algorithm} has no trained evaluator whose update the gate could "
                             f"refuse ({why}); remove audit.gate, or use it with algorithm: decoevo")

    @model_validator(mode="after")
    def _readable_probes(self) -> "AuditConfig":
        # A bad probes file fails when the config loads, not rounds into a run.
        if self.probes is not None:
            # From master_keys.py, below config.py, not coevo.audit.probes: the audit package
            # sits layers above config.py (it runs the roles it audits; docs/architecture.md).
            from coevo.master_keys import read_probes

            try:
                read_probes(self.probes)
            except Exception as exc:  # DataError: one line naming the file and the fix
                raise ValueError(str(exc)) from None
        return self


class MonitorConfig(StrictModel):
    """`monitor:` — the reward-hacking monitor inside a run (docs/monitor.md, coevo/monitor/).

    While a trained role's stage runs (taiscore: each critic GRPO stage, checked every `every`
    optimizer steps; rlac and decoevo: round by round), the monitor follows its training reward,
    the degeneracy of what it writes (cut at the token limit, empty, repeated, too short) and
    each anchor on held-out items; a reward that rises significantly while an anchor falls or
    stays flat, or a degeneracy statistic that crosses its threshold, is flagged: a warning then,
    `summary.json -> monitor`, the run page. With `stop: true` (taiscore) the stage ends at the
    flag and its weights go back to the last check before the onset.
    """

    #: On by default: the degeneracy statistics cost nothing (they read what training
    #: writes anyway); anchors cost model calls and are the user's choice.
    enabled: bool = True
    #: What the reward was meant to measure, each taken on held-out prompts: `python:FILE.py:F`
    #: or `python:MODULE:F` (the reward's signature, f(x, y0, critique, y1) -> float) or
    #: `judge:MODEL` (a second judge of the loop's reward kind) in taiscore; `gold` (the
    #: loop's own held-out gold) in rlac and decoevo; `audit` (the share of the judge audit's
    #: master keys the evolving grading is not fooled by, per probe) in decoevo.
    anchors: list[str] = Field(default_factory=list)
    #: Optimizer steps between anchor checks (a check samples one output per held-out prompt);
    #: rlac and decoevo are watched every round.
    every: int = Field(2, ge=1, le=10_000)
    #: Held-out prompts each anchor is taken on (taiscore; the others use their held-out sets).
    prompts: int = Field(4, ge=2, le=10_000)
    #: End the stage at a flag and put back the weights of the last check before the onset
    #: (taiscore's critic stages).
    stop: bool = False

    @model_validator(mode="after")
    def _known_anchors(self) -> "MonitorConfig":
        for spec in self.anchors:
            if not (spec.startswith("python:") or spec.startswith("judge:") or spec in ("gold", "audit")):
                raise ValueError(f"anchors: {spec!r} is not an anchor; use python:FILE.py:FUNCTION, judge:MODEL, "
                                 "gold or audit (docs/monitor.md)")
        if len(set(self.anchors)) != len(self.anchors):
            raise ValueError("anchors: an anchor is listed twice")
        return self

    def refuse_unwatched(self, algorithm: str, *, gold: bool, models: bool, stop: bool,
                         audit: str | None = None) -> None:
        """What `algorithm` cannot watch is an error, not a silent no-op: `gold` / model-scored
        (`python:`, `judge:`) anchors where it has none, `stop` where it watches rounds, and
        `audit` where no reason is given why its judge audit can follow the policy (`audit`:
        that reason, kept at the call site; None where the audited judges are frozen)."""
        kinds = ", ".join(["gold"] * gold + ["python:FILE.py:FUNCTION", "judge:MODEL"] * models + ["audit"] * bool(audit))
        for spec in self.anchors:
            if spec == "audit" and not audit:
                raise ValueError(f"monitor.anchors: {algorithm} cannot take the anchor 'audit': its judges do not "
                                 f"change while it trains, so the audit's fooled rate measures the judge, not the "
                                 f"policy; its anchors: {kinds} (docs/monitor.md)")
            if (spec == "gold" and not gold) or (spec.startswith(("python:", "judge:")) and not models):
                raise ValueError(f"monitor.anchors: {algorithm} cannot take the anchor {spec!r}; its anchors: {kinds} "
                                 "(docs/monitor.md)")
        if self.stop and not stop:
            raise ValueError(f"monitor.stop: {algorithm} is watched round by round, where a flag is said and kept "
                             "but never stops the run; remove monitor.stop (docs/monitor.md)")


class DataConfig(StrictModel):
    """Where samples come from: `bundled:writing`, a JSONL/Parquet file or a `datasets` folder."""

    source: str = "bundled:writing"
    limit: int | None = None
    columns: dict[str, str] = Field(default_factory=dict)
    #: Grade each query with the TAIScore paper's query-quality prompt (Table 11) and keep
    #: those scored 3 or more, as the paper did before sharding.
    filter_queries: bool = False


T = TypeVar("T", bound=BaseModel)


def parse_override(item: str) -> tuple[list[str], Any]:
    """`a.b=c` -> (["a", "b"], c), with c read as YAML (numbers, booleans, lists)."""
    if "=" not in item:
        raise ConfigError(f"override {item!r} is not of the form key.path=value")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for item in overrides:
        path, value = parse_override(item)
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"override {item!r}: {part!r} is not a section")
        node[path[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:  # a binary file (a checkpoint, a .zip) given as the config
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {exc.start}): give a YAML config "
                          "(see examples/)") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"config file {path} is not valid YAML{where}: {problem}; fix the file") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a mapping at the top level")
    return data


def validate(model: type[T], data: dict[str, Any], source: str = "config") -> T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "(top level)"
            if err["type"] == "extra_forbidden":
                problems.append(f"unknown key {where!r}")
            else:  # pydantic prefixes a validator's own message with "Value error, ": drop it
                message = err["msg"].removeprefix("Value error, ")
                problems.append(message if where == "(top level)" else f"{where}: {message}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


__all__ = [
    "ConfigError", "DataConfig", "ExperimentConfig", "Field", "refuse_moved_keys", "StrictModel",
    "apply_overrides", "read_yaml", "validate",
]
