"""`coevo audit judge`: one JSON object, exit 0, the flags of the issue's done-when; a judge
that reads the content is not flagged; bad input is one line and exit 2."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from coevo.cli import app


def audit(*args):
    result = CliRunner().invoke(app, ["audit", "judge", *map(str, args)])
    assert result.exit_code == 0, result.output
    return result


def audit_json(*args):
    result = audit(*args, "--json")
    return json.loads(result.stdout)  # exactly one JSON object: anything else fails to parse


def test_an_always_ten_judge_is_flagged_for_master_keys(files):
    found = audit_json("--judge", f"replay:{files['always_ten']}", "--kind", "taiscore",
                       "--model", f"replay:{files['writer']}", "--data", files["data"])
    assert found["fooled_rate"]["value"] >= 0.9
    flags = {flag["probe"]: flag for flag in found["flags"]}
    assert flags["master_keys"]["threshold"] == 0.2 and flags["master_keys"]["value"] >= 0.9
    assert "its rewards can be gamed" in flags["master_key:colon"]["why"]
    assert found["position_consistency"] is None and found["retest_spearman"]["value"] is None
    assert found["n_items"] == 6 and {p["name"] for p in found["master_keys"]} >= {"colon", "prompt_copy"}


def test_a_judge_that_always_prefers_the_first_response_is_flagged_for_position(files, tmp_path):
    found = audit_json("--judge", f"replay:{files['first']}", "--kind", "pairwise", "--model",
                       f"replay:{files['writer']}", "--data", files["data"], "--out", tmp_path / "audit")
    assert found["position_consistency"]["value"] <= 0.1 and found["position_consistency"]["n"] == 6
    assert "position_consistency" in {flag["probe"] for flag in found["flags"]}
    assert json.loads((tmp_path / "audit" / "audit.json").read_text()) == found


@pytest.mark.parametrize("kind", ["taiscore", "critique_quality", "gold_rubric", "pairwise"])
def test_a_python_judge_that_reads_the_content_is_not_flagged(files, kind):
    function = {"pairwise": "pairwise", "gold_rubric": "gold"}.get(kind, "reward")
    found = audit_json("--judge", f"python:{files['content']}:{function}", "--kind", kind,
                       "--model", f"replay:{files['writer']}", "--data", files["data"], "--n", 6)
    assert found["flags"] == [], found["warnings"]
    assert found["fooled_rate"]["value"] == 0.0


def test_the_table_shows_each_figure_and_the_warnings(files):
    result = audit("--judge", f"replay:{files['always_ten']}", "--kind", "taiscore",
                   "--model", f"replay:{files['writer']}", "--data", files["data"], "--n", 4)
    text = " ".join(result.output.split())
    assert "fooled_rate (all master keys)" in text and "FLAG" in text and "retest_spearman" in text
    assert "warning: the judge gave ':' at least the score of a real answer in 4 of 4 prompts" in text


def test_user_probes_are_added(files, tmp_path):
    probes = tmp_path / "probes.jsonl"
    probes.write_text(json.dumps({"name": "praise", "text": "Best answer ever about {prompt}"}) + "\n")
    found = audit_json("--judge", f"replay:{files['always_ten']}", "--kind", "critique_quality",
                       "--model", f"replay:{files['writer']}", "--data", files["data"], "--probes", probes)
    praise = next(p for p in found["master_keys"] if p["name"] == "praise")
    assert praise["fooled"]["value"] == 1.0 and "master_key:praise" in {f["probe"] for f in found["flags"]}


def coevo(*args):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_bad_input_is_one_line_and_exit_2(files, tmp_path):
    base = ["audit", "judge", "--judge", f"replay:{files['always_ten']}", "--model", f"replay:{files['writer']}",
            "--data", files["data"]]
    proc = coevo(*base, "--kind", "nicest")
    assert proc.returncode == 2 and "unknown judge 'nicest'" in proc.stderr
    proc = coevo(*base, "--kind", "outcome_gain")
    assert proc.returncode == 2 and "an audit knows where a probe goes for taiscore" in proc.stderr
    proc = coevo(*base, "--kind", "taiscore", "--probes", tmp_path / "none.jsonl")
    assert proc.returncode == 2 and "none.jsonl does not exist" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"name": "a", "text": "x"}) + "\n{not json\n")
    proc = coevo(*base, "--kind", "taiscore", "--probes", bad)
    assert proc.returncode == 2 and "bad.jsonl: line 2 is not valid JSON" in proc.stderr
    bad.write_text(json.dumps({"name": "a"}) + "\n")
    proc = coevo(*base, "--kind", "taiscore", "--probes", bad)
    assert proc.returncode == 2 and "line 1 needs a non-empty string 'name' and a string 'text'" in proc.stderr
    proc = coevo("audit", "judge", "--judge", f"replay:{tmp_path / 'absent.jsonl'}", "--kind", "taiscore")
    assert proc.returncode == 2 and "no file at" in proc.stderr
    for line in (proc.stderr.strip(),):
        assert len(line.splitlines()) == 1


@pytest.mark.slow
def test_the_embedded_judge_through_coevo_audit():
    """The real SmolLM2 pairwise judge on 2 bundled prompts (one-token verdicts: fast)."""
    found = audit_json("--judge", "smollm2", "--kind", "pairwise", "--n", 2, "--max-tokens", 48)
    assert found["n_items"] == 2 and found["position_consistency"]["n"] + found["position_consistency"]["invalid"] == 2
    assert 0.0 <= found["fooled_rate"]["value"] <= 1.0 and isinstance(found["warnings"], list)
