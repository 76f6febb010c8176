"""The critique measure of TAIScore's miniature (benchmarks/learning/mini_taiscore.py,
`measures["critique"]`): the critic arms' critiques scored at the critic, without the actor,
a checkable stand-in for Table 8's critique quality.

On the held-out keys whose y0 breaks a constraint, a critique scores 1 where it names a
constraint y0 breaks, else 0; before = the frozen critic's critique of that y0, after = the
arm's (both read back from the texts the critic arms kept). A critic can name the failure and
still not help a 135M reviser that cannot act on it: this measure and the refinement gain
separate the critic from the actor.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from coevo.eval.constraints import check, constraints_of
from coevo.eval.stats import wilson_interval
from learning.mini_taiscore_critic_arms import frozen_critiques, texts_file
from learning.mini_taiscore_shared import CRITIC_ARMS, CRITIC_PAIRS, Shared
from learning.miniature import ArmResult, Measure, arm_result, comparisons
from coevo.eval.checkable import names
from coevo.core.types import Sample

CRITIQUE_TARGET = ("share of critiques that name a constraint the held-out y0 breaks (Python-checked), over the "
                   "keys whose y0 breaks one; before: the frozen critic's critique of the same y0")


def names_a_broken_constraint(sample: Sample, y0: str, critique: str) -> float | None:
    """1.0 where `critique` names a constraint of `sample` that y0 breaks (`rewards.names`:
    its cue words, its number or its words), 0.0 where it names none; None where y0 breaks
    none (there is no failure to name)."""
    failed = [c for c in constraints_of(sample) if not check(y0, c)]
    return float(any(names(critique, c) for c in failed)) if failed else None


def names_a_met_constraint(sample: Sample, y0: str, critique: str) -> float | None:
    """1.0 where `critique` names a constraint y0 already meets (a false alarm: a checklist of
    the whole prompt names the broken one too), 0.0 where it names none; None where y0 meets none."""
    met = [c for c in constraints_of(sample) if check(y0, c)]
    return float(any(names(critique, c) for c in met)) if met else None


def critique_scores(shared: Shared, critiques: dict[str, str],
                    score: Callable[[Sample, str, str], float | None] = names_a_broken_constraint) -> dict[str, float]:
    """{"id#seed": score(sample, y0, critique)} over the held-out keys `score` applies to."""
    by_key = {f"{s.id}#{seed}": s for seed in shared.seeds for s in shared.held}
    found = {k: score(by_key[k], shared.y0_held[k], c) for k, c in critiques.items() if k in by_key}
    return {k: v for k, v in found.items() if v is not None}


def critique_measure(shared: Shared, results: dict[str, ArmResult]) -> Measure | None:
    """The critic arms that ran, scored on their held-out critiques (kept in `texts_<arm>.json`)
    by `names_a_broken_constraint`, paired with the frozen critic's critique of the same y0;
    each arm's false-alarm share beside it. None where no critic arm ran."""
    ran = [arm for arm in CRITIC_ARMS if arm in results]
    if not ran:
        return None
    frozen = frozen_critiques(shared)
    before = critique_scores(shared, frozen)
    arms: dict[str, ArmResult] = {}
    notes: list[str] = []
    for arm in ran:
        critiques = _kept_critiques(shared, arm)
        if critiques is None:
            notes.append(f"{arm}: its critiques ({texts_file(shared, arm).name}) are gone; not scored")
            continue
        after = critique_scores(shared, critiques)
        arms[arm] = arm_result(before, after)
        # The share itself with its interval; and naming a broken constraint is easy for a
        # checklist of the whole prompt, so its false alarms stand beside it, the frozen critic's too.
        arms[arm].metrics = {
            "names_a_broken_constraint": _share(after),
            "names_a_met_constraint": _share(critique_scores(shared, critiques, names_a_met_constraint)),
            "frozen_names_a_met_constraint": _share(critique_scores(shared, frozen, names_a_met_constraint))}
    return Measure(target=CRITIQUE_TARGET, arms=arms, comparisons=comparisons(arms, CRITIC_PAIRS), notes=notes)


def _kept_critiques(shared: Shared, arm: str) -> dict[str, str] | None:
    path = texts_file(shared, arm)
    if not path.exists():
        return None
    return {k: v["critique"] for k, v in json.loads(path.read_text()).items()}


def _share(scores: dict[str, float]) -> dict[str, Any]:
    """{value, ci, n}: the share of 1s and its Wilson 95 % interval."""
    if not scores:
        return {"value": None, "ci": [None, None], "n": 0}
    value, low, high = wilson_interval(sum(scores.values()), len(scores))
    return {"value": value, "ci": [low, high], "n": len(scores)}
