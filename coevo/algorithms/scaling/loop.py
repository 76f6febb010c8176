"""The controlled zero-shot analysis, as TAIScore's Appendix A describes it:

    for each y0 source:      y0 = actor(x) once (or the data's column), scored S(y0)
    for each (y0, critic):   c = critic(x, y0), scored for critique quality (Table 8: x, y0, c)
    for each (y0, c, refiner): y1 = refiner(x, y0, c), scored for adherence (Table 9: x, y0,
                             c, y1) and S(y1); gain = S(y1) - S(y0)
    for each comparison:     larger minus smaller, paired per example, with a bootstrap 95 % CI

Critic scaling holds x, y0 and the self-refiner fixed and swaps the critic; refiner scaling
holds x, y0 and the one critique fixed and swaps the refiner. Each step is a stage of the run
store (its rollouts saved batch by batch, the stage marked finished at its end), so a resumed
run skips finished stages and finishes a stage cut short from its first unsaved batch; the
models load only when a stage still has work.
"""

from __future__ import annotations

from collections.abc import Callable

from coevo.algorithms.refine import with_models
from coevo.algorithms.scaling.cells import Cell, comparisons, grid_cells
from coevo.algorithms.scaling.config import COLUMN, ScalingConfig
from coevo.algorithms.scaling.deltas import ScalingSummary, cell_scores, summarise
from coevo.core.strict import ConfigError
from coevo.roles.judging import rollout_judge
from coevo.llm.call_tags import tagged
from coevo.core.progress import progress_bar
from coevo.roles.judging import judge_for
from coevo.roles.query_filter import load_data
from coevo.roles.refinement import RefinementRoles, batches, build_refinement_roles, judge_rollouts
from coevo.rundir.store import RunStore
from coevo.core.types import Rollout, Sample

Rollouts = dict[str, Rollout]  # sample id -> its rollout of one stage


class Models:
    """The analysis' models and judges, built when a stage first needs them (a resumed run
    whose stages are all finished loads none)."""

    def __init__(self, config: ScalingConfig, store: RunStore):
        self.roles, self.store = config.roles, store
        self._built: dict[tuple[str, str], RefinementRoles] = {}
        self._judges: dict[str, object] = {}

    def refinement(self, actor: str, critic: str) -> RefinementRoles:
        """Actor `actor` and critic `critic` under the shared role settings (coevo.roles.refinement)."""
        if (actor, critic) not in self._built:
            specs = with_models(self.roles, actor=actor, critic=critic)
            self._built[(actor, critic)] = build_refinement_roles(specs, self.store)
        return self._built[(actor, critic)]

    def judge(self, name: str):
        """`critique_quality`, `adherence` (the judge's model) or `gold` (S: gold.model, else the judge's)."""
        if name not in self._judges:
            judge_model = self.roles.load("judge", store=self.store)
            if name == "gold":
                model = self.roles.load("gold", store=self.store) if self.roles.gold.model else judge_model
                self._judges[name] = judge_for("gold_rubric", model, self.roles.gold.sampling)
            else:
                self._judges[name] = rollout_judge(name, judge_model, self.roles.judge.sampling)
        return self._judges[name]


def run_stage(store: RunStore, name: str, samples: list[Sample], work: Callable[[list[Sample]], list[Rollout]],
              batch_size: int | None) -> Rollouts:
    """`work` over `samples` batch by batch, each batch's rollouts saved as it ends; a
    finished stage is read back, not redone, and one cut short resumes where it stopped."""
    done = {r.sample_id: r for r in store.rollouts(name)}
    if store.step_result(name) is not None:
        return done
    todo = [s for s in samples if s.id not in done]
    with progress_bar(name, total=len(samples), completed=len(samples) - len(todo)) as advance:
        for batch in batches(todo, batch_size):
            with tagged(stage=name):
                rollouts = work(list(batch))
            for rollout in rollouts:
                store.save_rollout(name, rollout)
                done[rollout.sample_id] = rollout
            advance(len(batch))
    store.finish_step(name, {"rollouts": len(done)})
    return done


def _y0_work(cell: Cell, models: Models) -> Callable[[list[Sample]], list[Rollout]]:
    def work(batch: list[Sample]) -> list[Rollout]:
        if cell.y0.startswith(COLUMN):
            texts = [str(s.meta[cell.y0.removeprefix(COLUMN)]) for s in batch]
        else:
            texts = models.refinement(cell.y0, cell.critic).actor.respond(batch)
        rollouts = [Rollout(sample_id=s.id, x=s.prompt, y0=y, condition="scaling") for s, y in zip(batch, texts)]
        for rollout, judgment in zip(rollouts, models.judge("gold").judge(batch, texts)):
            rollout.judgments["gold_y0"] = judgment
        return rollouts
    return work


def _critique_work(cell: Cell, models: Models, y0: Rollouts) -> Callable[[list[Sample]], list[Rollout]]:
    def work(batch: list[Sample]) -> list[Rollout]:
        critic = models.refinement(cell.refiner, cell.critic).critic
        responses = [y0[s.id].y0 for s in batch]
        critiques = [group[0] for group in critic.critique([s.prompt for s in batch], responses, n=1)]
        rollouts = [Rollout(sample_id=s.id, x=s.prompt, y0=y, c=c, condition="scaling")
                    for s, y, c in zip(batch, responses, critiques)]
        judge_rollouts(rollouts, {"critique_quality": models.judge("critique_quality")}, {s.id: s for s in batch})
        return rollouts
    return work


def _revise_work(cell: Cell, models: Models, critiques: Rollouts) -> Callable[[list[Sample]], list[Rollout]]:
    def work(batch: list[Sample]) -> list[Rollout]:
        actor = models.refinement(cell.refiner, cell.critic).actor
        given = [critiques[s.id] for s in batch]
        revisions = actor.revise([s.prompt for s in batch], [g.y0 for g in given], [g.c or "" for g in given])
        rollouts = [Rollout(sample_id=s.id, x=s.prompt, y0=g.y0, c=g.c, y1=y1, condition="scaling")
                    for s, g, y1 in zip(batch, given, revisions)]
        judge_rollouts(rollouts, {"adherence": models.judge("adherence")}, {s.id: s for s in batch})
        # S(y1) of the revision as written: an empty one is scored as empty, never as y0.
        for rollout, judgment in zip(rollouts, models.judge("gold").judge(batch, revisions)):
            rollout.judgments["gold_y1"] = judgment
        return rollouts
    return work


def check_data(config: ScalingConfig, samples: list[Sample], cells: list[Cell]) -> None:
    """What the data must hold: each y0 column named, and rubrics where a model judge gives S."""
    if not samples:
        raise ConfigError(f"data {config.data.source!r} holds no samples")
    for column in sorted({c.y0.removeprefix(COLUMN) for c in cells if c.y0.startswith(COLUMN)}):
        missing = [s.id for s in samples if s.meta.get(column) in (None, "")]
        if missing:
            raise ConfigError(f"y0_column {column!r}: samples {missing[:5]} have no such column (or it is "
                              "empty); add it to the data or drop y0_column")
    gold = config.roles.gold.model or config.roles.judge.model
    if not gold.startswith("python:") and any(s.rubric is None or not s.rubric.criteria for s in samples):
        raise ConfigError(f"the gold-rubric judge ({gold}) gives S(y) against each sample's rubric, and "
                          f"{config.data.source!r} has rows without one: use data with rubrics (WritingBench) or "
                          "a python: gold scorer at roles.gold.model")


def run_scaling(config: ScalingConfig, store: RunStore) -> ScalingSummary:
    """`coevo run` entry for `algorithm: scaling`: every cell's y0, critique and revision,
    scored; then Table 5's deltas and Figure 1 (coevo.algorithms.scaling.deltas)."""
    samples = load_data(config.data)
    found = comparisons(config)
    cells = grid_cells(config)
    check_data(config, samples, cells)
    models = Models(config, store)
    y0 = {}
    for cell in cells:  # one y0 per source, shared by every cell that starts from it
        if cell.y0_stage not in y0:
            y0[cell.y0_stage] = run_stage(store, cell.y0_stage, samples, _y0_work(cell, models), config.batch_size)
    critiques = {}
    for cell in cells:
        if cell.critique_stage not in critiques:
            critiques[cell.critique_stage] = run_stage(store, cell.critique_stage, samples,
                                                       _critique_work(cell, models, y0[cell.y0_stage]),
                                                       config.batch_size)
    scores = {}
    for cell in cells:
        revisions = run_stage(store, cell.revise_stage, samples,
                              _revise_work(cell, models, critiques[cell.critique_stage]), config.batch_size)
        scores[cell] = cell_scores(samples, y0[cell.y0_stage], critiques[cell.critique_stage], revisions)
    return summarise(found, cells, scores, store, n_samples=len(samples))
