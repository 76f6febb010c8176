"""One warning about a run, as the run page, report.html and `coevo show` print it."""

from __future__ import annotations

from pydantic import BaseModel


class Finding(BaseModel):
    """One warning: `kind` (a short tag the page shows and tests look for) and the text."""

    kind: str
    text: str
