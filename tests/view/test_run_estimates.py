"""A run keeps the cost `coevo plan` estimated for it when it started, and shows it beside
what it counted: `coevo runs --estimates` and the run page's cost section. The run is a
replay run of `coevo run` (TAIScore, fake trainers: replay_runs.build_taiscore)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from replay_runs import build_taiscore
from typer.testing import CliRunner

from coevo.cli import app as cli
from coevo.plan.estimate_check import run_comparison
from coevo.rundir.store import RunStore
from coevo.view.app import create_app


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("estimates")
    return build_taiscore(folder / "runs" / "taiscore", folder / "inputs")


def test_the_run_keeps_its_estimate_and_sets_it_beside_its_cost(run):
    store = RunStore(run, read_only=True)
    kept = store.get_meta("estimate")
    store.close()
    assert kept["total"]["calls"] > 0 and kept["calls"][0]["stage"] == "coevolution/round0/eval"
    sides = run_comparison(run)
    # The replay run makes the calls the estimate counts (its judges answer the first time).
    assert sides["training_steps"].estimate == sides["training_steps"].actual == 2
    assert 0.5 <= sides["calls"].ratio <= 2.0, sides["calls"]
    result = CliRunner().invoke(cli, ["runs", str(run.parent), "--estimates"])
    assert result.exit_code == 0, result.output
    assert "taiscore" in result.stdout and "→" in result.stdout and "×" in result.stdout


def test_the_run_page_says_estimate_and_count(run):
    client = TestClient(create_app([run]))
    [ref] = client.app.state.runs.runs()
    page = client.get(f"/runs/{ref.id}", headers={"accept": "text/html"}).text
    assert "Estimated when the run started" in page and "training steps 2 → 2 (1.00×)" in page
    # The training stages' memory and tokens are the Training table's columns, said once.
    assert 'id="table-cost-training"' not in page and "peak memory (MB)" in page
