"""DecoEvo's transfer benchmarks graded their own way (issue 56): EQ-Bench Creative Writing v3 and
LLMEval-Med read from their official JSON files, without gold rubrics."""

from __future__ import annotations

import json

import pytest

from coevo.algorithms.decoevo import evaluate_skill
from coevo.llm.replay import ReplayModel
from coevo.roles.benchmark_graders import CRITERIA, NEGATIVE, EqBenchCreativeGrader, LlmEvalMedGrader, \
    criterion_scores
from coevo.tasks.benchmarks import read_benchmark
from coevo.tasks.errors import DataError
from coevo.core.types import Sample, Sampling

SAMPLING = Sampling(temperature=0.0)


def _eqbench(tmp_path):
    path = tmp_path / "creative_writing_prompts_v3.json"
    path.write_text(json.dumps({
        "1": {"category": "fanfic", "title": "A", "writing_prompt": "Write a scene. <SEED> Keep it short.",
              "seed_modifiers": ["Set it at sea.", "Set it in space."]},
        "2": {"category": "scp", "title": "B", "writing_prompt": "Write a report <SEED>.", "seed_modifiers": ["X"]}}))
    return f"eqbench_cw:{path}"


def _llmeval(tmp_path):
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps({"MK": [
        {"category1": "MK", "category2": "drugs", "round": 1, "problem": "What lowers fever?", "sanswer": "Paracetamol.",
         "checklist": "Core: names paracetamol."},
        {"category1": "MK", "category2": "drugs", "round": 2, "problem": "And for a child?", "sanswer": "Weight-based."}],
        "MR": [{"category1": "MR", "round": 1, "problem": "Why?", "sanswer": "Because."}]}, ensure_ascii=False))
    return f"llmeval_med:{path}"


def test_eqbench_prompts_become_three_seeded_pieces_each(tmp_path):
    read = read_benchmark(_eqbench(tmp_path))
    assert [s.id for s in read.samples] == [f"eqbench-cw-{k}-{i}" for k in ("1", "2") for i in (1, 2, 3)]
    # Iteration i takes modifier (i - 1) mod len, in place of <SEED>.
    assert [s.prompt for s in read.samples[:3]] == ["Write a scene. Set it at sea. Keep it short.",
                                                    "Write a scene. Set it in space. Keep it short.",
                                                    "Write a scene. Set it at sea. Keep it short."]
    assert all(s.rubric is None and s.meta["benchmark"] == "eqbench_cw" for s in read.samples)


def test_llmeval_med_reads_first_turns_with_their_reference_and_counts_the_rest(tmp_path):
    read = read_benchmark(_llmeval(tmp_path))
    assert [s.id for s in read.samples] == ["llmeval-med-MK-1", "llmeval-med-MR-1"]
    assert read.removed == {"later_turn": 1}
    first = read.samples[0]
    assert first.meta["reference"] == "Paracetamol." and first.meta["checklist"] == "Core: names paracetamol."


def test_a_jsonl_file_given_as_a_whole_file_benchmark_is_one_clear_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n')
    with pytest.raises(DataError, match="not the benchmark's JSON file"):
        read_benchmark(f"eqbench_cw:{path}")


def test_eqbench_scores_invert_the_faults_and_average_the_rated_criteria():
    reply = "[Analysis]\nFine.\n[Scores]\nElegant Prose: 16\nPurple Prose: [4]\nWeak Dialogue: 25\nNot a criterion: 3"
    assert criterion_scores(reply) == {"Elegant Prose": 16.0, "Purple Prose": 4.0}  # 25 > 20: dropped
    model = ReplayModel(rules=[{"completion": reply}])
    [judged] = EqBenchCreativeGrader(model, SAMPLING).judge([Sample(id="p", prompt="Write.")], ["A piece."])
    assert "Purple Prose" in NEGATIVE and len(CRITERIA) == 22
    assert judged.valid and judged.score == pytest.approx((16 + (20 - 4)) / 2 / 20)
    [bad] = EqBenchCreativeGrader(ReplayModel(rules=[{"completion": "lovely"}]), SAMPLING).judge(
        [Sample(id="p", prompt="Write.")], ["A piece."])
    assert not bad.valid


def test_llmeval_med_is_usable_at_4_and_the_grader_sees_reference_and_checklist(tmp_path):
    samples = read_benchmark(_llmeval(tmp_path)).samples
    model = ReplayModel(rules=[{"match": "Paracetamol.", "completion": '{"reason": "ok", "score": [4]}'},
                               {"completion": '{"reason": "wrong", "score": [2]}'}])
    judged = LlmEvalMedGrader(model, SAMPLING).judge(samples, ["Take paracetamol.", "No idea."])
    assert [(j.score, j.scores["grade"]) for j in judged] == [(1.0, 4.0), (0.0, 2.0)]
    asked = [c[-1].content for c in model.calls]
    assert "Core: names paracetamol." in asked[0] and "Checklist" not in asked[1]


def test_a_skill_transfers_to_a_benchmark_without_gold_rubrics(tmp_path):
    samples = read_benchmark(_llmeval(tmp_path)).samples
    solver = ReplayModel(rules=[{"completion": "Take paracetamol."}])
    grader = ReplayModel(rules=[{"completion": '{"reason": "ok", "score": [5]}'}])
    found = evaluate_skill("Answer carefully.", samples, solver, grader)
    assert found["grading"] == "llmeval_med" and found["gold_mean"] == 1.0 and found["n_valid"] == 2
    # The solver never saw the reference answer.
    assert all("Paracetamol." not in c[-1].content for c in solver.calls)
    with pytest.raises(DataError, match="eqbench_cw:PATH, llmeval_med:PATH"):
        evaluate_skill("Answer.", [Sample(id="x", prompt="p")], solver, grader)
