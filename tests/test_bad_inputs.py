"""Bad input, command by command: exit code 2 and one line that names the problem and the
fix, never a traceback. A table: each row is a command line (over files the fixture makes)
and words its one line must hold. In process (`coevo.cli.main`), so the table stays cheap."""

from __future__ import annotations

import json
import shlex
import sqlite3
import sys

import pytest

from coevo import cli
from coevo.rundir.store import RunStore

# name -> (command line, quoted as in a shell; words the error line must hold). {d} is the
# fixture's folder.
CASES: dict[str, tuple[str, tuple[str, ...]]] = {
    # run: the config file
    "config missing": ("run {d}/absent.yaml --out {d}/r", ("absent.yaml does not exist",)),
    "config malformed YAML": ("run {d}/malformed.yaml --out {d}/r", ("malformed.yaml",)),
    "config not a mapping": ("run {d}/list.yaml --out {d}/r", ("list.yaml",)),
    "config a binary file": ("run {d}/binary.jsonl --out {d}/r", ("binary.jsonl is not UTF-8", "YAML")),
    "config empty": ("run {d}/empty.yaml --out {d}/r", ("'algorithm' must be one of",)),
    "unknown algorithm": ("run {d}/nope.yaml --out {d}/r", ("'algorithm' must be one of",)),
    "unknown key": ("run {d}/typo.yaml --out {d}/r", ("batch_sise",)),
    "unknown sampling key": ("run {d}/ok.yaml --out {d}/r --set roles.critic.sampling.temprature=1", ("temprature",)),
    "an old config key": ("run {d}/ok.yaml --out {d}/r --set sampling.rollout.max_tokens=9",
                          ("sampling.rollout -> roles.actor.sampling.response and roles.critic.sampling",)),
    "wrong type": ("run {d}/taiscore.yaml --out {d}/r --set rounds=three", ("rounds",)),
    "out of range": ("run {d}/taiscore.yaml --out {d}/r --set rounds=-1", ("rounds",)),
    "override without =": ("run {d}/ok.yaml --out {d}/r --set rounds", ("key.path=value",)),
    "condition name as a path": ("run {d}/conditions.yaml --out {d}/r", ("folder names",)),
    # run: model specs
    "unknown model spec": ("run {d}/ok.yaml --out {d}/r --set roles.actor.model=gpt5", ("gpt5", "hf:")),
    "missing model folder": ("run {d}/ok.yaml --out {d}/r --set roles.actor.model=hf:{d}/no-model",
                             ("no model folder",)),
    "missing gguf file": ("run {d}/ok.yaml --out {d}/r --set roles.judge.model=gguf:{d}/x.gguf", ("no file",)),
    "missing replay file": ("run {d}/ok.yaml --out {d}/r --set roles.judge.model=replay:{d}/x.jsonl", ("no file",)),
    "malformed server spec": ("run {d}/ok.yaml --out {d}/r --set roles.judge.model=openai:m@ftp://x", ("bad openai spec",)),
    "unknown engine": ("run {d}/ok.yaml --out {d}/r --set roles.judge.model=smollm2:tpu", ("unknown engine",)),
    "unreachable server": ("run {d}/ok.yaml --out {d}/r_server --set data.limit=2 --set roles.actor.model=replay:{d}/replay.jsonl"
                           " --set roles.critic.model=replay:{d}/replay.jsonl --set roles.judge.model=openai:m@http://127.0.0.1:9/v1"
                           " --set roles.judge.options.max_retries=0", ("127.0.0.1:9", "max_retries")),
    # run: data
    "data file missing": ("run {d}/ok.yaml --out {d}/r --set data.source={d}/none.jsonl", ("none.jsonl",)),
    "data file empty": ("run {d}/ok.yaml --out {d}/r --set data.source={d}/empty.jsonl", ("holds no samples",)),
    "data bad JSONL line": ("run {d}/ok.yaml --out {d}/r --set data.source={d}/bad.jsonl", ("line 2",)),
    "data without prompts": ("run {d}/ok.yaml --out {d}/r --set data.source={d}/noprompt.jsonl", ("prompt",)),
    "data a binary file": ("run {d}/ok.yaml --out {d}/r --set data.source={d}/binary.jsonl",
                           ("binary.jsonl is not UTF-8", ".jsonl file", ".parquet file")),
    "negative limit": ("run {d}/ok.yaml --out {d}/r --set data.limit=-1", ("limit",)),
    "unsafe in a config alone": ("run {d}/rlac.yaml --out {d}/r --set code.unsafe_exec=true", ("--unsafe-exec",)),
    # run: the run folder
    "--fresh on a folder that is not a run": ("run {d}/ok.yaml --out {d}/notrun --fresh", ("holds no run.sqlite",)),
    "--fresh with --resume": ("run {d}/ok.yaml --out {d}/r --fresh --resume", ("--fresh", "--resume")),
    "--resume on a missing folder": ("run {d}/ok.yaml --out {d}/absent --resume", ("nothing to resume",)),
    "a run there already": ("run {d}/ok.yaml --out {d}/run", ("--resume",)),
    "a run of another config": ("run {d}/taiscore.yaml --out {d}/run --resume", ("different config",)),
    "--out is a file": ("run {d}/ok.yaml --out {d}/add.py", ("add.py is a file", "--out")),
    "--out under a file": ("run {d}/ok.yaml --out {d}/add.py/r", ("add.py is a file", "--out")),
    "quickstart --fresh on a folder that is not a run": ("quickstart --out {d}/notrun --fresh", ("holds no run.sqlite",)),
    "quickstart with too few prompts": ("quickstart --out {d}/q --prompts 2", ("at least 14",)),
    "quickstart --out is a file": ("quickstart --out {d}/add.py", ("add.py is a file", "--out")),
    # show / report / runs
    "show a folder that is not a run": ("show {d}/notrun", ("notrun",)),
    "show a corrupt store": ("show {d}/corrupt", ("run.sqlite",)),
    "show a truncated store": ("show {d}/truncated", ("run.sqlite",)),
    "skills of a run of another algorithm": ("show {d}/run --skills", ("is a controls run", "decoevo")),
    "show with a negative limit": ("show {d}/run --limit -1", ("--limit",)),
    "report a folder that is not a run": ("report {d}/notrun", ("notrun",)),
    "report a corrupt store": ("report {d}/corrupt", ("run.sqlite",)),
    "runs of a missing folder": ("runs {d}/nowhere", ("nowhere is not a folder",)),
    "runs of a file": ("runs {d}/add.py --json", ("add.py is not a folder",)),
    "show an unknown stage": ("show {d}/run --stage nope", ("'nope'", "--stage")),
    "show a round that is not a number": ("show {d}/run --round one", ("--round",)),
    "a flag given a value": ("run {d}/ok.yaml --out {d}/r --fresh=yes", ("--fresh", "does not take a value")),
    "missing argument": ("show", ("Missing argument",)),
    "unknown option": ("runs --bogus", ("No such option",)),
    "unknown command": ("frobnicate", ("frobnicate",)),
    # judge
    "judge input missing": ("judge taiscore --input {d}/none.jsonl --out {d}/o.jsonl", ("none.jsonl",)),
    "judge input empty": ("judge taiscore --input {d}/empty.jsonl --out {d}/o.jsonl", ("no",)),
    "judge bad JSONL line": ("judge outcome-gain --input {d}/rollouts_bad.jsonl --out {d}/o.jsonl", ("line 2",)),
    "judge unknown kind": ("judge nicest --input {d}/rollouts.jsonl --out {d}/o.jsonl", ("nicest", "outcome_gain")),
    "judge gold_rubric without rubrics": ("judge gold_rubric --input {d}/rollouts.jsonl --out {d}/o.jsonl",
                                          ("rubrics", "coevo run")),
    "judge bad scoring": ("judge taiscore --input {d}/rollouts.jsonl --out {d}/o.jsonl --scoring best",
                          ("--scoring",)),
    "judge unknown model spec": ("judge taiscore --input {d}/rollouts.jsonl --out {d}/o.jsonl --judge gpt5",
                                 ("gpt5",)),
    "judge a binary input": ("judge taiscore --input {d}/binary.jsonl --out {d}/o.jsonl", ("binary.jsonl", "UTF-8")),
    "judge a folder as input": ("judge taiscore --input {d}/notrun --out {d}/o.jsonl", ("notrun is a folder", "JSONL")),
    "judge --out a folder": ("judge taiscore --input {d}/rollouts.jsonl --out {d}/notrun", ("notrun is a folder",)),
    "judge --out under a file": ("judge taiscore --input {d}/rollouts.jsonl --out {d}/add.py/o.jsonl",
                                 ("add.py is a file",)),
    # eval
    "agreement file missing": ("eval agreement --a {d}/none.jsonl --b {d}/scores.jsonl", ("none.jsonl",)),
    "agreement file empty": ("eval agreement --a {d}/empty.jsonl --b {d}/scores.jsonl", ("holds no scores",)),
    "agreement bad JSONL line": ("eval agreement --a {d}/scores_bad.jsonl --b {d}/scores.jsonl", ("line 2",)),
    "agreement missing key": ("eval agreement --a {d}/noscore.jsonl --b {d}/scores.jsonl", ("score",)),
    "agreement non-numeric score": ("eval agreement --a {d}/textscore.jsonl --b {d}/scores.jsonl", ("finite number",)),
    "skill file missing": ("eval skill --skill {d}/none.md --data bundled:writing", ("none.md",)),
    "skill limit below 1": ("eval skill --skill {d}/none.md --data bundled:writing --limit 0", ("--limit",)),
    "average of a stray file": ("eval average {d}/scores.jsonl", ("--final-skills --json",)),
    "average of a missing run": ("eval average {d}/no_run", ("no such run folder",)),
    "TRL's vLLM sampling on a CPU": ("run {d}/taiscore.yaml --out {d}/r --set grpo.use_vllm=true",
                                     ("needs a GPU", "grpo.use_vllm=false")),
    "plan on unknown hardware": ("plan {d}/ok.yaml --hardware 8xB200", ("known: cpu",)),
    "checkpoints of a folder that is no run": ("eval checkpoints {d}/no_run --data bundled:writing",
                                               ("is not a run folder",)),
    "checkpoints with 0 output sets": ("eval checkpoints {d}/no_run --data bundled:writing --output-sets 0",
                                       ("--output-sets",)),
    # validate
    "validate code negative timeout": ("validate code --problem HumanEval/53 --solution {d}/add.py --timeout -1",
                                       ("--timeout",)),
    "validate code bad test form": ("validate code --problem HumanEval/53 --solution {d}/add.py --test hello",
                                    ("CALL:", "STDIN:")),
    "validate code unknown problem": ("validate code --problem HumanEval/999 --solution {d}/add.py", ("HumanEval/999",)),
    "validate code missing solution": ("validate code --problem HumanEval/53 --solution {d}/none.py", ("none.py",)),
    "validate code missing problems file": ("validate code --problem p --solution {d}/add.py --problems {d}/none.jsonl",
                                            ("none.jsonl",)),
    "validate fact bad mode": ("validate fact --entity E --sentence S --fact F --mode guess", ("--mode",)),
    "refine unknown model spec": ("refine --prompt hi --actor gpt5", ("gpt5",)),
    "refine an empty prompt": ("refine --prompt ''", ("--prompt", "empty")),
    "refine a blank prompt": ("refine --prompt '  \n '", ("--prompt", "empty")),
    "refine a blank response": ("refine --prompt hi --response '  '", ("--response", "empty")),
    # the other commands
    "plan a missing config": ("plan {d}/absent.yaml", ("absent.yaml does not exist",)),
    # Hostile sizes and values: refused where the config is read, before any model loads.
    "plan an absurd size": ("plan {d}/taiscore.yaml --set rounds=1000000000", ("rounds", "--allow-large")),
    "run an absurd size": ("run {d}/taiscore.yaml --out {d}/r --set rounds=1000000000", ("--allow-large",)),
    "plan sizes that multiply past the limit": ("plan {d}/taiscore.yaml --set rounds=100 --set seeds=100 "
                                                "--set conditions=[taiscore,coevolution]",
                                                ("stages", "--allow-large")),
    "a count past any run": ("run {d}/taiscore.yaml --out {d}/r --set pairs_per_round=10000000000", ("over",)),
    "a negative token limit": ("run {d}/ok.yaml --out {d}/r --set roles.critic.sampling.max_tokens=-5",
                               ("max_tokens",)),
    "a negative seed": ("run {d}/taiscore.yaml --out {d}/r --set seed=-3", ("seed", "0 or more")),
    "a number that is not finite": ("run {d}/taiscore.yaml --out {d}/r --set invalid_reward=.nan", ("finite",)),
    "plan an unknown model spec": ("plan {d}/taiscore.yaml --set roles.actor.model=gpt5", ("gpt5", "hf:")),
    "plan a missing calibration": ("plan {d}/ok.yaml --calibration {d}/none.json", ("no such calibration file",)),
    "plan a calibration that is none": ("plan {d}/ok.yaml --calibration {d}/empty.jsonl",
                                        ("is not a coevo calibration",)),
    "plan measuring and reading rates": ("plan {d}/ok.yaml --calibrate --calibration {d}/none.json",
                                         ("pass one",)),
    "view a missing folder": ("view {d}/nowhere", ("nowhere is not a folder",)),
    "view --allow-host empty": ("view {d}/run --allow-host ''", ("--allow-host takes a host name",)),
    "view --allow-host a url": ("view {d}/run --allow-host http://box.lan/", ("--allow-host takes a host name",)),
    "view --against a folder that is not a run": ("view {d}/run --against {d}/notrun",
                                                  ("--against", "notrun is not a run folder")),
    "view --conditions on a run with no condition": ("view {d}/run --conditions taiscore:off_the_shelf",
                                                     ("no TAIScore evaluation stage",)),
    "view --conditions not a pair": ("view {d}/run --conditions taiscore", ("FIRST:SECOND",)),
    "annotate a missing file": ("annotate {d}/none.jsonl", ("none.jsonl is not a file", "JSONL")),
    "annotate a row without outputs": ("annotate {d}/bad.jsonl", ("line 1", "'a' and 'b'")),
    "annotate rollouts without a prompt": ("annotate {d}/rollouts.jsonl", ("line 1", "'prompt' is missing")),
    "annotate a binary file": ("annotate {d}/binary.jsonl", ("binary.jsonl is not UTF-8",)),
    "annotate one system named": ("annotate {d}/rollouts.jsonl --a-name base", ("give both --a-name and --b-name",)),
    "annotate --allow-host a url": ("annotate {d}/rollouts.jsonl --allow-host http://box.lan/",
                                    ("--allow-host takes a host name",)),
    "audit an unknown judge": ("audit judge --judge replay:{d}/replay.jsonl --kind nicest", ("nicest", "taiscore")),
    "audit a misspelt judge": ("audit judge --judge replay:{d}/replay.jsonl --kind taiscor",
                               ("did you mean taiscore?",)),
    "annotations file missing": ("eval annotations {d}/none.jsonl", ("none.jsonl",)),
}
#: Commands with no row, and why: what they read cannot be wrong.
NO_BAD_INPUT = {"metrics": "an unknown name is listed as 'not a registered metric', by design",
                "models": "takes no input but --prepare"}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    files = {
        "malformed.yaml": "algorithm: [controls\n", "list.yaml": "- a\n- b\n", "empty.yaml": "",
        "nope.yaml": "algorithm: nope\n", "typo.yaml": "algorithm: controls\nbatch_sise: 4\n",
        "ok.yaml": "algorithm: controls\n", "taiscore.yaml": "algorithm: taiscore\n",
        "rlac.yaml": "algorithm: rlac\ntask: code\n",
        "conditions.yaml": "algorithm: taiscore\nconditions:\n  - {name: ../escape, preset: taiscore}\n",
        "empty.jsonl": "", "bad.jsonl": json.dumps({"prompt": "p"}) + "\n{not json\n",
        "noprompt.jsonl": json.dumps({"text": "p"}) + "\n",
        "rollouts.jsonl": json.dumps({"x": "a", "y0": "b", "c": "c", "y1": "d"}) + "\n",
        "rollouts_bad.jsonl": json.dumps({"x": "a", "y0": "b", "c": "c", "y1": "d"}) + "\n{oops\n",
        "scores.jsonl": json.dumps({"group": "g", "candidate": "a", "score": 1}) + "\n",
        "scores_bad.jsonl": json.dumps({"group": "g", "candidate": "a", "score": 1}) + "\n{oops\n",
        "noscore.jsonl": json.dumps({"group": "g", "candidate": "a"}) + "\n",
        "textscore.jsonl": json.dumps({"group": "g", "candidate": "a", "score": "high"}) + "\n",
        "add.py": "def add(x, y):\n    return x + y\n",
        "replay.jsonl": json.dumps({"completion": "A short answer."}) + "\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    (d / "binary.jsonl").write_bytes(b"PK\x03\x04\x14\x00\x08\x08\xa0\xff\xfe" * 20)  # a zip's start, not UTF-8
    (d / "notrun").mkdir()
    (d / "notrun" / "precious.txt").write_text("not coevo's")
    store = RunStore(d / "run")  # a run of the controls config, with work recorded
    store.set_meta("config", {"algorithm": "controls"})
    store.set_meta("algorithm", "controls")
    store.log_metrics("stage", {"x": 1.0})
    store.close()
    (d / "corrupt").mkdir()
    (d / "corrupt" / "run.sqlite").write_bytes(b"this is not a database" * 100)
    RunStore(d / "truncated").close()
    whole = (d / "truncated" / "run.sqlite").read_bytes()
    (d / "truncated" / "run.sqlite").write_bytes(whole[: len(whole) // 3])
    with sqlite3.connect(d / "run" / "run.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 1
    yield d
    from coevo.llm.specs import clear_loaded

    clear_loaded()  # what a case loaded on its way to the error is not shared with later tests


def run_cli(argv: list[str], monkeypatch, capsys) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["coevo", *argv])
    with pytest.raises(SystemExit) as ended:
        cli.main()
    return ended.value.code, capsys.readouterr().err


def test_every_command_has_a_row():
    # Catches a command added (or renamed) without a bad-input row: its first user to mistype
    # a path may meet a traceback, and nothing here would say so.
    import typer.main

    def leaves(command, prefix=()):
        subcommands = getattr(command, "commands", None)
        if not subcommands:
            return [" ".join(prefix)]
        return [path for name, sub in subcommands.items() for path in leaves(sub, (*prefix, name))]

    commands = set(leaves(typer.main.get_command(cli.app)))
    covered = {path for path in commands for line, _ in CASES.values() if f"{line} ".startswith(f"{path} ")}
    missing = commands - covered - set(NO_BAD_INPUT)
    assert not missing, f"commands without a bad-input row in CASES: {sorted(missing)}"
    assert set(NO_BAD_INPUT) <= commands, "a command in NO_BAD_INPUT is gone: drop it there"


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_one_line_and_exit_2(name, folder, monkeypatch, capsys):
    command, words = CASES[name]
    monkeypatch.delenv("COEVO_UNSAFE_EXEC", raising=False)
    monkeypatch.setenv("COEVO_QUIET", "1")  # no progress bars: the error line is all there is
    code, stderr = run_cli(shlex.split(command.format(d=folder)), monkeypatch, capsys)
    assert code == 2, (name, code, stderr)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), (name, stderr)
    for word in words:
        assert word in lines[0], (name, word, lines[0])
    assert (folder / "notrun" / "precious.txt").exists()
    assert not (folder / "r").exists(), f"{name}: a failed start created its run folder"
