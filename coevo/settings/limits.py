"""How big a run may be before `coevo plan` and `coevo run` ask the user to say they mean it.

Every number is bounded where a config is read (coevo/core/strict.py: counts at most 10⁹, token
limits by `Sampling`), but a count inside those bounds can still name more work than any
machine holds: `rounds: 1000000000` is a valid integer whose plan alone, one stage per round,
grew to 23.7 GB before the kernel killed it. So each loop setting has a soft limit here, set
far above the papers' values (ten to a hundred times), and the stages a config multiplies out
to are counted before any is built; past either, plan and run stop with one line saying what
it would cost, unless `--allow-large` says the user means it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coevo.settings.departures import config_value
from coevo.core.strict import ConfigError


@dataclass(frozen=True)
class Limit:
    """A setting's soft limit: `path` (dotted, read where the config has it), the most it may
    be without --allow-large, and what one more of it costs."""

    path: str
    most: int
    costs: str


LIMITS: tuple[Limit, ...] = (
    Limit("rounds", 100, "each round generates, trains both models and evaluates (the paper: 3)"),
    Limit("iterations", 200, "each iteration samples, validates and trains both models (the paper: 3 to 16)"),
    Limit("seeds", 100, "each seed repeats the whole run"),
    Limit("conditions", 100, "each condition is a run of its own"),
    Limit("evaluation.output_sets", 20, "each set regenerates and rescores every held-out answer (the paper: 3)"),
    Limit("grpo.num_generations", 256, "one GRPO step holds this many critiques per prompt in memory (the paper: 4)"),
    Limit("k", 1000, "outputs per prompt, each validated (the paper: 8 to 10)"),
    Limit("n", 256, "critic proposals per output, each checked by the validator (the paper: 2 to 4)"),
    Limit("inner_steps", 10_000, "each step rewrites and re-scores the solver skill (the paper: 8)"),
    Limit("audit.prompts", 10_000, "each audited prompt costs a dozen judge calls per round"),
)
#: The most stages a plan may list (rounds x seeds x conditions x the stages of a round).
MOST_STAGES = 100_000
#: Stages per round at most in any loop (TAIScore: y0, critic, pairs, actor, eval, eval_before_dpo).
STAGES_PER_ROUND = 6


def check_scale(config: Any, *, allow_large: bool = False, where: str = "the config") -> None:
    """Refuse (ConfigError, one line) a config past a soft limit or whose stages multiply past
    MOST_STAGES, naming the setting, what it costs and the way on (--allow-large)."""
    if allow_large:
        return
    multipliers: list[tuple[str, int]] = []
    for limit in LIMITS:
        value = _count(_value(config, limit.path))
        if value is None:
            continue
        if value > limit.most:
            raise ConfigError(f"{where}: {limit.path} is {value:,}, over {limit.most:,}: {limit.costs}; lower it, "
                              "or pass --allow-large if you mean it")
        if limit.path in ("rounds", "iterations", "seeds", "conditions"):
            multipliers.append((limit.path, max(value, 1)))
    stages = STAGES_PER_ROUND
    for _, value in multipliers:
        stages *= value
    if stages > MOST_STAGES:
        product = " x ".join(f"{path} {value:,}" for path, value in multipliers)
        raise ConfigError(f"{where}: {product} make about {stages:,} stages, over {MOST_STAGES:,}: the plan alone "
                          "would not fit in memory; lower one, or pass --allow-large if you mean it")


def _value(config: Any, path: str) -> Any:
    """The setting at `path`, or None where this algorithm's config has no such setting."""
    try:
        return config_value(config, path)
    except (AttributeError, KeyError):
        return None


def _count(value: Any) -> int | None:
    """A count setting's size: the number itself, or a list's length (DecoEvo's `seeds`, TAIScore's
    `conditions`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, (list, tuple)):
        return len(value)
    return None


__all__ = ["LIMITS", "MOST_STAGES", "Limit", "check_scale"]
