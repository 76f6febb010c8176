"""Real run folders from replay runs, for the viewer's browser tests and `make screenshots`.

Each builder runs the real loop through `coevo.run.runner.run_experiment` (config, store, summary,
report, status), with replay models in place of real ones:

- `controls`: critique-content controls judged on a gold rubric, so every rollout holds
  x, y0, c, y1 and a judgment of y0 and of y1 with per-criterion scores and reasons;
- `rlac`: two RLAC iterations on biographies (facts task) with the real facts validator
  (authenticity check + BM25 passages + the lexical verifier); the DPO stages are recorded,
  not run (no weights here), with a TRL-shaped per-step history so the run page has curves;
- `decoevo`: the four DecoEvo methods on two seeds, skill versions accepted and refused.

Plain functions with no pytest in them: scripts/screenshots.py builds the same runs.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "algorithms"))  # decoevo_fakes: DecoEvo's replay answers

# -- controls ------------------------------------------------------------------------------

PROMPTS = ["Write a short poem about rivers.", "Describe a stone you found on a beach.",
           "Write two sentences about the wind at night."]
#: Per prompt: the first response y0, the revision y1, and the gold judge's (clarity, detail)
#: scores of each; the third revision's judgment is unreadable (an invalid judgment).
Y0 = ["Water flows. It is nice. Rivers are good.", "The stone was a stone. It was grey.",
      "The wind blows at night. It is windy."]
Y1 = ["The river bends past the mill,\ncarrying leaves the colour of rust\ntoward the sleeping town.",
      "A grey stone, smooth as a thumbprint, still cold from the tide.",
      "At night the wind leans on the shutters. The whole house listens."]
SCORES_Y0 = [(4, 4), (3, 2), (5, 3)]
SCORES_Y1 = [(7, 5), (8, 7), None]
RUBRIC = {"criteria": [{"name": "clarity", "weight": 1}, {"name": "detail", "weight": 3}]}


def _gold(scores: tuple[int, int] | None, why: str) -> str:
    if scores is None:
        return "I would rate this quite highly overall."  # no JSON: the judgment is invalid
    clarity, detail = scores
    return json.dumps({"criteria": [{"name": "clarity", "score": clarity, "reason": f"clarity: {why}"},
                                    {"name": "detail", "score": detail, "reason": f"detail: {why}"}]})


def build_controls(run: Path, inputs: Path) -> Path:
    """A controls run (gold-rubric evaluator): 3 prompts x 4 critique conditions."""
    from coevo.run.runner import run_experiment

    inputs.mkdir(parents=True, exist_ok=True)
    data = inputs / "controls_data.jsonl"
    data.write_text("".join(json.dumps({"id": f"s{i}", "prompt": p, "rubric": RUBRIC}) + "\n"
                            for i, p in enumerate(PROMPTS)))
    # Rules are tried in order; every prompt of a role holds the task x, so the role's own
    # wording comes first and the bare x last (the actor's first response).
    rules = [{"match": ["Your Critique:", p],
              "completion": f"The response to '{p}' is vague: name one concrete image and cut the filler."}
             for p in PROMPTS]
    rules += [{"match": ["Revised Response:", p], "completion": y1} for p, y1 in zip(PROMPTS, Y1)]
    rules += [{"match": ["evaluation criteria", y1], "completion": _gold(s, "a concrete image, well placed")}
              for y1, s in zip(Y1, SCORES_Y1)]
    rules += [{"match": ["evaluation criteria", y0], "completion": "```json\n" + _gold(s, "generic and flat") + "\n```"}
              for y0, s in zip(Y0, SCORES_Y0)]
    rules += [{"match": p, "completion": y0} for p, y0 in zip(PROMPTS, Y0)]
    replay = inputs / "controls_replay.jsonl"
    replay.write_text("".join(json.dumps(r) + "\n" for r in rules))
    spec = f"replay:{replay}"
    config = {"algorithm": "controls", "data": {"source": str(data)},
              "roles": {"actor": {"model": spec}, "critic": {"model": spec}, "judge": {"model": spec}}}
    run_experiment(None, run, data=config)
    return run


# -- RLAC ----------------------------------------------------------------------------------

GOOD = "Albert Einstein was a physicist. He was born in Ulm. He developed the theory of relativity."
BAD = "Albert Einstein was a physicist. He was born in Vienna. He developed the theory of relativity."
CURIE = "Marie Curie was born in Warsaw. She discovered polonium and radium."
CAUGHT = "reason: the biography says Vienna\nsentence: 2\nerror_fact: Einstein was born in Vienna."
SURVIVED = "reason: the birthplace may be wrong\nsentence: 2\nerror_fact: Einstein was born in Ulm."
INVALID = "reason: nothing\nsentence: 7\nerror_fact: something odd"
RLAC_MODELS = {
    "gen": [{"match": "biography of Albert Einstein", "completions": [GOOD, BAD]},
            {"match": "biography of Marie Curie", "completions": [CURIE]}],
    # The critic prompt holds the numbered output: its sentence 2 tells the outputs apart.
    "crit": [{"match": "[2] He was born in Vienna.", "completions": [CAUGHT, INVALID]},
             {"match": "[2] He was born in Ulm.", "completions": [SURVIVED, INVALID]}],
}


def _dpo_history(steps: int, pairs: int, pace: float) -> list[dict]:
    """A TRL DPO `log_history` of `steps` logged steps (the keys TRL logs): the margin grows
    and the loss falls at `pace` per step and pair (each stage its own curve)."""
    history = []
    for step in range(1, steps + 1):
        margin = pace * step * max(1, pairs)
        history.append({"step": step, "epoch": step / steps, "loss": round(0.693 - margin / 2, 4),
                        "grad_norm": round(1.5 / step, 4), "learning_rate": 1e-6,
                        "rewards/chosen": margin / 2, "rewards/rejected": -margin / 2,
                        "rewards/accuracies": 1.0, "rewards/margins": margin})
    return history


@contextlib.contextmanager
def _rlac_fakes():
    """Replay models for every RLAC role and a DPO stage that is recorded, not run."""
    import pytest

    import coevo.algorithms.rlac.loop as rlac_loop
    import coevo.llm.specs as specs
    from coevo.algorithms.backend import Backend
    from coevo.llm.replay import ReplayModel
    from coevo.train.common import TrainResult

    def load_model(spec, store=None, **options):
        model = ReplayModel(rules=RLAC_MODELS[spec])
        model.model = None  # a trainable LocalModel's weights; nothing reads them here
        return model

    def train_dpo(policy, pairs, settings, output_dir, **kwargs):
        pairs = list(pairs)
        # The per-step history and round a training stage carries.
        r, role = int(Path(output_dir).parent.name.removeprefix("round")), Path(output_dir).name
        return TrainResult(checkpoint=str(output_dir / "final"), steps=4, seconds=0.0, seconds_per_step=0.0,
                           peak_rss_mb=0.0, metrics={"train_loss": 0.6, "weight_delta": 0.01},
                           history=_dpo_history(4, len(pairs), 0.03 * r + (0.02 if role == "critic" else 0.0)),
                           round=r, kind="dpo")

    backend = Backend(load_trainable=load_model, load_frozen=load_model, train_dpo=train_dpo,
                      restore=lambda policy, path, settings: None)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rlac_loop, "default_backend", lambda: backend)
        patch.setattr(specs, "check_spec", lambda spec: None)  # "gen", "crit": the fakes above
        yield


def build_rlac(run: Path, inputs: Path) -> Path:
    """An RLAC run (facts task, adversarial critic): 2 iterations on one biography."""
    from coevo.run.runner import run_experiment

    config = {"algorithm": "rlac", "task": "facts", "iterations": 2, "k": 2, "n": 2, "kl": False,
              "roles": {"generator": {"model": "gen"}, "critic": {"model": "crit"}, "judge": {"model": "gen"}},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}}
    with _rlac_fakes():
        run_experiment(None, run, data=config)
    return run


# -- DecoEvo -------------------------------------------------------------------------------

def build_decoevo(run: Path, inputs: Path) -> Path:
    """A DecoEvo run: the four methods on two seeds, 3 inner steps (see decoevo_fakes)."""
    from decoevo_fakes import replay_run_config

    from coevo.run.runner import run_experiment

    run_experiment(None, run, data=replay_run_config(inputs / "decoevo"))
    return run


BUILDERS = {"controls": build_controls, "rlac": build_rlac, "decoevo": build_decoevo}


def build_all(folder: Path) -> dict[str, Path]:
    """Every replay run in `folder/runs/NAME` (the folder `coevo view` is pointed at); their
    data and replay files in `folder/inputs/`, out of the runs folder."""
    folder = Path(folder)
    return {name: build(folder / "runs" / name, folder / "inputs") for name, build in BUILDERS.items()}


# -- two runs to compare -------------------------------------------------------------------

#: What the second RLAC run of a comparison changes (the first is `build_rlac`'s): more
#: outputs per instruction and one pair from each, so its curves differ from the first's.
RLAC_VARIANT = {"k": 3, "max_pairs_per_output": 1}


def build_rlac_variant(run: Path, inputs: Path) -> Path:
    """`build_rlac`'s RLAC run with RLAC_VARIANT's settings changed: the same algorithm, two
    settings apart (the compare page's and `coevo runs --compare`'s tests)."""
    from coevo.run.runner import run_experiment

    config = {"algorithm": "rlac", "task": "facts", "iterations": 2, "k": 2, "n": 2, "kl": False,
              "roles": {"generator": {"model": "gen"}, "critic": {"model": "crit"}, "judge": {"model": "gen"}},
              "facts": {"judge": "lexical", "atomic_facts": "sentences"},
              "data": {"train_ids": ["Albert Einstein"], "heldout_ids": ["Marie Curie"]}, **RLAC_VARIANT}
    with _rlac_fakes():
        run_experiment(None, run, data=config)
    return run


def build_rlac_pair(folder: Path) -> dict[str, Path]:
    """Two RLAC runs two settings apart in `folder/runs/` ("rlac-a": build_rlac's, "rlac-b":
    the variant), their inputs in `folder/inputs/`."""
    folder = Path(folder)
    return {"rlac-a": build_rlac(folder / "runs" / "rlac-a", folder / "inputs"),
            "rlac-b": build_rlac_variant(folder / "runs" / "rlac-b", folder / "inputs")}


# -- TAIScore, with texts that look alike across roles (the sample pages' calls) ---------------

#: Per topic: the actor's y0, the critic's critique and the revision y1. Topic 0's three texts
#: are one short word each (every role wrote "Fine."); topic 1's revision is its y0 word for
#: word; topic 2's revision runs past the revision's token limit (`TAI_REVISION_LIMIT`).
TAI_TOPICS = ["rivers", "stones", "wind", "tides"]
TAI_TEXTS = {0: ("Fine.", "Fine.", "Fine."),
             1: ("Stones are grey and hard.", "Say where the stone was found.", "Stones are grey and hard."),
             2: ("Wind blows.", "Name a sound the wind makes.",
                 "The wind at night whistles through the shutters and hums along the wires of the old "
                 "harbour, and the whole house listens to it until morning comes."),
             3: ("Tides rise.", "Say why the moon matters.", "Tides rise and fall because the moon pulls the sea.")}
TAI_REVISION_LIMIT = 16


def _tai_rules() -> list[dict]:
    gold = json.dumps({"criteria": [{"name": "clarity", "score": 6, "reason": "clear"},
                                    {"name": "detail", "score": 5, "reason": "some detail"}]})
    dims = ("critique_quality", "critique_uptake", "quality_gain", "prompt_faithfulness")
    tai = json.dumps({**{d: {"score": 7, "reason": "r"} for d in dims}, "score": 7})
    # Judges first: their prompts quote the responses the actor's rules would match.
    rules = [{"match": "evaluation criteria", "completion": gold}, {"match": "Response B:\n", "completion": tai},
             {"match": "Response 1:", "completion": "2"}]
    for i, topic in enumerate(TAI_TOPICS):
        _, c, y1 = TAI_TEXTS[i]
        rules += [{"match": ["Your Critique:", topic], "completion": c},
                  {"match": ["Revised Response:", topic], "completion": y1}]
    rules += [{"match": topic, "completion": TAI_TEXTS[i][0]} for i, topic in enumerate(TAI_TOPICS)]
    return rules


def _trl_history(kind: str, steps: int) -> list[dict]:
    """A TRL `log_history` of `steps` steps and its closing summary row, with the keys TRL logs
    (GRPO: reward, completion length, completions cut at their limit, entropy; DPO: margins),
    the learning rate scheduled down from 1e-05 (a different rate each step)."""
    rows = []
    for step in range(1, steps + 1):
        row = {"step": step, "epoch": step / steps, "loss": round(0.69 - 0.09 * step, 4), "grad_norm": 1.0 + step,
               "learning_rate": 1e-5 * (1 - (step - 1) / steps), "entropy": round(2.0 - 0.1 * step, 3)}
        if kind == "grpo":
            row |= {"reward": 0.2 + 0.1 * step, "reward_std": 0.3, "frac_reward_zero_std": 0.5,
                    "completions/mean_length": 40.0 + 10 * step, "completions/clipped_ratio": 0.25 * step}
        else:
            row |= {"rewards/margins": 0.1 * step, "rewards/accuracies": 0.5 + 0.25 * step}
        rows.append(row)
    return rows + [{"step": steps, "train_loss": sum(r["loss"] for r in rows) / steps, "train_runtime": 1.0}]


@contextlib.contextmanager
def _taiscore_fakes(rules: list[dict], steps: int | None = None):
    """Replay models in every role, and GRPO / DPO stages that score and record, not train.
    `steps`: each stage records that many optimizer steps with a TRL-shaped history and a
    largest weight change about its learning rates' (None: one step, no history)."""
    import pytest

    import coevo.algorithms.taiscore.loop as taiscore
    import coevo.llm.specs as specs
    from coevo.llm.replay import ReplayModel
    from coevo.train.common import TrainResult

    class Local(ReplayModel):
        """A 'trainable' replay model: training changes only its id."""

        def __init__(self, spec, **options):
            super().__init__(rules=rules)
            self.model_id, self.model, self.tokenizer = f"fake:{spec}", None, None

    def result(output_dir, kind: str = "", **metrics) -> TrainResult:
        if steps is None:
            return TrainResult(checkpoint=str(output_dir / "final"), steps=1, seconds=0.0, seconds_per_step=0.0,
                               peak_rss_mb=0.0, metrics=metrics)
        history = _trl_history(kind, steps)
        # As coevo.train.measuring.final_metrics keeps them: each key's last value, train_loss the mean.
        last = {k: v for row in history for k, v in row.items() if k not in ("step", "epoch")}
        return TrainResult(checkpoint=str(output_dir / "final"), steps=steps, seconds=1.0, seconds_per_step=0.5,
                           peak_rss_mb=0.0, metrics={**last, "weight_delta": 1.5e-5}, history=history, kind=kind,
                           round=int(Path(output_dir).parent.name.removeprefix("round")))

    def grpo(policy, prompts, reward_fn, settings, output_dir, *, resume=True, extra_columns=None, callbacks=None):
        # The reward as TRL calls it: N critiques per prompt (the critic's rules' texts).
        n = settings.num_generations
        completions = [[{"role": "assistant", "content": f"critique {i} of {k}"}] for k in range(len(prompts))
                       for i in range(n)]
        columns = {key: [v for v in values for _ in range(n)] for key, values in (extra_columns or {}).items()}
        reward_fn(prompts=[p for p in prompts for _ in range(n)], completions=completions, **columns)
        policy.model_id += "+grpo"
        return result(output_dir, "grpo", loss=0.5)

    def dpo(policy, pairs, settings, output_dir, *, reference=None, resume=True):
        policy.model_id += "+dpo"
        return result(output_dir, "dpo", train_loss=0.6)

    backend = taiscore.Backend(load_trainable=Local, restore=lambda model, checkpoint, settings: None,
                               train_grpo=grpo, train_dpo=dpo, load_frozen=Local,
                               load_copy=lambda spec, checkpoint, **options: (Local(spec), False))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(taiscore, "default_backend", lambda: backend)
        patch.setattr(specs, "check_spec", lambda spec: None)  # "actor", "critic", "judge": the fakes above
        patch.setattr(specs, "check_spec_form", lambda spec: None)  # the same, where the plan reads them
        yield


def build_taiscore(run: Path, inputs: Path) -> Path:
    """A one-round TAIScore run on four prompts whose texts look alike across roles (see
    TAI_TEXTS): held-out evaluation with refinement, a pair pool, GRPO rewards. Not in
    BUILDERS: the sample pages' call tests build it for themselves."""
    from coevo.run.runner import run_experiment

    inputs.mkdir(parents=True, exist_ok=True)
    data = inputs / "taiscore_data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about {topic}.", "rubric": RUBRIC}) + "\n"
                            for i, topic in enumerate(TAI_TOPICS)))
    config = {"algorithm": "taiscore", "data": {"source": str(data)}, "rounds": 1, "pairs_per_round": 1,
              "grpo": {"num_generations": 2}, "evaluation": {"holdout": 0.5},
              "roles": {"actor": {"model": "actor", "sampling": {"revision": {"max_tokens": TAI_REVISION_LIMIT}}},
                        "critic": {"model": "critic"}, "judge": {"model": "judge"}}}
    with _taiscore_fakes(_tai_rules()):
        run_experiment(None, run, data=config)
    return run


#: The reward-hacking monitor's anchor in the story run, as the quickstart names it.
STORY_ANCHOR = "python:coevo.eval.checkable:checkable_taiscore"


def build_taiscore_story(run: Path, inputs: Path) -> Path:
    """The quickstart's shape, from replay models: one TAIScore round on four prompts (two held
    out: too few to tell), GRPO and DPO stages of two steps with TRL's per-step history (a
    scheduled learning rate, completion length, completions cut at their limit, entropy) and a
    weight change about Adam's first steps, DPO pairs judged by the pairwise judge, and a
    monitor report of the critic's two steps against the quickstart's anchor. Not in BUILDERS:
    the story's browser tests build it for themselves."""
    from coevo.monitor import Monitor
    from coevo.monitor.records import keep_report
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import RunStore
    from coevo.view.export import write_report

    inputs.mkdir(parents=True, exist_ok=True)
    data = inputs / "taiscore_story_data.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": f"Write about {topic}.", "rubric": RUBRIC}) + "\n"
                            for i, topic in enumerate(TAI_TOPICS)))
    config = {"algorithm": "taiscore", "data": {"source": str(data)}, "rounds": 1, "pairs_per_round": 2,
              "grpo": {"num_generations": 2}, "evaluation": {"holdout": 0.5}, "monitor": {"enabled": False},
              "roles": {"actor": {"model": "actor"}, "critic": {"model": "critic"}, "judge": {"model": "judge"}}}
    with _taiscore_fakes(_tai_rules(), steps=2):
        run_experiment(None, run, data=config)

    class Watched:  # what HackingMonitor keeps of a two-step stage: too few steps for the rule
        def __init__(self):
            self.monitor = Monitor(stage="coevolution/round1/critic")
            for step in (0, 2):
                self.monitor.observe_anchor(step, STORY_ANCHOR, {"q0": -0.5, "q1": 0.0})
            for step in (1, 2):
                self.monitor.observe_reward(step, [0.2 * step, 0.1 * step, 0.3])
                self.monitor.observe_outputs(step, ["a critique a critique a critique", "short"], [step == 2, False])
            self.flags = self.monitor.flags

        def report(self):
            return self.monitor.report()

    store = RunStore(run)
    try:
        keep_report(store, Watched())
    finally:
        store.close()
    write_report(run)
    return run
