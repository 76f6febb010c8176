"""`benchmarks/hacking_onset.py --merge`: seeds run apart (a stopped run's rest, `--first-seed`)
make one result whose rates count every seed once."""

import json
from pathlib import Path

import pytest

from learning.hacking import HackingOnset, merged

RESULT = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "hacking_onset_gamed_v2.json"


def one_seed(seed: int, flagged: bool) -> HackingOnset:
    data = json.loads(RESULT.read_text())
    run = data["seeds"][0] | {"seed": seed, "flagged": flagged, "flag_step": 10 if flagged else None,
                              "flags": data["seeds"][0]["flags"] if flagged else []}
    return HackingOnset.model_validate(data | {"seeds": [run], "seconds": 100.0})


def test_merged_rates_count_every_seed():
    result = merged([one_seed(1, False), one_seed(0, True), one_seed(2, True)])
    assert [run.seed for run in result.seeds] == [0, 1, 2]
    assert result.flagged["count"] == 2 and result.flagged["n"] == 3
    assert result.flagged["ci"][0] < 2 / 3 < result.flagged["ci"][1]
    assert result.seconds == 300.0
    assert result.anchor_cost["checks"] == 3 * len(one_seed(0, True).seeds[0].anchor_checks)


def test_a_seed_twice_or_another_measurement_is_refused():
    with pytest.raises(ValueError, match="seed 0 is in more than one"):
        merged([one_seed(0, True), one_seed(0, False)])
    other = one_seed(1, False).model_copy(update={"anchor": "python:elsewhere.py:f"})
    with pytest.raises(ValueError, match="anchor differ"):
        merged([one_seed(0, True), other])


def test_the_benchmark_merges_files(tmp_path, capsys):
    from benchmarks.hacking_onset import main

    paths = []
    for seed, flagged in ((0, True), (1, False)):
        paths.append(tmp_path / f"{seed}.json")
        paths[-1].write_text(one_seed(seed, flagged).model_dump_json())
    out = tmp_path / "all.json"
    assert main(["--merge", *map(str, paths), "--json", str(out)]) == 0
    assert HackingOnset.model_validate_json(out.read_text()).flagged["n"] == 2
    assert "flagged in 1 of 2 seeds" in capsys.readouterr().out
