"""The CLI verbs on replay models: quickstart, judge, eval agreement, runs, show, report, models."""

import json
import subprocess
import sys
from pathlib import Path


def coevo(*args):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ, "COEVO_QUIET": "1"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_judge_scores_a_jsonl_file(tmp_path):
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(json.dumps({"id": "a", "x": "Write.", "y0": "old", "y1": "new"}) + "\n"
                        + json.dumps({"id": "b", "prompt": "Write.", "response": "old", "y1": "new"}) + "\n")
    replay = tmp_path / "judge.jsonl"
    replay.write_text(json.dumps({"completions": ["0.5"]}) + "\n")
    out = tmp_path / "scored.jsonl"
    proc = coevo("judge", "outcome-gain", "--input", rollouts, "--out", out, "--judge", f"replay:{replay}")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [line["judgment"]["score"] for line in lines] == [0.5, 0.5]
    assert "2 valid, 0 invalid" in proc.stdout


def test_judge_taiscore_writes_the_training_reward_under_the_authors_rules(tmp_path):
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    good = json.dumps({**{d: {"score": 6, "reason": "r"} for d in dims}, "score": 7})
    rows = [{"id": "read", "x": "Write.", "y0": "old", "c": "<think>hm</think>SHARP", "y1": "new"},
            {"id": "unread", "x": "Write.", "y0": "old", "c": "VAGUE", "y1": "new"},
            {"id": "empty", "x": "Write.", "y0": "old", "c": "  ", "y1": "new"}]
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    replay = tmp_path / "judge.jsonl"
    replay.write_text(json.dumps({"match": "SHARP", "completion": good}) + "\n"
                      + json.dumps({"completion": "no idea"}) + "\n")
    out = tmp_path / "scored.jsonl"
    proc = coevo("judge", "taiscore", "--input", rollouts, "--out", out, "--judge", f"replay:{replay}",
                 "--scoring", "sampled")
    assert proc.returncode == 0, proc.stderr
    read, unread, empty = (json.loads(line)["judgment"] for line in out.read_text().splitlines())
    assert (read["reward"], read["valid"], read["score"], read["scores"]["quality_gain"]) == (7.0, True, 7.0, 6.0)
    assert (unread["reward"], unread["valid"], unread["score"]) == (0.0, False, None)
    assert (empty["reward"], empty["valid"], empty["error"]) == (0.0, False, "an empty critique: not judged")
    assert coevo("judge", "taiscore", "--input", rollouts, "--out", out, "--scoring", "maybe").returncode == 2


def test_eval_agreement_matches_hand_computed_values(tmp_path):
    # group g1: A ranks c1 > c2 > c3, B ranks c1 > c3 > c2 -> top sets share c1; pairs: 2 of 3 agree
    # group g2: A ties c1 = c2 (top set {c1, c2}), B prefers c2 -> overlap; the tied pair is excluded
    a = {("g1", "c1"): 9, ("g1", "c2"): 5, ("g1", "c3"): 3, ("g2", "c1"): 7, ("g2", "c2"): 7}
    b = {("g1", "c1"): 8, ("g1", "c2"): 2, ("g1", "c3"): 4, ("g2", "c1"): 3, ("g2", "c2"): 6}
    for name, scores in (("a", a), ("b", b)):
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({"group": g, "candidate": c, "score": s}) + "\n" for (g, c), s in scores.items()))
    proc = coevo("eval", "agreement", "--a", tmp_path / "a.jsonl", "--b", tmp_path / "b.jsonl", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["overlap"] == 1.0 and report["n_groups"] == 2
    assert report["n_pairs"] == 3 and report["n_agree"] == 2 and abs(report["agreement"] - 2 / 3) < 1e-9


def test_runs_show_report_on_a_finished_run(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "s0", "prompt": "Write about rain."}) + "\n")
    replay = tmp_path / "replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in [
        {"match": "Your Critique:", "completion": "Add a concrete image."},
        {"match": "Revised Response:", "completion": "Rain taps the tin roof."},
        {"match": "training reward", "completion": json.dumps({
            d: {"score": 7, "reason": "ok"} for d in
            ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")} | {"score": 8})},
        {"completion": "Rain falls."}]))
    config = tmp_path / "refine.yaml"
    spec = f"replay:{replay}"
    config.write_text(f"algorithm: refine\ndata: {{source: '{data}'}}\n"
                      f"models: {{actor: '{spec}', critic: '{spec}', judge: '{spec}'}}\n")
    runs = tmp_path / "runs"
    proc = coevo("run", config, "--out", runs / "r1")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((runs / "r1" / "summary.json").read_text())
    assert summary["table"]["rows"] == [{"judge": "taiscore", "mean": 8.0, "valid": 1, "invalid": 0}]
    listing = coevo("runs", "--root", runs)
    assert "r1" in listing.stdout and "refine" in listing.stdout and "finished" in listing.stdout
    shown = coevo("show", runs / "r1")
    assert "Rain taps the tin roof." in shown.stdout and "Add a concrete image." in shown.stdout
    assert coevo("report", runs / "r1").returncode == 0
    html = (runs / "r1" / "report.html").read_text()
    assert "Rain taps the tin roof." in html and "taiscore" in html


def test_models_lists_every_spec_form():
    proc = coevo("models")
    assert proc.returncode == 0
    for form in ("smollm2", "hf:", "gguf:", "openai:", "replay:"):
        assert form in proc.stdout


# ─── quickstart ──────────────────────────────────────────────────────────────────────
# The quickstart's config on the real model runs in tests/algorithms/test_taiscore_e2e.py
# (examples/taiscore_tiny.yaml, whose budgets the quickstart copies, at test size). Here:
# the CLI builds that config and runs it, resumably, through the real runner and loop, on
# replay models with recording trainers in place of TRL.

_DIMS = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
_QUICKSTART_RULES = [
    # judges first: their prompts quote the responses that the later rules answer
    {"match": "evaluation criteria", "completion": "no usable rubric scores"},
    {"match": "Response 1:", "completions": ["1", "2"]},
    {"match": "Response B", "completion": json.dumps({**{d: {"score": 6, "reason": "r"} for d in _DIMS},
                                                      "score": 7})},
    {"match": "Your Critique", "completions": ["Add one concrete image.", "Cut the second sentence."]},
    {"match": "Revised Response:", "completions": ["A revision.", "Another revision."]},
    {"completion": "A first draft."},
]


def _quickstart_backend(monkeypatch, trained):
    """Replay models for the actor and critic, and trainers that record what they were asked."""
    from coevo.algorithms import taiscore
    from coevo.llm.replay import ReplayModel
    from coevo.train.common import TrainResult

    class Trainable(ReplayModel):
        def __init__(self, spec):
            super().__init__(spec.removeprefix("replay:"))
            trained.setdefault("loaded", []).append(spec)

        def refresh_model_id(self):
            return self.model_id

    def stage(kind):
        def train(policy, data, *args, **kwargs):
            settings, output_dir = args[-2:]
            trained.setdefault(kind, []).append({"n": len(data), "settings": settings, "dir": Path(output_dir)})
            policy.model_id += f"+{kind}"
            return TrainResult(checkpoint=str(Path(output_dir) / "final"), steps=settings.max_steps,
                               seconds=1.0, seconds_per_step=0.5, peak_rss_mb=1.0, metrics={"loss": 0.5})
        return train

    backend = taiscore.Backend(load_trainable=Trainable, train_grpo=stage("grpo"), train_dpo=stage("dpo"),
                               restore=lambda model, checkpoint, settings: trained.setdefault(
                                   "restored", []).append(checkpoint))
    monkeypatch.setattr(taiscore, "default_backend", lambda: backend)


def test_quickstart_runs_its_taiscore_config_and_resumes(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from coevo.cli import app
    from coevo.store import RunStore

    for name in ("model", "judge"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _QUICKSTART_RULES))
    model, judge = f"replay:{tmp_path / 'model.jsonl'}", f"replay:{tmp_path / 'judge.jsonl'}"
    monkeypatch.setenv("COEVO_QUIET", "1")
    trained: dict = {}
    _quickstart_backend(monkeypatch, trained)
    out = tmp_path / "qs"
    args = ["quickstart", "--out", str(out), "--prompts", "5", "--model", model, "--judge", judge]

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    config = RunStore(out).get_meta("config")
    # The quickstart's contract: one TAIScore round on the bundled prompts, at laptop budgets.
    assert config["algorithm"] == "taiscore" and config["rounds"] == 1
    assert config["data"]["source"] == "bundled:writing" and config["data"]["limit"] == 5
    assert config["models"] == {**config["models"], "actor": model, "critic": model, "judge": judge}
    assert config["templates"]["critic"] == "critic_brief"
    assert config["sampling"]["judge"]["scoring"] == "expected"
    assert (config["critic_queries"], config["pairs_per_round"], config["evaluation"]["prompts"]) == (2, 4, 2)
    assert trained["loaded"] == [model, model]  # the actor and the critic, both trainable
    (grpo,), (dpo,) = trained["grpo"], trained["dpo"]
    assert (grpo["settings"].num_generations, grpo["settings"].max_steps, grpo["settings"].learning_rate) == (2, 2, 1e-5)
    assert (dpo["settings"].max_steps, dpo["settings"].max_length, dpo["settings"].max_prompt_length) == (2, 512, 384)
    assert grpo["dir"].is_relative_to(out) and dpo["dir"].is_relative_to(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "taiscore" and summary["held_out"] == 2 and summary["shards"] == [3]
    assert [r["round"] for r in summary["rounds"]] == [1]
    assert "TAIScore quickstart" in result.output and f"report: {out / 'report.html'}" in result.output
    assert (out / "report.html").is_file()

    # Run again: it resumes the finished run (restores both stages, trains nothing).
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert len(trained["grpo"]) == 1 and len(trained["dpo"]) == 1 and len(trained["restored"]) == 2
    # --fresh starts over; too few prompts is refused before anything runs.
    assert CliRunner().invoke(app, [*args, "--fresh"]).exit_code == 0 and len(trained["grpo"]) == 2
    refused = CliRunner().invoke(app, [*args[:4], "3"])
    assert refused.exit_code == 2 and "at least 4" in refused.output
