"""`coevo eval average`'s relative gains over SkillOpt, as the DecoEvo paper states them (its
abstract's "2.8-5.0 % relative gains over SkillOpt in the five-benchmark average")."""

import pytest

from coevo.algorithms.decoevo.average import BenchmarkScores, average, average_rows


def _bench(name, decoevo, skillopt, zero_shot):
    return BenchmarkScores(benchmark=name, source=name, scores={
        "decoevo": dict(enumerate(decoevo)), "skillopt": dict(enumerate(skillopt)), "zero_shot": dict(enumerate(zero_shot))})


def test_relative_gains_are_ratios_of_means_of_the_average_and_of_each_benchmark():
    found = average([_bench("a", [0.66, 0.64], [0.62, 0.62], [0.60, 0.60]),
                     _bench("b", [0.50, 0.52], [0.50, 0.50], [0.52, 0.52])])
    # Averages over the two benchmarks per seed: DecoEvo 0.58, 0.58; SkillOpt 0.56, 0.56.
    assert found.relative_to_skillopt["decoevo"] == pytest.approx(100 * (0.58 - 0.56) / 0.56)
    assert found.relative_to_skillopt["zero_shot"] == pytest.approx(0.0)
    assert "skillopt" not in found.relative_to_skillopt
    assert found.decoevo_relative_by_benchmark == {"a": pytest.approx(100 * 0.03 / 0.62),
                                                   "b": pytest.approx(100 * 0.01 / 0.50)}
    rows = {row["method"]: row for row in average_rows(found)}
    assert rows["decoevo"]["vs_skillopt_%"] == 3.6 and rows["skillopt"]["vs_skillopt_%"] is None


def test_no_relative_gain_without_skillopt_on_common_seeds():
    found = average([BenchmarkScores(benchmark="a", source="a", scores={"decoevo": {0: 0.6}, "skillopt": {1: 0.5}})])
    assert found.relative_to_skillopt == {} and found.decoevo_relative_by_benchmark == {}
