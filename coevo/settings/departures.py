"""Where a run departs from its paper: each algorithm's table of the paper's settings, and
the rule that compares a config with it.

A researcher who runs `examples/*_full.yaml` must be running the paper as written, and one
who runs a tiny config must be told every way it is not the paper. So each algorithm keeps,
beside its config, a list of `PaperSetting`s (a dotted config path, the paper's value, and
one line on what departing from it changes), and `find_departures` lists every setting
where a config differs. `summary.json → departures`, the run page and `coevo plan` all
show that one list; `coevo plan --json → settings` shows every row (`setting_rows`), the
ones that agree too. A row's value can be read from the config (its dotted path) or worked
out from it (`here_of`: what coevo does where the config has no key for it, such as how a
judge's output is decoded), and the paper's value can depend on the config (`paper_of`:
RLAC's iterations differ with the model and the output length). A setting the paper is
silent on is not in the table (the full configs say so in a comment).
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
    #: False where no setting of coevo's can make it the paper's (the benchmarks' own
    #: evaluators, unconstrained judges): the full configs list only these.
    settable: bool = True


class SettingRow(BaseModel):
    """One row of a paper's settings table against a config: `coevo plan --json → settings`."""

    setting: str
    paper: Any
    here: Any
    departs: bool
    why: str          # what departing from it changes (said whether or not this config departs)
    settable: bool = True


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
    #: The paper's value for this config, where it depends on other settings (else `paper`).
    paper_of: Callable[[Any], Any] | None = None
    #: This config's value, where no config key holds it (else the value at `setting`).
    here_of: Callable[[Any], Any] | None = None
    #: False where no coevo setting can make it the paper's (a departure coevo cannot avoid yet).
    settable: bool = True

    def departs(self, here: Any, paper: Any = None) -> bool:
        paper = self.paper if paper is None else paper
        return not (self.matches(here) if self.matches is not None else _same(here, paper))

    def row(self, config: Any) -> SettingRow:
        """This setting of `config` beside the paper's."""
        here = self.here_of(config) if self.here_of is not None else config_value(config, self.setting)
        paper = self.paper_of(config) if self.paper_of is not None else self.paper
        return SettingRow(setting=self.setting, paper=paper, here=here, departs=self.departs(here, paper), why=self.why,
                          settable=self.settable)


#: How a judge's answer is read where no setting of coevo's chooses it (DecoEvo's roles):
#: sampled under a JSON schema (constrained decoding), its reasons capped (roles/schemas.py).
SCHEMA_BOUND = "JSON schema-bound decoding, reasons cut at 160 characters"


def judge_output_setting(setting: str, paper_says: str | None, applies: Callable[[Any], bool] | None = None
                         ) -> PaperSetting:
    """The row for how a loop's judges answer: `setting` (`schema` or `free`) against the
    paper's free answers, where the paper states its format (`paper_says`: what its prompts
    ask for); `paper_says=None`: the paper does not say (no departure, coevo's way shown)."""
    if paper_says is None:
        return PaperSetting(setting, "not stated (the paper gives no judge prompt)", "the paper does not say how its "
                            "judges answer", here_of=lambda config: SCHEMA_BOUND, matches=lambda here: True,
                            applies=applies)
    return PaperSetting(setting, "free", f"the paper's judges answer freely ({paper_says}); under a JSON schema "
                        "(`schema`) a judge cannot think aloud before it answers and its reasons are cut short, "
                        "which a 135M judge needs to answer at all", matches=lambda here: here == "free",
                        applies=applies)


def thinking_settings(*roles: str) -> list[PaperSetting]:
    """A row per role for Qwen3's thinking switch (`roles.ROLE.thinking`), which none of
    the three papers states: shown with this config's value, never a departure."""
    return [PaperSetting(f"roles.{name}.thinking", "not stated",
                         "the paper does not say whether its models think before answering (Qwen3's chat template thinks "
                         "by default)",
                         here_of=lambda config, name=name: _thinking_of(config, name), matches=lambda here: True)
            for name in roles]


def _thinking_of(config: Any, role: str) -> str:
    value = config_value(config, f"roles.{role}.thinking")
    return "the chat template's default" if value is None else ("on" if value else "off")


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


def setting_rows(config: Any, paper: Iterable[PaperSetting]) -> list[SettingRow]:
    """Every setting of `paper` that applies to `config`, beside `config`'s value, in the table's order."""
    return [row.row(config) for row in paper if row.applies is None or row.applies(config)]


def find_departures(config: Any, paper: Iterable[PaperSetting]) -> list[Departure]:
    """Every setting of `paper` where `config` differs, in the table's order."""
    return [Departure(setting=r.setting, paper=r.paper, here=r.here, why=r.why, settable=r.settable)
            for r in setting_rows(config, paper) if r.departs]


def departure_lines(departures: Iterable[Departure | dict[str, Any]]) -> list[str]:
    """One line each, for the console, `coevo plan` and the report."""
    lines = []
    for item in departures:
        d = item if isinstance(item, Departure) else Departure.model_validate(item)
        fixed = "" if d.settable else " [no coevo setting changes this yet]"
        lines.append(f"{d.setting}: paper {d.paper!r}, here {d.here!r} — {d.why}{fixed}")
    return lines


__all__ = ["SCHEMA_BOUND", "Departure", "PaperSetting", "SettingRow", "config_value", "departure_lines",
           "find_departures", "judge_output_setting", "model_id", "model_named", "setting_rows",
           "thinking_settings"]
