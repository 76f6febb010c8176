"""A TAIScore run audits its frozen judges before round 1 and after every round (issue 23):
a judge that scores everything alike is flagged in the round's metrics, in summary.json ->
audit and in the log; one that reads the revision is not; `audit.enabled: false` turns it off."""

from __future__ import annotations

import json
import logging

import pytest

from coevo.algorithms.taiscore import run_taiscore
from coevo.core.strict import ConfigError
from coevo.run.runner import summary_dict
from coevo.rundir.store import RunStore

from tests.algorithms.test_taiscore_logic import RULES, FakeLocal, FakeTrainers, _config, _taiscore_answer


def test_a_gullible_reward_judge_is_flagged_every_round(tmp_path, caplog):
    """The replay judge gives every revision 7, so ':' scores as high as a real critique."""
    with caplog.at_level(logging.WARNING):
        summary = summary_dict(run_taiscore(_config(tmp_path), RunStore(tmp_path / "run"), FakeTrainers().backend()))
    rounds = sorted({(record["round"], record["judge_role"]) for record in summary["audit"]})
    assert rounds == [(f"coevolution/round{r}", judge) for r in range(3) for judge in ("gold", "pairwise", "reward")]
    reward = [record for record in summary["audit"] if record["judge_role"] == "reward"]
    assert all(record["kind"] == "taiscore" and record["fooled_rate"]["value"] == 1.0 for record in reward)
    assert all("master_keys" in {flag["probe"] for flag in record["flags"]} for record in reward)
    for metrics in [summary["baseline"]] + [r["metrics"] for r in summary["rounds"]]:
        assert metrics["audit_reward_fooled_rate"] == 1.0 and metrics["audit_reward_flags"] >= 1
        assert metrics["audit_reward_fooled_rate_lo"] > 0.2  # the whole interval past the threshold
        assert metrics["audit_reward_fooled_rate_n"] == 14  # 2 prompts x 7 master keys (no empty critique)
        assert "audit_reward_fooled_rate_colon" not in metrics  # per probe: in the record only
    said = [r.getMessage() for r in caplog.records if "reward judge" in r.getMessage()]
    assert len(said) == 3 and all("can game it" in line and "flagged probes: colon" in line for line in said)
    rows = {row["metric"] for row in summary["table"]["rows"]}
    assert {"audit_reward_fooled_rate", "audit_pairwise_position_consistency"} <= rows


def test_a_reward_judge_that_reads_the_revision_is_not_flagged(tmp_path, monkeypatch):
    reading = [{"match": ["Response B:\nGOOD revision"], "completion": _taiscore_answer(9)},
               {"match": "Response B:\n", "completion": _taiscore_answer(2)}, *RULES]

    class Reading(FakeLocal):
        def __init__(self, spec):
            super().__init__(spec)
            self.rules = [dict(rule, completions=[rule.get("completion")] if "completion" in rule
                               else rule["completions"]) for rule in reading]

    trainers = FakeTrainers()
    backend = trainers.backend()
    backend.load_frozen = Reading
    summary = summary_dict(run_taiscore(_config(tmp_path, evaluation={"holdout": 0.25, "win_rate": False}),
                                        RunStore(tmp_path / "run"), backend))
    reward = [record for record in summary["audit"] if record["judge_role"] == "reward"]
    assert len(reward) == 3 and all(record["fooled_rate"]["value"] == 0.0 and not record["flags"] for record in reward)
    assert not any(record["judge_role"] == "pairwise" for record in summary["audit"])  # no win rate: not used


def test_the_audit_can_be_turned_off_and_a_bad_probes_file_fails_when_the_config_loads(tmp_path):
    summary = summary_dict(run_taiscore(_config(tmp_path, audit={"enabled": False}), RunStore(tmp_path / "run"),
                                        FakeTrainers().backend()))
    assert summary["audit"] == [] and not any(k.startswith("audit_") for k in summary["rounds"][0]["metrics"])
    bad = tmp_path / "probes.jsonl"
    bad.write_text(json.dumps({"text": "no name"}) + "\n")
    with pytest.raises(ConfigError, match="probes.jsonl: line 1"):
        _config(tmp_path, audit={"probes": str(bad)})
    with pytest.raises(ConfigError, match="does not exist"):
        _config(tmp_path, audit={"probes": str(tmp_path / "missing.jsonl")})


def test_the_gate_is_refused_where_no_trained_evaluator_is_audited(tmp_path):
    from coevo.algorithms.rlac import RlacConfig
    from coevo.settings.config import validate

    with pytest.raises(ConfigError, match="audit.gate: taiscore has no trained evaluator"):
        _config(tmp_path, audit={"gate": True})
    with pytest.raises(ConfigError, match="audit.gate: rlac has no trained evaluator"):
        validate(RlacConfig, {"algorithm": "rlac", "audit": {"gate": True}})
