"""The DecoEvo miniature (benchmarks/learning/mini_decoevo.py) on a replay backbone: the gate's
noise is measured before the run and the run's delta is derived from it; the JSON keeps the
noise, each method's proxy and gold per inner step, and the rewrites refused as not skills."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "algorithms"))  # decoevo_fakes

from decoevo_fakes import REAL_SOLVER_SKILL, checkable_rules  # noqa: E402

from learning import mini_decoevo  # noqa: E402
from learning.miniature import Miniature  # noqa: E402

SMALL = ["inner_steps=1", "partitions.sizes.test=4", "partitions.sizes.solver_gate=4",
         "partitions.sizes.generator_gate=4", "partitions.sizes.diagnostic=2"]


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """The miniature on one seed, with spies on the noise measurement and the run: the order
    they ran in and the delta the run was given."""
    folder = tmp_path_factory.mktemp("mini_decoevo")
    model = folder / "replay.jsonl"
    model.write_text("\n".join(json.dumps(r) for r in checkable_rules(solver_rewrite=REAL_SOLVER_SKILL)) + "\n")
    events: list[tuple[str, float | None]] = []
    real_noise = mini_decoevo.gate_noise

    def noise(config, folder, draws):
        found = real_noise(config, folder, draws)
        events.append(("noise", config.delta))  # the config's delta before: not yet the measured one
        # A noisier gate than a replay can be: the run must take this margin, not its own.
        return {**found, "gain_sd": 0.0617, "delta": 0.1234}

    import coevo.run.runner

    real_run = coevo.run.runner.run_experiment

    def run(config_path, out, data, **options):
        events.append(("run", data["delta"]))
        return real_run(config_path, out, data=data, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(mini_decoevo, "gate_noise", noise)
        patch.setattr(coevo.run.runner, "run_experiment", run)
        result = mini_decoevo.measure(seeds=[0], work_dir=folder / "work",
                                      overrides=[f"roles.backbone.model=replay:{model}", *SMALL], noise_draws=3)
    return result, events


def test_the_gate_noise_is_measured_before_the_run_and_sets_its_delta(measured):
    result, events = measured
    assert [what for what, _ in events] == ["noise", "run"]
    assert events[0][1] != 0.1234 and events[1][1] == pytest.approx(0.1234)
    assert result.settings["delta"] == pytest.approx(0.1234)
    noise = result.settings["gate_noise"]
    assert noise["draws"] == 3 and noise["n_questions"] == 4 and noise["gain_sd"] == pytest.approx(0.0617)
    assert "delta=0.1234" in result.settings["overrides"][-1]
    assert "delta 0.1234" in result.notes[0]


def test_the_json_keeps_proxy_and_gold_per_step_for_both_co_evolving_methods(measured):
    result, _ = measured
    again = Miniature.model_validate_json(result.model_dump_json())  # what benchmarks/miniature.py writes
    for method in ("sc_coevo", "decoevo"):
        by_step = again.arms[method].metrics["proxy_gold"]["by_step"]
        assert [p["step"] for p in by_step] == [0, 1], method
        assert all(p["proxy"] is not None and p["gold"] is not None for p in by_step), method
        assert by_step[0]["gap"] == pytest.approx(by_step[0]["proxy"] - by_step[0]["gold"])
        assert set(again.arms[method].metrics["proxy_gold"]["per_seed"]) == {"0"}
        found = again.arms[method].metrics["proxy_gold"]
        assert found["proxy_change"] == pytest.approx(by_step[-1]["proxy"] - by_step[0]["proxy"])
        assert found["gold_change"] == pytest.approx(by_step[-1]["gold"] - by_step[0]["gold"])
        assert again.arms[method].metrics["skill_form_refused"] == {"solver": 0, "rubric_generator": 0}
    assert set(again.arms) == {"zero_shot", "skillopt", "sc_coevo", "decoevo"}
