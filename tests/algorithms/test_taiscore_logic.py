"""TAIScore loop logic on replay models with fake trainers: rewards, pair filter, shards,
conditions, resume bookkeeping. No weights change here; the slow tests train for real."""

import json
import math

import pytest

from coevo.algorithms.backend import Backend
from coevo.algorithms.taiscore import TaiScoreConfig, make_reward_fn, run_taiscore
from coevo.algorithms.taiscore.config import resolve_conditions
from coevo.algorithms.taiscore.pairs import select_pairs
from coevo.algorithms.taiscore.evaluation import GAIN, format_gain, gold_gains, rounds_table
from coevo.core.strict import ConfigError
from coevo.settings.config import validate
from coevo.llm.replay import ReplayModel
from coevo.roles.actor import Actor
from coevo.roles.judges import PairwiseJudge, TaiScoreJudge
from coevo.run.runner import summary_dict
from coevo.rundir.store import RunStore
from coevo.train.common import TrainResult
from coevo.core.types import Rollout, Sampling

RUBRIC = {"criteria": [{"name": "clarity", "weight": 1}, {"name": "detail", "weight": 1}]}


def _taiscore_answer(score):
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    return json.dumps({**{d: {"score": score, "reason": "r"} for d in dims}, "score": score})


def _gold(a, b):
    return json.dumps({"criteria": [{"name": "clarity", "score": a, "reason": "r"},
                                    {"name": "detail", "score": b, "reason": "r"}]})


RULES = [
    # judges first: their prompts quote responses that other rules would match
    {"match": "evaluation criteria", "completion": _gold(6, 6)},
    {"match": ["Response 1:\nGOOD"], "completion": "1"},
    {"match": ["Response 2:\nGOOD"], "completion": "2"},
    {"match": "Response 1:", "completion": "tie"},
    {"match": "Response B:\n", "completion": _taiscore_answer(7)},
    {"match": "Your Critique:", "completions": ["CRIT-A", "CRIT-B"]},
    {"match": "Revised Response:", "completion": "GOOD revision"},
    {"completion": "plain initial"},
]


class FakeLocal(ReplayModel):
    """A 'trainable' replay model: training only changes its id."""

    def __init__(self, spec):
        super().__init__(rules=RULES)
        self.model_id = f"fake:{spec}"
        self.spec = spec


class FakeTrainers:
    def __init__(self):
        self.grpo_calls, self.dpo_calls, self.restored = [], [], []

    def grpo(self, policy, prompts, reward_fn, settings, output_dir, *, resume=True, extra_columns=None, callbacks=None):
        # Score N completions per prompt the way TRL would call the reward.
        n = settings.num_generations
        completions = [[{"role": "assistant", "content": f"CRIT-{i}"}] for _ in prompts for i in range(n)]
        columns = {k: [v for v in values for _ in range(n)] for k, values in extra_columns.items()}
        rewards = reward_fn(prompts=[p for p in prompts for _ in range(n)], completions=completions, **columns)
        self.grpo_calls.append({"prompts": prompts, "columns": extra_columns, "rewards": rewards,
                                "policy": policy.spec, "dir": str(output_dir)})
        policy.model_id += "+grpo"
        return TrainResult(checkpoint=str(output_dir / "final"), steps=1, seconds=1.0, seconds_per_step=1.0,
                           peak_rss_mb=1.0, metrics={"loss": 0.5})

    def dpo(self, policy, pairs, settings, output_dir, *, reference=None, resume=True):
        self.dpo_calls.append({"pairs": pairs, "policy": policy.spec, "dir": str(output_dir)})
        policy.model_id += "+dpo"
        return TrainResult(checkpoint=str(output_dir / "final"), steps=1, seconds=1.0, seconds_per_step=1.0,
                           peak_rss_mb=1.0, metrics={"train_loss": 0.6})

    def backend(self):
        return Backend(load_trainable=FakeLocal, restore=lambda m, ckpt, s: self.restored.append(ckpt),
                       train_grpo=self.grpo, train_dpo=self.dpo, load_frozen=FakeLocal)


def _data(tmp_path, n=12):
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about topic {i}.", "rubric": RUBRIC})
                            + "\n" for i in range(n)))
    return str(path)


def _config(tmp_path, **extra):
    data = {"algorithm": "taiscore", "data": {"source": _data(tmp_path)}, "rounds": 2,
            "pairs_per_round": 2, "grpo": {"num_generations": 2}, "evaluation": {"holdout": 0.25}}
    data.update(extra)
    return validate(TaiScoreConfig, data)


def test_reward_fn_returns_raw_judge_scores_in_completion_order():
    """Known judge scores per critique come back unchanged (no normalisation here)."""
    scores = {"CRIT-0": 2, "CRIT-1": 4, "CRIT-2": 6, "CRIT-3": 9}
    rules = [{"match": ["Critique:\n" + c, "Response B:"], "completion": _taiscore_answer(s)}
             for c, s in scores.items()]
    rules += [{"match": "Response B", "completion": "not json at all"},
              {"match": "Revised Response:", "completion": "revised"}]
    model = ReplayModel(rules=rules)
    actor = Actor(model, Sampling(), revise_sampling=Sampling(temperature=0.2))
    judge = TaiScoreJudge(model, Sampling())
    seen = []
    reward_fn = make_reward_fn(actor, judge, "taiscore", on_scored=seen.extend)
    critiques = ["CRIT-0", "CRIT-1", "CRIT-2", "CRIT-3", "CRIT-X"]
    rewards = reward_fn(prompts=[[]] * 5, completions=[[{"role": "assistant", "content": c}] for c in critiques],
                        x=["x"] * 5, y0=["y0"] * 5, sample_id=["s"] * 5, trainer_state=None)
    assert rewards == [2.0, 4.0, 6.0, 9.0, 0.0]  # unreadable twice -> invalid_reward, kept in the group
    assert [r.c for r in seen] == critiques and all(r.y1 == "revised" for r in seen)
    assert len({r.sample_id for r in seen}) == 5  # one stored rollout per distinct critique


def test_critique_quality_reward_does_not_ask_the_actor_to_revise():
    answer = json.dumps({d: {"score": 6, "reason": "r"} for d in (
        "specificity", "actionability", "priority", "faithfulness", "coverage", "constructiveness")})
    model = ReplayModel(rules=[{"completion": answer}])
    actor_model = ReplayModel(rules=[{"completion": "revised"}])
    from coevo.roles.judges import CritiqueQualityJudge

    reward_fn = make_reward_fn(Actor(actor_model, Sampling()), CritiqueQualityJudge(model, Sampling()),
                               "critique_quality")
    assert reward_fn(prompts=[[]], completions=["c"], x=["x"], y0=["y"], sample_id=["s"]) == [6.0]
    assert actor_model.calls == []


def test_pair_filter_drops_ties_and_y0_wins_and_maps_order_back():
    model = ReplayModel(rules=RULES)
    judge = PairwiseJudge(model, Sampling())
    kinds = {"win": ("plain", "GOOD y1"), "loss": ("GOOD y0", "plain y1"), "tie": ("plain", "plain y1")}
    rollouts = []
    for i in range(24):
        kind = ("win", "win", "loss", "tie")[i % 4]
        y0, y1 = kinds[kind]
        rollouts.append(Rollout(sample_id=f"{kind}{i}", x="x", y0=y0, c="c", y1=y1))
    verdicts = judge.judge_rollouts(rollouts, seed=3)
    shown = [v.shown_order for v in verdicts]
    assert ["y0", "y1"] in shown and ["y1", "y0"] in shown  # both orders were shown
    for rollout, verdict in zip(rollouts, verdicts):
        rollout.judgments["pairwise"] = verdict
        expected = {"win": 1.0, "loss": 0.0, "tie": 0.5}[rollout.sample_id.rstrip("0123456789")]
        assert verdict.score == expected
    rollouts.append(Rollout(sample_id="unread", x="x", y0="a", y1="b"))  # never judged: dropped
    chosen, counts = select_pairs(rollouts, 5, seed=0)
    assert (counts.y1_wins, counts.y0_wins, counts.ties, counts.invalid, counts.selected) == (12, 6, 6, 1, 5)
    assert all(r.sample_id.startswith("win") for r in chosen) and len({r.sample_id for r in chosen}) == 5
    again, _ = select_pairs(rollouts, 5, seed=0)
    assert [r.sample_id for r in again] == [r.sample_id for r in chosen]  # seeded
    other = {tuple(r.sample_id for r in select_pairs(rollouts, 5, seed=s)[0]) for s in range(5)}
    assert len(other) > 1  # a uniform sample, not the first M
    everything, _ = select_pairs(rollouts, 100, seed=0)
    assert len(everything) == 12  # M larger than the eligible set: all of them, once


def test_shards_are_disjoint_across_rounds_and_held_out(tmp_path):
    trainers = FakeTrainers()
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(_config(tmp_path), store, trainers.backend()))
    shards = store.get_meta("shards")
    held = set(store.get_meta("held_out"))
    ids = [set(v) for v in shards.values()]
    assert len(ids) == 2 and not ids[0] & ids[1] and not (ids[0] | ids[1]) & held
    assert ids[0] | ids[1] | held == {f"q{i}" for i in range(12)}
    # round r's critic trains on shard r-1 only, with the Table 6 prompt in chat format
    assert len(trainers.grpo_calls) == len(trainers.dpo_calls) == 2  # one stage of each per round
    for r, call in enumerate(trainers.grpo_calls):
        assert set(call["columns"]["sample_id"]) == ids[r]
        assert call["prompts"][0][0]["role"] == "user" and "Your Critique:" in call["prompts"][0][0]["content"]
        assert call["rewards"] == [7.0] * len(call["rewards"])
    for r, call in enumerate(trainers.dpo_calls):
        assert {p.sample_id for p in call["pairs"]} <= ids[r] and len(call["pairs"]) == 2
        assert all(p.chosen == "GOOD revision" and p.rejected == "plain initial" for p in call["pairs"])
    assert [rec["round"] for rec in summary["rounds"]] == [1, 2]
    assert summary["rounds"][1]["checkpoints"]["actor"].endswith("round2/actor/final")
    assert summary["rounds"][1]["checkpoints"]["critic"].endswith("round2/critic/final")
    metrics = summary["rounds"][0]["metrics"]
    assert metrics["reward_mean"] == 7.0 and metrics["pairs_selected"] == 2
    assert metrics["gold_score"] == 6.0 and metrics["win_rate_vs_round0"] == 0.5
    # π_r vs π_0, each pair in both shown orders: the replay judge ties both (plain vs plain)
    assert metrics["win_rate_vs_round0_n"] == len(held) and metrics["position_consistency_vs_round0"] == 1.0
    assert metrics["first_position_rate_vs_round0"] == 0.5
    assert metrics["win_rate_vs_round0_lo"] < 0.5 < metrics["win_rate_vs_round0_hi"]
    evaluated = store.rollouts("coevolution/round1/eval")
    assert len(evaluated) == len(held)
    for rollout in evaluated:
        straight, swapped = rollout.judgments["pairwise_vs_round0"], rollout.judgments["pairwise_vs_round0_swapped"]
        assert (straight.shown_order, swapped.shown_order) == (["round0", "current"], ["current", "round0"])
    rows = {row["metric"]: row for row in summary["table"]["rows"]}
    # The rounds table writes what the viewer writes (coevo/eval/metric_defs.py): under 5 pairs, no
    # interval but "too few to tell"; position consistency gets its n (from the win rate's).
    assert len(held) < 5
    assert rows["win_rate_vs_round0"]["round 1"] == f"0.500 (n={len(held)}: too few to tell)"
    assert rows["position_consistency_vs_round0"]["round 2"] == f"1.000 (n={len(held)}: too few to tell)"
    assert metrics["invalid_judgment_rate"] == 0.0
    logged = {(m["round"], m["name"]) for m in store.metrics("coevolution")}
    assert {(0, "gold_score"), (1, "reward_mean"), (2, "win_rate_vs_round0"), (2, "refine_delta")} <= logged
    assert summary["table"]["columns"][:3] == ["metric", "round 0", "round 1"]
    rewards = store.get_meta("distributions")["critic training reward (GRPO)"]["coevolution"]
    assert set(rewards) == {"1", "2"} and set(rewards["1"]) == {7.0}
    from coevo.view.report import build_report

    html = build_report(tmp_path / "run").read_text()
    assert "TAIScore: rounds" in html
    # plots over rounds, as plotly figures grouped by what they tell (report.html = the viewer's run page)
    assert 'id="plot-scores-by-round"' in html and 'id="plot-judges-rewards-and-critics-by-round"' in html


def test_resume_skips_finished_stages_and_restores_their_checkpoints(tmp_path):
    trainers = FakeTrainers()
    config = _config(tmp_path)
    store = RunStore(tmp_path / "run")
    first = summary_dict(run_taiscore(config, store, trainers.backend()))
    again = FakeTrainers()
    second = summary_dict(run_taiscore(config, store, again.backend()))
    assert again.grpo_calls == [] and again.dpo_calls == []
    assert len(again.restored) == 4  # critic and actor of both rounds, in order
    assert second["rounds"] == first["rounds"]


def test_conditions_share_data_and_make_one_table(tmp_path):
    trainers = FakeTrainers()
    config = _config(tmp_path, conditions=["off_the_shelf", "taiscore", "coevolution",
                                           {"name": "og", "preset": "outcome_gain"}], seeds=2)
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(config, store, trainers.backend()))
    table = summary["table"]
    assert [row["condition"] for row in table["rows"]] == ["base actor (round 0)", "off_the_shelf", "taiscore",
                                                          "coevolution", "og"]
    rows = {row["condition"]: row for row in table["rows"]}
    assert rows["coevolution"]["rounds"] == 2 and rows["taiscore"]["rounds"] == 1
    assert rows["taiscore"]["gold_score"] == "6.000 ± 0.000"  # mean ± sd over 2 seeds
    # single stage: one critic stage on all shards, one DPO on M pairs per shard
    single = [c for c in trainers.grpo_calls if "/taiscore/" in c["dir"]]
    train = sum(len(ids) for ids in store.get_meta("shards").values())
    assert len(single) == 2 and len(single[0]["prompts"]) == train
    assert all(len(c["pairs"]) == 4 for c in trainers.dpo_calls if "/taiscore/" in c["dir"])
    # off the shelf: no critic training at all, the critic checkpoint is None
    assert not any("off_the_shelf" in c["dir"] for c in trainers.grpo_calls)
    off = [c for c in summary["conditions"] if c["condition"] == "off_the_shelf"][0]
    assert off["rounds"][0]["checkpoints"]["critic"] is None
    # outcome-gain reward: the critic is rewarded with the 1 / 0.5 / 0 judge
    og = [c for c in trainers.grpo_calls if "/og/" in c["dir"]][0]
    assert set(og["rewards"]) <= {None, 0.0, 0.5, 1.0}
    assert len(summary["conditions"]) == 8 and "TAIScore: conditions" in store.get_meta("tables")
    # each trained condition's gold gain over its round 0, paired over 2 seeds x the held-out
    # prompts (the replay gold judge gives every response 6: no gain, a zero-width CI)
    held_out = len(store.get_meta("held_out"))
    assert summary["gold_gain_ci"]["coevolution"] == {"mean_diff": 0.0, "low": 0.0, "high": 0.0,
                                                       "n_pairs": 2 * held_out}
    assert rows["coevolution"][GAIN] == (f"+0.000 [+0.000, +0.000] (n={2 * held_out})" if 2 * held_out >= 5
                                         else f"+0.000 (n={2 * held_out}: too few to tell)")
    assert GAIN not in rows["base actor (round 0)"]


def test_gold_gain_pairs_each_prompt_with_itself_under_the_same_seed(tmp_path):
    """S(π_last) − S(π_0) per (seed, prompt), unreadable scores and unscored prompts left out."""
    from coevo.algorithms.taiscore.records import ConditionResult, RoundRecord
    from coevo.core.types import Judgment

    store = RunStore(tmp_path / "run")
    gold = {  # (tag, round) -> {prompt: score}, None = an unreadable judgment
        ("c/seed0", 0): {"a": 4.0, "b": 6.0, "c": 5.0}, ("c/seed0", 2): {"a": 7.0, "b": 6.0, "c": None},
        ("c/seed1", 0): {"a": 5.0, "b": 5.0}, ("c/seed1", 2): {"a": 8.0, "b": 6.0, "d": 9.0},
    }
    for (tag, r), scores in gold.items():
        for prompt, score in scores.items():
            judgment = Judgment(judge="gold_rubric", score=score, valid=score is not None)
            store.save_rollout(f"{tag}/round{r}/eval", Rollout(sample_id=prompt, x="x", y0="y",
                                                               judgments={"gold_rubric_y0": judgment}), round=r)
    runs = [ConditionResult(condition="c", seed=seed, tag=f"c/seed{seed}", plan={}, baseline={},
                            rounds=[RoundRecord(round=r, checkpoints={}, metrics={}) for r in (1, 2)])
            for seed in (0, 1)]
    runs.append(ConditionResult(condition="untrained", seed=0, tag="u", plan={}, baseline={}, rounds=[]))
    gains = gold_gains(store, runs)
    assert set(gains) == {"c"}  # a condition with no rounds has no gain to show
    diffs = [3.0, 0.0, 3.0, 1.0]  # seed 0: a, b (c unreadable after); seed 1: a, b (d not scored before)
    assert gains["c"]["n_pairs"] == 4 and math.isclose(gains["c"]["mean_diff"], sum(diffs) / 4)
    assert min(diffs) <= gains["c"]["low"] <= gains["c"]["mean_diff"] <= gains["c"]["high"] <= max(diffs)
    assert format_gain(gains["c"]) == "+1.750 (n=4: too few to tell)"  # under 5 pairs: no interval shown
    assert format_gain({**gains["c"], "n_pairs": 5}) == "+1.750 [+0.500, +3.000] (n=5)"
    assert format_gain({"mean_diff": None, "low": None, "high": None, "n_pairs": 0}) is None
    table = rounds_table(runs[0], gains)
    assert table["rows"][-1] == {"metric": GAIN, "round 2": format_gain(gains["c"])}
    # one pair: its difference and no interval (a bootstrap of one item has no spread)
    for r, score in ((0, 5.0), (1, 7.0)):
        store.save_rollout(f"one/round{r}/eval", Rollout(sample_id="a", x="x", y0="y", judgments={
            "gold_rubric_y0": Judgment(judge="gold_rubric", score=score)}), round=r)
    one = ConditionResult(condition="one", seed=0, tag="one", plan={}, baseline={},
                          rounds=[RoundRecord(round=1, checkpoints={}, metrics={})])
    gain = gold_gains(store, [one])["one"]
    assert gain == {"mean_diff": 2.0, "low": None, "high": None, "n_pairs": 1}
    assert format_gain(gain) == "+2.000 (n=1: too few to tell)"


def test_matching_trains_the_critic_against_the_tailored_actor(tmp_path):
    trainers = FakeTrainers()
    config = _config(tmp_path, conditions=[{"name": "tailored", "preset": "matching", "tailored_to": "other"}])
    run_taiscore(config, RunStore(tmp_path / "run"), trainers.backend())
    assert len(trainers.grpo_calls) == 1 and trainers.dpo_calls[0]["policy"] == "smollm2"
    with pytest.raises(ConfigError, match="tailored_to"):
        resolve_conditions(_config(tmp_path, conditions=["matching"]))


def test_config_errors_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="unknown preset"):
        validate(TaiScoreConfig, {"conditions": ["nope"]})
    with pytest.raises(ConfigError, match="empty"):
        run_taiscore(_config(tmp_path, rounds=20), RunStore(tmp_path / "r"), FakeTrainers().backend())
    assert not math.isnan(TaiScoreConfig().dpo.beta) and TaiScoreConfig().dpo.beta == 0.1


def test_actor_engine_vllm_generates_from_each_finished_actor_checkpoint(tmp_path):
    """`actor_engine: vllm`: the actor's generation copy starts on the base weights (shared,
    never closed) and moves to each DPO stage's final/ after it ends (closed when replaced)."""
    fakes, copies = FakeTrainers(), []

    class Copy(ReplayModel):
        def __init__(self, spec, checkpoint):
            super().__init__(rules=RULES)
            self.model_id, self.closed = f"copy:{checkpoint}", False
            copies.append(self)

        def close(self):
            self.closed = True

    backend = fakes.backend()
    backend.load_copy = lambda spec, checkpoint, **options: (Copy(spec, checkpoint), checkpoint is None)
    store = RunStore(tmp_path / "run")
    run_taiscore(_config(tmp_path, actor_engine="vllm"), store, backend)
    ids = [c.model_id for c in copies]
    finals = [call["dir"] + "/final" for call in fakes.dpo_calls]
    assert ids == ["copy:None", *(f"copy:{f}" for f in finals)]
    assert [c.closed for c in copies] == [False, True, True]  # the base is shared; the last closes at the end
    # Each copy generated: round 1 and the baseline on the base, round 2's y0 and revisions
    # on round 1's checkpoint, round 2's evaluation on round 2's.
    assert all(c.calls for c in copies)
    assert any("Revised Response:" in conv[-1].content for conv in copies[1].calls)


def test_critic_engine_vllm_generates_from_each_finished_critic_checkpoint(tmp_path):
    """`critic_engine: vllm` (the full configs' fast path): the critic's critiques come from a
    vLLM copy of the base, then of each GRPO stage's final/; the actor stays in transformers."""
    fakes, copies = FakeTrainers(), []

    class Copy(ReplayModel):
        def __init__(self, spec, checkpoint):
            super().__init__(rules=RULES)
            self.model_id = f"copy:{checkpoint}"
            copies.append(self)

    backend = fakes.backend()
    backend.load_copy = lambda spec, checkpoint, **options: (Copy(spec, checkpoint), checkpoint is None)
    run_taiscore(_config(tmp_path, critic_engine="vllm"), RunStore(tmp_path / "run"), backend)
    finals = [call["dir"] + "/final" for call in fakes.grpo_calls]
    assert [c.model_id for c in copies] == ["copy:None", *(f"copy:{f}" for f in finals)] and len(finals) == 2
    assert all(c.calls for c in copies)


def test_llamacpp_engines_write_each_trained_roles_weights_as_they_change(tmp_path):
    """`actor_engine` / `critic_engine: llamacpp`: each trained role generates from a GGUF of
    its weights, written again after each of its stages (the base, then each final/), the old
    copy closed; the critic's GRPO samples move to llama.cpp too (grpo.rollout_engine)."""
    fakes, copies = FakeTrainers(), []

    class Copy(ReplayModel):
        def __init__(self, local, path):
            super().__init__(rules=RULES)
            self.model_id, self.path, self.closed = f"gguf:{local.model_id}", path, False
            copies.append(self)

        def close(self):
            self.closed = True

    backend = fakes.backend()
    backend.load_gguf_copy = Copy
    run_taiscore(_config(tmp_path, actor_engine="llamacpp", critic_engine="llamacpp"), RunStore(tmp_path / "run"),
                 backend)
    written = [c.model_id for c in copies]
    # The actor's base, then its weights after each DPO; the critic's base (round 0's
    # evaluation), then after each GRPO: two rounds.
    assert sorted(written) == sorted(f"gguf:fake:smollm2{trained}" for trained in (
        "", "+dpo", "+dpo+dpo", "", "+grpo", "+grpo+grpo"))
    assert all(c.closed for c in copies)  # replaced, or closed at the end
    assert all(str(c.path).endswith(".gguf") and "engines" in str(c.path) for c in copies)
    assert len({c.path for c in copies}) == len(copies)  # one file per role and checkpoint


def test_a_llamacpp_critic_samples_its_grpo_critiques_there_too(tmp_path):
    from coevo.algorithms.taiscore.loop import ConditionRun, Context
    from coevo.algorithms.taiscore.config import resolve_conditions

    config = _config(tmp_path, critic_engine="llamacpp")
    ctx = Context(config=config, store=RunStore(tmp_path / "run"), backend=FakeTrainers().backend(),
                  judge_model=FakeLocal("judge"), shards=[], held_out=[])
    assert ConditionRun(ctx, resolve_conditions(config)[0], 0).grpo_settings.rollout_engine == "llamacpp"
    said = _config(tmp_path, critic_engine="llamacpp", grpo={"num_generations": 2, "rollout_engine": "transformers"})
    ctx.config = said
    assert ConditionRun(ctx, resolve_conditions(said)[0], 0).grpo_settings.rollout_engine == "transformers"


class Tagged(FakeLocal):
    """A fake whose critiques and revisions say which weights wrote them (its model id), and
    whose gold judge scores a response written by a DPO-trained actor 9 instead of 6."""

    made: list["Tagged"] = []

    def __init__(self, spec):
        super().__init__(spec)
        self.rules = [{"match": ["evaluation criteria", "+dpo"], "completions": [_gold(9, 9)]}, *self.rules]
        Tagged.made.append(self)

    def _answers(self, conversation):
        last = conversation[-1].content.rstrip()
        if last.endswith("Your Critique:"):
            return [f"CRIT by {self.model_id}"]
        if last.endswith("Revised Response:"):
            return [f"GOOD revision by {self.model_id}"]
        return super()._answers(conversation)


def test_refine_delta_is_the_new_critic_on_the_actor_before_its_dpo(tmp_path):
    """Table 3a: round r's refine_delta is κ_r's critiques of π_{r-1}, revised by π_{r-1}; the
    same with π_r is refine_delta_after_dpo. A revision by a DPO-trained actor scores 9, any
    other response 6, so the two differ exactly when the actor revising was updated."""
    trainers = FakeTrainers()
    backend = trainers.backend()
    backend.load_trainable = backend.load_frozen = Tagged
    store = RunStore(tmp_path / "run")
    summary = summary_dict(run_taiscore(_config(tmp_path), store, backend))
    round1, round2 = (rec["metrics"] for rec in summary["rounds"])
    assert summary["baseline"]["refine_delta"] == 0.0 and "refine_delta_after_dpo" not in summary["baseline"]
    assert round1["refine_delta"] == 0.0 and round1["refine_S_y1"] == 6.0  # π_0 revised: no DPO yet
    assert round1["refine_delta_after_dpo"] == 3.0 and round1["refine_S_y1_after_dpo"] == 9.0
    assert round2["refine_delta"] == 3.0  # π_1 (trained once) revises for κ_2
    before = store.rollouts("coevolution/round1/eval_before_dpo")
    round0 = {r.sample_id: r.y0 for r in store.rollouts("coevolution/round0/eval")}
    assert before and all(r.c == "CRIT by fake:smollm2+grpo" for r in before)  # κ_1, after its GRPO
    assert all(r.y1 == "GOOD revision by fake:smollm2" for r in before)  # π_0, before its DPO
    assert {r.sample_id: r.y0 for r in before} == round0  # π_0's held-out responses, scored once
    assert round1["eval_before_dpo_judgments"] == len(before) and round1["invalid_judgment_rate"] == 0.0
    rows = {row["metric"]: row for row in summary["table"]["rows"]}
    assert rows["refine_delta"]["round 1"] == f"0.000 (n={len(before)}: too few to tell)"
    assert rows["refine_delta_after_dpo"]["round 1"] == f"3.000 (n={len(before)}: too few to tell)"
    assert round1["refine_delta_n"] == len(before)
    logged = {(m["round"], m["name"]) for m in store.metrics("coevolution")}
    assert {(1, "refine_delta"), (1, "refine_delta_after_dpo"), (2, "refine_delta")} <= logged
    # resumed, it is read back, not measured again
    again = summary_dict(run_taiscore(_config(tmp_path), store, backend))
    assert [rec["metrics"] for rec in again["rounds"]] == [round1, round2]


def test_long_responses_lose_their_middle_wherever_the_critic_reads_them(tmp_path, caplog):
    """A y0 far over grpo.max_prompt_length: the prompt the critic trains on (GRPO), and the
    ones it answers for the actor's pairs and the evaluations, keep Table 6's header and the
    instruction, show y0's start and end around the marker, and fit; the counts are metrics."""
    from coevo.roles.prompt_budget import approximate_tokens

    y0 = "START " + "and the waves kept rolling " * 100 + "FINISH"
    trainers = FakeTrainers()
    Tagged.made = []

    class LongAnswers(Tagged):
        def __init__(self, spec):
            super().__init__(spec)
            self.rules = [*self.rules[:-1], {"completions": [y0]}]  # every first answer is long

    backend = trainers.backend()
    backend.load_trainable = backend.load_frozen = LongAnswers
    store = RunStore(tmp_path / "run")
    budget = 200  # the replay models have no tokenizer: bytes / 3 counts
    with caplog.at_level("INFO", logger="coevo"):
        summary = summary_dict(run_taiscore(_config(tmp_path, grpo={"num_generations": 2,
                                                                   "max_prompt_length": budget}),
                                            store, backend))
    assert approximate_tokens(y0) > 2 * budget

    def fits(text, x):
        assert text.startswith("You are a helpful writing critic.") and f"Prompt:\n{x}\n" in text
        assert "Response:\nSTART and the waves" in text and "kept rolling FINISH\n\nYour Critique:" in text
        assert "tokens of the response omitted" in text and approximate_tokens(text) <= budget

    assert trainers.grpo_calls and all(call["prompts"] for call in trainers.grpo_calls)
    for call in trainers.grpo_calls:  # what GRPO trained the critic on
        for (message,), x, full in zip(call["prompts"], call["columns"]["x"], call["columns"]["y0"]):
            fits(message["content"], x)
            assert full == y0  # the actor and the judge still see the whole y0
    asked = [conv[-1].content for model in Tagged.made for conv in model.calls
             if conv[-1].content.rstrip().endswith("Your Critique:")]
    assert asked  # pair building and both evaluations asked the critic
    for text in asked:
        fits(text, text.split("Prompt:\n", 1)[1].split("\n", 1)[0])
    shards = {int(t): len(ids) for t, ids in store.get_meta("shards").items()}
    held_out = len(store.get_meta("held_out"))
    assert len(summary["rounds"]) == len(shards)  # one round per shard
    for r, rec in enumerate(summary["rounds"]):
        metrics = rec["metrics"]
        assert metrics["grpo_critic_prompts_shortened"] == shards[r] == metrics["pairs_critic_prompts_shortened"]
        assert metrics["eval_before_dpo_critic_prompts_shortened"] == held_out
        assert metrics["eval_critic_prompts_shortened"] == held_out
    assert summary["baseline"]["eval_critic_prompts_shortened"] == held_out
    assert f"coevolution/round1/critic: {shards[0]} of {shards[0]} critic prompts over {budget} tokens" in caplog.text


class SeedMarkedLocal(FakeLocal):
    """Initial responses carry their sampling seed, so each output set differs."""

    def generate(self, conversations, sampling, n=1):
        out = super().generate(conversations, sampling, n)
        return [[c.model_copy(update={"text": f"{c.text} s{sampling.seed}"}) if c.text == "plain initial" else c
                 for c in group] for group in out]


def test_output_sets_score_each_checkpoint_on_several_generated_sets(tmp_path):
    """Table 1's protocol: N independently generated sets per checkpoint, each scored;
    gold_score is their mean, gold_score_set_sd their sd, the gain pairs per-prompt means."""
    global RULES
    trainers = FakeTrainers()
    backend = trainers.backend()
    backend.load_trainable = backend.load_frozen = SeedMarkedLocal
    saved = list(RULES)
    RULES[:0] = [{"match": ["evaluation criteria", "initial s7919"], "completion": _gold(8, 8)},
                 {"match": ["evaluation criteria", "initial s15838"], "completion": _gold(2, 2)}]
    try:
        store = RunStore(tmp_path / "run")
        summary = run_taiscore(_config(tmp_path, rounds=1, evaluation={"holdout": 0.25, "output_sets": 3}),
                               store, backend)
    finally:
        RULES[:] = saved
    baseline = summary.baseline
    assert baseline["gold_score_sets"] == 3.0
    assert math.isclose(baseline["gold_score"], (6 + 8 + 2) / 3)
    assert math.isclose(baseline["gold_score_set_sd"], math.sqrt(((6 - 16 / 3) ** 2 + (8 - 16 / 3) ** 2
                                                                   + (2 - 16 / 3) ** 2) / 2))
    held = len(store.get_meta("held_out"))
    assert {len(store.rollouts(f"coevolution/round0/eval_set{j}")) for j in (2, 3)} == {held}
    assert summary.gold_gain_ci["coevolution"]["mean_diff"] == 0.0  # per-prompt means, both rounds alike
    assert "gold_score_set_sd" in [row["metric"] for row in summary.table["rows"]]


def test_evaluation_reports_constraint_pass_rate_for_y0_and_y1(tmp_path):
    """Held-out prompts that state constraints get checked: y0 ("plain initial") meets
    `include_words: [plain]` and fails `[GOOD]`; the revision y1 ("GOOD revision") the reverse.
    Prompts without constraints are left out of n."""
    path = tmp_path / "data.jsonl"
    # Chosen for the seeded held-out split (q1, q5, q10): one of each, the assert below guards it.
    wanted = {i: ("plain" if i % 8 == 1 else "GOOD") for i in range(12) if i % 4 != 2}
    path.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about topic {i}.", "rubric": RUBRIC,
                                        "meta": {"constraints": [{"kind": "include_words", "words": [wanted[i]]}]}
                                        if i in wanted else {}}) + "\n" for i in range(12)))
    store = RunStore(tmp_path / "run")
    config = validate(TaiScoreConfig, {"algorithm": "taiscore", "data": {"source": str(path)}, "rounds": 1,
                                       "pairs_per_round": 2, "grpo": {"num_generations": 2},
                                       "evaluation": {"holdout": 0.5}})
    summary = summary_dict(run_taiscore(config, store, FakeTrainers().backend()))
    held = store.get_meta("held_out")
    constrained = [int(i[1:]) for i in held if int(i[1:]) in wanted]
    plain = sum(wanted[i] == "plain" for i in constrained)
    assert 0 < plain < len(constrained), (held, "the seeded split must hold both kinds for this test to mean anything")
    for r in (0, 1):
        metrics = next(m for m in store.metrics("coevolution") if m["round"] == r and m["name"] == "eval_prompts")
        logged = {m["name"]: m["value"] for m in store.metrics("coevolution") if m["round"] == r}
        assert logged["constraint_count"] == len(constrained) and metrics["value"] == len(held)
        assert logged["constraint_pass_rate"] == pytest.approx(plain / len(constrained))
        assert logged["constraint_pass_rate_lo"] < logged["constraint_pass_rate"] < logged["constraint_pass_rate_hi"]
        y1 = "refine_constraint" if r == 0 else "refine_after_dpo_constraint"
        assert logged[f"{y1}_pass_rate"] == pytest.approx(1 - plain / len(constrained))
    # Per rollout, a "constraints" judgment a viewer can show; not counted as a judge call.
    rollouts = {ro.sample_id: ro for ro in store.rollouts("coevolution/round0/eval")}
    for i in constrained:
        check = rollouts[f"q{i}"].judgments
        assert check["constraints_y0"].judge == "constraints"
        assert check["constraints_y0"].score == float(wanted[i] == "plain")
        assert check["constraints"].score == float(wanted[i] == "GOOD")
    unconstrained = [i for i in held if int(i[1:]) not in wanted]
    assert unconstrained and all("constraints_y0" not in rollouts[i].judgments for i in unconstrained)
    # The rounds table shows the rate with its interval and n beside the gold score.
    rows = {row["metric"]: row for row in summary["table"]["rows"]}
    shown = rows["constraint_pass_rate"]["round 0"]
    assert shown.endswith(f"(n={len(constrained)})") and "[" in shown if len(constrained) >= 5 \
        else shown.endswith(f"(n={len(constrained)}: too few to tell)")


def test_no_constraints_no_rate(tmp_path):
    store = RunStore(tmp_path / "run")
    run_taiscore(_config(tmp_path, rounds=1), store, FakeTrainers().backend())
    logged = {m["name"]: m["value"] for m in store.metrics("coevolution") if m["round"] == 0}
    assert logged["constraint_pass_rate"] is None and logged["constraint_count"] == 0


class DrivingTrainers(FakeTrainers):
    """GRPO that runs its callbacks as TRL's trainer would: 4 steps, the reward each step."""

    def grpo(self, policy, prompts, reward_fn, settings, output_dir, *, resume=True, extra_columns=None,
             callbacks=None):
        from types import SimpleNamespace

        args = SimpleNamespace(per_device_train_batch_size=2, gradient_accumulation_steps=1, world_size=1)
        state, control = SimpleNamespace(global_step=0, max_steps=4), SimpleNamespace(should_training_stop=False)
        for callback in callbacks or []:
            callback.on_train_begin(args, state, control, model=None)
        for step in range(1, 5):
            for callback in callbacks or []:
                callback.on_step_begin(args, state, control)
            result = super().grpo(policy, prompts, reward_fn, settings, output_dir, resume=resume,
                                  extra_columns=extra_columns)
            state.global_step = step
            for callback in callbacks or []:
                callback.on_step_end(args, state, control)
        return result


def test_the_monitor_watches_each_critic_stage_with_its_anchors(tmp_path):
    anchor = tmp_path / "anchor.py"
    anchor.write_text("def critique_length(x, y0, critique, y1=None):\n    return len(critique) / 10\n")
    config = _config(tmp_path, rounds=1, monitor={"anchors": [f"python:{anchor}:critique_length"], "every": 2,
                                                  "prompts": 2})
    store = RunStore(tmp_path / "run")
    run_taiscore(config, store, DrivingTrainers().backend())
    from coevo.monitor.records import run_summary

    monitor = run_summary(store)
    (stage, report), = monitor["stages"].items()
    assert stage == "coevolution/round1/critic" and monitor["flags"] == [] and monitor["onset_step"] is None
    # The critic's critiques of two held-out responses, scored before training and at steps 2 and 4.
    assert report["anchor_curves"][f"python:{anchor}:critique_length"] == [[0, 0.6, 2], [2, 0.6, 2], [4, 0.6, 2]]
    assert [point[0] for point in report["reward_curve"]] == [1, 2, 3, 4]
    assert report["degeneracy"]["1"]["empty_share"] == 0.0


@pytest.mark.parametrize("monitor, message", [({"anchors": ["nope"]}, "'nope' is not an anchor"),
                                              ({"anchors": ["gold"]}, "taiscore cannot take the anchor 'gold'"),
                                              ({"anchors": ["audit"]}, "taiscore cannot take the anchor 'audit'"),
                                              ({"every": 0}, "greater than or equal to 1")])
def test_monitor_settings_are_checked_when_the_config_loads(tmp_path, monitor, message):
    with pytest.raises(ConfigError, match=message):
        _config(tmp_path, monitor=monitor)


def test_the_taiscore_anchors_of_one_check_share_its_critiques():
    from coevo.algorithms.taiscore.monitoring import critique_anchor, critique_sampler
    from coevo.core.types import Sample

    class Critic:
        calls = 0

        def critique(self, xs, y0s):
            Critic.calls += 1
            return [[f"critique {Critic.calls} of {x}"] for x in xs]

    items, y0 = [Sample(id="a", prompt="x1"), Sample(id="b", prompt="x2")], {"a": "y", "b": "y"}
    sample = critique_sampler(Critic(), items, y0, None)
    length = critique_anchor(sample, lambda p, c, **k: [len(t) for t in c], items, y0)
    words = critique_anchor(sample, lambda p, c, **k: [len(t.split()) for t in c], items, y0)
    assert (length(), words(), Critic.calls) == ({"a": 16.0, "b": 16.0}, {"a": 4.0, "b": 4.0}, 1)
    length(), words()  # the next check samples again, once
    assert Critic.calls == 2
