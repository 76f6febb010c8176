"""The miniatures' records and RLAC's / DecoEvo's readers (fast: fake summaries and stores,
no model; the runs themselves are benchmarks, BENCHMARKS.md "Miniatures")."""

import json
from pathlib import Path
import subprocess
import sys

import pytest

from learning import mini_rlac
from learning.miniature import (ArmResult, Comparison, Measure, Miniature, arm_result, compare, comparisons,
                                      minimum_detectable_effect, shown, shown_of)
from coevo.rundir.store import RunStore
from coevo.core.types import Completion

BEFORE = {"p/0#0": 0.0, "p/1#0": 0.0, "p/2#0": 1.0, "p/3#0": 0.0}


def _table(path: Path, check: bool = True) -> subprocess.CompletedProcess:
    """`benchmarks/miniature.py --table path`, as the README's tables are printed."""
    return subprocess.run([sys.executable, "benchmarks/miniature.py", "--table", str(path)], capture_output=True,
                          text=True, timeout=60, check=check)


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


def test_the_minimum_detectable_effect_is_2_8_standard_errors_of_the_paired_differences():
    # 36 differences, half 0 and half 1: sd = sqrt(0.25 * 36 / 35), SE = sd / 6, and
    # (z_0.975 + z_0.80) = 1.95996 + 0.84162 = 2.80158.
    differences = [0.0, 1.0] * 18
    assert minimum_detectable_effect(differences) == pytest.approx(2.80158 * (0.25 * 36 / 35) ** 0.5 / 6, abs=1e-5)
    assert minimum_detectable_effect(differences * 4) == pytest.approx(minimum_detectable_effect(differences) / 2,
                                                                       rel=0.02)  # 4x the keys: half the MDE
    assert minimum_detectable_effect([0.5]) is None          # one key: no spread to measure
    assert minimum_detectable_effect([0.25] * 10) is None    # no spread: unmeasured, not perfect power
    arm = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 1.0, "p/2#0": 1.0, "p/3#0": 0.0})
    assert arm.mde == pytest.approx(minimum_detectable_effect([1.0, 1.0, 0.0, 0.0]))
    assert compare(arm, arm_result(BEFORE, dict(BEFORE))).mde == arm.mde


def test_a_json_written_before_the_mde_is_sized_from_its_own_scores():
    arm = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 1.0, "p/2#0": 1.0, "p/3#0": 0.0})
    flat = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 0.0, "p/2#0": 1.0, "p/3#0": 0.0})
    written = Miniature(paper="rlac", target="pass@1", arms={"a": arm, "b": flat},
                        comparisons=comparisons({"a": arm, "b": flat}, [("a", "b")]), seeds=[0], seconds=1)
    old = json.loads(written.model_dump_json())
    for record in [*old["arms"].values(), *old["comparisons"].values()]:
        del record["sd"], record["mde"]
    read = Miniature.model_validate(old)
    assert read.arms["a"].mde == arm.mde and read.comparisons["a_minus_b"].mde == written.comparisons["a_minus_b"].mde
    assert read.comparisons["a_minus_b"].mde == pytest.approx(minimum_detectable_effect([0.0, 1.0, 0.0, 0.0]))


def test_a_null_is_printed_with_the_effect_it_could_have_detected():
    assert shown(0.012, [-0.05, 0.07], 40, 0.09) == "+0.012 [-0.050, +0.070] (n=40; could detect ±0.090)"
    assert shown(0.5, [0.1, 0.9], 40, 0.09) == "+0.500 [+0.100, +0.900] (n=40)"  # not a null: no MDE
    null = Comparison(value=0.0, ci=[-0.1, 0.1], n=36, sd=0.3, mde=0.14)
    assert shown_of(null) == "+0.000 [-0.100, +0.100] (n=36; could detect ±0.140)"
    still = arm_result(BEFORE, dict(BEFORE))  # every key the same before and after
    assert shown_of(still) == "+0.000 [+0.000, +0.000] (n=4; no spread: MDE unknown)"
    moved = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 0.0, "p/2#0": 1.0, "p/3#0": 0.0})
    assert isinstance(moved, ArmResult) and shown_of(moved).endswith(f"(n=4; could detect ±{moved.mde:.3f})")


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
    from learning.mini_decoevo import _notes

    versions = {"solver": [{"method": "decoevo", "seed": 0, "version": 1, "decision": "accepted"},
                           {"method": "decoevo", "seed": 1, "version": 1, "decision": "rejected"},
                           {"method": "skillopt", "seed": 0, "version": 1, "decision": "accepted"},
                           {"method": "decoevo", "seed": 0, "version": 0, "decision": "initial"}]}
    assert _notes({"skill_versions": versions}, "decoevo", [0, 1]) == ["solver: 1 of 2 candidate edits accepted"]
    assert _notes({"skill_versions": versions}, "zero_shot", [0, 1]) == []


def test_the_readme_tables_are_printed_from_the_json(tmp_path):
    from learning.miniature import Miniature

    arm = arm_result(BEFORE, {"p/0#0": 1.0, "p/1#0": 1.0, "p/2#0": 1.0, "p/3#0": 0.0})
    flat = arm_result(BEFORE, dict(BEFORE))
    measure = Measure(target="critiques naming a failure", arms={"named": arm},
                      comparisons=comparisons({"named": arm, "static_critic": flat}, [("named", "static_critic")]))
    result = Miniature(paper="rlac", target="pass@1", arms={"co_trained": arm, "static_critic": flat},
                       comparisons=comparisons({"co_trained": arm, "static_critic": flat},
                                               [("co_trained", "static_critic")]), seeds=[0, 1, 2], seconds=600,
                       measures={"critique": measure})
    path = tmp_path / "rlac.json"
    path.write_text(result.model_dump_json())
    printed = _table(path, check=False)
    assert printed.returncode == 0, printed.stderr
    lines = printed.stdout.splitlines()
    assert lines[0] == "| arm | before | after | gain [95 % CI] (n) | detectable at 80 % power | seeds | whole run |"
    assert lines[2].startswith("| `co_trained` | 0.250 | 0.750 | +0.500 [")
    assert lines[2].endswith(f"(n=4) | ±{arm.mde:.3f} | 3 | 10 min |")
    assert lines[3].endswith("(n=4) | — (no spread) | 3 | 10 min |")
    tables = printed.stdout.split("\n\n")
    assert f"| `co_trained_minus_static_critic` | +0.500 [" in tables[1]
    assert tables[1].endswith(f"(n=4) | ±{arm.mde:.3f} |")
    # The further measure: its target, then its own two tables.
    assert tables[2] == "critiques naming a failure:" and tables[3].splitlines()[2].startswith("| `named` | 0.250 |")
    assert tables[4].splitlines()[2].startswith("| `named_minus_static_critic` | +0.500 [")
    bad = _table(tmp_path / "none.json", check=False)
    assert bad.returncode == 2 and "not a miniature's JSON" in bad.stderr


def test_a_miniature_where_no_item_moved_prints_one_line_not_rows_of_zeros(tmp_path):
    from learning.miniature import Miniature

    flat = arm_result(BEFORE, dict(BEFORE))
    arms = {"skillopt": flat, "decoevo": flat}
    result = Miniature(paper="decoevo", target="gold", arms=arms, comparisons=comparisons(arms, [("decoevo", "skillopt")]),
                       seeds=[0, 1, 2], seconds=600)
    path = tmp_path / "flat.json"
    path.write_text(result.model_dump_json())
    printed = _table(path).stdout
    assert printed == ("Every arm (`skillopt`, `decoevo`): 0.250 -> 0.250 on every item, gain +0.000 (n=4, no spread), "
                       "3 seeds, 10 min; so every comparison (`decoevo_minus_skillopt`) is +0.000.\n")
    # One item that moved, even where the gains cancel out, and the tables come back.
    moved = arm_result(BEFORE, {**BEFORE, "p/0#0": 1.0 - BEFORE["p/0#0"]})
    result.arms = {"skillopt": flat, "decoevo": moved}
    path.write_text(result.model_dump_json())
    printed = _table(path).stdout
    assert printed.startswith("| arm | before |")


def test_the_readme_shows_each_recorded_miniature_as_its_json_prints_it():
    # "Does it work?" is printed by --table from benchmarks/results/miniature_*.json: an
    # edited number or a rerun whose tables were not pasted fails here.
    readme = open("README.md", encoding="utf-8").read()
    recorded = sorted(Path("benchmarks/results").glob("miniature_*.json"))
    for path in recorded:
        printed = _table(path).stdout
        for table in printed.strip().split("\n\n"):
            assert table in readme, f"README.md lacks {path.name}'s table:\n{table}"


def test_decoevo_miniature_settings_make_a_partition_of_the_tiny_config():
    # Widened gates and test split take their share from another partition: the shares
    # still sum to 1 (the partitioner refuses anything else, after the model has loaded).
    from coevo.settings.config import apply_overrides, read_yaml
    from learning.mini_decoevo import DEFAULT_CONFIG, DEFAULT_OVERRIDES

    fractions = apply_overrides(read_yaml(DEFAULT_CONFIG), list(DEFAULT_OVERRIDES))["partitions"]["fractions"]
    assert sum(fractions.values()) == pytest.approx(1.0), fractions
