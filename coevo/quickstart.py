"""`coevo quickstart`: TAIScore co-evolution at its smallest (one round), as a library call.

The config is examples/taiscore_tiny.yaml's budgets on the bundled writing prompts; the run
folder, run again, resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The quickstart's monitor anchor (a `python:` spec: loaded by name, not imported here).
QUICKSTART_ANCHOR = "python:coevo.learning.rewards:checkable_taiscore"


def quickstart_config(prompts: int, model: str, judge: str) -> dict[str, Any]:
    """The quickstart's config: `prompts` bundled writing prompts, `model` as actor and critic."""
    # The budgets of examples/taiscore_tiny.yaml (see its comments): critiques that end
    # before their limit, and a judge scored by expectation, so GRPO has rewards to learn from.
    return {
        "algorithm": "taiscore",
        "data": {"source": "bundled:writing", "limit": prompts},
        "roles": {
            "actor": {"model": model,
                      "sampling": {"response": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 320},
                                   "revision": {"temperature": 0.2, "top_p": 0.95, "max_tokens": 128}}},
            "critic": {"model": model, "template": "critic_brief",
                       "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 320}},
            "judge": {"model": judge, "sampling": {"temperature": 0.2, "top_p": 1.0, "max_tokens": 320,
                                                   "scoring": "expected", "reason_limit": 160}},
        },
        # The trained actor and critic generate on llama.cpp from their current weights (and the
        # critic's GRPO samples too): 0.69x the run's time of generating in transformers
        # (BENCHMARKS.md, "Where the quickstart's time goes").
        "actor_engine": "llamacpp",
        "critic_engine": "llamacpp",
        "rounds": 1,
        "critic_queries": 2,
        "pairs_per_round": 4,
        "grpo": {"num_generations": 2, "batch_size": 1, "learning_rate": 1e-5, "max_steps": 2,
                 "save_steps": 1},
        "dpo": {"learning_rate": 1e-5, "max_steps": 2, "max_length": 512, "max_prompt_length": 384,
                "save_steps": 1},
        "evaluation": {"prompts": 2},
        "audit": {"prompts": 2},  # the judges probed for gaming before and after the round
        # The reward-hacking monitor on the critic's GRPO stage (docs/monitor.md), its anchor
        # the Python-checked TAIScore analogue: does the critique name a constraint y0 breaks,
        # does the revision act on it, fix it? What the 135M judge's reward is meant to measure.
        "monitor": {"anchors": [QUICKSTART_ANCHOR], "prompts": 2},
    }


def run_quickstart(out_dir: Path, *, prompts: int, model: str, judge: str, fresh: bool) -> dict[str, Any]:
    """Run (or resume) the quickstart in `out_dir`; `fresh` deletes an earlier one first.
    Returns run_experiment's summary (its "table" and "report")."""
    from coevo.runner import remove_run_folder, run_experiment
    from coevo.store import STORE_FILE

    if fresh:
        remove_run_folder(out_dir)
    # Run again, it resumes: --resume is implied when the folder already holds the quickstart.
    return run_experiment(None, out_dir, resume=(out_dir / STORE_FILE).is_file(),
                          data=quickstart_config(prompts, model, judge))
