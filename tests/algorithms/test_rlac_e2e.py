"""RLAC end to end with real DPO steps: on the real embedded model (the code domain, through
`coevo run`), and on the tiny random model (the facts domain, a killed LoRA stage).

Test-sized: 1 iteration, 2 instructions, K=2, N=2, 32-token outputs, one DPO step per model.
The loop runs on real generations and real critic proposals, the verdicts come from the
noisy-validator switch (seeded labels) so that both models are sure to take a real DPO step,
and the held-out metric (FactScore / pass@1 in the sandbox) and the KL are real.
"""

import json
from pathlib import Path

import pytest

from coevo.algorithms.rlac.stages import BARE, STAGE, round_stage
from coevo.run.runner import run_experiment

pytestmark = pytest.mark.slow

# Every thread of the machine (torch's and llama.cpp's defaults): the suite runs one test at a
# time, and alone on 2 cores both threads are faster (BENCHMARKS.md, "The slow tests, profiled"); the
# examples' comments say when one thread is right (a machine shared with other heavy jobs).
# The trained roles generate in transformers here (the default engines), on llama.cpp copies
# of their weights in the code test (examples/rlac_code_tiny.yaml): both paths run for real.
COMMON = {
    "algorithm": "rlac", "iterations": 1, "k": 2, "n": 1,
    "roles": {"generator": {"sampling": {"train": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 32},
                                         "eval": {"temperature": 0.0, "max_tokens": 32}}},
              "critic": {"sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 40}},
              "judge": {"sampling": {"entail": {"temperature": 0.0, "max_tokens": 16},
                                     "split": {"temperature": 0.0, "max_tokens": 96}}}},
    "dpo": {"max_steps": 1, "batch_size": 2, "max_length": 512, "max_prompt_length": 384,
            "learning_rate": 1.0e-5},
}


def check_summary(run_dir, proposals=1, steps=1, per_proposal=1):
    on_disk = json.loads((run_dir / "summary.json").read_text())
    [rnd] = on_disk["rounds"]
    assert set(rnd["checkpoints"]) == {"generator", "critic"}
    assert Path(on_disk["base_model"]).is_dir()  # the transformers folder the checkpoints start from
    # 2 instructions x K=2 x N, in the domain's unit (code: 2 executions a proposal, App. B.2).
    assert on_disk["verification_calls"]["rlac"] == 2 * 2 * proposals * per_proposal
    assert on_disk["verification_calls"]["enumerative"] > 0
    assert (run_dir / "report.html").exists()
    if rnd["trained"]["generator"]:
        assert rnd["training"]["generator"]["steps"] == steps
        assert (run_dir / round_stage(1, "generator", "final", prefix=BARE)).is_dir()
    return rnd


def on_tiny_llama(config: dict, folder: Path) -> dict:
    """`config` with the tiny random model (tests/conftest.py) as generator and critic."""
    roles = {role: {**config["roles"][role], "model": f"hf:{folder}"} for role in ("generator", "critic")}
    return {**config, "roles": {**config["roles"], **roles}}


@pytest.mark.tiny_model
def test_rlac_facts_e2e(tmp_path, tiny_llama):
    # The trained roles are the tiny random model: the embedded model's RLAC run with real DPO
    # steps is the code test's (one per loop), and this one checks the facts domain's path
    # through the loop. Seeded noisy labels (seed 0: one generator pair, two critic pairs)
    # make both models take real DPO steps. The real facts validator on the real model is
    # measured by examples/rlac_bio_tiny.yaml (BENCHMARKS.md) and its logic by
    # tests/validators/test_facts_*.py; FactScore here still uses the embedded judge.
    config = {**on_tiny_llama(COMMON, tiny_llama), "task": "facts", "n": 2, "validator": "random", "seed": 0,
              "data": {"train_ids": ["Albert Einstein", "Marie Curie"], "heldout_ids": ["Isaac Newton"],
                       "sentences": 2},
              "facts": {"judge": "llm", "atomic_facts": "sentences"}}
    run_experiment(None, tmp_path / "run", data=config)
    rnd = check_summary(tmp_path / "run", proposals=2)
    assert rnd["trained"] == {"generator": True, "critic": True}
    # FactScore ran on the held-out outputs (the tiny model's random text holds no scorable
    # fact, so its precision is None, dumped as measured).
    assert "factscore_precision" in rnd["eval"] and rnd["eval"]["facts_correct"] is not None
    assert rnd["eval"]["kl_from_base"] > 0.0  # moved from its base; the estimate is never negative


def test_rlac_code_e2e_real_model(rlac_code_tiny_run):
    # examples/rlac_code_tiny.yaml at test size through `coevo run` (tests/real_runs.py; the
    # two-process test compares its store with this run's). On two problems the real
    # validator may find no failing test at all, which leaves no pairs and no DPO step to
    # test. The noisy-validator switch gives seeded labels instead, so the generator takes
    # real DPO steps on real generations; pass@1 and the enumerative count still run every
    # reference test in the sandbox. The critic's answers are decoded under the arguments
    # schema (llama.cpp's grammar on a GGUF copy of the critic's weights: the example's
    # critic_engine): every one must read as a call
    # of the function under test. (Its own DPO step on real pairs is the facts test's, and
    # so is the KL from the base, which this size leaves off; here its two answers to an
    # output are often the same call, which makes no pair.) The code validator's own path
    # is test_rlac_code.py.
    from coevo.rundir.store import RunStore
    from coevo.tasks.code import load_humaneval
    from coevo.validators.code import parse_answer

    out = rlac_code_tiny_run.out
    rnd = check_summary(out, proposals=2, steps=2, per_proposal=2)
    assert rnd["trained"]["generator"] and rnd["training"]["generator"]["weight_delta"] > 0
    assert rnd["eval"]["pass_at_1"] is not None
    problems = {s.id: s for s in load_humaneval(ids=["HumanEval/45", "HumanEval/2"])}
    proposals = [r for _, r in RunStore(out, read_only=True).get_records("rlac_proposal")]
    assert len(proposals) == 2 * 2 * 2
    for record in proposals:
        parsed = parse_answer(problems[record["sample_id"]], record["output"], record["proposal"])
        assert parsed.valid and parsed.parsed["format"] == "arguments", record["proposal"]


@pytest.mark.tiny_model
def test_a_killed_lora_stage_resumes_and_a_finished_one_is_restored_into_fresh_models(tmp_path, monkeypatch,
                                                                                       tiny_llama):
    """A LoRA generator stage killed after its first saved step resumes from it; then a longer
    run restores round 1's adapters into freshly loaded (plain) models and trains round 2.
    Nothing is stubbed: real checkpoints, the real loader (the bug this guards: restoring an
    adapter folder into a model without an adapter), on the tiny random model."""
    from functools import partial

    from transformers import TrainerCallback

    import coevo.algorithms.rlac.loop as rlac_loop
    from coevo.algorithms.backend import Backend
    from coevo.algorithms.rlac import RlacConfig, run_rlac
    from coevo.train.dpo import train_dpo as real
    from coevo.settings.config import validate
    from coevo.rundir.store import RunStore

    class Killed(RuntimeError):
        pass

    class KillAfterFirstSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            raise Killed("simulated kill after checkpoint-1")

    calls = []

    def first_call_killed(*args, **kwargs):
        calls.append(args[3])
        return (partial(real, callbacks=[KillAfterFirstSave()]) if len(calls) == 1 else real)(*args, **kwargs)

    # The real loaders and trainer (Backend's defaults), its first DPO stage killed.
    backend = Backend(train_dpo=first_call_killed)
    monkeypatch.setattr(rlac_loop, "default_backend", lambda: backend)
    config = {**on_tiny_llama(COMMON, tiny_llama), "task": "facts", "n": 2, "validator": "random", "seed": 0,
              "kl": False,
              "data": {"train_ids": ["Albert Einstein", "Marie Curie"], "heldout_ids": ["Isaac Newton"],
                       "sentences": 2},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "dpo": {**COMMON["dpo"], "max_steps": 2, "save_steps": 1, "lora": {"r": 8, "alpha": 16}}}
    with pytest.raises(Killed):
        run_experiment(None, tmp_path / "run", data=config)
    assert RunStore(tmp_path / "run").get_meta("status") == "failed"
    summary = run_experiment(None, tmp_path / "run", data=config, resume=True)
    [rnd] = summary["rounds"]
    generator = RunStore(tmp_path / "run").step_result(round_stage(1, "generator", prefix=STAGE))
    assert generator["resumed_from"].endswith("checkpoint-1") and generator["steps"] == 2
    assert (tmp_path / "run" / rnd["checkpoints"]["generator"] / "adapter_config.json").is_file()  # relative
    # A longer run over the same store (the runner refuses a changed config on --resume, so
    # the loop is called directly, as a user's script would): fresh plain models restore
    # round 1's adapters, then train round 2.
    longer = run_rlac(validate(RlacConfig, {**config, "iterations": 2}), RunStore(tmp_path / "run"), backend)
    assert [r.trained["generator"] for r in longer.rounds] == [True, True]
    assert longer.rounds[0].model_dump(mode="json") == rnd  # round 1 restored as it was, not trained again
    assert len(calls) == 1 + 2 + 2  # killed, then its resume and the critic, then round 2's two
