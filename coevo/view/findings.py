"""One warning about a run, as the run page, report.html and `coevo show` print it, and which
of two kinds it is: about this run's settings, or a finding about what happened in it.

A run too small to tell anything (too few held-out items, outputs cut at a token budget set
for speed, stages of a step or two) gets the same warnings whatever its models did: a larger
run makes them go away. The rest (a judge that was fooled, a policy that did not change, a
constant reward) say something about the models or the loop, and are read first.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

#: Warning kinds that are about the size of this run's settings, not about what its models did.
SETTINGS_KINDS = frozenset({"cut-off", "adam-first-step", "small-n"})

About = Literal["settings", "findings"]


class Finding(BaseModel):
    """One warning: `kind` (a short tag the page shows and tests look for) and the text."""

    kind: str
    text: str
    #: Where the page can show the case behind it, relative to the run's page (`samples/17`).
    link: str | None = None

    @property
    def about(self) -> About:
        """"settings" for a warning a larger run's settings would clear (SETTINGS_KINDS), else
        "findings"."""
        return "settings" if self.kind in SETTINGS_KINDS else "findings"


def split_findings(found: Iterable[Finding]) -> tuple[list[Finding], list[Finding]]:
    """(this run's settings, findings): the warnings in their order, split by `about`."""
    found = list(found)
    return ([f for f in found if f.about == "settings"], [f for f in found if f.about == "findings"])
