"""The base of every settings block, and the error a bad one raises.

A leaf: it imports nothing from coevo, so the training glue (train/) and llm/pricing.py, which
sit below `coevo.config` in docs/architecture.md's layers, share the rule "an unknown key is an
error" with every algorithm's config. `coevo.config` re-exports both names.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ConfigError(ValueError):
    """A config could not be read or validated; the message names the key or file."""


class StrictModel(BaseModel):
    """A settings block whose unknown keys are errors that name the key: a typo must never
    silently fall back to a default."""

    model_config = ConfigDict(extra="forbid")


__all__ = ["ConfigError", "StrictModel"]
