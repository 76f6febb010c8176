"""What a run will cost, told before it starts: `coevo plan`'s estimate.

Each paper algorithm counts, from its config and data sizes alone (no model loads), the
model calls its loop will make per stage and role and the training steps it will take
(`estimate(config, plan)` in its `paper.py`). This module turns those counts into tokens,
seconds and dollars the same way for every algorithm:

- **tokens**: a prompt's tokens are its template's text plus what is filled in, counted as
  characters / 4 (no tokenizer is loaded: a plan of a GPU-cluster run is made on a laptop);
  a completion fills `FILL` of its `max_tokens`, the share the embedded model's completions
  filled in the example runs (BENCHMARKS.md, "What a run costs, estimated");
- **seconds**: from a calibration `coevo plan --calibrate` measured on this machine
  (prompt and completion tokens/s per engine and model, training tokens/s per trained
  model; coevo/plan/calibration.py); without one, no seconds are guessed;
- **dollars**: from a role's `price` option (coevo/llm/pricing.py), as the run counts them.

The run keeps its estimate (run store meta `estimate`) so `coevo runs --estimates` can set
it beside what the run did cost (`summary.json → cost`, coevo/plan/cost.py). Stage and role
names are the cost rows' own.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, Field

#: The share of its `max_tokens` a completion is expected to fill. Measured on the
#: quickstart (llama.cpp, SmolLM2-135M): 0.5-0.8 per role; a model that stops early (a
#: judge's one-token verdict) is counted by its own, smaller limit.
FILL = 0.7
#: Characters per token of English prose in a BPE vocabulary (SmolLM2's, GPT-4's: 3.7-4.3).
CHARS_PER_TOKEN = 4.0
#: Prompts one call of an engine decodes together, where a calibration measured a batched
#: rate: transformers' LocalModel batches 8 (its default batch_size); llama.cpp decodes one at a
#: time here; vLLM's own scheduler batches whatever comes (its batched rate is not measured).
CALL_BATCH = {"transformers": 8}


class CallEstimate(BaseModel):
    """The calls one role makes in one stage (a call for n samples counts n)."""

    stage: str
    role: str
    spec: str
    engine: str = ""
    calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float | None = None
    dollars: float | None = None


class TrainingEstimate(BaseModel):
    """One training stage: its optimizer steps and the tokens its forward/backward passes read."""

    stage: str
    kind: str                 # grpo | dpo
    role: str
    spec: str
    steps: int
    #: Tokens through the policy per stage (prompt + completion of every sequence trained on).
    tokens: int
    #: Tokens the policy samples itself (GRPO's completions), outside the call counts.
    sampled_tokens: int = 0
    #: How many of them one generate call writes together (GRPO: a step's completions).
    sampling_batch: int = 1
    seconds: float | None = None


class RunEstimate(BaseModel):
    calls: list[CallEstimate] = Field(default_factory=list)
    training: list[TrainingEstimate] = Field(default_factory=list)
    total: dict[str, Any] = Field(default_factory=dict)
    #: What the estimate could not count, in plain words (data not on this machine, stages
    #: whose size is known only at run time, no calibration for seconds).
    notes: list[str] = Field(default_factory=list)


def text_tokens(text: str | None) -> int:
    """The tokens of `text`, estimated from its length."""
    return math.ceil(len(text or "") / CHARS_PER_TOKEN)


def template_tokens(template: str) -> int:
    """The tokens of a prompt template's own text (fields left out, filled parts counted apart)."""
    from coevo.prompts import load_template

    return text_tokens(load_template(template).text)


def completion_tokens(sampling: Any) -> int:
    """The tokens a completion under `sampling` is expected to write."""
    return max(1, round(sampling.max_tokens * FILL))


#: A gold rubric's criteria as the gold-rubric prompt lists them (a few, with weights).
RUBRIC_TOKENS = 60


def refinement_tokens(roles: Any) -> tuple[int, int, int]:
    """(y0, critique, revision): the tokens each output of critique-guided refinement is
    expected to write under `roles` (the actor's response and revision, the critic's)."""
    return (completion_tokens(roles.actor.sampling.response), completion_tokens(roles.critic.sampling),
            completion_tokens(roles.actor.sampling.revision))


def call_estimate(stage: str, role: str, spec: str, calls: int, *, template: str | None = None,
                  filled: int = 0, sampling: Any = None, completion: int | None = None) -> CallEstimate:
    """`calls` completions of `role` in `stage`, each asked `template` with `filled` tokens
    put into it, each writing `completion` tokens (default: `completion_tokens(sampling)`)."""
    prompt = (template_tokens(template) if template else 0) + filled
    written = completion if completion is not None else completion_tokens(sampling)
    return CallEstimate(stage=stage, role=role, spec=spec, calls=calls, prompt_tokens=calls * prompt,
                        completion_tokens=calls * written)


def mean_tokens(texts: list[str]) -> int:
    """The mean token count of data texts (prompts, references); 0 for none."""
    return round(sum(text_tokens(t) for t in texts) / len(texts)) if texts else 0


def finish(calls: list[CallEstimate], training: list[TrainingEstimate], notes: list[str], *,
           engines: dict[str, str], prices: dict[str, Any], calibration: Any = None) -> RunEstimate:
    """The estimate with engines, seconds (where `calibration` measured them), dollars (where
    a role has a price) and totals. `engines` and `prices` are keyed by role (the part of a
    cost row's role before ':', e.g. `judge` for `judge:pairwise`)."""
    calls = _merged(calls)
    for call in calls:
        base = call.role.split(":")[0].split("[")[0]
        # A role the plan does not list (DecoEvo's optimisation roles share its backbone) runs
        # on the engine of the role whose model it asks.
        # A role of several conditions runs on the engine of its condition's model: matched by
        # role and spec first (an off-the-shelf critic's server is not a trained critic's engine).
        call.engine = (engines.get(f"{base}|{call.spec}") or engines.get(call.role) or engines.get(base)
                       or engines.get(f"spec:{call.spec}", ""))
        if calibration is not None:
            call.seconds = calibration.generation_seconds(call.engine, call.spec, call.prompt_tokens,
                                                          call.completion_tokens, CALL_BATCH.get(call.engine, 1))
        price = prices.get(call.role) or prices.get(base)
        if price is not None:
            call.dollars = price.dollars(call.prompt_tokens, call.completion_tokens)
    for stage in training:
        if calibration is not None:
            # The trained role's own engine: a role name several conditions share (an off-the-shelf
            # critic's server, a trained critic's copy) is told apart by its spec.
            engine = engines.get(f"{stage.role}|{stage.spec}") or engines.get(stage.role, "")
            stage.seconds = calibration.training_seconds(stage.spec, stage.tokens, stage.sampled_tokens, engine,
                                                         stage.sampling_batch)
    if calibration is None:
        notes = [*notes, "no seconds: this machine has no calibration; `coevo plan CONFIG --calibrate` "
                 "measures one (a minute or two; kept under $COEVO_HOME)"]
    else:
        notes = [*notes, *_calibration_notes(calibration, calls, training, engines)]
        if unmeasured := sorted({f"{c.spec} on {c.engine or '?'}" for c in calls if c.seconds is None}):
            notes = [*notes, f"no seconds for {', '.join(unmeasured)}: the calibration has no rate for it "
                     "(`coevo plan CONFIG --calibrate` times local engines; a server's or a new model's speed is "
                     "not timed); the total counts the rest"]
    return RunEstimate(calls=calls, training=training, total=_totals(calls, training), notes=notes)


def _calibration_notes(calibration: Any, calls: list[CallEstimate], training: list[TrainingEstimate],
                       engines: dict[str, str]) -> list[str]:
    """Whose rates the seconds are, and what the rates that were not measured as such assume."""
    used = {id(rate): rate for rate in
            [calibration.engine_rate(c.engine, c.spec) for c in calls]
            + [calibration.training_rate(t.spec) for t in training]
            + [calibration.engine_rate(engines.get(t.role, ""), t.spec) for t in training if t.sampled_tokens]
            if rate is not None}
    notes = [f"seconds from the hardware profile {calibration.machine}: {calibration.measured}"
             if calibration.measured.startswith("published") else
             f"seconds from the rates of {calibration.machine}, measured {calibration.measured or '?'}"]
    for note in sorted({rate.note for rate in used.values() if rate.note}):
        notes.append(f"rates for {', '.join(sorted({r.spec for r in used.values() if r.note == note}))}: {note}")
    return notes


def _merged(calls: list[CallEstimate]) -> list[CallEstimate]:
    """One row per (stage, role), as the run's cost rows are, in the order first met."""
    rows: dict[tuple[str, str], CallEstimate] = {}
    for call in calls:
        row = rows.get((call.stage, call.role))
        if row is None:
            rows[(call.stage, call.role)] = call.model_copy()
        else:
            row.calls += call.calls
            row.prompt_tokens += call.prompt_tokens
            row.completion_tokens += call.completion_tokens
    return list(rows.values())


def estimate_plan(config: Any, plan: Any, paper: Any, calibration: Any = None) -> RunEstimate | None:
    """The estimate of a run of `config` whose `plan` its algorithm's `paper` module made
    (None: that algorithm counts no calls). Engines come from the plan's roles, prices from
    the roles' options."""
    count = getattr(paper, "estimate", None)
    if count is None:
        return None
    calls, training, notes = count(config, plan)
    engines: dict[str, str] = {}
    for role in plan.roles:  # `critic[coevolution]` -> `critic`: cost rows name the role alone
        engines.setdefault(role.role.split("[")[0], role.engine)
        engines.setdefault(f"{role.role.split('[')[0]}|{role.spec}", role.engine)
        engines.setdefault(f"spec:{role.spec}", role.engine)
    return finish(calls, training, notes, engines=engines, prices=role_prices(config.roles),
                  calibration=calibration)


def role_prices(roles: Any) -> dict[str, Any]:
    """Each model role's price (llm/pricing.py), where its options give one."""
    from coevo.llm.pricing import read_price

    prices = {}
    for name in roles.role_names():
        value = roles.options_for(name).get("price")
        if value is not None:
            prices[name] = read_price(value, roles.spec(name) or name)
    return prices


def _totals(calls: list[CallEstimate], training: list[TrainingEstimate]) -> dict[str, Any]:
    def known_sum(values: list[float | None]) -> float | None:
        return None if not values or any(v is None for v in values) else sum(values)  # type: ignore[arg-type]

    generation = known_sum([c.seconds for c in calls])
    trained = known_sum([t.seconds for t in training]) if training else 0.0
    priced = [c.dollars for c in calls if c.dollars is not None]
    timed = [x.seconds for x in [*calls, *training] if x.seconds is not None]
    untimed = sum(c.calls for c in calls if c.seconds is None)
    return {"calls": sum(c.calls for c in calls), "prompt_tokens": sum(c.prompt_tokens for c in calls),
            "completion_tokens": sum(c.completion_tokens for c in calls),
            "training_steps": sum(t.steps for t in training),
            "generation_seconds": None if generation is None else round(generation, 1),
            "training_seconds": None if trained is None else round(trained, 1),
            "seconds": None if generation is None or trained is None else round(generation + trained, 1),
            # Where only some rows have seconds (a server's calls are not timed): theirs, a lower bound.
            "timed_seconds": round(sum(timed), 1) if timed else None,
            "untimed_calls": untimed,
            "dollars": round(sum(priced), 6) if priced else None}


def estimate_lines(estimate: RunEstimate) -> list[str]:
    """The estimate for the terminal: one line per stage (its roles' calls summed), totals."""
    by_stage: dict[str, list[CallEstimate]] = {}
    for call in estimate.calls:
        by_stage.setdefault(call.stage, []).append(call)
    lines = [f"estimate (calls · prompt/completion tokens · seconds; completions fill {FILL:.0%} of their limit):"]
    for stage, calls in by_stage.items():
        roles = ", ".join(f"{c.role} {c.calls}" for c in calls)
        seconds = [c.seconds for c in calls]
        secs = "" if any(s is None for s in seconds) else f" · {sum(seconds):,.0f} s"  # type: ignore[misc]
        lines.append(f"  {stage:<40} {roles} · {sum(c.prompt_tokens for c in calls):,}/"
                     f"{sum(c.completion_tokens for c in calls):,}{secs}")
    for stage in estimate.training:
        secs = "" if stage.seconds is None else f" · {stage.seconds:,.0f} s"
        lines.append(f"  {stage.stage:<40} {stage.kind} {stage.role}: {stage.steps} steps · "
                     f"{stage.tokens:,} tokens trained{secs}")
    t = estimate.total
    lines.append(f"  total: {t['calls']:,} calls, {t['prompt_tokens']:,} prompt + {t['completion_tokens']:,} "
                 f"completion tokens, {t['training_steps']} training steps"
                 + (f", {_duration(t['seconds'])}" if t.get("seconds") is not None else
                    f", at least {_duration(t['timed_seconds'])} ({t['untimed_calls']:,} calls not timed)"
                    if t.get("timed_seconds") is not None else "")
                 + (f", ${t['dollars']:.4f}" if t.get("dollars") is not None else ""))
    if t.get("seconds"):
        lines.append(f"  where the time goes: {_time_shares(estimate)}")
    return lines


def _time_shares(estimate: RunEstimate) -> str:
    """Generation per engine and training, each with its time and share of the total."""
    parts: dict[str, float] = {}
    for call in estimate.calls:
        parts[f"generation on {call.engine or '?'}"] = parts.get(f"generation on {call.engine or '?'}", 0.0) + (
            call.seconds or 0.0)
    parts["training"] = sum(stage.seconds or 0.0 for stage in estimate.training)
    total = sum(parts.values()) or 1.0
    return ", ".join(f"{name} {_duration(seconds)} ({seconds / total:.0%})"
                     for name, seconds in sorted(parts.items(), key=lambda kv: -kv[1]) if seconds)


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.0f} s"


__all__ = ["CHARS_PER_TOKEN", "FILL", "CallEstimate", "RunEstimate", "TrainingEstimate", "call_estimate",
           "completion_tokens", "estimate_lines", "estimate_plan", "finish", "mean_tokens", "role_prices",
           "template_tokens", "text_tokens"]
