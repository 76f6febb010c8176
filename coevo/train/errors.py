"""The error training raises before it starts. Its own module so that the lowest train/
modules (reporting.py, settings.py) can raise it without importing the glue above them,
which imports them."""

from __future__ import annotations


class TrainError(ValueError):
    """Training could not start (bad data or settings); the message names the fix."""
