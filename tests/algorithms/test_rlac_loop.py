"""RLAC's loop on replay models: pair construction, call counting, ablation switches.

Models are replay models (deterministic answers) and `train_dpo` is replaced by a recorder,
so these tests check the algorithm's bookkeeping, not learning; the slow e2e tests train.
"""

import json

import pytest

import coevo.algorithms.rlac.loop as rlac_loop
import coevo.llm.specs as specs
from coevo.algorithms.backend import Backend
from coevo.algorithms.rlac import RlacConfig, reward, run_rlac
from coevo.algorithms.rlac.pairs import critic_pairs, generator_pairs, ranked_pairs
from coevo.algorithms.rlac.records import RlacSummary, VerificationCounts
from coevo.algorithms.rlac.stages import BARE, STAGE, round_stage
from coevo.core.strict import ConfigError
from coevo.settings.config import validate
from coevo.llm.base import by_sampling, user
from coevo.llm.replay import ReplayModel
from coevo.run.runner import run_experiment, summary_dict
from coevo.rundir.store import RunStore
from coevo.view.pair_warnings import too_few_pairs
from coevo.train.common import TrainResult
from coevo.core.types import Message, Sample, Verdict

GOOD = "Albert Einstein was a physicist. He was born in Ulm. He developed the theory of relativity."
BAD = "Albert Einstein was a physicist. He was born in Vienna. He developed the theory of relativity."
CAUGHT = "reason: he was born in Ulm\nsentence: 2\nerror_fact: Einstein was born in Vienna."
SURVIVED = "reason: hmm\nsentence: 2\nerror_fact: Einstein was born in Ulm."
INVALID = "reason: nothing\nsentence: 7\nerror_fact: something odd"
CURIE = "Marie Curie was born in Warsaw. She discovered polonium and radium."

FACT_MODELS = {
    "gen": [{"match": "biography of Albert Einstein", "completions": [GOOD, BAD]},
            {"match": "biography of Marie Curie", "completions": [CURIE]}],
    # The critic prompt holds the numbered output: its sentence 2 tells the outputs apart.
    "crit": [{"match": "[2] He was born in Vienna.", "completions": [CAUGHT, INVALID]},
             {"match": "[2] He was born in Ulm.", "completions": [SURVIVED, INVALID]}],
}
S = Sample(id="s", prompt="p")


def v(kind):
    return Verdict(verdict=kind)


@pytest.fixture
def fakes(monkeypatch):
    """Replay models for every role and a recording `train_dpo`, through the trainer seam
    (coevo/algorithms/backend.py): the loop's default Backend is this fake one."""
    trained = []
    models = dict(FACT_MODELS)
    loaded = {}  # spec -> the replay models loaded for it (their `calls`: what each was asked)

    def load_model(spec, store=None, **options):
        model = ReplayModel(rules=models[spec])
        model.model = None  # a trainable LocalModel's weights; the fake restore ignores them
        loaded.setdefault(spec, []).append(model)
        return model

    def train_dpo(policy, pairs, settings, output_dir, **kwargs):
        trained.append({"dir": str(output_dir), "pairs": list(pairs)})
        return TrainResult(checkpoint=str(output_dir / "final"), steps=1, seconds=0.0,
                           seconds_per_step=0.0, peak_rss_mb=0.0)

    # Restoring a finished stage is recorded, not done (no weights here); the slow tests
    # restore real checkpoints, LoRA adapters included (test_rlac_e2e.py).
    backend = Backend(load_trainable=load_model, load_frozen=load_model, train_dpo=train_dpo,
                      restore=lambda policy, path, settings: trained.append({"loaded": str(path)}))
    monkeypatch.setattr(rlac_loop, "default_backend", lambda: backend)
    monkeypatch.setattr(specs, "check_spec", lambda spec: None)  # "gen", "crit": the fakes above
    monkeypatch.setattr(specs, "check_spec_form", lambda spec: None)  # the same, where a plan reads them
    return {"trained": trained, "models": models, "loaded": loaded, "backend": backend}


def facts_config(**changes):
    data = {"algorithm": "rlac", "task": "facts", "iterations": 1, "k": 2, "n": 2, "kl": False,
            "roles": {"generator": {"model": "gen"}, "critic": {"model": "crit"}, "judge": {"model": "gen"}},
            "facts": {"judge": "lexical", "atomic_facts": "sentences"},
            "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}}
    for key, value in changes.items():
        node = data
        *path, last = key.split(".")
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    return validate(RlacConfig, data)


def test_reward_is_zero_only_when_caught():
    assert [reward(v(k)) for k in ("caught", "survived", "invalid")] == [0, 1, 1]


def test_generator_pairs_put_survivors_over_caught_outputs():
    pairs = generator_pairs(S, user("p"), ["a", "b", "c", "d"], [1, 0, 1, 0], limit=3)
    assert [(p.chosen, p.rejected) for p in pairs] == [("a", "b"), ("c", "b"), ("a", "d")]
    assert generator_pairs(S, user("p"), ["a", "b"], [1, 1], limit=4) == []  # no negative: no signal
    assert generator_pairs(S, user("p"), ["a", "a"], [1, 0], limit=4) == []  # identical texts: no pair


def test_critic_pairs_put_confirmed_failures_over_rejected_proposals():
    asked = [Message(role="system", content="sys"), Message(role="user", content="cp")]
    pairs = critic_pairs(S, asked, ["x", "y", "z"], [v("caught"), v("invalid"), v("survived")], limit=5)
    assert [(p.chosen, p.rejected) for p in pairs] == [("x", "y"), ("x", "z")]
    assert all(p.source == "rlac:critic" and (p.system, p.prompt) == ("sys", "cp") for p in pairs)


def test_ranked_pairs_start_best_vs_worst_and_fill_the_budget_by_score_gap():
    [pair] = ranked_pairs(S, user("p"), ["a", "b", "c"], [0.5, 1.0, 0.0], 1, "enumerative:facts")
    assert (pair.chosen, pair.rejected) == ("b", "c")
    pairs = ranked_pairs(S, user("p"), ["a", "b", "c"], [0.5, 1.0, 0.0], 4, "x")
    assert [(p.chosen, p.rejected) for p in pairs] == [("b", "c"), ("b", "a"), ("a", "c")]
    assert ranked_pairs(S, user("p"), ["a", "b"], [1.0, 1.0], 4, "x") == []  # no difference: no pair
    # The same text sampled twice is one pair, not two.
    assert len(ranked_pairs(S, user("p"), ["a", "a", "c"], [1.0, 1.0, 0.0], 4, "x")) == 1


def test_adversarial_round_builds_both_pair_sets_and_counts_calls(tmp_path, fakes):
    store = RunStore(tmp_path)
    summary = run_rlac(facts_config(), store)
    gen, crit = fakes["trained"]
    assert gen["dir"].endswith(round_stage(1, "generator", prefix=BARE))
    assert crit["dir"].endswith(round_stage(1, "critic", prefix=BARE))
    assert [(p.chosen, p.rejected) for p in gen["pairs"]] == [(GOOD, BAD)]
    # Bad output: CAUGHT confirmed vs INVALID rejected. Good output: no confirmed proposal.
    assert [(p.chosen, p.rejected) for p in crit["pairs"]] == [(CAUGHT, INVALID)]
    # The critic's instructions are its system message, the numbered output its user message.
    assert "factual checker" in crit["pairs"][0].system and "[2] He was born in Vienna." in crit["pairs"][0].prompt
    # 1 instruction x K=2 outputs x N=2 proposals; enumerative = 3 sentences x 2 outputs.
    assert isinstance(summary, RlacSummary)
    assert summary.verification_calls == VerificationCounts(rlac=4, enumerative=6, used=4)
    assert summary.verification_call_ratio == 1.5
    [rnd] = summary.rounds
    assert rnd.critic.detection_rate == 0.25
    assert rnd.critic.outcome_invalid == 0.5 and rnd.critic.outcome_survived == 0.25
    assert rnd.checkpoints["generator"].endswith(round_stage(1, "generator", "final", prefix=BARE))
    assert rnd.eval.factscore_precision == 1.0 and summary.baseline.facts_correct == 2.0
    verdicts = [r["verdict"] for _, r in store.get_records("rlac_proposal")]
    assert sorted(verdicts) == ["caught", "invalid", "invalid", "survived"]
    names = {(m["stage"], m["name"], m["round"]) for m in store.metrics()}
    assert {("generator", "factscore_precision", 0), ("generator", "factscore_precision", 1),
            ("critic", "detection_rate", 1), ("verification", "calls_rlac", 1),
            ("rollout", "output_tokens", 1)} <= names


#: App. A.1 and A.2 of the RLAC paper, word for word (four sentences, data.sentences' default).
PAPER_GENERATOR_SYSTEM = ("You are an AI assistant that provides accurate and concise biographies of individuals. "
                          "Each biography should be exactly four sentences long, highlighting key aspects of the "
                          "person's life, achievements, and significance.")
PAPER_CRITIC_SYSTEM = (
    "You are a factual checker. Based on your existing knowledge, identify exactly one sentence that contains the "
    "most clearly verifiable factual error in the paragraph.\nReturn your answer in **exactly three lines**:\n"
    "reason: < briefly explaining what is wrong >\n"
    "sentence: N N is the number of the most incorrect sentence (positive integer)\n"
    "error_fact: F a brief clause (no more than 8 words) capturing the wrong claim from that sentence")


def test_vllm_engines_follow_each_trained_policys_checkpoints(tmp_path, fakes):
    """`generator_engine` / `critic_engine: vllm` (the full configs' fast path): each role's
    outputs come from a vLLM copy of its base, then of each of its DPO stages' final/."""
    copies = []

    class Copy(ReplayModel):
        def __init__(self, spec, checkpoint):
            super().__init__(rules=fakes["models"][spec])
            self.spec, self.checkpoint = spec, checkpoint
            self.model_id = f"copy:{spec}:{checkpoint}"
            copies.append(self)

    fakes["backend"].load_copy = lambda spec, checkpoint, **options: (Copy(spec, checkpoint), checkpoint is None)
    run_rlac(facts_config(iterations=2, generator_engine="vllm", critic_engine="vllm"), RunStore(tmp_path / "run"))
    seen = [str(copy.checkpoint) for copy in copies]
    finals = sorted(path.split("/run/")[1] for path in seen if path.endswith("final"))
    assert finals == [f"round{r}/{role}/final" for r in (1, 2) for role in ("critic", "generator")], seen
    assert len(seen) == 6  # and each role's base weights first (a base model's path)


def test_llamacpp_engines_follow_each_trained_policys_checkpoints(tmp_path, fakes):
    """`generator_engine` / `critic_engine: llamacpp`: every output, proposal and held-out
    answer comes from a copy of the policy's latest weights (the base, then each DPO stage's
    final/), one file per role and checkpoint; a role's copy is closed while it trains, and
    every copy is closed by the end. The trained models themselves generate nothing."""
    copies, training = [], []

    class Copy(ReplayModel):
        def __init__(self, local, path):
            super().__init__(rules=fakes["models"][local.spec])
            self.model_id, self.path, self.closed = f"gguf:{path.name}", path, False
            copies.append(self)

        def close(self):
            self.closed = True

    backend, load = fakes["backend"], fakes["backend"].load_trainable
    train_dpo = backend.train_dpo

    def spec_named(spec, **options):
        model = load(spec, **options)
        model.spec = spec
        return model

    def recording_dpo(policy, pairs, settings, output_dir, **kwargs):
        training.append({c.path.name: c.closed for c in copies})  # which copies were open as it trained
        return train_dpo(policy, pairs, settings, output_dir, **kwargs)

    backend.load_trainable, backend.train_dpo, backend.load_gguf_copy = spec_named, recording_dpo, Copy
    summary = run_rlac(facts_config(iterations=2, generator_engine="llamacpp", critic_engine="llamacpp"),
                       RunStore(tmp_path / "run"))
    # Per role: the base (round 0's evaluation, round 1's outputs or proposals), then the
    # weights after round 1's DPO, then after round 2's (its evaluation and audit).
    roles = [c.path.name.split("-")[0] for c in copies]
    assert sorted(roles) == ["critic"] * 3 + ["generator"] * 3, roles
    assert len({c.path for c in copies}) == 6 and all(c.path.parent.name == "engines" for c in copies)
    assert all(c.closed for c in copies)
    # Each DPO stage (generator, critic, generator, critic) ran with its own role's copy
    # closed; the critic's copy stays open beside the generator's stage, and the generator's
    # next copy is made only when round r's evaluation asks for it, after the critic's stage.
    assert [sorted(name.split("-")[0] for name, closed in seen.items() if not closed) for seen in training] == [
        ["critic"], [], ["critic"], []]
    generator, critic = (c for c in fakes["loaded"].values())
    assert not any(m.calls for m in generator + critic)  # the trained weights wrote nothing themselves
    assert summary.rounds[-1].eval.factscore_precision == 1.0


def test_the_paper_form_asks_both_models_in_a_system_and_a_user_message(tmp_path, fakes):
    """critic_form: paper with the default templates is App. A: each model gets the paper's
    system message and the task as the user message, in sampling and in the DPO pairs."""
    # The loop's own calls only: the judge audit asks the critic about held-out outputs too.
    run_rlac(facts_config(critic_form="paper", **{"audit.enabled": False}), RunStore(tmp_path))
    gen_calls = [c for model in fakes["loaded"]["gen"] for c in model.calls if "biography" in c[-1].content]
    crit_calls = [c for model in fakes["loaded"]["crit"] for c in model.calls]
    assert gen_calls and crit_calls
    # The generator is asked for train outputs and for held-out ones the same way.
    assert {tuple((m.role, m.content) for m in c) for c in gen_calls} == {
        (("system", PAPER_GENERATOR_SYSTEM), ("user", f"Write a biography of {name}."))
        for name in ("Albert Einstein", "Marie Curie")}
    for call in crit_calls:
        assert [m.role for m in call] == ["system", "user"] and call[0].content == PAPER_CRITIC_SYSTEM
        assert call[1].content.startswith("Here is an example to show the task.")
        assert "about Albert Einstein.\nParagraph:\n[1] Albert Einstein was a physicist." in call[1].content
    gen, crit = fakes["trained"]
    [pair] = gen["pairs"]
    assert (pair.system, pair.prompt) == (PAPER_GENERATOR_SYSTEM, "Write a biography of Albert Einstein.")
    assert crit["pairs"] and {(p.system, p.prompt) for p in crit["pairs"]} <= {(c[0].content, c[1].content)
                                                                              for c in crit_calls}


def test_static_critic_proposes_n_like_the_trained_one_and_never_trains(tmp_path, fakes):
    """The paper's static ablation only freezes the critic: it draws the same N proposals per
    output (§4.1: "the critic proposes 4 rubrics per output" for all methods), so the two
    conditions' round-1 proposals and verification calls are the same."""
    store = RunStore(tmp_path / "static")
    summary = run_rlac(facts_config(critic_training="static"), store)
    [gen] = fakes["trained"]
    assert store.get_meta("warnings") == []  # a static critic has no pairs by design
    assert gen["dir"].endswith("generator")
    assert summary.verification_calls.rlac == 4  # N=2 proposals on each of K=2 outputs
    assert summary.condition == "rlac-static"
    adversarial = RunStore(tmp_path / "adversarial")
    trained = run_rlac(facts_config(), adversarial)
    assert trained.verification_calls.rlac == summary.verification_calls.rlac
    def proposals(run):
        return sorted((r["output"], r["proposal_index"], r["proposal"]) for _, r in run.get_records("rlac_proposal"))

    assert proposals(store) == proposals(adversarial)


def test_the_critic_gets_a_whole_stage_per_call(tmp_path, fakes, monkeypatch):
    """Every output of every train instruction goes to the critic in one call, each under its
    own answer schema (a facts schema quotes its output's sentences), on a backend that takes
    per-request settings; the validator checks the whole stage in one batch."""
    curie = "Marie Curie was born in Warsaw. She discovered polonium. She won two Nobel prizes."
    fakes["models"]["gen"] = [*FACT_MODELS["gen"][:1], {"match": "biography of Marie Curie", "completions": [curie]},
                              {"match": "biography of Isaac Newton", "completions": [GOOD]}]
    fakes["models"]["crit"] = [*FACT_MODELS["crit"], {"match": "polonium", "completions": [INVALID]}]
    calls = []

    def generate_each(self, conversations, samplings, n=1):
        if any(s.json_schema and "error_fact" in s.json_schema for s in samplings):  # the critic's
            calls.append((len(conversations), len({s.json_schema for s in samplings})))
        return by_sampling(self.generate, conversations, samplings, n)

    monkeypatch.setattr(ReplayModel, "generate_each", generate_each, raising=False)
    config = facts_config(**{"data.train_ids": ["Albert Einstein", "Marie Curie"],
                             "data.heldout_ids": ["Isaac Newton"], "audit.enabled": False})
    summary = run_rlac(config, RunStore(tmp_path))
    assert calls == [(4, 3)]  # one call: 2 instructions x K=2 outputs, 3 distinct outputs' schemas
    assert summary.verification_calls.rlac == 8  # N=2 proposals on each of the 4


def test_noisy_validator_uses_random_labels(tmp_path, fakes):
    store = RunStore(tmp_path)
    summary = run_rlac(facts_config(validator="random", k=2, n=3), store)
    verdicts = {r["verdict"] for _, r in store.get_records("rlac_proposal")}
    assert verdicts <= {"caught", "survived"}
    assert summary.verification_calls.rlac == 6
    assert summary.condition == "rlac-adversarial-noisy-validator"


def test_enumerative_baseline_verifies_every_fact_and_pairs_best_vs_worst(tmp_path, fakes):
    summary = run_rlac(facts_config(verification="enumerative"), RunStore(tmp_path))
    [gen] = fakes["trained"]  # no critic in this baseline
    assert [(p.chosen, p.rejected, p.source) for p in gen["pairs"]] == [(GOOD, BAD, "enumerative:facts")]
    assert summary.verification_calls == VerificationCounts(rlac=2, enumerative=6, used=6)


#: GOOD and BAD with their sentences reordered: the same facts (and scores), other texts.
GOOD_R = "He developed the theory of relativity. Albert Einstein was a physicist. He was born in Ulm."
BAD_R = "He developed the theory of relativity. Albert Einstein was a physicist. He was born in Vienna."
CAUGHT_3 = "reason: he was born in Ulm\nsentence: 3\nerror_fact: Einstein was born in Vienna."


def test_rlac_and_the_enumerative_baseline_get_the_same_pair_budget(tmp_path, fakes):
    """K=4 outputs, two right and two wrong: RLAC has 2 x 2 survived-vs-caught pairs and the
    enumerative baseline 2 x 2 higher-vs-lower pairs; both are held to the budget of 3, and
    summary.json says so per method and round."""
    fakes["models"]["gen"] = [{"match": "biography of Albert Einstein", "completions": [GOOD, BAD, GOOD_R, BAD_R]},
                              FACT_MODELS["gen"][1]]
    fakes["models"]["crit"] = [*FACT_MODELS["crit"],
                               {"match": "[3] He was born in Vienna.", "completions": [CAUGHT_3, INVALID]},
                               {"match": "[3] He was born in Ulm.", "completions": [SURVIVED, INVALID]}]
    budget = {"k": 4, "max_pairs_per_instruction": 3}
    rlac = run_rlac(facts_config(**budget), RunStore(tmp_path / "rlac"))
    enum = run_rlac(facts_config(verification="enumerative", **budget), RunStore(tmp_path / "enum"))
    assert rlac.pairs["rlac-adversarial"]["1"]["generator"] == 3
    assert enum.pairs == {"enumerative": {"1": {"generator": 3, "critic": 0}}}
    assert rlac.pair_budget == enum.pair_budget == {"per_instruction": 3, "per_output": 2}
    enum_pairs = fakes["trained"][-1]["pairs"]
    assert {(p.chosen, p.rejected) for p in enum_pairs} < {(g, b) for g in (GOOD, GOOD_R) for b in (BAD, BAD_R)}
    # Without a budget cut both find all four (the baseline used to get one, best vs worst).
    wide = run_rlac(facts_config(verification="enumerative", k=4), RunStore(tmp_path / "wide"))
    assert wide.pairs["enumerative"]["1"]["generator"] == 4


THINK = "<think>Maybe he was born in Paris. Or in Rome?</think>"


def test_think_blocks_are_stripped_before_facts_are_split_or_the_critic_reads(tmp_path, fakes):
    """A reasoning generator's <think> block is not part of its biography: the critic's
    numbered sentences, the atomic facts (enumerative cost) and FactScore see the answer
    only, while DPO trains on the text as written."""
    fakes["models"]["gen"] = [{"match": "biography of Albert Einstein", "completions": [THINK + GOOD, THINK + BAD]},
                              {"match": "biography of Marie Curie", "completions": [THINK + CURIE]}]
    store = RunStore(tmp_path)
    summary = run_rlac(facts_config(), store)
    gen, crit = fakes["trained"]
    assert [(p.chosen, p.rejected) for p in gen["pairs"]] == [(THINK + GOOD, THINK + BAD)]
    assert all("<think>" not in p.prompt and "Paris" not in p.prompt for p in crit["pairs"])
    # 3 atomic facts per answer, as without the block (it has two more sentences).
    assert summary.verification_calls == VerificationCounts(rlac=4, enumerative=6, used=4)
    assert summary.baseline.facts_correct == 2.0 and summary.baseline.facts_incorrect == 0.0
    assert {r["output"] for _, r in store.get_records("rlac_proposal")} == {GOOD, BAD}


def test_think_blocks_are_stripped_for_the_enumerative_scores(tmp_path, fakes):
    fakes["models"]["gen"] = [{"match": "biography of Albert Einstein", "completions": [THINK + GOOD, THINK + BAD]},
                              FACT_MODELS["gen"][1]]
    store = RunStore(tmp_path)
    run_rlac(facts_config(verification="enumerative"), store)
    scores = {r["output"]: r["score"] for _, r in store.get_records("rlac_enumerative")}
    assert scores == {THINK + GOOD: pytest.approx(2 / 3), THINK + BAD: pytest.approx(1 / 3)}


def test_runner_writes_the_summary_contract_and_resumes_without_retraining(tmp_path, fakes):
    config = facts_config().model_dump(mode="json")
    summary = run_experiment(None, tmp_path / "run", data=config)
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert on_disk["base_model"] == "gen"
    assert set(on_disk["rounds"][0]["checkpoints"]) == {"generator", "critic"}
    assert set(on_disk["verification_calls"]) >= {"rlac", "enumerative"}
    # Replay models and 1 person are not the paper: summary.json says where, with why.
    departed = {d["setting"] for d in on_disk["departures"]}
    assert {"roles.generator.model", "k", "data.train", "iterations"} <= departed
    assert on_disk["pairs"] == {"rlac-adversarial": {"1": {"generator": 1, "critic": 1}}}
    report = (tmp_path / "run" / "report.html").read_text()
    assert "RLAC iterations" in report and "verification calls (Fig. 2b)" in report
    assert summary["table"]["rows"][0]["round"] == 0
    trained = len(fakes["trained"])
    again = run_experiment(None, tmp_path / "run", data=facts_config().model_dump(mode="json"), resume=True)
    assert [t for t in fakes["trained"][trained:] if "dir" in t] == []  # nothing retrained
    assert again["verification_calls"] == summary["verification_calls"]


def test_a_round_without_pairs_warns_and_does_not_train(tmp_path, fakes):
    fakes["models"]["crit"] = [{"completion": INVALID}]  # the critic never names a real sentence
    store = RunStore(tmp_path)
    summary = run_rlac(facts_config(), store)
    assert fakes["trained"] == [] and summary.rounds[0].trained == {"generator": False, "critic": False}
    assert summary.rounds[0].critic.outcome_invalid == 1.0
    store.set_meta("config", facts_config().model_dump(mode="json"))  # as the runner records it
    found = too_few_pairs(store)  # said once, by the run's warnings, with its cause
    assert [f.kind for f in found] == ["no-pairs", "no-pairs"]
    assert [("generator" in f.text, "critic" in f.text.split("(")[0]) for f in found] == [(True, False), (False, True)], \
        [f.text for f in found]
    assert not any("preference pairs" in w for w in store.get_meta("warnings"))


def test_summary_json_carries_the_runs_warnings_with_the_no_pairs_cause(tmp_path, fakes):
    fakes["models"]["crit"] = [{"completion": INVALID}]  # no pairs for either role
    run_experiment(None, tmp_path / "run", data=facts_config().model_dump(mode="json"))
    on_disk = json.loads((tmp_path / "run" / "summary.json").read_text())
    said = [w for w in on_disk["warnings"] if w["kind"] == "no-pairs"]
    assert len(said) == 2 and all(w["about"] == "findings" and "round 1" in w["text"] for w in said)


def test_a_dpo_stage_that_moved_no_weight_is_reported(tmp_path, fakes):
    def still(policy, pairs, settings, output_dir, **kwargs):
        return TrainResult(checkpoint=str(output_dir / "final"), steps=2, seconds=0.0, seconds_per_step=0.0,
                           peak_rss_mb=0.0, metrics={"weight_delta": 0.0, "train_loss": 0.69})

    fakes["backend"].train_dpo = still
    store = RunStore(tmp_path)
    summary = run_rlac(facts_config(), store)
    assert summary.rounds[0].training["generator"].weight_delta == 0.0
    assert any("generator's DPO stage ran 2 steps but changed no weight" in w for w in store.get_meta("warnings"))


CURIE_MOON = CURIE + " She was born on the Moon."


def test_heldout_factscore_counts_each_supported_and_unsupported_fact(tmp_path, fakes):
    # Held out: Marie Curie with two facts the corpus supports and one it does not.
    fakes["models"]["gen"] = [FACT_MODELS["gen"][0], {"match": "biography of Marie Curie", "completions": [CURIE_MOON]}]
    summary = run_rlac(facts_config(), RunStore(tmp_path))
    # One held-out person: n=1, her own precision, and no interval over people from one.
    expected = {"factscore_precision": pytest.approx(2 / 3), "facts_correct": 2.0, "facts_incorrect": 1.0,
                "factscore_precision_lo": None, "factscore_precision_hi": None, "heldout_n": 1,
                "per_item": {"bio:marie-curie": pytest.approx(2 / 3)},
                "heldout_output_chars": float(len(CURIE_MOON))}
    assert summary.baseline.model_dump() == expected and summary.rounds[0].eval.model_dump() == expected
    assert summary.table.rows[1]["factscore_precision"] == pytest.approx(2 / 3)


def test_enumerative_scores_are_the_factscore_precision_of_each_output(tmp_path, fakes):
    store = RunStore(tmp_path)
    run_rlac(facts_config(verification="enumerative"), store)
    scores = {r["output"]: r["score"] for _, r in store.get_records("rlac_enumerative")}
    # Word overlap supports two of GOOD's three sentences; BAD has one more unsupported:
    # its birthplace. The score is the share of supported facts, per output.
    assert scores == {GOOD: pytest.approx(2 / 3), BAD: pytest.approx(1 / 3)}


def test_a_resumed_round_keeps_its_own_counts_when_later_rounds_run(tmp_path, fakes):
    first = run_rlac(facts_config(), RunStore(tmp_path))
    longer = run_rlac(facts_config(iterations=2), RunStore(tmp_path))  # round 1 resumed, round 2 new
    assert longer.rounds[0].counts == first.rounds[0].counts == VerificationCounts(rlac=4, enumerative=6, used=4)
    assert longer.rounds[1].counts == VerificationCounts(rlac=8, enumerative=12, used=8)
    assert [row["calls_rlac"] for row in longer.table.rows] == [0, 4, 8]


def test_summary_keys_are_the_documented_contract(tmp_path, fakes):
    # The records dump to these keys exactly; a renamed or dropped field breaks readers of
    # summary.json (the report, BENCHMARKS scripts), so the sets are spelled out here.
    # (The runner adds its own keys, `algorithm`, `llm_cache`, ..., to what run_rlac returns.)
    summary = summary_dict(run_rlac(facts_config(), RunStore(tmp_path / "run")))  # as summary.json holds it
    assert set(summary) == {"base_model", "base_models", "task", "condition", "baseline", "rounds",
                            "verification_calls", "verification_call_ratio", "pairs", "pair_budget",
                            "reward_model", "table", "audit", "detection"}
    assert summary["detection"] == []  # measured only with `detection: {enabled: true}`
    assert summary["pairs"] == {"rlac-adversarial": {"1": {"generator": 1, "critic": 1}}}
    assert summary["reward_model"] is None  # only the reward-model baseline has one
    [rnd] = summary["rounds"]
    assert set(rnd) == {"round", "checkpoints", "trained", "eval", "critic", "rollout", "pairs", "training",
                        "counts", "audit", "seconds"}
    assert set(rnd["eval"]) == set(summary["baseline"]) == {"factscore_precision", "factscore_precision_lo",
                                                            "factscore_precision_hi", "heldout_n", "per_item",
                                                            "facts_correct", "facts_incorrect",
                                                            "heldout_output_chars"}
    assert set(rnd["critic"]) == {"detection_rate", "outcome_caught", "outcome_survived", "outcome_invalid",
                                  "proposals"}
    assert set(rnd["rollout"]) == {"output_tokens", "generator_pairs", "critic_pairs"}
    assert set(rnd["training"]["generator"]) == {"steps", "seconds", "loss", "weight_delta"}
    assert summary["table"]["columns"] == ["round", "factscore_precision", "detection_rate", "kl_from_base",
                                           "calls_rlac", "calls_enumerative"]
    [(_, pair), *_] = RunStore(tmp_path / "run").get_records("rlac_pair")
    assert set(pair) == {"round", "prompt", "chosen", "rejected", "sample_id", "source", "system"}


@pytest.mark.parametrize("changes", [{}, {"verification": "enumerative"}, {"count_enumerative": False}],
                         ids=["rlac", "enumerative", "no-enumerative-count"])
def test_summary_json_is_the_whole_summary(tmp_path, fakes, changes):
    """The runner dumps a summary record leaving out the fields never set (`summary_dict`):
    RLAC sets every one, and a count never added to (no enumerative count) is dumped as 0."""
    summary = run_rlac(facts_config(**changes), RunStore(tmp_path))
    assert summary_dict(summary) == summary.model_dump(mode="json")
    assert set(summary_dict(summary)["rounds"][0]["counts"]) == {"rlac", "enumerative", "used"}


def test_a_rounds_names_are_the_ones_run_folders_hold():
    """A resumed run finds its finished rounds by these names, in folders older versions
    wrote: spelled out here, once; the loop and the other tests build them with round_stage."""
    assert (round_stage(0), round_stage(2, "eval")) == ("rlac:round0", "rlac:round2/eval")
    assert round_stage(1, "critic", prefix=STAGE) == "rlac/round1/critic"
    assert round_stage(1, "generator", "final", prefix=BARE) == "round1/generator/final"


def test_the_monitor_follows_each_iterations_rewards_against_the_held_out_gold(tmp_path, fakes):
    from coevo.monitor.records import run_summary

    store = RunStore(tmp_path / "run")
    run_rlac(facts_config(iterations=2, **{"monitor.anchors": ["gold"]}), store)
    (stage, report), = run_summary(store)["stages"].items()
    assert stage == "rlac/rlac-adversarial" and report["unit"] == "round"
    # The gold anchor at round 0 (the untrained generator) and after each iteration; the
    # rewards (one per output: K=2 on the one train person) of iterations 1 and 2.
    assert [point[0] for point in report["anchor_curves"]["gold"]] == [0, 1, 2]
    assert [(point[0], point[2]) for point in report["reward_curve"]] == [(1, 2), (2, 2)]
    assert set(report["degeneracy"]) == {"1", "2"}
    # Resumed, the monitor replays what the finished iterations observed: the same report.
    again = RunStore(tmp_path / "run")
    run_rlac(facts_config(iterations=2, **{"monitor.anchors": ["gold"]}), again)
    assert run_summary(again)["stages"][stage] == report


def test_rlac_refuses_anchors_and_stop_it_cannot_watch():
    with pytest.raises(ConfigError, match="rlac cannot take the anchor 'python:x.py:f'"):
        facts_config(**{"monitor.anchors": ["python:x.py:f"]})
    with pytest.raises(ConfigError, match="rlac cannot take the anchor 'audit': its judges do not change"):
        facts_config(**{"monitor.anchors": ["audit"]})
    with pytest.raises(ConfigError, match="watched round by round"):
        facts_config(**{"monitor.stop": True})
