"""Configs: YAML files validated by pydantic, with `--set a.b=c` overrides.

Each algorithm declares its own config model beside its loop; this module holds what they
share (named model roles, sampling blocks) and the loading rules. Unknown keys are errors
that name the key: a typo must never silently fall back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

# Defined in a leaf module (the training glue needs them without loading models); kept
# importable from here, where every config imports them.
from coevo.strict import ConfigError, StrictModel
from coevo.types import JudgeSampling, Sampling


class ModelRoles(StrictModel):
    """Named model roles (each a model spec, see `coevo models`) and their backend options.

    Every algorithm's `models` section is one of these, so options are set the same way in
    all of them: `options` maps a role name (or `default`, for every role) to the keyword
    options of the backend its spec resolves to (threads, engine, concurrency, timeouts, ...):

        models:
          judge: openai:Qwen3-8B@http://10.0.0.5:8000/v1
          options:
            default: {n_threads: 1}
            judge: {concurrency: 64, timeout: 120}

    A role's own entry wins over `default`. `engine` picks the embedded model's engine
    (`llamacpp`, `vllm`, `hf`) for frozen roles, so `--set models.options.default.engine=llamacpp`
    switches a whole run. Options the backend does not take fail when the run starts,
    naming the option and the ones it takes.
    """

    options: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def role_names(cls) -> list[str]:
        return [name for name in cls.model_fields if name != "options"]

    @model_validator(mode="after")
    def _known_roles(self) -> "ModelRoles":
        unknown = sorted(set(self.options) - {"default", *self.role_names()})
        if unknown:
            raise ValueError(f"options for unknown role(s) {unknown}; the roles are "
                             f"{self.role_names()} (or `default` for all)")
        return self

    def options_for(self, role: str) -> dict[str, Any]:
        """The backend options of `role`: `default` overlaid with the role's own."""
        return {**self.options.get("default", {}), **self.options.get(role, {})}

    def load(self, role: str, *, spec: str | None = None, store: Any = None, trainable: bool = False) -> Any:
        """The model of `role` (or `spec` in that role's place) with the role's options; a
        trainable one through `load_trainable`, which tells the other ranks to load it too."""
        if trainable:
            from coevo.train.trainable import load_trainable

            return load_trainable(spec or getattr(self, role), store=store, **self.options_for(role))
        from coevo.llm.specs import load_model

        return load_model(spec or getattr(self, role), store=store, trainable=False, **self.options_for(role))


def refuse_moved_keys(data: Any, moved: dict[str, str]) -> Any:
    """A `model_validator(mode="before")` body: name the new place of a key that moved."""
    if isinstance(data, dict):
        for old, new in moved.items():
            if old in data:
                raise ValueError(f"key {old!r} is now {new!r} (see ModelRoles in coevo/config.py)")
    return data


class Models(ModelRoles):
    """The refinement roles. Every role defaults to the embedded model so a config runs
    offline; real work points them at larger models."""

    actor: str = "smollm2"
    critic: str = "smollm2"
    judge: str = "smollm2"


class SamplingConfig(StrictModel):
    """The papers' decoding settings as defaults (TAIScore Table 12; the refiner's and the
    judge's 2048-token limits are those of the authors' reward code)."""

    rollout: Sampling = Sampling(temperature=0.8, top_p=0.95, max_tokens=256)
    revision: Sampling = Sampling(temperature=0.2, top_p=0.95, max_tokens=2048)
    judge: JudgeSampling = JudgeSampling(temperature=0.2, top_p=1.0, max_tokens=2048)


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
            from coevo.audit.probes import read_probes

            try:
                read_probes(self.probes)
            except Exception as exc:  # DataError: one line naming the file and the fix
                raise ValueError(str(exc)) from None
        return self


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
            else:
                problems.append(f"{where}: {err['msg']}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


__all__ = [
    "ConfigError", "DataConfig", "Field", "ModelRoles", "Models", "SamplingConfig", "refuse_moved_keys", "StrictModel", "apply_overrides",
    "read_yaml", "validate",
]
