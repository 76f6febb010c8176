"""Methods as acceptance policies over one loop: a user's own, a third skill. (The paper's
four methods, told apart by what they accept: test_decoevo_loop.py, test_decoevo_runner.py.)"""

import pytest
from decoevo_fakes import config, method_run, replay, write_data

from coevo.algorithms.decoevo.rules import Decision
from coevo.algorithms.decoevo.loop import MethodPolicy, SkillCandidate
from coevo.algorithms.decoevo.skills import GENERATOR, SOLVER
from coevo.rundir.store import RunStore


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data.jsonl")


class AcceptEverything:
    """A user's acceptance policy: no gate at all (what the paper's gates guard against)."""

    def accept(self, loop, candidate, step):
        return Decision(True, "accepted without a gate", {"looked_at": candidate.name})


def test_a_users_policy_is_a_small_class(data, tmp_path):
    # The replay judge gives every answer the same verdicts: the solver gate would refuse.
    store = RunStore(tmp_path / "run")
    run = method_run(config(data), replay(), method="my_method", store=store,
                     policy=MethodPolicy(inner={SOLVER: AcceptEverything()}))
    assert run.inner_step(1) is True and run.stall == 0
    assert run.skills[SOLVER] == "NEW SOLVER SKILL" and run.solver_skill.version == 1
    [record] = [r for _, r in store.get_records("skill") if r["version"] == 1]
    assert record["why"] == "accepted without a gate" and record["looked_at"] == SOLVER
    assert record["diagnosis"] == "d"  # the proposer's notes are kept beside the policy's


def test_a_third_skill_needs_a_proposer_and_a_policy(data, tmp_path):
    def propose_style(loop, step):
        return SkillCandidate(loop.skills["style"] + f" Rule {step}.", {"source": "test"})

    store = RunStore(tmp_path / "run")
    cfg = config(data, inner_steps=3, k=1)
    initial = {SOLVER: cfg.initial_solver_skill, GENERATOR: cfg.initial_generator_skill, "style": "Be plain."}
    run = method_run(cfg, replay(), method="styled", store=store, initial_skills=initial,
                     proposers={"style": propose_style}, policy=MethodPolicy(outer={"style": AcceptEverything()}))
    result = run.run()
    # Outer steps after steps 1 and 2 (never after the last); S and G stay as they were.
    assert run.skills["style"] == "Be plain. Rule 1. Rule 2."
    assert [c.step for c in result.costs if c.kind == "outer"] == [1, 2]
    assert result.solver.version == 0 and result.rubric_generator.version == 0
    styles = [r for _, r in store.get_records("skill") if r["name"] == "style"]
    assert [(r["version"], r["parent"], r["decision"]) for r in styles] == [
        (0, None, "accepted"), (1, 0, "accepted"), (2, 1, "accepted")]
