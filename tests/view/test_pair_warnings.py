"""The `no-pairs` warning (view/pair_warnings.py): a DPO stage that was to train and got fewer
than two preference pairs is named with its cause, on real RLAC and TAIScore runs of replay
models (replay_runs.py's fakes); a run whose stages all got pairs has no such warning."""

from __future__ import annotations

import json
import re

import pytest
from replay_runs import BAD, CAUGHT, GOOD, INVALID, RLAC_MODELS, RUBRIC, _rlac_fakes, _taiscore_fakes

from coevo.rundir.store import RunStore
from coevo.view.pair_warnings import KIND, MIN_PAIRS, baseline_cause, taiscore_pair_warnings
from coevo.view.warnings import run_warnings

CURIE = "Marie Curie was born in Warsaw. She discovered polonium and radium."


def _rlac_run(tmp_path, monkeypatch, *, outputs: list[str], proposals: list[str] | None = None, k: int = 2):
    """A two-iteration RLAC run (facts, adversarial critic) on one biography whose K outputs
    cycle through `outputs`; the critic answers `proposals` on any output (None: replay_runs'
    critic, which catches the Vienna biography). Its folder and summary."""
    from coevo.run.runner import run_experiment

    monkeypatch.setitem(RLAC_MODELS, "gen_under_test", [
        {"match": "biography of Albert Einstein", "completions": outputs},
        {"match": "biography of Marie Curie", "completions": [CURIE]}])
    monkeypatch.setitem(RLAC_MODELS, "crit_under_test",
                        RLAC_MODELS["crit"] if proposals is None else [{"completions": proposals}])
    config = {"algorithm": "rlac", "task": "facts", "iterations": 2, "k": k, "n": 2, "kl": False,
              "roles": {"generator": {"model": "gen_under_test"}, "critic": {"model": "crit_under_test"},
                        "judge": {"model": "gen_under_test"}},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}}
    run = tmp_path / "run"
    with _rlac_fakes():
        summary = run_experiment(None, run, data=config)
    return run, summary


def _no_pairs(run) -> list[str]:
    store = RunStore(run, read_only=True)
    try:
        return [f.text for f in run_warnings(store) if f.kind == KIND]
    finally:
        store.close()


def _pairs(summary, role: str) -> list[int]:
    [per_round] = summary["pairs"].values()
    return [per_round[r][role] for r in sorted(per_round)]


def test_a_generator_whose_every_output_is_caught_gets_no_pairs_and_is_told_why(tmp_path, monkeypatch):
    run, summary = _rlac_run(tmp_path, monkeypatch, outputs=[BAD])
    assert _pairs(summary, "generator") == [0, 0]
    assert min(_pairs(summary, "critic")) >= MIN_PAIRS  # CAUGHT against INVALID on each output
    said = _no_pairs(run)
    assert [text.split(":")[0] for text in said] == ["round 1", "round 2"]  # the generator's only
    for text in said:
        assert text.startswith(f"round {text[6]}: the generator got no DPO pairs (n=0), so it was not trained")
        assert "every generator output was caught (2 outputs on 1 problem)" in text
        assert "no output was the chosen side" in text


def test_proposals_that_are_all_invalid_leave_both_roles_without_pairs(tmp_path, monkeypatch):
    run, summary = _rlac_run(tmp_path, monkeypatch, outputs=[GOOD, BAD], proposals=[INVALID])
    assert _pairs(summary, "generator") == _pairs(summary, "critic") == [0, 0]
    said = _no_pairs(run)
    assert len(said) == 4
    generator = [t for t in said if "the generator got no DPO pairs" in t]
    critic = [t for t in said if "the critic got no DPO pairs" in t]
    assert len(generator) == len(critic) == 2
    assert "no generator output was caught (2 outputs on 1 problem: 2 invalid), so no output was the rejected " \
           "side. 2 of 2 proposals were invalid" in generator[0]
    assert "no critic proposal caught its output (4 proposals on 2 outputs: 4 invalid), so no proposal was the " \
           "chosen side" in critic[0]
    assert "critic_form" in critic[0]


def test_one_pair_is_too_few_and_says_where_the_sides_were_missing(tmp_path, monkeypatch):
    # K=2: the Ulm and the Vienna biography; the critic catches only Vienna, with one of its two proposals.
    run, summary = _rlac_run(tmp_path, monkeypatch, outputs=[GOOD, BAD])
    assert _pairs(summary, "generator") == _pairs(summary, "critic") == [1, 1]
    said = _no_pairs(run)
    assert len(said) == 4
    generator = next(t for t in said if t.startswith("round 1: the generator"))
    assert "got 1 DPO pair (fewer than 2), so its stage learned from one comparison" in generator
    assert "1 of 2 outputs were caught; 1 of 1 problem had both a caught and an uncaught output" in generator
    critic = next(t for t in said if t.startswith("round 1: the critic"))
    assert "1 of 4 proposals caught their output; 1 of 2 outputs drew both" in critic


def test_a_run_whose_roles_got_pairs_has_no_such_warning(tmp_path, monkeypatch):
    # K=4: two Ulm and two Vienna biographies, so 4 generator pairs and 2 critic pairs a round.
    run, summary = _rlac_run(tmp_path, monkeypatch, outputs=[GOOD, BAD], k=4)
    assert min(_pairs(summary, "generator")) >= MIN_PAIRS and min(_pairs(summary, "critic")) >= MIN_PAIRS
    assert _no_pairs(run) == []


def test_a_static_critic_is_never_warned_for_the_pairs_it_was_not_to_get(tmp_path, monkeypatch):
    from coevo.run.runner import run_experiment

    monkeypatch.setitem(RLAC_MODELS, "gen_under_test", [
        {"match": "biography of Albert Einstein", "completions": [GOOD, BAD]},
        {"match": "biography of Marie Curie", "completions": [CURIE]}])
    config = {"algorithm": "rlac", "task": "facts", "iterations": 1, "k": 4, "n": 2, "kl": False,
              "critic_training": "static",
              "roles": {"generator": {"model": "gen_under_test"}, "critic": {"model": "crit"},
                        "judge": {"model": "gen_under_test"}},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}}
    with _rlac_fakes():
        summary = run_experiment(None, tmp_path / "run", data=config)
    assert _pairs(summary, "critic") == [0]
    assert not [t for t in _no_pairs(tmp_path / "run") if "critic" in t.split(":")[1]]


def test_the_warning_is_on_the_run_page_and_printed_by_show_and_report(tmp_path, monkeypatch):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from coevo.cli import app
    from coevo.view.app import create_app

    run, _ = _rlac_run(tmp_path, monkeypatch, outputs=[BAD])
    page = TestClient(create_app([run])).get("/runs/run").text
    shown = re.findall(r'<li class="warning warning-no-pairs">(.*?)</li>', page, re.S)
    assert len(shown) == 2 and "every generator output was caught" in shown[0]
    for args in (["show", str(run), "--limit", "0"], ["report", str(run)]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
        printed = " ".join(result.output.split())  # the console wraps long lines
        assert printed.count("warning (no-pairs): round") == 2, result.output
        assert "round 1: the generator got no DPO pairs (n=0)" in printed


# -- TAIScore --------------------------------------------------------------------------------

#: The actor's y0 and revision, and a pairwise judge that always prefers the revision.
TAI_RULES = [
    {"match": "evaluation criteria", "completion": json.dumps({"criteria": [
        {"name": "clarity", "score": 6, "reason": "r"}, {"name": "detail", "score": 6, "reason": "r"}]})},
    {"match": ["Response 1:\nA revised answer"], "completion": "1"},
    {"match": ["Response 2:\nA revised answer"], "completion": "2"},
    {"match": "Response 1:", "completion": "tie"},
    {"match": "Response B:\n", "completion": json.dumps({"score": 7})},
    {"match": "Your Critique:", "completion": "Name one concrete detail."},
    {"match": "Revised Response:", "completion": "A revised answer with one concrete detail."},
    {"completion": "A first answer."},
]


#: The same run, its pairwise judge preferring the initial response every time.
Y0_RULES = [{"match": ["Response 1:\nA revised answer"], "completion": "2"},
            {"match": ["Response 2:\nA revised answer"], "completion": "1"}, *TAI_RULES[3:]]
Y0_RULES.insert(0, TAI_RULES[0])


def _taiscore_run(tmp_path, pairs_per_round: int, rules=TAI_RULES):
    from coevo.run.runner import run_experiment

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about topic {i}.", "rubric": RUBRIC})
                            + "\n" for i in range(8)))
    config = {"algorithm": "taiscore", "data": {"source": str(data)}, "rounds": 1,
              "pairs_per_round": pairs_per_round, "grpo": {"num_generations": 2}, "evaluation": {"holdout": 0.25},
              "roles": {"actor": {"model": "actor"}, "critic": {"model": "critic"}, "judge": {"model": "judge"}}}
    run = tmp_path / f"run{pairs_per_round}"
    with _taiscore_fakes(rules):
        run_experiment(None, run, data=config)
    return run


def test_taiscore_actor_with_one_pair_names_pairs_per_round_and_two_pairs_do_not_warn(tmp_path):
    one = _no_pairs(_taiscore_run(tmp_path, 1))
    assert len(one) == 1
    assert one[0].startswith("coevolution/round1/actor: the actor got 1 DPO pair (fewer than 2)")
    assert re.search(r"the pairwise judge preferred (\d) of \1 revisions over their initial response, but "
                     r"pairs_per_round kept 1: raise pairs_per_round", one[0]), one[0]
    assert _no_pairs(_taiscore_run(tmp_path, 2)) == []


def test_a_taiscore_round_without_a_preferred_revision_finishes_untrained_and_says_why(tmp_path):
    run = _taiscore_run(tmp_path, 4, Y0_RULES)  # it used to stop the run with an error
    summary = json.loads((run / "summary.json").read_text())
    [said] = [w["text"] for w in summary["warnings"] if w["kind"] == KIND]
    assert said.startswith("coevolution/round1/actor: the actor got no DPO pairs (n=0), so it was not trained")
    assert re.search(r"preferred the revision over its initial response in only 0 of (\d+) candidates "
                     r"\(\1 initial response preferred\)", said), said
    assert summary["rounds"][0]["checkpoints"]["actor"] is None  # π_1 = π_0: no DPO stage ran
    assert summary["rounds"][0]["metrics"]["pairs_selected"] == 0.0


@pytest.mark.parametrize("counts, cause", [
    ({"candidates": 6, "y1_wins": 1, "ties": 4, "y0_wins": 1, "invalid": 0, "selected": 1},
     "preferred the revision over its initial response in only 1 of 6 candidates (4 ties, 1 initial response "
     "preferred)"),
    ({"candidates": 3, "y1_wins": 0, "ties": 0, "y0_wins": 0, "invalid": 3, "selected": 0},
     "in only 0 of 3 candidates (3 unreadable)"),
])
def test_taiscore_causes_from_the_rounds_pair_counts(counts, cause):
    metrics = [{"stage": "coevolution", "round": 2, "name": f"pairs_{k}", "value": float(v)} for k, v in counts.items()]
    [found] = taiscore_pair_warnings(metrics)
    assert found.kind == KIND and found.text.startswith("coevolution/round2/actor: the actor got ")
    assert cause in found.text
    enough = [dict(m, value=2.0) if m["name"] == "pairs_selected" else m for m in metrics]
    assert taiscore_pair_warnings(enough) == []


@pytest.mark.parametrize("scores, cause", [
    ({"p1": [1.0, 1.0], "p2": [1.0, 1.0]}, "every output scored 1 (4 outputs on 2 problems), so none was preferred over another"),
    ({"p1": [1.0, 0.0], "p2": [0.5, 0.5]}, "1 of 2 problems had outputs with different scores (4 outputs on 2 "
                                           "problems), and pairs compare outputs of one problem"),
])
def test_the_baselines_cause_reads_each_problems_scores(scores, cause):
    # Enumerative checking and the reward model pair a higher- over a lower-scoring output of one problem.
    assert baseline_cause(scores) == cause


def test_coevo_run_prints_the_warnings_summary_json_keeps(tmp_path, monkeypatch):
    import yaml
    from typer.testing import CliRunner

    from coevo.cli import app

    monkeypatch.setitem(RLAC_MODELS, "gen_under_test", [{"match": "biography of", "completions": [BAD]}])
    config = {"algorithm": "rlac", "task": "facts", "iterations": 1, "k": 2, "n": 2, "kl": False,
              "roles": {"generator": {"model": "gen_under_test"}, "critic": {"model": "crit"},
                        "judge": {"model": "gen_under_test"}},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}}
    path = tmp_path / "rlac.yaml"
    path.write_text(yaml.safe_dump(config))
    with _rlac_fakes():
        result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    kept = json.loads((tmp_path / "run" / "summary.json").read_text())["warnings"]
    printed = " ".join(result.output.split())  # the console wraps long lines
    said = [w for w in kept if w["kind"] == KIND]
    assert said and all(" ".join(w["text"].split())[:60] in printed for w in said), result.output
    assert printed.count("warning (no-pairs):") == len(said)
