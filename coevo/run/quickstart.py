"""`coevo quickstart`: TAIScore co-evolution at its smallest (one round), as a library call.

The budgets are chosen so the first run a user makes shows something measurable and warns
about nothing of its own making: short-form writing prompts (`bundled:writing_short`, at most
80 words each) whose answers, critiques and revisions end within their token limits; enough
GRPO steps that the critic's reward has a curve; enough held-out prompts that the
Python-checked numbers get an interval; LoRA adapters, so GRPO's optimizer state and
reference model stay small. BENCHMARKS.md, "The quickstart", has what each choice costs.
The run folder, run again, resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: The quickstart's monitor anchor (a `python:` spec: loaded by name, not imported here):
#: the Python-checked TAIScore analogue (does the critique name a constraint y0 breaks, does
#: the revision act on it, fix it?), what the 135M judge's reward is meant to measure.
QUICKSTART_ANCHOR = "python:coevo.eval.checkable:checkable_taiscore"
#: Held-out prompts: the smallest count at which the project shows an interval is 5; 8 lets
#: a paired difference over them be read.
HELD_OUT = 8
#: Prompts read by default: HELD_OUT held out, the rest one training pool (GRPO_STEPS).
PROMPTS = 14
#: GRPO optimizer steps of the critic: the reward's curve needs points on both sides of the
#: monitor's windows, and past 3 steps a weight change is more than Adam's first moves.
GRPO_STEPS = 6
#: DPO optimizer steps of the actor, for the same reason.
DPO_STEPS = 4
#: The config to run after the quickstart, and what the closing lines say about it.
NEXT_CONFIG = "examples/taiscore_tiny.yaml"


def quickstart_config(prompts: int, model: str, judge: str) -> dict[str, Any]:
    """The quickstart's config: `prompts` bundled short writing prompts (HELD_OUT of them held
    out), `model` as actor and critic, `judge` as the frozen judge."""
    lora = {"r": 16, "alpha": 32, "dropout": 0.0}
    return {
        "algorithm": "taiscore",
        # The prompts not held out are one pool: the critic's GRPO prompts and the actor's
        # DPO candidates are drawn from it.
        "data": {"source": "bundled:writing_short", "limit": prompts,
                 "pool_total": prompts - HELD_OUT, "pool_size": prompts - HELD_OUT},
        "roles": quickstart_roles(model, judge),
        # The trained actor and critic generate on llama.cpp from their current weights (the
        # critic's GRPO samples too): several times transformers' speed on a CPU.
        "actor_engine": "llamacpp",
        "critic_engine": "llamacpp",
        "rounds": 1,
        "critic_queries": GRPO_STEPS,
        "pairs_per_round": prompts - HELD_OUT,
        # No KL term (beta 0): over 6 steps of a LoRA adapter it would hold the critic to where it
        # already is, and it costs a reference pass a step (the paper: 0.02).
        # Prompts of at most 1,024 tokens (the critic's here are under 400): the llama.cpp
        # context its samples are written in is sized to a prompt and a completion. One
        # critique a micro-batch (two a step, as before): the logits over a 49k vocabulary in
        # the backward pass are the GRPO stage's, and the run's, peak memory.
        "grpo": {"num_generations": 2, "batch_size": 1, "grad_accum": 2, "learning_rate": 1e-4,
                 "max_steps": GRPO_STEPS, "beta": 0.0, "save_steps": 2, "max_prompt_length": 1024, "lora": lora},
        # One pair per micro-batch, two per step: the logits over a 49k vocabulary of a batch of
        # pairs are the DPO stage's peak memory (BENCHMARKS.md, "The quickstart").
        "dpo": {"learning_rate": 1e-4, "max_steps": DPO_STEPS, "batch_size": 1, "grad_accum": 2, "max_length": 512,
                "max_prompt_length": 384, "save_steps": 2, "lora": lora},
        # Held out: the Python-checked constraint pass rate of the actor's answers before and
        # after the round, on HELD_OUT prompts. The 135M judge's gold score, the win rate against
        # round 0 and the critic's refinement gain are taiscore_tiny.yaml's: each costs judge
        # calls per prompt and round (and an audit of its judge) that would double the
        # quickstart's time, and the 135M judge's scores are weak evidence.
        "evaluation": {"prompts": HELD_OUT, "gold_rubric": False, "refinement": False, "win_rate": False},
        # The judge behind the critic's reward probed for gaming on the starting models' items
        # (it is frozen: an audit after the round would cost as much again).
        "audit": {"prompts": 1, "after_rounds": False},
        # The reward-hacking monitor on the critic's GRPO stage (docs/monitor.md): its anchor
        # on the HELD_OUT prompts before the stage and after it (a flag needs more checks than
        # a 6-step stage has room for: the monitor says so; taiscore_tiny.yaml's stages do).
        "monitor": {"anchors": [QUICKSTART_ANCHOR], "prompts": HELD_OUT, "every": GRPO_STEPS},
    }


def quickstart_roles(model: str, judge: str) -> dict[str, Any]:
    """The quickstart's roles: `model` as actor and critic, `judge` as the frozen judge."""
    return {
        # A repetition penalty on revisions and critiques: at the revision's temperature (0.2)
        # the 135M actor falls into loops that run to any token limit, and the critic
        # often does at 0.8 (a departure from the paper, listed with the others).
        "actor": {"model": model, "options": embedded_options(model),
                  "sampling": {"response": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 192},
                               "revision": {"temperature": 0.2, "top_p": 0.95, "max_tokens": 192,
                                            "repetition_penalty": 1.2}}},
        "critic": {"model": model, "options": embedded_options(model), "template": "critic_brief",
                   "sampling": {"temperature": 0.8, "top_p": 0.95, "max_tokens": 192,
                                "repetition_penalty": 1.2}},
        # Scored by expectation over the final score's tokens (continuous rewards, so two
        # critiques it would both call 4 still get different advantages). Reasons of at most
        # 40 characters: the 135M judge's reasons are where its calls spend their tokens,
        # and 4 of them (TAIScore's dimensions) then fit the token limit even when each is
        # a run of "1.1.1." at a token a character.
        "judge": {"model": judge, "options": embedded_options(judge),
                  "sampling": {"temperature": 0.2, "top_p": 1.0, "max_tokens": 320, "scoring": "expected",
                               "reason_limit": 40}},
    }


def embedded_options(spec: str) -> dict[str, Any]:
    """Backend options for a role on `spec`: the embedded model's llama.cpp contexts hold 2,048
    tokens, not 4,096 (the longest call here, a judge's, is under 1,000 tokens, and each of the
    run's 4-5 contexts keeps a KV cache for all of them: ~45 MB saved each, BENCHMARKS.md "The
    quickstart"). Another model's backend (a server, a replay file) takes no such option."""
    return {"n_ctx": 2048} if spec.split(":", 1)[0] == "smollm2" else {}


def run_quickstart(out_dir: Path, *, prompts: int, model: str, judge: str, fresh: bool) -> dict[str, Any]:
    """Run (or resume) the quickstart in `out_dir`; `fresh` deletes an earlier one first.
    Returns run_experiment's summary (its "table" and "report")."""
    from coevo.view.report import build_report
    from coevo.run.runner import remove_run_folder, run_experiment
    from coevo.rundir.store import STORE_FILE, RunStore

    if fresh:
        remove_run_folder(out_dir)
    # Run again, it resumes: --resume is implied when the folder already holds the quickstart.
    summary = run_experiment(None, out_dir, resume=(out_dir / STORE_FILE).is_file(),
                             data=quickstart_config(prompts, model, judge))
    # What to run next depends on how long this run took here, so it is known only now; the
    # run page's story card shows it, so the report is written again with it.
    store = RunStore(out_dir)
    try:
        store.set_meta("quickstart", True)
        store.set_meta("next_steps", next_steps(out_dir))
    finally:
        store.close()
    summary["report"] = str(build_report(out_dir))
    return summary


#: llama.cpp reads a prompt token about this many times faster than it writes a completion
#: token on a CPU (BENCHMARKS.md, "Where the quickstart's time goes"): the weight of a prompt
#: token when this run's speed is carried over to another config's token counts.
PROMPT_TOKEN_WEIGHT = 0.25


def extrapolated_seconds(run_dir: Path, config: Path) -> float | None:
    """How long `config` would take on this machine at this run's own speed: the run's wall
    seconds per token (prompt tokens weighted PROMPT_TOKEN_WEIGHT) applied to the plan's token
    counts. A rough figure (the two runs' engines and training differ); None where the run
    kept no estimate or the config cannot be planned here."""
    from coevo.plan.estimate_check import run_comparison
    from coevo.run.runner import plan_experiment

    sides = run_comparison(run_dir)
    if sides is None or not config.is_file():
        return None
    try:
        planned = plan_experiment(config).estimate
    except Exception:  # a plan that cannot be made here (a missing model) just has no figure
        return None
    if planned is None:
        return None

    def work(prompt: float | None, completion: float | None) -> float:
        return PROMPT_TOKEN_WEIGHT * (prompt or 0.0) + (completion or 0.0)

    done = work(sides["prompt_tokens"].actual, sides["completion_tokens"].actual)
    wall = sides["seconds"].actual
    if not done or not wall:
        return None
    return wall / done * work(planned.total.get("prompt_tokens"), planned.total.get("completion_tokens"))


def next_steps(run_dir: Path) -> list[str]:
    """What to run after the quickstart: the next config with its time here, and the one line
    that points a role at a stronger model."""
    from coevo.plan.estimate import _duration

    config = Path(NEXT_CONFIG)
    seconds = extrapolated_seconds(run_dir, config)
    took = (f" (about {_duration(seconds)} here at this run's speed; `coevo plan {NEXT_CONFIG} --calibrate` "
            "measures this machine's engines first)") if seconds else ""
    stronger = ("coevo quickstart --judge openai:MODEL@http://127.0.0.1:8000/v1 --out runs/quickstart_judge: "
                "the same run with a stronger, served judge (any OpenAI-compatible server; `coevo models` lists "
                "the specs; in a config: --set roles.judge.model=SPEC)")
    return [f"coevo plan {NEXT_CONFIG}: two co-evolution rounds on the long-form writing prompts{took}",
            f"coevo run {NEXT_CONFIG} --out runs/taiscore_tiny",
            stronger]


def closing_lines(story: Any) -> list[str]:
    """What the quickstart showed and what it cannot, in words (`story`: its
    coevo.view.story.Story, whose findings say whether the judge passed its audit)."""
    audit_failed = any(f.kind == "judge-audit" for f in story.findings)
    judge = ("its judge failed its own audit (the findings above), so the judge's scores are not evidence; "
             "the Python-checked numbers are" if audit_failed else
             "a 135M judge's scores are weak evidence; the Python-checked numbers are the ones to read")
    return [
        "Shown: one round of co-evolution, end to end on the embedded 135M model: the critic trained by GRPO on "
        "the TAIScore judge's reward, the actor by DPO on the revisions a critique-blind judge preferred, both "
        "measured on the same held-out prompts before and after, and the critic's training watched by the "
        "reward-hacking monitor against a Python-checked anchor.",
        f"Not shown: that co-evolution makes better writers or critics. One round of a 135M model on {HELD_OUT} "
        f"held-out prompts cannot show it, and {judge}. The paper's claim needs examples/taiscore_full.yaml on "
        "GPUs (docs/scaling.md).",
    ]
