"""A real DPO stage (the embedded model or any spec), set up as `coevo run` sets up a run: the run's
logging (coevo.run.logs.run_logging) around the shared stage runner (coevo.train.stages).

Run as a subprocess by test_train_reporting.py, so the terminal it writes is the one a
user would see: python stage_script.py RUN_DIR [STEPS [MODEL_SPEC]] (the embedded model by
default; the test passes its tiny random model). Before training it raises a
FutureWarning and logs a library warning, as transformers / TRL do.
"""

import logging
import sys
import warnings
from pathlib import Path

from coevo.run.logs import run_logging
from coevo.rundir.store import RunStore
from coevo.train import DPOSettings, train_dpo
from coevo.train.stages import restore_checkpoint, run_stage
from coevo.core.types import PreferencePair

PAIRS = [PreferencePair(prompt="Say hello.", chosen="Hello there, friend!", rejected="No."),
         PreferencePair(prompt="Name a color.", chosen="Blue, like a clear sky.", rejected="I will not.")]
STAGE = "coevolution/round1/actor"


def main(run: Path, steps: int, model: str = "smollm2") -> None:
    settings = DPOSettings(learning_rate=1e-4, max_steps=steps, max_length=48, max_prompt_length=24,
                           save_steps=100, report_to="tensorboard")
    store = RunStore(run)
    store.set_meta("algorithm", "taiscore")
    store.set_meta("config", {"algorithm": "taiscore", "data": {"source": "bundled:writing"},
                              "dpo": settings.model_dump(mode="json")})
    with run_logging(run):
        warnings.warn("a library's deprecation notice", FutureWarning)
        logging.getLogger("transformers.modeling_utils").warning("a transformers warning")
        from coevo.llm.specs import load_model

        policy = load_model(model, trainable=True)
        output = run / "checkpoints" / STAGE
        outcome = run_stage(store, STAGE, lambda: train_dpo(policy, PAIRS, settings, output),
                            lambda checkpoint: restore_checkpoint(policy, checkpoint, None), round=1, kind="dpo")
    print(f"CHECKPOINT {outcome.result.checkpoint} RESUMED {outcome.resumed}")
    store.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2, *sys.argv[3:4])
