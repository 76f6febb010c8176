"""The controlled analysis (`algorithm: scaling`) end to end on the real embedded model: the
tiny config at test size (2 prompts, 64-token texts; ~70 s on 2 idle cores). Nothing trains in
this loop, so no TRL step; its logic is tested on replay models in test_scaling.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from coevo.run.runner import run_experiment

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHORT = ["data.limit=2", "roles.actor.sampling.response.max_tokens=64",
         "roles.actor.sampling.revision.max_tokens=64", "roles.critic.sampling.max_tokens=64"]


def test_scaling_tiny_on_the_embedded_model(tmp_path):
    run_experiment(EXAMPLES / "scaling_tiny.yaml", tmp_path / "run", overrides=SHORT)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    critic, refiner = summary["table"]["rows"]
    # One model plays both sizes: every delta is 0 by construction, over the 2 prompts.
    assert critic["delta_gain_n"] == 2 and critic["delta_gain"] == 0.0
    assert refiner["delta_critique_quality"] == "fixed" and refiner["delta_adherence_n"] == 2
    [cell] = summary["cells"]["rows"]  # one y0, one critique, one revision: shared by both blocks
    for metric in ("critique_quality", "adherence", "S_y0", "S_y1"):
        assert cell[f"{metric}_n"] == 2 and 1.0 <= cell[metric] <= 10.0, (metric, cell)
    assert (tmp_path / "run" / summary["figure_file"]).is_file()
