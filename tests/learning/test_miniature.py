"""The miniatures' records and RLAC's / DecoEvo's readers (fast: fake summaries and stores,
no model; the runs themselves are benchmarks, BENCHMARKS.md "Miniatures")."""

import json
from pathlib import Path
import subprocess
import sys

import pytest

from coevo.learning import mini_rlac
from coevo.learning.miniature import arm_result, compare, comparisons, shown
from coevo.store import RunStore
from coevo.types import Completion

BEFORE = {"p/0#0": 0.0, "p/1#0": 0.0, "p/2#0": 1.0, "p/3#0": 0.0}


def test_an_arm_pairs_its_keys_and_a_comparison_pairs_the_arms_gains():
    good = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 1.0, "p/2#0": 1.0, "p/3#0": 0.0, "extra#0": 1.0})
    flat = arm_result(BEFORE, dict(BEFORE))
    assert (good.before, good.after, good.n) == (0.25, 0.75, 4) and good.gain == pytest.approx(0.5)
    assert good.gain_ci[0] <= 0.5 <= good.gain_ci[1]
    assert flat.gain == 0.0 and not flat.learned
    difference = compare(good, flat)
    assert difference.value == pytest.approx(0.5) and difference.n == 4
    found = comparisons({"good": good, "flat": flat}, [("good", "flat"), ("good", "missing")])
    assert list(found) == ["good_minus_flat"]
    assert shown(0.5, [0.1, 0.9], 4) == "+0.500 [+0.100, +0.900] (n=4)"
    assert shown(None, [None, None], 0) == "— (n=0)"


def evaluation(outcomes):
    return {"pass_at_1": sum(outcomes.values()) / len(outcomes), "heldout_n": len(outcomes), "per_item": outcomes}


def rlac_summary(after, used):
    return {"baseline": evaluation({"p/0": 0.0, "p/1": 1.0}),
            "rounds": [{"round": 1, "eval": evaluation(after), "pairs": {"generator": 3, "critic": 1},
                        "training": {"generator": {"steps": 2, "weight_delta": 1e-5}}, "counts": {"used": used}}]}


def test_an_rlac_arm_reads_pass_at_1_and_counts_errors_per_call(tmp_path):
    runs = {seed: tmp_path / f"seed{seed}" for seed in (0, 1)}
    for seed, run in runs.items():
        store = RunStore(run)
        store.put_record("rlac_proposal", "a", {"verdict": "caught"})
        store.put_record("rlac_proposal", "b", {"verdict": "survived"})
        store.put_record("rlac_enumerative", "c", {"score": 0.5})  # a failing output: one error found
        store.put_record("rlac_enumerative", "d", {"score": 1.0})
        store.close()
    arm = mini_rlac.arm_from_summaries({0: rlac_summary({"p/0": 1.0, "p/1": 1.0}, 8),
                                        1: rlac_summary({"p/0": 0.0, "p/1": 1.0}, 8)}, runs)
    assert arm.n == 4 and arm.before == 0.5 and arm.after == 0.75
    assert set(arm.scores_after) == {"p/0#0", "p/1#0", "p/0#1", "p/1#1"}
    assert arm.metrics["errors_found"] == 4 and arm.metrics["verification_calls"] == 16
    rate = arm.metrics["errors_per_call"]
    assert rate["value"] == 0.25 and rate["n"] == 16 and rate["ci"][0] < 0.25 < rate["ci"][1]
    assert "seed 1 round 1: pairs {'generator': 3, 'critic': 1}" in arm.notes[1]


def test_an_rlac_run_without_a_round_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no finished round"):
        mini_rlac.arm_from_summaries({0: {"baseline": evaluation({"p/0": 0.0}), "rounds": []}}, {0: tmp_path})


def test_a_new_arm_starts_with_the_calls_the_finished_arms_made(tmp_path):
    donor = tmp_path / "donor"
    store = RunStore(donor)
    store.cache_put("k1", "generator-abc", {0: Completion(text="def f(): pass")})
    store.close()
    out = tmp_path / "arm" / "seed0"
    mini_rlac.share_cache([donor], out)
    mini_rlac.share_cache([donor], tmp_path / "again")  # twice from the same donor: no clash
    store = RunStore(out)
    try:
        assert store.cache_get("k1", 1)[0].text == "def f(): pass"
        assert not store.get_meta("config")  # no run recorded yet: the run starts on it with resume
    finally:
        store.close()


def test_unknown_arms_and_held_out_problems_a_training_problem_defines(tmp_path):
    with pytest.raises(ValueError, match="unknown RLAC arm"):
        mini_rlac.measure(seeds=[0], work_dir=tmp_path, arms=["adversarial"])
    train = mini_rlac.family_file(tmp_path, mini_rlac.TRAIN_SEED, 1)
    assert mini_rlac.family_file(tmp_path, mini_rlac.TRAIN_SEED, 1) == train  # written once
    held = mini_rlac.family_file(tmp_path, 5, 4)
    kept, dropped = mini_rlac.unseen(held, train, tmp_path)
    names = lambda path: [json.loads(line)["entry_point"] for line in path.read_text().splitlines()]
    assert dropped == len(names(held)) - len(names(kept)) > 0
    assert not set(names(kept)) & set(names(train))
    assert mini_rlac.unseen(kept, train, tmp_path) == (kept, 0)
    with pytest.raises(ValueError, match="nothing is held out"):
        mini_rlac.unseen(train, train, tmp_path)


@pytest.mark.parametrize("args", [["--paper", "nope"], ["--paper", "rlac", "--seeds", "0"],
                                  ["--paper", "rlac", "--heldout", "/no/such/file.jsonl"],
                                  ["--paper", "taiscore", "--set", "k=2"], ["--paper", "rlac", "--set", "k"],
                                  ["--paper", "decoevo", "--arms", "co_trained"]])
def test_the_benchmark_refuses_bad_arguments(args):
    result = subprocess.run([sys.executable, "benchmarks/miniature.py", *args], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2 and "error" in result.stderr and "Traceback" not in result.stderr


def test_decoevo_arm_notes_count_each_skills_accepted_edits():
    from coevo.learning.mini_decoevo import _notes

    versions = {"solver": [{"method": "decoevo", "seed": 0, "version": 1, "decision": "accepted"},
                           {"method": "decoevo", "seed": 1, "version": 1, "decision": "rejected"},
                           {"method": "skillopt", "seed": 0, "version": 1, "decision": "accepted"},
                           {"method": "decoevo", "seed": 0, "version": 0, "decision": "initial"}]}
    assert _notes({"skill_versions": versions}, "decoevo", [0, 1]) == ["solver: 1 of 2 candidate edits accepted"]
    assert _notes({"skill_versions": versions}, "zero_shot", [0, 1]) == []


def test_the_readme_tables_are_printed_from_the_json(tmp_path):
    from coevo.learning.miniature import Miniature

    arm = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 1.0, "p/2#0": 1.0, "p/3#0": 0.0})
    flat = arm_result(BEFORE, dict(BEFORE))
    result = Miniature(paper="rlac", target="pass@1", arms={"co_trained": arm, "static_critic": flat},
                       comparisons=comparisons({"co_trained": arm, "static_critic": flat},
                                               [("co_trained", "static_critic")]), seeds=[0, 1, 2], seconds=600)
    path = tmp_path / "rlac.json"
    path.write_text(result.model_dump_json())
    printed = subprocess.run([sys.executable, "benchmarks/miniature.py", "--table", str(path)], capture_output=True,
                             text=True, timeout=60)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[2].startswith("| `co_trained` | 0.250 | 0.750 | +0.500 [") and lines[2].endswith("(n=4) | 3 | 10 min |")
    assert "| `co_trained_minus_static_critic` | +0.500 [" in printed.stdout
    bad = subprocess.run([sys.executable, "benchmarks/miniature.py", "--table", str(tmp_path / "none.json")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "not a miniature's JSON" in bad.stderr


def test_the_readme_shows_each_recorded_miniature_as_its_json_prints_it():
    # "Does it work?" is printed by --table from benchmarks/results/miniature_*.json: an
    # edited number or a rerun whose tables were not pasted fails here.
    readme = open("README.md", encoding="utf-8").read()
    recorded = sorted(Path("benchmarks/results").glob("miniature_*.json"))
    for path in recorded:
        printed = subprocess.run([sys.executable, "benchmarks/miniature.py", "--table", str(path)],
                                 capture_output=True, text=True, check=True).stdout
        for table in printed.strip().split("\n\n"):
            assert table in readme, f"README.md lacks {path.name}'s table:\n{table}"


def test_decoevo_miniature_settings_make_a_partition_of_the_tiny_config():
    # Widened gates and test split take their share from another partition: the shares
    # still sum to 1 (the partitioner refuses anything else, after the model has loaded).
    from coevo.config import apply_overrides, read_yaml
    from coevo.learning.mini_decoevo import DEFAULT_CONFIG, DEFAULT_OVERRIDES

    fractions = apply_overrides(read_yaml(DEFAULT_CONFIG), list(DEFAULT_OVERRIDES))["partitions"]["fractions"]
    assert sum(fractions.values()) == pytest.approx(1.0), fractions
