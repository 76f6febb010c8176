"""Bad input ends in one clear line and exit code 2, never a traceback."""

import json
import subprocess
import sys



def coevo(*args, cwd=None):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_help_lists_every_verb():
    proc = coevo("--help")
    assert proc.returncode == 0
    for verb in ("quickstart", "run", "refine", "judge", "validate", "eval", "report", "runs", "show", "models"):
        assert verb in proc.stdout


def test_unknown_config_key_is_named(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("algorithm: controls\nbatch_sise: 4\n")
    proc = coevo("run", config, "--out", tmp_path / "run")
    assert proc.returncode == 2 and "unknown key 'batch_sise'" in proc.stderr


def test_unknown_override_key_is_named(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("algorithm: controls\n")
    proc = coevo("run", config, "--out", tmp_path / "run", "--set", "data.limt=3")
    assert proc.returncode == 2 and "data.limt" in proc.stderr


def test_unknown_algorithm_and_missing_config(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("algorithm: nope\n")
    proc = coevo("run", config, "--out", tmp_path / "run")
    assert proc.returncode == 2 and "'algorithm' must be one of" in proc.stderr
    proc = coevo("run", tmp_path / "absent.yaml", "--out", tmp_path / "run")
    assert proc.returncode == 2 and "absent.yaml does not exist" in proc.stderr


def test_unknown_model_spec_lists_the_accepted_forms():
    proc = coevo("refine", "--prompt", "hi", "--actor", "gpt5")
    assert proc.returncode == 2
    for form in ("smollm2", "hf:", "gguf:", "openai:", "replay:"):
        assert form in proc.stderr


def test_missing_input_and_bad_jsonl_line(tmp_path):
    proc = coevo("judge", "outcome-gain", "--input", tmp_path / "none.jsonl", "--out", tmp_path / "o.jsonl")
    assert proc.returncode == 2 and "none.jsonl does not exist" in proc.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"x": "a", "y0": "b", "y1": "c"}) + "\n{not json\n")
    proc = coevo("judge", "outcome-gain", "--input", bad, "--out", tmp_path / "o.jsonl")
    assert proc.returncode == 2 and "bad.jsonl: line 2 is not valid JSON" in proc.stderr


def test_show_and_report_need_a_run_folder(tmp_path):
    for verb in ("show", "report"):
        proc = coevo(verb, tmp_path)
        assert proc.returncode == 2 and "not a run folder" in proc.stderr


def test_the_resume_line_keeps_root_flags_and_drops_fresh():
    from coevo.commands.errors import resume_command

    assert resume_command(["coevo", "-v", "run", "c.yaml", "--out", "r", "--fresh"]) == \
        "coevo -v run c.yaml --out r --resume"
    assert resume_command(["coevo", "run", "c.yaml", "--out", "r", "--resume"]) == "coevo run c.yaml --out r --resume"
    assert resume_command(["coevo", "quickstart", "--fresh"]) == "coevo quickstart"  # it resumes by itself
