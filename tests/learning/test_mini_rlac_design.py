"""The RLAC miniature's design, checked on the whole measurement with fake models (fast: no
weights; the code validator runs in the sandbox as in a real run).

The fakes: the generator writes the reference solution (sample 0), a function that is right
on the problem statement's example and raises on any other input (sample 1) and one that
raises on every input (sample 2, drawn only for the detection set); the critic either
proposes a hidden test's call (where it "knows" the problem) or copies the statement's example
(which such a function survives), then an unreadable answer, and every answer names the critic
weights that wrote it. The base critic knows half the problems, a critic after a DPO stage all
of them, so a trained critic that proposes, or is measured, shows in the verdicts and texts.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path

import pytest

import coevo.algorithms.rlac.loop as rlac_loop
from coevo.algorithms.backend import Backend
from learning import mini_rlac
from coevo.rundir.store import RunStore
from coevo.tasks.code import example_calls, load_code_problems
from coevo.train.common import TrainResult
from coevo.core.types import Completion

ITERATIONS = 2  # the least that shows a trained critic proposing (round 2); the default is 3
#: K=2 train outputs (the reference, a subtle failure); 3 detection samples (and a crash).
SIZES = [f"iterations={ITERATIONS}", "data.train=2", "k=2", "n=2", "detection.samples=3", "detection.max_outputs=6"]


def weights_label(weights: str | None) -> str:
    found = re.search(r"round(\d+)/critic", weights or "")
    return f"round{found.group(1)}" if found else "base"


class FakeCopy:
    """A llama.cpp copy of one role's weights as they are now (`local.weights`)."""

    def __init__(self, local, path: Path, problems: dict[str, object], engine: str = "gguf copy"):
        self.role = path.name.split("-")[0]
        self.weights = getattr(local, "weights", None)
        # As a GGUF's digest names its weights, and a frozen engine is another model.
        self.model_id = f"fake-{self.role}:{engine}:{self.weights or 'base'}"
        self.problems, self.engine = problems, engine

    def close(self):
        pass

    def generate(self, conversations, sampling, n=1):
        return [[Completion(text=self.answer(c[-1].content, i, sampling.seed), completion_tokens=8)
                 for i in range(n)] for c in conversations]

    def answer(self, prompt: str, i: int, seed: int | None) -> str:
        entry = re.search(r"def (\w+)\(", prompt).group(1)
        sample = self.problems[entry]
        example = example_calls(sample)[0]
        if self.role == "generator":
            if i == 0:
                return f"```python\n{sample.reference}\n```"
            # Its errors name the sampling seed and its weights: a set drawn under another
            # seed, or by a trained generator, is another set.
            why = f"{seed}:{'trained' if self.weights else 'base'}"
            if i >= 2:  # wrong on every input, the statement's example included
                return f"```python\ndef {entry}(*args):\n    raise ValueError('{why}')\n```"
            # Right on the statement's example, wrong elsewhere.
            reference = sample.reference.replace(f"def {entry}(", f"def _reference_{entry}(")
            code = (f"{reference}\n\ndef {entry}(*args):\n    if list(args) == {example!r}:\n"
                    f"        return _reference_{entry}(*args)\n    raise ValueError('{why}')\n")
            return f"```python\n{code}\n```"
        knows = self.weights is not None or int(hashlib.sha256(entry.encode()).hexdigest(), 16) % 2 == 0
        hidden = next(args for args in re.findall(r"candidate\((.*)\) ==", str(sample.meta["tests"]))
                      if ast.literal_eval(f"[{args}]") != example)  # a test the statement does not show
        call = f"{entry}({hidden})" if knows else f"{entry}({', '.join(map(repr, example))})"
        # A test and an unreadable answer: a caught proposal beside a rejected one gives the
        # critic a DPO pair.
        text = call if i % 2 == 0 else "the code looks fine"
        label = weights_label(self.weights) if self.engine == "gguf copy" else self.engine
        return f"{text}\n# weights: {label}"


def fake_backend(stages: list[str], problems: dict[str, object]) -> Backend:
    """Fake weights that remember their last DPO stage, a recording DPO, fake engine copies."""

    class Local:
        weights: str | None = None

    def train_dpo(policy, pairs, settings, output_dir, **kwargs):
        stages.append(str(output_dir))
        policy.weights = str(Path(output_dir) / "final")
        return TrainResult(checkpoint=policy.weights, steps=1, seconds=0.0, seconds_per_step=0.0,
                           peak_rss_mb=0.0, metrics={"weight_delta": 1e-5})

    def restore(policy, path, settings):
        policy.weights = str(path)

    # A critic loaded frozen is another engine on the base weights (the embedded GGUF), not
    # the trained critic's starting copy.
    frozen = lambda spec, **options: FakeCopy(Local(), Path("critic-frozen"), problems, engine="frozen")  # noqa: E731
    return Backend(load_trainable=lambda spec, **options: Local(), load_frozen=frozen,
                   train_dpo=train_dpo, restore=restore,
                   load_gguf_copy=lambda local, path, **options: FakeCopy(local, Path(path), problems))


def run_miniature(work: Path, monkeypatch, *, seeds=(0,), overrides=(), arms=None) -> dict:
    stages: list[str] = []
    problems: dict[str, object] = {}
    monkeypatch.setattr(rlac_loop, "default_backend", lambda: fake_backend(stages, problems))
    heldout = mini_rlac.family_file(work, 5, 1)
    for path in (mini_rlac.family_file(work, mini_rlac.TRAIN_SEED, mini_rlac.TRAIN_PER_FAMILY), heldout):
        problems.update({s.meta["entry_point"]: s for s in load_code_problems(path)})
    result = mini_rlac.measure(seeds=list(seeds), work_dir=work, heldout_file=str(heldout),
                               overrides=[*SIZES, *overrides], arms=arms)
    return {"result": result, "work": work, "stages": stages}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    """One miniature of every arm, one seed, on fakes; shared by the checks below."""
    mp = pytest.MonkeyPatch()
    try:
        return run_miniature(tmp_path_factory.mktemp("mini"), mp)
    finally:
        mp.undo()


def records(work: Path, arm: str, kind: str) -> list[dict]:
    store = RunStore(work / arm / "seed0", read_only=True)
    try:
        return [rec for _, rec in store.get_records(kind)]
    finally:
        store.close()


def test_the_critic_that_proposes_in_round_t_plus_1_is_the_one_trained_in_round_t(measured):
    work, stages = measured["work"], measured["stages"]
    critic_stages = sorted(s for s in stages if "co_trained" in s and s.endswith("critic"))
    assert [Path(s).parent.name for s in critic_stages] == [f"round{r}" for r in range(1, ITERATIONS + 1)]
    by_round: dict[int, set[str]] = {}
    for rec in records(work, "co_trained", "rlac_proposal"):
        by_round.setdefault(rec["round"], set()).add(rec["proposal"].rsplit("# weights: ", 1)[1])
    # Round 1: the base critic; round r > 1: the critic round r-1 trained, and no other.
    assert by_round == {1: {"base"}, **{r: {f"round{r - 1}"} for r in range(2, ITERATIONS + 1)}}
    # The detection rate after round r is the critic round r trained (round 0: the base).
    measured_by = {}
    for rec in records(work, "co_trained", "rlac_detection"):
        measured_by.setdefault(rec["round"], set()).add(rec["proposal"].rsplit("# weights: ", 1)[1])
    assert measured_by == {0: {"base"}, **{r: {f"round{r}"} for r in range(1, ITERATIONS + 1)}}


def test_every_critic_arm_draws_n_proposals_per_output_and_the_static_one_never_trains(measured):
    work, stages = measured["work"], measured["stages"]
    for arm in ("co_trained", "static_critic"):
        per_output: dict[tuple, int] = {}
        for rec in records(work, arm, "rlac_proposal"):
            key = (rec["round"], rec["sample_id"], rec["output_index"])
            per_output[key] = per_output.get(key, 0) + 1
        # 2 train problems x K=2 outputs x every round, N=2 proposals on each.
        assert len(per_output) == 2 * 2 * ITERATIONS and set(per_output.values()) == {2}, arm
    # The same critic, engine and seed: round 1's proposals are the same draws in both arms.
    first = {arm: sorted((r["sample_id"], r["output_index"], r["proposal_index"], r["proposal"])
                         for r in records(work, arm, "rlac_proposal") if r["round"] == 1)
             for arm in ("co_trained", "static_critic")}
    assert first["co_trained"] == first["static_critic"]
    static = [s for s in stages if "static_critic" in s]
    assert static and all(s.endswith("generator") for s in static)  # the generator trains, the critic never
    assert {r["proposal"].rsplit("# weights: ", 1)[1] for r in records(work, "static_critic", "rlac_proposal")} \
        == {"base"}
    assert {r["proposal"].rsplit("# weights: ", 1)[1] for r in records(work, "static_critic", "rlac_detection")} \
        == {"base"}


def test_enumeration_asks_no_critic_and_pairs_by_every_test(measured):
    work, stages = measured["work"], measured["stages"]
    assert records(work, "enumerative", "rlac_proposal") == []
    assert records(work, "enumerative", "rlac_detection") == []
    assert {p["source"] for p in records(work, "enumerative", "rlac_pair")} == {"enumerative:code"}
    assert all(s.endswith("generator") for s in stages if "enumerative" in s)
    assert {p["source"] for p in records(work, "co_trained", "rlac_pair")} == {"rlac:generator", "rlac:critic"}


def test_the_detection_set_is_the_same_in_every_round_and_arm(measured):
    result, work = measured["result"], measured["work"]
    # The failures the problem statement's example already exposes are left out of it.
    store = RunStore(work / "co_trained" / "seed0", read_only=True)
    try:
        drawn = store.step_result("rlac:detection/set")
    finally:
        store.close()
    assert drawn["shown_by_examples"] > 0 and {item["key"].rsplit(":", 1)[1] for item in drawn["items"]} == {"1"}
    assert len(result.settings["detection_set_digests"]) == 1
    items = set()
    for arm in ("co_trained", "static_critic"):
        scores = result.arms[arm].metrics["detection_scores"]
        assert sorted(scores, key=int) == [str(r) for r in range(ITERATIONS + 1)]
        items |= {frozenset(by_item) for by_item in scores.values()}
    assert len(items) == 1 and len(next(iter(items))) > 0
    assert "detection_scores" not in result.arms["enumerative"].metrics or \
        not result.arms["enumerative"].metrics["detection_scores"]


def test_the_json_holds_each_rounds_numbers_and_the_papers_comparisons(measured):
    result = measured["result"]
    co, static, enum = (result.arms[a] for a in ("co_trained", "static_critic", "enumerative"))
    rounds = co.metrics["per_iteration"]
    assert [r["round"] for r in rounds] == list(range(ITERATIONS + 1))
    assert all(r["pass_at_1"]["n"] > 0 and len(r["pass_at_1"]["ci"]) == 2 for r in rounds)
    # The base critic knows half the problems, a trained one all: the co-trained critic's
    # detection rate rises after it trains; the static one's stays where it started.
    detection = [r["detection_rate"]["value"] for r in rounds]
    assert detection[-1] == 1.0 and detection[0] < 1.0
    assert [r["detection_rate"]["value"] for r in static.metrics["per_iteration"]] == [detection[0]] * (ITERATIONS + 1)
    measure = result.measures["critic_detection"]
    assert measure.comparisons["co_trained_minus_static_critic"].value == pytest.approx(1.0 - detection[0])
    # App. B.2's executions: 2 per proposal (2 problems x K=2 x N=2 a round); enumeration 1 per hidden test.
    assert [r["executions"] for r in rounds[1:]] == [2 * 2 * 2 * 2] * ITERATIONS
    assert co.metrics["executions"] == 16 * ITERATIONS
    assert enum.metrics["executions"] == sum(r["executions"] for r in enum.metrics["per_iteration"]) > 0
    assert all(r["pairs"]["critic"] == 0 for r in static.metrics["per_iteration"][1:])
    assert "co_trained_minus_enumerative_errors_per_execution" in result.comparisons
    assert {"co_trained_minus_static_critic", "co_trained_minus_enumerative"} <= set(result.comparisons)
    assert any(line.startswith("co_trained round 2: pass@1") and "critic detection (fixed set)" in line
               for line in result.notes)
    # Its time is what the runs spent running (a resumed miniature's own wall time is seconds).
    assert all(arm.metrics["run_seconds"] > 0 for arm in (co, static, enum))
    assert result.seconds == pytest.approx(sum(arm.metrics["run_seconds"] for arm in (co, static, enum)))
    assert result.settings["this_invocation_seconds"] > 0


def test_every_run_seed_measures_its_critic_on_the_same_outputs(tmp_path, monkeypatch):
    """The set is drawn from `data.seed`, not the run's seed: two seeds of one arm (whose
    generator samples its training outputs under different seeds) measure the same outputs."""
    run = run_miniature(tmp_path, monkeypatch, seeds=(0, 1), overrides=["iterations=1"], arms=["co_trained"])
    assert len(run["result"].settings["detection_set_digests"]) == 1
    keys = run["result"].arms["co_trained"].metrics["detection_scores"]["0"]
    assert {k.rsplit("#", 1)[1] for k in keys} == {"0", "1"}
    assert {k.rsplit("#", 1)[0] for k in keys if k.endswith("#0")} == {k.rsplit("#", 1)[0] for k in keys
                                                                       if k.endswith("#1")}
