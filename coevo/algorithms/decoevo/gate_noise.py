"""The solver gate's noise, measured before its margin delta is set.

The gate accepts S' when its mean score on the solver-gate questions beats S's by delta
(rules.solver_gate). Two identical skills differ there too: the solver samples its answers.
A delta under that spread lets noise through; one far above it refuses real edits. So the
margin is measured, not guessed: the initial skill S0 answers the gate under several
sampling seeds, each draw scored as the gate scores (the same questions, `gate_samples`
answers to each, the incumbent rubric generator's cached rubrics of the run's first seed,
the config's criterion judge), and `rules.noise_delta` turns the draws' means into the
gain's sd and delta = k sd.

    noise = measure_in(work_dir / "calibration", config)
    overrides.append(f"delta={noise['delta']}")

Draws use seeds of their own (`draw_seeds`), never a run's and never each other's: each
stands for another, independent sample of the same skill. Their calls are cached in the
store, so measuring again costs nothing.
"""

from __future__ import annotations

import time
from typing import Any

from coevo.algorithms.decoevo.backbone import Meter, build_decoevo_roles
from coevo.algorithms.decoevo.config import DecoEvoConfig
from coevo.algorithms.decoevo.data import make_partitions
from coevo.algorithms.decoevo.loop import MethodRun, question_means
from coevo.algorithms.decoevo.rules import noise_delta
from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER

#: Draws of the initial skill's gate score. The sd over 8 means has 7 degrees of freedom (its
#: 95 % interval spans about 0.66 to 2.0 times the estimate); over 4 it spans 0.57 to 3.7
#: times, wide enough to set delta at half the noise or twice it.
DRAWS = 8
#: delta = K sd of the gain between identical skills (a sampling difference passes about 2 %
#: of the time), and at least FLOOR (a gate whose scores never moved must not take ties).
K = 2.0
FLOOR = 0.01
#: The first sampling seed of the draws: far from any run's seeds (0, 1, 2 ...).
FIRST_SEED = 10_000
#: Seeds between two draws. A backend samples a call's n answers under seeds s, s+1, ...
#: (llm/llamacpp.py), so draws one seed apart would share all but one of their answers.
SEED_STRIDE = 1_000


def draw_seeds(draws: int, first_seed: int = FIRST_SEED) -> list[int]:
    """The sampling seed of each draw."""
    return [first_seed + n * SEED_STRIDE for n in range(draws)]


def draw_scores(config: DecoEvoConfig, model: Any, draws: int, first_seed: int = FIRST_SEED,
                ) -> tuple[list[str], list[list[float | None]]]:
    """(gate question ids, per draw the gate score of each question) of the initial solver
    skill, each draw under its own sampling seed, all judged under the same rubrics."""
    from coevo.roles.query_filter import load_data

    parts = make_partitions(load_data(config.data), config.partitions)
    meter = model if isinstance(model, Meter) else Meter(model)

    def run(seed: int) -> MethodRun:  # the loop's own solve / rubrics / judge, under `seed`
        return MethodRun("zero_shot", seed, config, parts, build_decoevo_roles(config, meter, meter, seed), None, meter)

    reference = run(config.seeds[0])
    gate = reference.parts["solver_gate"]
    if not gate:
        raise ValueError("the solver gate is empty: nothing to measure its noise on")
    rubrics = reference.rubrics(gate, reference.skills[GENERATOR])
    scores = []
    for seed in draw_seeds(draws, first_seed):
        draw = run(seed)
        scores.append(question_means(draw.gate_judgments(gate, draw.skills[SOLVER], rubrics)))
    return [q.id for q in gate], scores


def measure_gate_noise(config: DecoEvoConfig, store: Any, draws: int = DRAWS, k: float = K, floor: float = FLOOR,
                       first_seed: int = FIRST_SEED, model: Any = None) -> dict[str, Any]:
    """The gate's noise and the margin from it (`rules.noise_delta`), with what it was
    measured on: the draws' seeds, the questions every draw scored readably, the judge.
    `model`: the backbone (default: the config's, its calls cached in `store`)."""
    started = time.perf_counter()
    model = model if model is not None else config.roles.load("backbone", store=store)
    ids, scores = draw_scores(config, model, draws, first_seed)
    # Paired, as the gate is: only questions every draw scored readably.
    kept = [q for q in range(len(ids)) if all(row[q] is not None for row in scores)]
    if not kept:
        raise ValueError("no solver-gate question was scored readably in every draw")
    means = [sum(row[q] for q in kept) / len(kept) for row in scores]  # type: ignore[misc]
    found = noise_delta(means, k, floor)
    return {**found, "draws": draws, "seeds": draw_seeds(draws, first_seed), "n_questions": len(kept),
            "question_ids": [ids[q] for q in kept], "rubric_seed": config.seeds[0],
            "judge": config.roles.judge.scorer or f"{config.roles.backbone.model} (the backbone)",
            "seconds": round(time.perf_counter() - started, 1)}


def measure_in(folder: Any, config: DecoEvoConfig, draws: int = DRAWS) -> dict[str, Any]:
    """`measure_gate_noise` in a run store of its own at `folder` (its calls cached there, so
    measuring again asks the model nothing)."""
    from coevo.rundir.store import RunStore

    store = RunStore(folder)
    try:
        return measure_gate_noise(config, store, draws=draws)
    finally:
        store.close()
