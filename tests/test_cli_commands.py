"""The CLI verbs on replay models: quickstart, judge, eval agreement, runs, show, report, models."""

import json
import subprocess
import sys
from pathlib import Path

import pytest


def coevo(*args):
    proc = subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env={**__import__("os").environ, "COEVO_QUIET": "1"})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.mark.parametrize("kind", ["outcome_gain", "outcome-gain"])  # as configs spell it; the hyphen too
def test_judge_scores_a_jsonl_file(tmp_path, kind):
    rollouts = tmp_path / "rollouts.jsonl"
    rollouts.write_text(json.dumps({"id": "a", "x": "Write.", "y0": "old", "y1": "new"}) + "\n"
                        + json.dumps({"id": "b", "prompt": "Write.", "response": "old", "y1": "new"}) + "\n")
    replay = tmp_path / "judge.jsonl"
    replay.write_text(json.dumps({"completions": ["0.5"]}) + "\n")
    out = tmp_path / "scored.jsonl"
    proc = coevo("judge", kind, "--input", rollouts, "--out", out, "--judge", f"replay:{replay}")
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
                      f"roles: {{actor: {{model: '{spec}'}}, critic: {{model: '{spec}'}}, judge: {{model: '{spec}'}}}}\n")
    runs = tmp_path / "runs"
    proc = coevo("run", config, "--out", runs / "r1")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((runs / "r1" / "summary.json").read_text())
    assert summary["table"]["rows"] == [{"judge": "taiscore", "mean": 8.0, "valid": 1, "invalid": 0}]
    listing = coevo("runs", runs)
    assert "r1" in listing.stdout and "refine" in listing.stdout and "finished" in listing.stdout
    shown = coevo("show", runs / "r1")
    assert "Rain taps the tin roof." in shown.stdout and "Add a concrete image." in shown.stdout
    assert "audit check" not in shown.stdout  # no judge audit in this run: nothing said about one
    reported = coevo("report", runs / "r1")
    assert reported.returncode == 0 and "warning:" not in reported.stdout
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
    from coevo.algorithms.taiscore import loop as taiscore
    from coevo.llm.replay import ReplayModel
    from coevo.train.common import TrainResult

    class Trainable(ReplayModel):
        def __init__(self, spec):
            super().__init__(spec.removeprefix("replay:"))
            trained.setdefault("loaded", []).append(spec)

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
    from coevo.run.quickstart import DPO_STEPS, GRPO_STEPS, HELD_OUT
    from coevo.rundir.store import RunStore

    for name in ("model", "judge"):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _QUICKSTART_RULES))
    model, judge = f"replay:{tmp_path / 'model.jsonl'}", f"replay:{tmp_path / 'judge.jsonl'}"
    monkeypatch.setenv("COEVO_QUIET", "1")
    trained: dict = {}
    _quickstart_backend(monkeypatch, trained)
    out = tmp_path / "qs"
    args = ["quickstart", "--out", str(out), "--prompts", "14", "--model", model, "--judge", judge]

    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    store = RunStore(out)
    config = store.get_meta("config")
    # The quickstart's contract: one TAIScore round on short bundled prompts, at budgets that
    # give its numbers an n to read: 8 held out, 6 GRPO steps, LoRA in both stages.
    assert config["algorithm"] == "taiscore" and config["rounds"] == 1
    assert config["data"]["source"] == "bundled:writing_short" and config["data"]["limit"] == 14
    roles = config["roles"]
    assert (roles["actor"]["model"], roles["critic"]["model"], roles["judge"]["model"]) == (model, model, judge)
    assert roles["critic"]["template"] == "critic_brief"
    assert roles["judge"]["sampling"]["scoring"] == "expected"
    assert (config["critic_queries"], config["evaluation"]["prompts"]) == (GRPO_STEPS, HELD_OUT) == (6, 8)
    assert trained["loaded"] == [model, model]  # the actor and the critic, both trainable
    (grpo,), (dpo,) = trained["grpo"], trained["dpo"]
    assert (grpo["settings"].num_generations, grpo["settings"].max_steps) == (2, GRPO_STEPS)
    assert dpo["settings"].max_steps == DPO_STEPS > 3  # past Adam's first steps
    assert grpo["settings"].lora is not None and dpo["settings"].lora is not None
    assert grpo["dir"].is_relative_to(out) and dpo["dir"].is_relative_to(out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["algorithm"] == "taiscore" and summary["held_out"] == HELD_OUT and summary["shards"] == [6]
    assert [r["round"] for r in summary["rounds"]] == [1]
    # It ends with its story: what ran, what changed, what to trust, what it showed and what
    # not, and what to run next (the next config, and a stronger judge in one line).
    text = " ".join(result.output.split())
    assert "TAIScore quickstart" in result.output and f"report: {out / 'report.html'}" in result.output
    for part in ("What ran:", "What changed:", "What to trust:", "What to run next:", "Shown:", "Not shown:",
                 "coevo plan examples/taiscore_tiny.yaml", "coevo quickstart --judge openai:"):
        assert part in text, part
    assert store.get_meta("quickstart") is True and len(store.get_meta("next_steps")) == 3
    # The held-out numbers rest on 8 prompts: no "too few to tell" on what it headlines.
    assert "small-n" not in text
    # The judge audit's verdict in plain words: this replay judge scores 7 whatever it is shown.
    assert config["audit"]["prompts"] == 1 and summary["audit"]
    assert "judge-audit: the reward judge failed" in text
    assert (out / "report.html").is_file()

    # Run again: it resumes the finished run (restores both stages, trains nothing).
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert len(trained["grpo"]) == 1 and len(trained["dpo"]) == 1 and len(trained["restored"]) == 2
    # --fresh starts over; too few prompts is refused before anything runs.
    assert CliRunner().invoke(app, [*args, "--fresh"]).exit_code == 0 and len(trained["grpo"]) == 2
    refused = CliRunner().invoke(app, [*args[:4], "3"])
    assert refused.exit_code == 2 and "at least 14" in refused.output


# ─── one consistent CLI (issue 14) ───────────────────────────────────────────────────

def _commands():
    """Every command of the CLI as (path, click command), the root first: ((), root),
    (("run",), run), (("eval", "agreement"), agreement), ..."""
    import typer.main

    from coevo.cli import app

    def walk(command, path):
        yield path, command
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            yield from walk(sub, (*path, name))

    return list(walk(typer.main.get_command(app), ()))


def test_every_command_answers_h_and_help_in_words_for_users():
    import re

    from typer.testing import CliRunner

    from coevo.cli import app

    commands = _commands()
    assert len(commands) >= 15  # root, 2 groups, their commands and the top-level ones
    for path, command in commands:
        short, long = (CliRunner().invoke(app, [*path, flag]) for flag in ("-h", "--help"))
        assert short.exit_code == 0 and long.exit_code == 0, (path, short.output)
        assert short.output == long.output and short.output.startswith("Usage: "), path
        text = short.output
        # Flags read as flags, never `--fresh / --no-fresh` nor `--fresh <bool>`.
        assert "--no-" not in text and "<bool>" not in text, (path, text)
        # Notes to developers are not help.
        assert not re.search(r"\bissue\b|used to run|come with", text, re.IGNORECASE), (path, text)
        # A listed subcommand's summary is whole, not cut with "..." to fit the column.
        if getattr(command, "commands", None):
            cut = [line.strip() for line in text.split("Commands:")[1].splitlines() if line.endswith("...")]
            assert not cut, f"shorten the first line of these commands' docstrings (about 55 characters): {cut}"


#: The one name of each thing an option may be, across every command.
# `--other`: the second model whose answers `coevo audit judge` compares with the judge's own.
MODEL_OPTIONS = {"--model", "--actor", "--critic", "--judge", "--other"}
RETIRED = {"--grader", "--root", "--output", "--out-dir", "--no-fresh", "--no-resume"}


def test_options_share_names_and_every_boolean_is_a_plain_flag():
    options = {}
    for path, command in _commands():
        for param in command.params:
            if param.param_type_name != "option" or "--help" in param.opts:
                continue
            options.setdefault(" ".join(path), []).append(param)
            names = set(param.opts)
            assert not names & RETIRED, (path, param.opts)
            assert not param.secondary_opts, (path, param.opts)  # no --x/--no-x pairs
            described = getattr(param, "type_descriptor", None)  # recent typer; older: click's param.type
            boolean = described.annotation is bool if described is not None else param.type.name == "boolean"
            if param.is_flag or boolean:
                assert param.is_flag and param.default is False, (path, param.opts)
            # A model is always a SPEC under one of the model options, and those take nothing else.
            assert (param.metavar == "SPEC") == bool(names & MODEL_OPTIONS), (path, param.opts, param.metavar)
            if "--json" in names:
                assert param.is_flag and param.help.startswith("Print one JSON object"), path
    by_name = {cmd: {o for p in params for o in p.opts} for cmd, params in options.items()}
    for cmd in ("quickstart", "run"):
        assert {"--out", "--fresh"} <= by_name[cmd], cmd
    assert "--resume" in by_name["run"]
    assert {"--model", "--judge"} <= by_name["quickstart"] and {"--model", "--judge"} <= by_name["eval skill"]
    assert {"--model", "--actor", "--critic", "--judge", "--max-tokens"} <= by_name["refine"]
    assert {"--stage", "--round", "--limit"} <= by_name["show"]
    assert {"--out", "--judge"} <= by_name["judge"] and "--judge" in by_name["validate fact"]
    assert {"-v", "--verbose", "--version"} <= by_name[""]


def test_version_and_verbose(monkeypatch):
    import importlib.metadata

    from typer.testing import CliRunner

    import coevo
    from coevo.run import logs
    from coevo.cli import app

    proc = coevo_proc("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"coevo {coevo.__version__}"
    assert importlib.metadata.version("coevo") == coevo.__version__  # pyproject and the package agree
    monkeypatch.setenv(logs.VERBOSE_ENV, "x")
    monkeypatch.delenv(logs.VERBOSE_ENV)  # restored (unset) after the test
    assert CliRunner().invoke(app, ["models"]).exit_code == 0 and not logs.verbose()
    for flag in ("-v", "--verbose"):
        monkeypatch.delenv(logs.VERBOSE_ENV, raising=False)
        assert CliRunner().invoke(app, [flag, "models"]).exit_code == 0 and logs.verbose(), flag


def coevo_proc(*args, env=None):
    return subprocess.run([sys.executable, "-m", "coevo.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=env)


def test_judge_kinds_are_spelled_one_way_in_configs_cli_and_docs():
    import typing

    from typer.testing import CliRunner

    from coevo.algorithms.refine import RefineRunConfig
    from coevo.algorithms.taiscore.config import RewardName
    from coevo.cli import app
    from coevo.core.strict import ConfigError
    from coevo.algorithms.controls import ControlsConfig
    from coevo.roles.judging import JUDGE_NAMES, judge_name

    (judges_type,) = typing.get_args(RefineRunConfig.model_fields["judges"].annotation)
    assert set(typing.get_args(judges_type)) == set(JUDGE_NAMES)  # the refine config takes every judge
    assert set(typing.get_args(RewardName)) <= set(JUDGE_NAMES)
    assert set(typing.get_args(ControlsConfig.model_fields["evaluator"].annotation)) <= set(JUDGE_NAMES)
    assert [judge_name(n.replace("_", "-")) for n in JUDGE_NAMES] == list(JUDGE_NAMES)
    with pytest.raises(ConfigError, match="unknown judge 'nicest'; choose from taiscore, critique_quality"):
        judge_name("nicest")
    hyphenated = [n.replace("_", "-") for n in JUDGE_NAMES if "_" in n]
    help_text = CliRunner().invoke(app, ["judge", "-h"]).output
    runnable = [n for n in JUDGE_NAMES if n != "gold_rubric"]  # needs rubrics: `coevo run` only
    assert all(n in help_text for n in runnable) and not any(h in help_text for h in hyphenated)
    root = Path(__file__).parents[1]  # the README and the docs pages its commands moved to
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        text = page.read_text(encoding="utf-8")
        assert not any(h in text for h in ("critique-quality", "outcome-gain")), f"{page.name}: use the config spelling"


def _fake_run(path, status, *, error=None, duration_s=None, metrics=(), rollouts=()):
    """A run folder as the runner leaves it, written straight into its store."""
    import time
    from datetime import datetime, timedelta

    from coevo.rundir.store import RunStore

    store = RunStore(path)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("config", {"algorithm": "taiscore"})
    store.set_meta("status", status)
    store.set_meta("started", time.time() - 600)
    if error:
        store.set_meta("error", error)
    if duration_s is not None:
        start = datetime(2026, 12, 1, 9, 0, 0)
        store.set_meta("provenance", {"started": start.isoformat(), "duration_s": duration_s,
                                      "finished": (start + timedelta(seconds=duration_s)).isoformat()})
    for stage, round_, name, value in metrics:
        store.log_metrics(stage, {name: value}, round=round_)
    for stage, round_, rollout in rollouts:
        store.save_rollout(stage, rollout, round=round_)
    store.close()


def test_runs_lists_status_duration_and_headline_metrics_one_line_each_when_piped(tmp_path):
    import os

    from coevo.rundir.lock import RunLock

    root = tmp_path / "runs"
    batch = "experiments-of-the-first-of-december"
    long = "a-run-folder-whose-name-is-long-enough-to-wrap-in-eighty-columns"
    names = {status: f"{batch}/{long}-{status}" for status in
             ("finished", "failed", "interrupted", "resumable", "running")}
    _fake_run(root / names["finished"], "finished", duration_s=90,
              metrics=[("eval", 0, "gold_score", 5.0), ("eval", 1, "gold_score", 6.5),
                       ("eval", 1, "win_rate_vs_round0", 0.75)])
    _fake_run(root / names["failed"], "failed", error="RuntimeError: the judge server at http://127.0.0.1:9/v1 vanished")
    _fake_run(root / names["interrupted"], "interrupted", error="interrupted")
    _fake_run(root / names["resumable"], "running")  # its process is gone: nobody holds the lock
    _fake_run(root / names["running"], "running")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # rich's default width, 80
    with RunLock(root / names["running"]):  # this test's process is the run's live writer
        table = coevo_proc("runs", root, env=env)
        listed = coevo_proc("runs", root, "--json", env=env)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    for status, name in names.items():
        [line] = [line for line in lines if name in line]  # whole, on one line: not wrapped mid-word
        assert f" {status} " in line, (status, line)
    [finished] = [line for line in lines if names["finished"] in line]
    assert "1m 30s" in finished and "gold_score 6.500" in finished and "win_rate_vs_round0 0.750" in finished
    [failed] = [line for line in lines if names["failed"] in line]
    assert "RuntimeError: the judge server at http://127.0.0.1:9/v1 vanished" in failed
    runs = {json.loads(line)["run"]: json.loads(line) for line in listed.stdout.splitlines()}
    assert {runs[name]["status"] for name in names.values()} == set(names)
    assert runs[names["finished"]]["headline"]["gold_score"] == 6.5
    (tmp_path / "nothing-here").mkdir()  # an empty folder; a missing one is an error (tests/test_bad_inputs.py)
    assert coevo_proc("runs", tmp_path / "nothing-here").stdout.startswith("no run folders under")


def test_show_filters_by_stage_and_round_under_readable_headings(tmp_path):
    from coevo.core.types import Judgment, Rollout

    taiscore = Judgment(judge="taiscore", score=7.0, reward=7.0, scores={"critique_quality": 6.0})
    unreadable = Judgment(judge="gold_rubric", valid=False, error="no score in the answer")
    rollouts = [
        ("coevolution/round0/eval", 0, Rollout(sample_id="s0", x="Write about snow.", y0="Snow.",
                                                condition="coevolution")),
        ("coevolution/round1/grpo", None, Rollout(sample_id="s1#a", x="Write about rain.", y0="Rain.",
                                                  c="Add a concrete image.", y1="Rain taps the tin roof.",
                                                  condition="grpo", judgments={"taiscore": taiscore})),
        ("coevolution/round1/eval", 1, Rollout(sample_id="s2", x="Write about fog.", y0="Fog.",
                                                condition="coevolution", judgments={"gold_rubric": unreadable})),
    ]
    run = tmp_path / "run"
    _fake_run(run, "finished", duration_s=3725, rollouts=rollouts, metrics=[("eval", 1, "gold_score", 4.0)])

    shown = coevo_proc("show", run, "--round", "1")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.startswith("taiscore run, finished; started 2026-12-01 09:00, ran 1h 02m")
    assert "headline metrics: gold_score 4.000" in out and "2 of 2 rollouts (round 1)" in out
    # the training stage saved its rollouts without a round; its name gives it
    assert "round 1 · stage coevolution/round1/grpo · sample s1#a · condition grpo" in out
    assert "round 1 · stage coevolution/round1/eval · sample s2 · condition coevolution" in out
    assert "sample s0" not in out and "Write about snow." not in out
    assert "taiscore: 7 (reward 7; critique_quality 6)" in out
    assert "gold_rubric: invalid: no score in the answer" in out
    assert "critique: Add a concrete image." in out and "y1 (revision): Rain taps the tin roof." in out

    only = coevo_proc("show", run, "--stage", "coevolution/round0/eval").stdout
    assert "sample s0" in only and "sample s1#a" not in only and "sample s2" not in only
    assert "1 of 3 rollouts (--limit N shows more)" in coevo_proc("show", run, "--limit", "1").stdout
    none = coevo_proc("show", run, "--stage", "coevolution/round0/eval", "--round", "1").stdout
    assert "no rollouts with stage coevolution/round0/eval, round 1" in none and "rounds: 0, 1" in none
    bad = coevo_proc("show", run, "--stage", "round9")
    assert bad.returncode == 2 and "no stage 'round9'" in bad.stderr and "coevolution/round1/grpo" in bad.stderr


def test_refine_max_tokens_caps_the_texts_not_the_judge():
    from coevo.algorithms.refine import texts_capped
    from coevo.settings.role_specs import RefinementRoleSpecs

    default = RefinementRoleSpecs()
    capped = texts_capped(default, 64)
    texts = (capped.actor.sampling.response, capped.critic.sampling, capped.actor.sampling.revision)
    assert [s.max_tokens for s in texts] == [64, 64, 64]
    assert capped.judge == default.judge  # a cut-off judgment would only be unreadable
    assert capped.actor.sampling.revision.temperature == default.actor.sampling.revision.temperature
    loose = texts_capped(default, 1000)  # a cap, never a raise
    assert loose.actor.sampling.response.max_tokens == default.actor.sampling.response.max_tokens
