"""Where a run departs from its paper: each algorithm's table of the paper's settings, and
the rule that compares a config with it.

A researcher who runs `examples/*_full.yaml` must be running the paper as written, and one
who runs a tiny config must be told every way it is not the paper. So each algorithm keeps,
beside its config, a list of `PaperSetting`s (a dotted config path, the paper's value, and
one line on what departing from it changes), and `find_departures` lists every setting
where a config differs. `summary.json → departures`, the run page and `coevo plan` all
show that one list. A setting the paper is silent on is not in the table (the full configs
say so in a comment).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel


class Departure(BaseModel):
    """One setting where a run is not its paper."""

    setting: str      # dotted config path, e.g. `sampling.judge.scoring`
    paper: Any        # what the paper uses (JSON-able)
    here: Any         # what this run uses
    why: str          # one line: what the departure changes


@dataclass(frozen=True)
class PaperSetting:
    """One setting the paper gives. `matches(here)` says whether a config value is the
    paper's (default: equal to `paper`); `applies(config)` limits the row to configs where
    the setting means something (e.g. a reward-model baseline's model, only when that
    baseline runs)."""

    setting: str
    paper: Any
    why: str
    matches: Callable[[Any], bool] | None = None
    applies: Callable[[Any], bool] | None = None

    def departs(self, here: Any) -> bool:
        return not (self.matches(here) if self.matches is not None else _same(here, self.paper))


def _same(here: Any, paper: Any) -> bool:
    if isinstance(paper, float) or isinstance(here, float):
        try:
            return abs(float(here) - float(paper)) <= 1e-12 * max(1.0, abs(float(paper)))
        except (TypeError, ValueError):
            return False
    return here == paper


def model_id(spec: str) -> str:
    """The model a spec names, whatever the engine, lower-cased: `vllm:Qwen/Qwen3-8B`,
    `hf:Qwen/Qwen3-8B` and `openai:Qwen/Qwen3-8B@http://…/v1` are all `qwen/qwen3-8b`."""
    model = spec.split(":", 1)[1] if ":" in spec.split("/", 1)[0] else spec
    return model.split("@", 1)[0].rstrip("/").lower()


def model_named(*names: str) -> Callable[[Any], bool]:
    """A model spec is the paper's model when its id ends with one of `names` (any engine:
    `hf:Qwen/Qwen3-8B`, `vllm:/models/Qwen3-8B` and `openai:Qwen/Qwen3-8B@http://…/v1` are
    all Qwen3-8B), case-insensitively."""
    wanted = [name.lower() for name in names]

    def matches(spec: Any) -> bool:
        if not isinstance(spec, str):
            return False
        model = model_id(spec)
        return any(model == name or model.endswith("/" + name) for name in wanted)

    return matches


def config_value(config: Any, setting: str) -> Any:
    """The value at a dotted path of a pydantic config (or plain mappings), as JSON-able data."""
    node: Any = config
    for part in setting.split("."):
        if isinstance(node, BaseModel):
            node = getattr(node, part)
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            raise KeyError(f"{setting}: {part!r} is not a section")
    return _plain(node)


def _plain(value: Any) -> Any:
    """JSON-able data: pydantic records dumped, inside lists and mappings too."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def find_departures(config: Any, paper: Iterable[PaperSetting]) -> list[Departure]:
    """Every setting of `paper` where `config` differs, in the table's order."""
    found = []
    for row in paper:
        if row.applies is not None and not row.applies(config):
            continue
        here = config_value(config, row.setting)
        if row.departs(here):
            found.append(Departure(setting=row.setting, paper=row.paper, here=here, why=row.why))
    return found


def departure_lines(departures: Iterable[Departure | dict[str, Any]]) -> list[str]:
    """One line each, for the console, `coevo plan` and the report."""
    lines = []
    for item in departures:
        d = item if isinstance(item, Departure) else Departure.model_validate(item)
        lines.append(f"{d.setting}: paper {d.paper!r}, here {d.here!r} — {d.why}")
    return lines


__all__ = ["Departure", "PaperSetting", "config_value", "departure_lines", "find_departures", "model_id", "model_named"]
