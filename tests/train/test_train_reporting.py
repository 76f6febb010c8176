"""Training logs where people look: `report_to`, TRL's history in the run store, model cards,
checkpoint paths relative to the run folder, and a quiet terminal (logs in RUN/coevo.log)."""

from __future__ import annotations

import json
import logging
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from coevo.rundir.store import RunStore
from coevo.train import DPOSettings, TrainError, TrainResult
from coevo.train.grpo import GRPOSettings

HERE = Path(__file__).parent


# -- report_to ---------------------------------------------------------------------------

def test_report_to_takes_known_integrations_or_a_list_and_names_the_choices():
    assert DPOSettings().report_to == "none"
    assert GRPOSettings(report_to=["tensorboard", "wandb"]).report_to == ["tensorboard", "wandb"]
    with pytest.raises(ValueError, match="unknown.*mlfloww.*none, tensorboard, wandb"):
        DPOSettings(report_to="mlfloww")
    with pytest.raises(ValueError, match="'none' cannot be combined"):
        GRPOSettings(report_to=["none", "wandb"])


def test_report_to_reaches_trl_and_the_trl_block_cannot_set_it_behind_coevo(tmp_path):
    from coevo.train.dpo import dpo_config
    from coevo.train.grpo import grpo_config

    args = dpo_config(DPOSettings(report_to="tensorboard"), tmp_path)
    assert args.report_to == ["tensorboard"] and args.disable_tqdm
    assert grpo_config(GRPOSettings(batch_size=1, num_generations=2), tmp_path).report_to == []
    with pytest.raises(TrainError, match="dpo.trl sets report_to, which coevo sets itself"):
        dpo_config(DPOSettings(trl={"report_to": "wandb"}), tmp_path)
    with pytest.raises(TrainError, match="grpo.trl sets disable_tqdm"):
        grpo_config(GRPOSettings(batch_size=1, num_generations=2, trl={"disable_tqdm": False}), tmp_path)


def test_a_missing_integration_is_refused_before_the_run_naming_the_install(tmp_path, monkeypatch):
    import importlib.util

    from coevo.core.strict import ConfigError
    from coevo.run.runner import run_experiment
    from coevo.train import reporting

    real = importlib.util.find_spec
    monkeypatch.setattr(reporting.importlib.util, "find_spec",
                        lambda name, *a: None if name in ("wandb", "tensorboard", "tensorboardX") else real(name, *a))
    with pytest.raises(TrainError, match=r"dpo.report_to: wandb is not installed; run `pip install wandb`"):
        reporting.require_reporters(["wandb"], "dpo")
    with pytest.raises(TrainError, match=r"`pip install tensorboard`"):
        reporting.require_reporters("tensorboard", "grpo")
    reporting.require_reporters("none", "dpo")
    # In a config: refused by the run's preflight, before a run folder exists.
    config = {"algorithm": "taiscore", "roles": {role: {"model": "replay:x.jsonl"} for role in ("actor", "critic", "judge")},
              "grpo": {"report_to": "tensorboard"}}
    (tmp_path / "x.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises((TrainError, ConfigError), match="pip install tensorboard"):
        run_experiment(None, tmp_path / "run", data=config)
    assert not (tmp_path / "run").exists()


# -- history, stage lines, paths ---------------------------------------------------------

def test_history_is_json_safe_numbers_only():
    from coevo.train.reporting import json_history

    history = json_history([{"loss": 0.5, "step": 1, "note": "x", "flag": True},
                            {"grad_norm": float("nan"), "kl": float("inf"), "step": 2}, {"text": "only"}])
    assert history == [{"loss": 0.5, "step": 1}, {"grad_norm": None, "kl": None, "step": 2}]
    json.dumps(history, allow_nan=False)


def test_a_finished_stage_reads_in_one_line():
    from coevo.train.stages import stage_line

    grpo = TrainResult(checkpoint="/r/final", steps=2, seconds=31.2, seconds_per_step=15.6, peak_rss_mb=1.0,
                       metrics={"train_loss": 0.0123, "reward_group_sd": 0.21, "weight_delta": 3e-5},
                       round=1, kind="grpo")
    assert stage_line("coevolution/round1/critic", grpo, "taiscore") == (
        "critic GRPO round 1 (coevolution): 2 steps, 31 s, loss 0.0123, reward sd 0.21, weights moved 3e-05")
    dpo = grpo.model_copy(update={"kind": "dpo", "metrics": {"loss": 0.69, "pairs": 4.0, "weight_delta": 0.0}})
    assert stage_line("rlac/round2/generator", dpo.model_copy(update={"round": 2}), "rlac") == (
        "generator DPO round 2: 2 steps, 31 s, loss 0.69, pairs 4, weights UNCHANGED")


def test_checkpoint_paths_are_stored_relative_to_the_run_folder_and_resolve_back(tmp_path, monkeypatch):
    from coevo.train.stages import resolved_path, stored_path

    run = tmp_path / "runs" / "a"
    final = run / "round1" / "generator" / "final"
    final.mkdir(parents=True)
    assert stored_path(final, run) == "round1/generator/final"
    monkeypatch.chdir(tmp_path)  # a run folder given relative to the working directory
    assert stored_path(Path("runs/a/round1/generator/final"), Path("runs/a")) == "round1/generator/final"
    assert resolved_path("round1/generator/final", run) == str(final)
    # Outside the run folder (a base model, a hub id), and old absolute records: as they are.
    assert stored_path("/models/base", run) == "/models/base"
    assert stored_path("HuggingFaceTB/SmolLM2-135M-Instruct", run) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert resolved_path("HuggingFaceTB/SmolLM2-135M-Instruct", run) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert resolved_path(str(final), run) == str(final) and resolved_path(None, run) is None


def test_run_stage_records_history_round_kind_and_a_relative_checkpoint_and_restores_it(tmp_path):
    from coevo.train.reporting import current_stage
    from coevo.train.stages import run_stage

    store = RunStore(tmp_path / "run")
    store.set_meta("algorithm", "rlac")
    seen = []

    def train():
        seen.append(current_stage())
        final = store.run_dir / "round1" / "critic" / "final"
        final.mkdir(parents=True)
        return TrainResult(checkpoint=str(final), steps=1, seconds=1.0, seconds_per_step=1.0, peak_rss_mb=1.0,
                           history=[{"loss": 0.7, "step": 1}])

    outcome = run_stage(store, "rlac/round1/critic", train, lambda c: None, round=1, kind="dpo")
    assert seen[0].name == "rlac/round1/critic" and seen[0].round == 1 and seen[0].algorithm == "rlac"
    assert outcome.result.checkpoint == str(store.run_dir / "round1" / "critic" / "final")
    recorded = store.step_result("rlac/round1/critic")
    assert recorded["checkpoint"] == "round1/critic/final" and recorded["kind"] == "dpo"
    assert store.training_logs() == [{"stage": "rlac/round1/critic", "round": 1,
                                      "history": [{"loss": 0.7, "step": 1}]}]
    restored = []
    again = run_stage(store, "rlac/round1/critic", train, restored.append, round=1, kind="dpo")
    assert again.resumed and restored == [outcome.result.checkpoint] == [again.result.checkpoint]
    assert len(seen) == 1  # not trained twice


# -- model cards -------------------------------------------------------------------------

def test_model_card_names_the_base_stage_round_data_metrics_and_config(tmp_path):
    from huggingface_hub import ModelCard

    from coevo.train.modelcard import hub_base_model, write_model_card

    base = tmp_path / "smollm2-135m-instruct"
    base.mkdir()
    assert hub_base_model(str(base)) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert hub_base_model("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert hub_base_model(str(tmp_path)) is None and hub_base_model(None) is None
    config = {"algorithm": "rlac", "task": "code", "dpo": {"beta": 0.1}}
    path = write_model_card(tmp_path, kind="dpo", origin="Qwen/Qwen3-8B", steps=3, lora=True,
                            metrics={"train_loss": 0.25, "weight_delta": 1e-4}, stage="rlac/round2/critic",
                            round=2, algorithm="rlac", config=config)
    card = ModelCard.load(path)
    assert card.data.base_model == "Qwen/Qwen3-8B" and card.data.library_name == "peft"
    assert {"coevo", "trl", "dpo", "rlac", "lora"} <= set(card.data.tags)
    text = card.text
    assert "| round | 2 |" in text and "`rlac/round2/critic`" in text and "| train_loss | 0.25 |" in text
    assert "code (bundled)" in text and "beta: 0.1" in text and "AutoPeftModelForCausalLM" in text


# -- the quiet terminal ------------------------------------------------------------------

def _noisy_run(tmp_path: Path, verbose: bool, capsys) -> tuple[str, str]:
    from coevo.run.logs import run_logging

    os.environ.pop("COEVO_VERBOSE", None)
    if verbose:
        os.environ["COEVO_VERBOSE"] = "1"
    try:
        with run_logging(tmp_path) as log_file:
            warnings.warn("a library's deprecation notice", FutureWarning)
            logging.getLogger("transformers.trainer").warning("a transformers warning")
            logging.getLogger("coevo.train.steps").info("DPO x step 1: %s", {"loss": 0.69})
            logging.getLogger("coevo.validators").warning("coevo's own warning")
    finally:
        os.environ.pop("COEVO_VERBOSE", None)
    return capsys.readouterr().err, log_file.read_text()


def _library_logger_state(name: str) -> tuple[set[logging.Handler], bool]:
    logger = logging.getLogger(name)
    return set(logger.handlers), logger.propagate


def test_library_warnings_and_trl_dicts_go_to_the_log_file_only(tmp_path, capsys):
    handlers = list(logging.getLogger().handlers)
    # transformers' own set-up depends on the environment (with CI=true it propagates too).
    transformers_before = _library_logger_state("transformers")
    terminal, log = _noisy_run(tmp_path, False, capsys)
    for text in ("FutureWarning", "a transformers warning", "{'loss': 0.69}", "coevo's own warning"):
        assert text in log
    assert "FutureWarning" not in terminal and "transformers" not in terminal and "{'loss'" not in terminal
    assert "coevo's own warning" in terminal
    assert logging.getLogger().handlers == handlers  # put back after the run
    assert _library_logger_state("transformers") == transformers_before


def test_library_bars_become_one_line_in_the_log_file(tmp_path, capsys):
    from transformers.utils import logging as hf_logging

    from coevo.run.logs import run_logging

    os.environ.pop("COEVO_VERBOSE", None)
    with run_logging(tmp_path) as log_file:
        assert list(hf_logging.tqdm(range(3), desc="Writing model shards")) == [0, 1, 2]
        with hf_logging.tqdm(total=4, desc="Loading weights") as bar:
            bar.update(4)
            bar.set_postfix(x=1)
    assert "Writing model shards" not in capsys.readouterr().err
    log = log_file.read_text()
    assert "Writing model shards: 3/3" in log and "Loading weights: 4/4" in log
    from coevo.run.logs import LoggedBar

    assert not isinstance(hf_logging.tqdm(range(1)), LoggedBar)  # the hook goes with the run


LATE_IMPORT = """
import logging, os, sys
from coevo.run.logs import run_logging
assert "transformers" not in sys.modules and "datasets" not in sys.modules
with run_logging(sys.argv[1]):
    from transformers.utils import logging as hf_logging  # as a model load does, mid-run
    import datasets
    logging.getLogger("transformers.modeling_utils").warning("a late transformers warning")
    logging.getLogger("datasets.builder").warning("a late datasets warning")
    list(hf_logging.tqdm(range(2), desc="Writing model shards"))
    assert not datasets.is_progress_bar_enabled()
# put back as transformers set itself up: its own stderr handler (propagating only under CI=true)
library = logging.getLogger("transformers")
assert datasets.is_progress_bar_enabled() and hf_logging._default_handler in library.handlers
assert library.propagate == (os.environ.get("CI", "").upper() in ("1", "ON", "YES", "TRUE"))
"""


def test_libraries_imported_mid_run_are_quiet_too(tmp_path):
    """transformers and datasets attach their terminal handlers when imported, which in a
    real run happens when the first model loads, after the run's logging is set up."""
    env = {k: v for k, v in os.environ.items() if k not in ("COEVO_VERBOSE", "COEVO_QUIET")}
    done = subprocess.run([sys.executable, "-c", LATE_IMPORT, str(tmp_path)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "late" not in done.stderr + done.stdout and "Writing model shards" not in done.stderr
    log = (tmp_path / "coevo.log").read_text()
    assert "a late transformers warning" in log and "a late datasets warning" in log
    assert "Writing model shards: 2/2" in log


def test_verbose_shows_them_on_the_terminal_too(tmp_path, capsys):
    terminal, log = _noisy_run(tmp_path, True, capsys)
    for text in ("FutureWarning", "a transformers warning", "{'loss': 0.69}"):
        assert text in terminal and text in log


@pytest.mark.slow
@pytest.mark.tiny_model
def test_a_real_dpo_stage_logs_to_tensorboard_the_store_and_the_log_file_not_the_terminal(tmp_path, tiny_llama):
    """One real DPO stage run as `coevo run` runs it, in a subprocess whose terminal is read
    (on the tiny random model: what is logged where does not depend on what the weights say)."""
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if k not in ("COEVO_VERBOSE", "COEVO_QUIET")}
    done = subprocess.run([sys.executable, str(HERE / "stage_script.py"), str(run), "2", f"hf:{tiny_llama}"], capture_output=True,
                          text=True, timeout=900, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    terminal = done.stdout + done.stderr
    log = (run / "coevo.log").read_text()
    # Terminal: coevo's bar and its one stage line; no TRL dicts, no library warnings.
    assert "{'loss'" not in terminal and "FutureWarning" not in terminal and "transformers warning" not in terminal
    assert "Writing model shards" not in terminal
    assert "actor DPO round 1 (coevolution): 2 steps" in terminal
    assert "{'loss'" in log and "FutureWarning" in log and "a transformers warning" in log
    assert "Writing model shards: 1/1" in log
    # TensorBoard event files under RUN/logs/<stage>.
    events = list((run / "logs" / "coevolution" / "round1" / "actor").glob("events.out.tfevents.*"))
    assert events and events[0].stat().st_size > 0
    # TRL's history in the store, with the stage's round and kind; the checkpoint relative.
    store = RunStore(run, read_only=True)
    (logs,) = store.training_logs()
    assert logs["stage"] == "coevolution/round1/actor" and logs["round"] == 1
    losses = [row["loss"] for row in logs["history"] if "loss" in row]
    assert len(losses) == 2 and math.isclose(losses[0], math.log(2), abs_tol=1e-3)
    recorded = store.step_result("coevolution/round1/actor")
    assert recorded["kind"] == "dpo" and recorded["checkpoint"] == "checkpoints/coevolution/round1/actor/final"
    store.close()
    card = (run / recorded["checkpoint"] / "README.md").read_text()
    assert "| round | 1 |" in card
    assert "bundled:writing" in card and "- taiscore" in card
    # The run folder moved: the stage is restored from its relative path, not trained again.
    moved = tmp_path / "moved"
    run.rename(moved)
    again = subprocess.run([sys.executable, str(HERE / "stage_script.py"), str(moved), "2", f"hf:{tiny_llama}"], capture_output=True,
                           text=True, timeout=900, env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert f"CHECKPOINT {moved}/checkpoints/coevolution/round1/actor/final RESUMED True" in again.stdout


def test_step_timing_reads_the_step_log_and_trl_s_token_counter():
    from types import SimpleNamespace

    from coevo.train import reporting

    log = reporting.StepLog("DPO test")
    state = SimpleNamespace(global_step=0, is_world_process_zero=False, max_steps=3, log_history=[])
    log.on_train_begin(None, state, None)
    for step in (1, 2, 3):
        state.global_step = step
        log.on_step_end(None, state, None)
        state.log_history.append({"step": step, "num_tokens": 100.0 * step})
    log.marks = [0.0, 5.0, 6.0, 7.0]  # a slow first step (warm-up), then one second a step
    trainer = SimpleNamespace(callback_handler=SimpleNamespace(callbacks=[log]), state=state)
    timing = reporting.step_timing(trainer)
    assert timing == {"first_step_seconds": 5.0, "steady_step_seconds": 1.0, "steady_tokens_per_s": 100.0}
    log.marks, log.steps = [0.0, 5.0], [0, 1]
    assert reporting.step_timing(trainer) == {"first_step_seconds": 5.0}  # one step: nothing steady
