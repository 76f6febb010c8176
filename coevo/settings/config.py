"""Configs: YAML files validated by pydantic, with `--set a.b=c` overrides.

Each algorithm declares its own config model beside its loop; this module holds what they
share (the data block) and the loading rules; the audit and monitor blocks sit
beside their features (coevo/audit/config.py, coevo/monitor/config.py); the roles block is
coevo/settings/role_specs.py. Unknown keys are errors
that name the key: a typo must never silently fall back to a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, TypeVar

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

# The old role blocks' rule lives with the roles block; ExperimentConfig applies it.
from coevo.settings.role_specs import refuse_old_role_blocks

from coevo.core.strict import ConfigError, StrictModel


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
