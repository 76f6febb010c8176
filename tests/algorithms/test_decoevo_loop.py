"""DecoEvo's loop on replay models: what each role sees, stalls, triggers, decisions."""

import json

import pytest
from decoevo_fakes import (
    BLIND,
    EXPLAIN,
    GENERATOR,
    GOLD,
    GOLD_SECRET,
    JUDGE,
    STRUCTURAL,
    config,
    method_run,
    replay,
    rubric,
    verdicts,
    write_data,
)

from coevo.algorithms.decoevo.config import PARTITIONS
from coevo.algorithms.decoevo.data import make_partitions
from coevo.algorithms.decoevo.skills import read_skill_file
from coevo.rundir.store import RunStore
from coevo.tasks.loaders import load_samples


@pytest.fixture
def data(tmp_path):
    return write_data(tmp_path / "data.jsonl")



def user_texts(model):
    return [conversation[-1].content for conversation in model.calls]


# -- partitions ----------------------------------------------------------------------------
def test_partitions_are_disjoint_cover_the_data_and_respect_caps(data):
    samples = load_samples(str(data))
    cfg = config(data)
    parts = make_partitions(samples, cfg.partitions)
    assert list(parts) == list(PARTITIONS)
    ids = [s.id for group in parts.values() for s in group]
    assert len(ids) == len(set(ids))
    assert len(parts["test"]) <= 2 and len(parts["diagnostic"]) <= 2
    uncapped = make_partitions(samples, config(data, partitions={}).partitions)
    assert sorted(s.id for g in uncapped.values() for s in g) == sorted(s.id for s in samples)
    # The same seed gives the same split; the hash does not depend on sample order.
    again = make_partitions(list(reversed(samples)), config(data, partitions={}).partitions)
    assert {n: {s.id for s in g} for n, g in again.items()} == {n: {s.id for s in g} for n, g in uncapped.items()}


def test_unknown_partition_name_is_a_config_error(data):
    with pytest.raises(ValueError, match="unknown name"):
        config(data, partitions={"sizes": {"tset": 2}})


# -- what each role sees ---------------------------------------------------------------------
def test_contrastive_first_stage_never_receives_the_rubric(data):
    model = replay()
    run = method_run(config(data), model)
    run.outer_step(1)
    blind = [c for c in model.calls if BLIND in c[-1].content]
    assert blind, "the near-tie audit never ran"
    for conversation in blind:
        assert len(conversation) == 1  # stage 1 is a fresh conversation
        text = conversation[0].content
        assert "Meets the length" not in text and "Avoids cliches" not in text
        assert "Rubric" not in text and "rubric" not in text and "0." not in text  # no scores
    explain = [c for c in model.calls if EXPLAIN in c[-1].content]
    assert explain and len(explain) <= len(blind)
    for conversation in explain:
        # Stage 2 continues the stage-1 exchange: the preference was fixed before the rubric.
        assert BLIND in conversation[0].content and conversation[1].role == "assistant"
        assert "Meets the length" in conversation[-1].content


def test_structural_auditor_sees_no_response_and_no_score(data):
    model = replay()
    run = method_run(config(data), model)
    run.outer_step(1)
    audits = [t for t in user_texts(model) if STRUCTURAL in t]
    assert audits
    for text in audits:
        assert "answer one" not in text and "answer two" not in text
        assert "Meets the length" in text  # the generated rubric
        assert "Writing tasks" in text     # the family's fixed audit specification


def test_gold_rubrics_reach_only_the_grader(data, tmp_path):
    model = replay()
    run = method_run(config(data), model, store=RunStore(tmp_path / "run"))
    result = run.run()
    assert result.test_mean == pytest.approx((7 - 1) / 9)
    for text in user_texts(model):
        if GOLD_SECRET in text:
            assert GOLD in text, "a gold rubric leaked into an optimisation role"
    assert any(GOLD in t for t in user_texts(model))


# -- inner step: gate, stall, trigger ---------------------------------------------------------
def _gate_rules(candidate_satisfies: bool):
    """The candidate skill's answers satisfy both criteria (or neither); the incumbent one."""
    return dict(
        solver=[{"match": ["NEW SOLVER SKILL", "Write your answer"], "completions": ["candidate answer"]},
                {"match": "Write your answer", "completions": ["incumbent answer"]}],
        judge=[{"match": [JUDGE, "candidate answer"], "completions": [verdicts(candidate_satisfies, candidate_satisfies)]},
               {"match": JUDGE, "completions": [verdicts(True, False)]}])


def test_solver_candidate_that_beats_the_margin_is_accepted(data, tmp_path):
    store = RunStore(tmp_path / "run")
    run = method_run(config(data), replay(**_gate_rules(True)), method="skillopt", store=store)
    assert run.inner_step(1) is True
    assert run.solver_skill.text == "NEW SOLVER SKILL" and run.solver_skill.version == 1
    assert run.stall == 0
    [record] = [r for _, r in store.get_records("skill") if r["version"] == 1]
    assert record["decision"] == "accepted" and record["parent"] == 0
    assert "+NEW SOLVER SKILL" in record["diff"] and "gain +0.333" in record["why"]


def test_solver_candidate_below_the_margin_is_rejected_and_counts_a_stall(data, tmp_path):
    store = RunStore(tmp_path / "run")
    run = method_run(config(data), replay(**_gate_rules(False)), method="skillopt", store=store)
    assert run.inner_step(1) is False and run.stall == 1
    assert run.inner_step(2) is False and run.stall == 2
    assert run.solver_skill.version == 0
    versions = [r for _, r in store.get_records("skill") if r["name"] == "solver"]
    assert [(r["version"], r["decision"], r["parent"]) for r in versions] == [
        (0, "accepted", None), (1, "rejected", 0), (2, "rejected", 0)]


def test_delta_is_a_margin_not_just_a_tie_breaker(data):
    # The candidate gains exactly 1/3 on the gate; delta above that refuses it.
    run = method_run(config(data, delta=0.34), replay(**_gate_rules(True)), method="skillopt")
    assert run.inner_step(1) is False and run.stall == 1
    run = method_run(config(data, delta=1 / 3), replay(**_gate_rules(True)), method="skillopt")
    assert run.inner_step(1) is True


def _outer_steps(result):
    return [c.step for c in result.costs if c.kind == "outer"]


def test_outer_step_every_k_inner_steps(data):
    # The solver gate accepts every step (no stalls): only k triggers the outer loop.
    result = method_run(config(data, inner_steps=5, k=2, s=9), replay(**_gate_rules(True))).run()
    assert _outer_steps(result) == [2, 4]


def test_outer_step_after_s_consecutive_rejections(data):
    result = method_run(config(data, inner_steps=5, k=9, s=2), replay(**_gate_rules(False))).run()
    # Rejections at 1, 2 -> outer after 2 (stall reset); 3, 4 -> outer after 4; none after the last.
    assert _outer_steps(result) == [2, 4]


def test_skillopt_and_zero_shot_never_touch_the_generator(data):
    skillopt = method_run(config(data, inner_steps=3), replay(**_gate_rules(False)), method="skillopt").run()
    assert _outer_steps(skillopt) == [] and skillopt.rubric_generator.version == 0
    model = replay()
    zero = method_run(config(data, inner_steps=3), model, method="zero_shot").run()
    assert zero.solver.version == 0 and zero.costs == []
    assert not any("You improve" in t for t in user_texts(model))


# -- outer step: the two acceptance rules on the same candidate -------------------------------
def _easier_generator_rules():
    """G' writes an easy rubric ('Is text'): every answer satisfies it, and it covers less."""
    easy = rubric(("Is text", 1), ("Has words", 1))
    return dict(
        generator=[{"match": [GENERATOR, "NEW GENERATOR SKILL"], "completions": [easy]},
                   {"match": GENERATOR, "completions": [rubric(("Meets the length", 2), ("Avoids cliches", 1))]}],
        judge=[{"match": [JUDGE, "Is text"], "completions": [verdicts(True, True)]},
               {"match": JUDGE, "completions": [verdicts(True, False)]}],
        structural=[{"match": [STRUCTURAL, "Is text"], "completions": [json.dumps(
                        {"rationale": "misses every constraint", "adequacy": 2, "repair": "r"})]},
                    {"match": STRUCTURAL, "completions": [json.dumps(
                        {"rationale": "omits the audience", "adequacy": 7, "repair": "r"})]}])


def test_score_coupled_accepts_the_easier_generator_decoupled_rejects_it(data, tmp_path):
    coupled = method_run(config(data), replay(**_easier_generator_rules()), method="sc_coevo")
    assert coupled.outer_step(1) is True
    assert coupled.generator_skill.text == "NEW GENERATOR SKILL"
    store = RunStore(tmp_path / "run")
    decoupled = method_run(config(data), replay(**_easier_generator_rules()), store=store)
    assert decoupled.outer_step(1) is False
    assert decoupled.generator_skill.version == 0
    [record] = [r for _, r in store.get_records("skill") if r["name"] == "rubric_generator" and r["version"] == 1]
    assert record["decision"] == "rejected" and "structural regressed" in record["why"]
    assert record["adequacy_incumbent"] == pytest.approx(0.7) and record["adequacy_candidate"] == pytest.approx(0.2)


def test_decoupled_accepts_a_better_covering_generator_the_solver_scores_lower_on(data):
    rules = _easier_generator_rules()
    hard = rubric(("Uses a sea image", 2), ("Meets the length", 2), ("Avoids cliches", 1))
    rules["generator"][0]["completions"] = [hard]
    rules["judge"] = [{"match": [JUDGE, "Uses a sea image"], "completions": [verdicts(False, False, False)]},
                      {"match": JUDGE, "completions": [verdicts(True, False)]}]
    rules["structural"][0]["match"] = [STRUCTURAL, "Uses a sea image"]
    rules["structural"][0]["completions"] = [json.dumps({"rationale": "covers it", "adequacy": 9, "repair": "r"})]
    assert method_run(config(data), replay(**rules)).outer_step(1) is True
    assert method_run(config(data), replay(**rules), method="sc_coevo").outer_step(1) is False


# -- unreadable output is counted, never a crash -----------------------------------------------
def test_unreadable_outputs_are_counted_not_raised(data):
    garbage = [{"match": x, "completions": ["I cannot do that"]} for x in (GENERATOR, JUDGE, STRUCTURAL, BLIND)]
    model = replay(generator=[garbage[0]], judge=[garbage[1]], structural=[garbage[2]], blind=[garbage[3]])
    result = method_run(config(data), model).run()
    assert result.invalid["rubric"] > 0
    assert result.solver.version == 0


def test_exported_skill_file_reads_back_without_its_header(tmp_path):
    from coevo.algorithms.decoevo.skills import SkillHistory, export_markdown

    hist = SkillHistory(None, "decoevo", 0)
    first = hist.initial("solver", "Rule one.")
    hist.decide(hist.propose(first, "Rule one.\nRule two."), first, True, "gain -- big", step=1)
    paths = export_markdown(hist.versions["solver"], tmp_path)
    assert [p.name for p in paths] == ["solver_v0.md", "solver_v1.md"]
    assert paths[1].read_text().startswith("<!-- coevo skill: solver v1 (parent v0), accepted")
    assert read_skill_file(paths[1]) == "Rule one.\nRule two."


def test_each_step_draws_a_fresh_rewrite(data):
    # With a train set no bigger than the batch, step 2 sees step 1's inputs again; the
    # rewriter must not replay the proposal the gate just refused (seed depends on the step).
    model = replay(**_gate_rules(False))
    seeds = []
    generate = model.generate

    def recording(conversations, sampling, n=1):
        if any("You improve a skill document" in c[-1].content for c in conversations):
            seeds.append(sampling.seed)
        return generate(conversations, sampling, n)

    model.generate = recording
    run = method_run(config(data, partitions={"sizes": {"train": 2}}), model, method="skillopt")
    run.inner_step(1)
    run.inner_step(2)
    assert len(seeds) == 2 and seeds[0] != seeds[1]


# -- the checkable gold beside the grader's ---------------------------------------------------
def test_test_answers_report_constraint_pass_rate_pooled_over_seeds(tmp_path):
    """Every replay answer is two words ("answer one", ...): `max_words: 2` passes, `max_words: 1`
    fails; prompts without constraints are left out of n."""
    from coevo.algorithms.decoevo.summary import method_summary, table_row

    path = tmp_path / "data.jsonl"
    limit = {i: (2 if i % 2 else 1) for i in range(28) if i % 3}
    with open(path, "w") as f:
        for i in range(28):
            meta = {"constraints": [{"kind": "max_words", "value": limit[i]}]} if i in limit else {}
            f.write(json.dumps({"id": f"q{i:02d}", "prompt": f"Write poem number {i} about the sea.",
                                "rubric": {"criteria": [{"name": "quality", "description": "a gold criterion",
                                                         "weight": 1}]}, "meta": meta}) + "\n")
    store = RunStore(tmp_path / "run")
    run = method_run(config(path, partitions={"sizes": {"test": 8, "diagnostic": 2}}), replay(), store=store)
    result = run.run()
    test_ids = [int(s.id[1:]) for s in run.gold["test"]]
    constrained = [i for i in test_ids if i in limit]
    assert 0 < sum(limit[i] == 2 for i in constrained) < len(constrained) < len(test_ids), test_ids
    assert result.constraint_outcomes == [[limit[i] == 2] for i in constrained]
    saved = {ro.sample_id: ro.judgments for ro in store.rollouts("test")}
    assert all(("constraints" in saved[f"q{i:02d}"]) == (i in limit) for i in test_ids)
    # Two seeds' results pool into one rate over their answers, with a Wilson interval and n.
    entry = method_summary([result, result.model_copy(update={"seed": 1})], [])
    share = sum(limit[i] == 2 for i in constrained) / len(constrained)
    assert entry.constraint_pass_rate == pytest.approx(share) and entry.constraint_count == 2 * len(constrained)
    low, high = entry.constraint_pass_rate_ci
    assert low < share < high
    assert table_row("decoevo", entry, 2)["constraint_pass_rate"] == (
        f"{share:.3f} [{low:.3f}, {high:.3f}] (n={2 * len(constrained)})")
    # A result saved before constraints existed still loads, and reports no rate.
    old = result.model_dump()
    del old["constraint_outcomes"]
    legacy = method_summary([type(result).model_validate(old)], [])
    assert legacy.constraint_pass_rate is None and legacy.constraint_pass_rate_ci is None


def test_the_monitor_follows_each_inner_steps_proxy_against_the_diagnostic_gold(tmp_path):
    from coevo.monitor.records import run_summary

    store = RunStore(tmp_path / "run")
    cfg = config(write_data(tmp_path / "data.jsonl"), monitor={"anchors": ["gold"]})
    method_run(cfg, replay(), store=store).run()
    (stage, report), = run_summary(store)["stages"].items()
    # One point per diagnosed step (0, the initial skills, then each inner step), on the 2
    # diagnostic questions: the proxy (rubric scores) as the reward, the gold grades as the anchor.
    steps = [point[0] for point in report["anchor_curves"]["gold"]]
    assert stage == "decoevo/seed0" and steps == [0, 1, 2]
    assert [point[0] for point in report["reward_curve"]] == steps
    assert all(point[2] == 2 for point in report["anchor_curves"]["gold"])


def test_the_audit_anchor_follows_the_grading_each_round_it_is_audited(tmp_path):
    from coevo.monitor.records import run_summary

    store = RunStore(tmp_path / "run")
    cfg = config(write_data(tmp_path / "data.jsonl"), monitor={"anchors": ["gold", "audit"]})
    method_run(cfg, replay(), store=store).run()
    report = run_summary(store)["stages"]["decoevo/seed0"]
    audited = sorted(int(key.rpartition("round")[2]) for key in store.get_meta("audit", {}))
    # One point per audited round (round 0, then after each outer step), one item per master key.
    assert [point[0] for point in report["anchor_curves"]["audit"]] == audited and audited[0] == 0
    keys = len(next(iter(store.get_meta("audit").values()))[0]["master_keys"])
    assert all(point[2] == keys and 0.0 <= point[1] <= 1.0 for point in report["anchor_curves"]["audit"])


def test_decoevo_refuses_anchors_and_stop_it_cannot_watch(tmp_path):
    data = write_data(tmp_path / "data.jsonl")
    with pytest.raises(ValueError, match="decoevo cannot take the anchor 'judge:smollm2'"):
        config(data, monitor={"anchors": ["judge:smollm2"]})
    with pytest.raises(ValueError, match="audit.enabled: false"):
        config(data, monitor={"anchors": ["audit"]}, audit={"enabled": False})
    with pytest.raises(ValueError, match="watched round by round"):
        config(data, monitor={"stop": True})
