"""The base of every settings block, and the error a bad one raises.

A leaf: it imports nothing from coevo, so the training glue (train/) and llm/pricing.py share
the rule "an unknown key is an error" with every algorithm's config.
"""

from __future__ import annotations

import math
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator

#: The largest whole number any setting may hold: a count or size past it is a typo, and
#: building what it names (a plan's stages, a pool) would exhaust the machine first.
MAX_SETTING = 10**9


class ConfigError(ValueError):
    """A config could not be read or validated; the message names the key or file."""


class StrictModel(BaseModel):
    """A settings block whose unknown keys are errors that name the key: a typo must never
    silently fall back to a default."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _numbers_in_range(cls, value: Any, info: ValidationInfo) -> Any:
        """Every number of a settings block is bounded where it is read, before anything runs:
        whole numbers are counts, sizes or seeds (>= 0 unless the field says otherwise, at
        most MAX_SETTING), real numbers finite. A field's own bounds stand where it has them.
        Lists and mappings of numbers are checked the same way; free-form blocks (`Any`: a
        backend's options, TRL's pass-through) are the backend's to check."""
        field = cls.model_fields.get(info.field_name or "")
        if field is None or "Any" in repr(field.annotation):
            return value
        own = field.metadata
        for number in _numbers_in(value):
            _check_number(number, own)
        return value


def _numbers_in(value: Any) -> list[int | float]:
    """The numbers a field's value holds: itself, or its list items / mapping values."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (list, tuple)) else [value]
    return [v for v in items if isinstance(v, (int, float)) and not isinstance(v, bool)]


def _check_number(number: int | float, own: list[Any]) -> None:
    if isinstance(number, float):
        if not math.isfinite(number):
            raise ValueError(f"{number} is not a finite number")
        return
    if number < 0 and not any(isinstance(m, (Ge, Gt)) for m in own):
        raise ValueError(f"{number} is negative; counts, sizes and seeds are 0 or more")
    if number > MAX_SETTING and not any(isinstance(m, (Le, Lt)) for m in own):
        raise ValueError(f"{number:,} is over {MAX_SETTING:,}: no run holds that many (a typo?)")


__all__ = ["MAX_SETTING", "ConfigError", "StrictModel"]
