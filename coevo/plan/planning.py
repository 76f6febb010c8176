"""`coevo plan`: what a run will do, told before any model loads.

Each algorithm turns its config into a `RunPlan`: the data after filtering and its splits
(ids, so a researcher can check which rows land where), the stages in order, each role's
model and the engine it will run on, and the departures from its paper. Nothing here loads a
model or calls one: a plan of a run on a GPU cluster is made on a laptop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, Field

from coevo.settings.departures import Departure, SettingRow, departure_lines
from coevo.plan.estimate import RunEstimate, estimate_lines

T = TypeVar("T")


class PlanStage(BaseModel):
    """One step of the run, in order."""

    name: str                 # e.g. `coevolution/round1/critic`
    kind: str                 # generate | grpo | dpo | judge | evaluate | validate | edit
    round: int | None = None
    role: str | None = None   # the role it trains or asks
    items: int | None = None  # prompts, pairs or calls it handles (None: decided at run time)
    note: str = ""


class PlanRole(BaseModel):
    role: str
    spec: str
    engine: str               # transformers | vllm | llamacpp | server | replay | python
    trained: bool


class RunPlan(BaseModel):
    algorithm: str
    #: Sizes and ids of the data after filtering; keys are the algorithm's (TAIScore:
    #: `pools`, `critic_queries`, `held_out`, `quality_histogram`, ...), each documented in
    #: its plan function. Id lists are lists of sample ids.
    data: dict[str, Any] = Field(default_factory=dict)
    stages: list[PlanStage] = Field(default_factory=list)
    roles: list[PlanRole] = Field(default_factory=list)
    departures: list[Departure] = Field(default_factory=list)
    #: Every row of the paper's settings table beside this config's value (the departures
    #: are the rows with `departs`).
    settings: list[SettingRow] = Field(default_factory=list)
    #: Plain-words remarks: model calls the run will make before training (query
    #: filtering), data the user must bring, and the like.
    notes: list[str] = Field(default_factory=list)
    #: What the run will cost (coevo/plan/estimate.py): calls, tokens, training steps, and seconds
    #: and dollars where a calibration and prices give them.
    estimate: RunEstimate | None = None


def engine_of(spec: str, *, trained: bool, options: dict[str, Any] | None = None) -> str:
    """The engine a role's spec will run on, decided from the spec alone (no model loads).

    Trained roles run in transformers (the only backend that trains; `role(generates_on=)`
    names another engine their generation runs on); the embedded
    model's frozen engine is the first installed of llama.cpp, vLLM, transformers unless the
    spec or the role's `engine` option names one.
    """
    kind, _, rest = spec.partition(":")
    if trained:
        return "transformers"
    if kind == "smollm2":
        from coevo.llm.specs import frozen_engine

        wanted = rest.strip() or (options or {}).get("engine")
        try:
            engine = frozen_engine(wanted)
        except Exception:  # an engine not installed here: say what the spec asks for
            engine = wanted or "llamacpp"
        return {"hf": "transformers"}.get(engine, engine)
    return {"hf": "transformers", "vllm": "vllm", "gguf": "llamacpp", "openai": "server",
            "replay": "replay", "python": "python"}.get(kind, kind)


def role(name: str, spec: str, *, trained: bool, options: dict[str, Any] | None = None,
         generates_on: str | None = None) -> PlanRole:
    """A role of the plan; `generates_on` names the engine a trained role writes with outside
    its optimizer steps (TAIScore's `actor_engine`, RLAC's `generator_engine`), where that is not
    transformers."""
    from coevo.llm.specs import check_spec_form

    check_spec_form(spec)  # a spec `coevo run` would refuse is refused here too, before it shows as a role
    engine = generates_on if trained and generates_on and generates_on != "transformers" else None
    return PlanRole(role=name, spec=spec, engine=engine or engine_of(spec, trained=trained, options=options),
                    trained=trained)


def source_missing(source: str) -> bool:
    """Whether a data source names a file or folder that is not on this machine (the data a
    user brings to a full config): a plan then shows the stages without sizes."""
    from pathlib import Path

    if source.startswith("bundled:") or source in ("humaneval",):
        return False
    from coevo.tasks.benchmarks import benchmark_of, benchmark_path

    # A benchmark source (`writingbench:PATH`, `openscholar:bundled:NAME`, ...) names its file after the prefix.
    path = benchmark_path(source) if benchmark_of(source) else Path(source).expanduser()
    return not path.exists()


def read_data(load: Callable[[], T], source: str, notes: list[str]) -> T | None:
    """`load()`, or None with a note when `source` is not on this machine. Data that is there
    but unreadable still raises: the run would fail on it, so the plan must too."""
    if source_missing(source):
        notes.append(f"data {source!r} is not on this machine: the plan shows the stages without the "
                     "split's ids and sizes; bring it (docs/papers.md) or point at it with --set data.source=FILE")
        return None
    return load()


#: Prompt tokens an estimate takes where the data is not on this machine.
TYPICAL_PROMPT_TOKENS = 150


def data_prompt_tokens(data: Any, notes: list[str]) -> int:
    """The mean tokens of a data block's prompts, for an estimate (TYPICAL_PROMPT_TOKENS, with a
    note, where the data is not on this machine)."""
    from coevo.plan.estimate import mean_tokens
    from coevo.tasks.loaders import load_samples

    if source_missing(data.source):
        notes.append(f"prompt lengths are taken as {TYPICAL_PROMPT_TOKENS} tokens: the data is not on this machine")
        return TYPICAL_PROMPT_TOKENS
    samples = load_samples(data.source, columns=data.columns or None, limit=data.limit)
    return mean_tokens([s.prompt for s in samples])


def plan_lines(plan: RunPlan) -> list[str]:
    """The plan as text for the terminal (`coevo plan` without --json)."""
    lines = [f"algorithm: {plan.algorithm}", "", "data:"]
    for key, value in plan.data.items():
        lines.append(f"  {key}: {_short(value)}")
    lines += ["", "roles:"]
    lines += [f"  {r.role:<12} {r.spec}  [{r.engine}{', trained' if r.trained else ', frozen'}]" for r in plan.roles]
    lines += ["", f"stages ({len(plan.stages)}):"]
    for s in plan.stages:
        size = f" ({s.items})" if s.items is not None else ""
        note = f" — {s.note}" if s.note else ""
        lines.append(f"  {s.name:<40} {s.kind}{size}{note}")
    compared = f", of {len(plan.settings)} settings compared (--json: settings)" if plan.settings else ""
    lines += ["", f"departures from the paper ({len(plan.departures)}){compared}:"]
    lines += [f"  {line}" for line in departure_lines(plan.departures)] or ["  none: this config is the paper's"]
    if plan.estimate is not None:
        lines += ["", *estimate_lines(plan.estimate)]
        lines += [f"  note: {note}" for note in plan.estimate.notes]
    if plan.notes:
        lines += ["", "notes:"] + [f"  {note}" for note in plan.notes]
    return lines


def _short(value: Any) -> str:
    """Id lists are shown as their sizes on the terminal (--json has the ids)."""
    if isinstance(value, dict) and value and all(isinstance(v, list) for v in value.values()):
        return "{" + ", ".join(f"{k}: {len(v)} ids" for k, v in value.items()) + "}"
    if isinstance(value, list) and value and isinstance(value[0], list):
        return "[" + ", ".join(f"{len(v)} ids" for v in value) + "]"
    if isinstance(value, list) and len(value) > 6:
        return f"{len(value)} ids"
    return str(value)


__all__ = ["PlanRole", "PlanStage", "RunPlan", "engine_of", "plan_lines", "read_data", "role", "source_missing"]
