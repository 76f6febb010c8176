"""TAIScore on the real embedded model with real TRL steps (slow; CI still runs them).

One end-to-end run of a test-sized examples/taiscore_tiny.yaml through the CLI (the
session's `taiscore_tiny_run`, tests/conftest.py, which the two-process test compares its
store with), and a resume inside a DPO stage with the real glue (a trainer killed after its
first checkpoint).
"""

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _weights_differ_from_base(checkpoint: str, base: str) -> bool:
    import torch
    from safetensors.torch import load_file

    path = Path(checkpoint)
    if (path / "adapter_config.json").exists():
        adapter = load_file(str(path / "adapter_model.safetensors"))
        # LoRA B starts at zero: any non-zero B means the adapter changed the base's output.
        return any(t.abs().sum() > 0 for k, t in adapter.items() if "lora_B" in k)
    trained = load_file(str(path / "model.safetensors"))
    original = load_file(str(Path(base) / "model.safetensors"))
    return any(not torch.equal(trained[k], original[k]) for k in trained if k in original)


def test_tiny_config_end_to_end_trains_both_models(taiscore_tiny_run):
    out, summary = taiscore_tiny_run.out, taiscore_tiny_run.summary
    assert Path(summary["base_model"]).is_dir()
    assert [r["round"] for r in summary["rounds"]] == [1]
    (record,) = summary["rounds"]
    for role in ("actor", "critic"):
        checkpoint = out / record["checkpoints"][role]  # relative to the run folder
        assert checkpoint.is_dir(), role
        assert _weights_differ_from_base(checkpoint, summary["base_model"]), f"{role} weights did not change"
    metrics = record["metrics"]
    assert metrics["grpo_steps"] == 1 and metrics["dpo_steps"] == 1 and metrics["pairs_selected"] >= 1
    # It learned: both stages moved their weights, and the judge's expected scores told the
    # group's critiques apart (with sampled integers they all got the same score).
    assert metrics["critic_weight_delta"] > 0 and metrics["actor_weight_delta"] > 0
    assert metrics["grpo_zero_std_fraction"] <= 0.25 and "grpo_clipped_ratio" in metrics
    assert "reward_mean" in metrics and "invalid_judgment_rate" in metrics
    # The real judges were audited before round 1 (the reward judge, and the gold judge behind
    # gold_score: the test size turns the win rate, and so the pairwise judge, off, and the
    # audits after each round are checked on replay), with every figure's n.
    audits = [(a["round"], a["judge_role"], a.get("error")) for a in summary["audit"]]
    assert audits == [("coevolution/round0", judge, None) for judge in ("reward", "gold")]
    assert summary["baseline"]["audit_reward_fooled_rate_n"] >= 1 and "audit_reward_flags" in summary["baseline"]
    assert (out / "report.html").exists()
    # The cost estimated when the run started (`coevo plan`'s) is within 2x of what it counted.
    from coevo.plan.estimate_check import run_comparison

    forecast = run_comparison(out)
    for key in ("calls", "prompt_tokens", "completion_tokens", "training_steps"):
        assert 0.5 <= forecast[key].ratio <= 2.0, (key, forecast[key])
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(out / record["checkpoints"]["actor"])  # loadable as such
    # A quiet console: TRL's per-step dicts and library warnings went to RUN/coevo.log only.
    terminal = taiscore_tiny_run.terminal
    assert "{'loss'" not in terminal and "FutureWarning" not in terminal and "UserWarning" not in terminal
    run_log = (out / "coevo.log").read_text()
    assert "{'loss'" in run_log
    # Each role generates on llama.cpp: its transformers weights were parked while the other
    # trained (and reloaded: the actor's DPO above moved them from where they were).
    assert "round1/critic: the actor generates on llamacpp" in run_log
    assert "round1/actor: the critic generates on llamacpp" in run_log
    # And while a role trains, its copy of the weights it started from is closed.
    assert "round1/critic: the critic's llamacpp copy of its previous weights closed" in run_log
    assert "round1/actor: the actor's llamacpp copy of its previous weights closed" in run_log
    # TRL's history of both stages in the store; a model card beside each checkpoint.
    from coevo.rundir.store import RunStore

    logs = RunStore(out, read_only=True).training_logs()
    assert [(log["stage"], log["round"]) for log in logs] == [("coevolution/round1/critic", 1),
                                                             ("coevolution/round1/actor", 1)]
    assert all(any("loss" in row for row in log["history"]) for log in logs)
    for role in ("actor", "critic"):
        assert "base_model: HuggingFaceTB/SmolLM2-135M-Instruct" in (
            out / record["checkpoints"][role] / "README.md").read_text()
    assert summary["provenance"]["finished"] and summary["provenance"]["hardware"]["cpus"]
    # What a researcher sees of this real run: the viewer's page (= report.html) draws both
    # stages' per-step curves, names no stage as unchanged, and every rollout opens.
    from fastapi.testclient import TestClient

    from coevo.view.app import create_app

    client = TestClient(create_app([out]))
    page = client.get("/runs/run").text
    assert 'id="plot-training-curves-grpo-critic-per-step"' in page
    assert 'id="plot-training-curves-dpo-per-step"' in page and "warning-no-learning" not in page
    assert set(summary["gold_gain_ci"]) == {"coevolution"} and "gold gain: coevolution" in page
    assert 'id="plot-training-curves-grpo-critic-per-step"' in (out / "report.html").read_text()
    rows = RunStore(out, read_only=True).rollout_rows()
    assert rows and all(client.get(f"/runs/run/samples/{row['id']}").status_code == 200 for row in rows[:5])


class _CountingReviser:
    """Stands in for the actor inside the reward: the k-th revision asked for is 'REV{k}'."""

    model_id = "counting-reviser"

    def __init__(self):
        self.k = 0

    def generate(self, conversations, sampling, n=1):
        from coevo.core.types import Completion

        out = []
        for _ in conversations:
            out.append([Completion(text=f"REV{self.k}")])
            self.k += 1
        return out


def test_group_normalisation_happens_once_in_trl(monkeypatch, tmp_path):
    """Known judge scores -> the reward returns them raw -> TRL's advantages are their
    per-group z-scores, computed once (the glue adds no normalisation of its own)."""
    import torch
    from trl import GRPOTrainer

    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.llm.replay import ReplayModel
    from coevo.llm.specs import load_model
    from coevo.roles.actor import Actor
    from coevo.roles.judges import TaiScoreJudge
    from coevo.train.grpo import GRPOSettings, train_grpo
    from coevo.core.types import Sampling

    # Two groups of N=4 critiques. The second is the example: three answers the judge
    # could not give readably (twice: it is asked again) and one 7. Under the authors' rules
    # they count 0.0 and stay in the group, so TRL's advantages are (-0.5, -0.5, -0.5, +1.5).
    scores = [2, 4, 6, 9, None, None, None, 7]
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    rules = [{"match": f"Response B:\nREV{k}", "completion": "no score, sorry" if s is None else json.dumps(
        {**{d: {"score": s, "reason": "r"} for d in dims}, "score": s})} for k, s in enumerate(scores)]
    judge = TaiScoreJudge(ReplayModel(rules=rules), Sampling())
    actor = Actor(_CountingReviser(), Sampling())
    inner = make_reward_fn(actor, judge, "taiscore")
    returned = []

    def reward_fn(prompts, completions, **columns):
        values = inner(prompts, completions, **columns)
        returned.extend(values)
        return values

    advantages = []
    original = GRPOTrainer._generate_and_score_completions

    def spy(self, inputs):
        output = original(self, inputs)
        advantages.append(output["advantages"].detach().clone())
        return output

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", spy)
    policy = load_model("smollm2", trainable=True)
    prompts = [[{"role": "user", "content": f"Critique this: response {i}"}] for i in range(2)]
    extra = {"x": ["x0", "x1"], "y0": ["a", "b"], "sample_id": ["s0", "s1"]}
    # beta=0: no KL reference to build; the advantages do not depend on it.
    settings = GRPOSettings(num_generations=4, batch_size=2, max_steps=1, max_completion_length=4,
                            save_steps=100, beta=0.0)
    train_grpo(policy, prompts, reward_fn, settings, tmp_path / "grpo", extra_columns=extra)
    authors = [0.0 if s is None else float(s) for s in scores]  # raw rewards, authors' rules
    assert returned == authors  # in completion order, not normalised here
    raw = torch.tensor(authors, dtype=torch.float32).view(2, 4)
    expected = ((raw - raw.mean(1, keepdim=True)) / (raw.std(1, keepdim=True) + 1e-4)).view(-1)
    assert torch.allclose(advantages[0].view(-1), expected, atol=1e-4)
    assert torch.allclose(advantages[0].view(-1)[4:], torch.tensor([-0.5, -0.5, -0.5, 1.5]), atol=1e-3)


class _ScriptedJudge:
    """A judge that always prefers the revision (whatever order it is shown in) and gives
    every rollout TAIScore 5: the pair filter then keeps pairs however the real actor writes."""

    model_id = "scripted-judge"

    def __init__(self, initial_responses):
        self.initial = initial_responses

    def generate(self, conversations, sampling, n=1):
        from coevo.core.types import Completion

        dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
        out = []
        for conversation in conversations:
            text = conversation[-1].content
            if "Response 1:" in text:
                first = text.split("Response 1:\n", 1)[1].split("\n\nResponse 2:\n", 1)[0]
                answer = "2" if first.strip() in self.initial() else "1"
            else:
                answer = json.dumps({**{d: {"score": 5, "reason": "r"} for d in dims}, "score": 5})
            out.append([Completion(text=answer)] * n)
        return out


@pytest.mark.tiny_model
def test_resume_inside_a_dpo_stage_continues_from_its_last_checkpoint(tmp_path, tiny_llama):
    """Kill DPO after its first saved step; resume: GRPO is not redone (its final checkpoint
    is restored), the pool's judged rollouts are reused, and DPO continues from checkpoint-1.
    On the tiny random model (tests/conftest.py): resuming is the store's and the stages'
    machinery, which does not depend on what the weights say."""
    from functools import partial

    from transformers import TrainerCallback

    from coevo.algorithms.backend import default_backend
    from coevo.algorithms.taiscore import TaiScoreConfig, run_taiscore
    from coevo.settings.config import validate
    from coevo.run.runner import summary_dict
    from coevo.rundir.store import RunStore
    from coevo.train.dpo import train_dpo

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write one line about {w}."}) + "\n"
                            for i, w in enumerate(["rain", "salt", "bells"])))
    tokens = {"temperature": 0.8, "top_p": 0.95, "max_tokens": 8}
    config = validate(TaiScoreConfig, {
        "algorithm": "taiscore", "data": {"source": str(data)}, "rounds": 1, "pairs_per_round": 2,
        "roles": {"actor": {"model": f"hf:{tiny_llama}",
                            "sampling": {"response": tokens, "revision": {**tokens, "temperature": 0.2}}},
                  "critic": {"model": f"hf:{tiny_llama}", "sampling": tokens}},
        "grpo": {"num_generations": 2, "batch_size": 1, "max_steps": 1, "save_steps": 1, "learning_rate": 1e-5},
        "dpo": {"batch_size": 1, "max_steps": 2, "save_steps": 1, "learning_rate": 1e-5, "max_length": 256,
                "max_prompt_length": 192},
        "evaluation": {"holdout": 0.0}})
    store = RunStore(tmp_path / "run")
    judge = _ScriptedJudge(lambda: {text.strip() for _, text in store.get_records("coevolution/round1/y0")})

    class Killed(RuntimeError):
        pass

    class KillAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            raise Killed("simulated kill after checkpoint-1")

    backend = default_backend()
    backend.load_frozen = lambda spec: judge
    backend.train_dpo = partial(train_dpo, callbacks=[KillAfterFirstSave()])
    with pytest.raises(Killed):
        run_taiscore(config, store, backend)
    assert store.step_result("coevolution/round1/critic") is not None
    assert store.step_result("coevolution/round1/actor") is None
    pool = store.rollouts("coevolution/round1/pool0")
    assert len(pool) == 3

    resumed = default_backend()
    resumed.load_frozen = lambda spec: judge
    grpo_calls = []
    resumed.train_grpo = lambda *a, **k: grpo_calls.append(a)
    summary = summary_dict(run_taiscore(config, store, resumed))
    assert grpo_calls == []  # the finished critic stage was restored, not retrained
    result = store.step_result("coevolution/round1/actor")
    assert result["resumed_from"].endswith("checkpoint-1") and result["steps"] == 2
    assert [r.c for r in store.rollouts("coevolution/round1/pool0")] == [r.c for r in pool]
    assert summary["rounds"][0]["checkpoints"]["actor"] == result["checkpoint"]
