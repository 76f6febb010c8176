"""RLAC in miniature: a co-trained critic against a static critic and enumeration, on code.

The RLAC paper's central comparison (Fig. 4, Table 3): the generator trained on the verdicts
of a critic that trains against it improves more, and finds more errors per verification
execution, than one trained with a frozen critic or with enumerative checking of every test;
and the co-trained critic itself gets better at exposing failures while a static one does not.
Here, one `coevo run` of the code config per (arm, seed), `ITERATIONS` rounds of Algorithm 1
(the critic trained in round t proposes in round t+1), the arms differing only in what the
paper varies:

- `co_trained`: `critic_training: adversarial` (both sides DPO, Algorithm 1);
- `static_critic`: `critic_training: static` (the same critic, same engine, same N proposals
  per output, never trained: §4.1 "the critic proposes 4 rubrics per output" for all methods,
  and the ablation "freeze[s] the critic model");
- `enumerative`: `verification: enumerative` (every hidden test of every output runs, no
  critic; pairs by score, AceCoder-Rule's way, under the same pair budget).

Measured per round r = 0..ITERATIONS and arm, pooled over seeds (`metrics.per_iteration`):

- the generator's held-out pass@1 (greedy, every hidden test in the sandbox; round 0 is the
  untrained generator, the same in every arm), Wilson 95 %, and its paired gain from round 0;
- the critic's detection rate on a FIXED set of failing held-out outputs (the base
  generator's samples that fail a hidden test but not the problem statement's own example,
  drawn once from `data.seed`: the same in every arm and seed), with the loop's N proposals
  on each: the share whose failure one of them exposes, measured after round r with the
  critic that proposes in round r+1 (round 0: the base critic) — rlac/detection.py;
- errors found per verification execution, as App. B.2 counts executions: a critic proposal
  runs its test on the reference and on the output (2), enumeration runs each hidden test on
  the output (1 per test); an error found is an output shown to fail (a caught proposal on it;
  a hidden test failing);
- both sides' DPO pair counts.

Gold and the gains are as before: held-out pass@1 per (problem, seed), before = round 0,
after = the last round. Training problems: one of each `coevo.tasks.code_families` family
(seed 0); held-out problems come from `--heldout FILE` (code rows as `bundled:code_easy`'s),
by default another seeded draw of the families, less any problem whose function a training
problem defines (`add_6` drawn twice is one problem).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coevo.eval.paired import paired_difference
from learning.miniature import ArmResult, Comparison, Measure, Miniature, arm_result, comparisons

log = logging.getLogger(__name__)

PAPER = "rlac"
TARGET = "held-out pass@1 of the generator (greedy, hidden tests in the sandbox), per problem and seed"
DETECTION_TARGET = ("the critic's detection rate on fixed failing held-out outputs (its N proposals on each; "
                    "before: the base critic, after: the last round's), per output and seed")
DEFAULT_CONFIG = "examples/rlac_code_easy.yaml"
#: arm -> the config keys that make it (everything else is the config's).
ARMS: dict[str, tuple[str, ...]] = {
    "co_trained": ("critic_training=adversarial", "verification=critic"),
    "static_critic": ("critic_training=static", "verification=critic"),
    "enumerative": ("critic_training=adversarial", "verification=enumerative"),
}
COMPARISONS = [("co_trained", "static_critic"), ("co_trained", "enumerative")]
#: Rounds of Algorithm 1: the critic trains after round t's generator pairs are built, so only
#: from round 2 on does a trained critic propose; three rounds give it two (the paper's code
#: ablation, Fig. 4, runs three).
ITERATIONS = 3
#: Every run: per round and role one DPO pass over that round's pairs, in batches of 4, at
#: 1e-5 (the sweep, BENCHMARKS.md "Miniatures", saw 5e-5 break the generator's answer format
#: and 5e-6 barely move its weights). One pass, not a fixed step count: 8 steps were about one
#: pass over the generator's ~40 pairs but 8 passes over the critic's 1-3, and the critic
#: trained so on seed 0 exposed fewer failures each round (0.53 -> 0.44 -> 0.34, n=32). No KL (not this comparison's, and its
#: sampled answers cost a round as much as the held-out evaluation). The detection set: 6
#: samples per held-out problem, because the base generator's failures that the problem's own
#: example does not already expose are few (rlac/detection.py, `beyond_examples`); drawn from
#: `data.seed`, they are paid once per miniature, every arm and seed answered from the cache.
#: At most 48 kept: the set's cost every round is N proposals on each, in both critic arms.
DEFAULT_OVERRIDES: tuple[str, ...] = (f"iterations={ITERATIONS}", "dpo.learning_rate=1e-5", "dpo.batch_size=4",
                                      "dpo.max_steps=null", "dpo.epochs=1", "kl=false", "detection.enabled=true",
                                      "detection.samples=6", "detection.max_outputs=48")
#: Training problems: `code_families` at this seed, this many per family (all of them train).
TRAIN_SEED, TRAIN_PER_FAMILY = 0, 1
#: The default held-out set when no --heldout is given (the one the settings were tried on).
TUNING_SEED, TUNING_PER_FAMILY = 2, 3
#: The run store's cache columns, named (a store of another schema version fails loudly).
CACHE_COLUMNS = "key, idx, model_id, completion, created, request"


def measure(*, seeds: list[int], work_dir: Path, heldout_file: str | None = None, config_path: str = DEFAULT_CONFIG,
            overrides: list[str] | None = None, arms: list[str] | None = None) -> Miniature:
    """Every arm once per seed (resuming a run folder that holds one), then the paired gains
    and comparisons. A seed sets sampling and DPO (`seed`, `dpo.seed`), never the problems."""
    from coevo.run.runner import run_experiment
    from coevo.rundir.store import STORE_FILE

    arms = list(arms or ARMS)
    unknown = [a for a in arms if a not in ARMS]
    if unknown:
        raise ValueError(f"unknown RLAC arm(s) {unknown}; choose from {sorted(ARMS)}")
    work_dir = Path(work_dir)
    train = family_file(work_dir, TRAIN_SEED, TRAIN_PER_FAMILY)
    heldout, dropped = unseen(Path(heldout_file) if heldout_file else family_file(work_dir, TUNING_SEED,
                                                                                  TUNING_PER_FAMILY), train, work_dir)
    n_heldout = sum(1 for line in heldout.read_text(encoding="utf-8").splitlines() if line.strip())
    n_train = sum(1 for line in train.read_text(encoding="utf-8").splitlines() if line.strip())
    base = [*DEFAULT_OVERRIDES, f"data.source={train.resolve()}", f"data.train={n_train}",
            f"data.heldout_source={heldout.resolve()}", f"data.heldout={n_heldout}", *(overrides or [])]
    started = time.perf_counter()
    results: dict[str, ArmResult] = {}
    summaries: dict[str, dict[int, dict[str, Any]]] = {arm: {} for arm in arms}
    finished: list[Path] = []
    # Seed-major: the arms of one seed run one after another, so each can answer from the
    # calls the others already made (`share_cache`).
    for seed in seeds:
        for arm in arms:
            out = work_dir / arm / f"seed{seed}"
            log.info("rlac miniature: arm %s, seed %d -> %s", arm, seed, out)
            if not (out / STORE_FILE).is_file():
                share_cache(finished, out)
            settings = [*base, *ARMS[arm], f"seed={seed}", f"dpo.seed={seed}"]
            run_experiment(config_path, out, overrides=settings, resume=(out / STORE_FILE).is_file())
            summaries[arm][seed] = json.loads((out / "summary.json").read_text(encoding="utf-8"))
            finished.append(out)
    for arm in arms:
        results[arm] = arm_from_summaries(summaries[arm], {seed: work_dir / arm / f"seed{seed}" for seed in seeds})
    digests = sorted({d for arm in arms for d in results[arm].metrics.get("detection_set_digests", [])})
    table = iteration_lines(results)
    for line in table:
        log.info("rlac miniature: %s", line)
    detection = detection_measure(results) if len(digests) == 1 else None
    return Miniature(paper=PAPER, target=TARGET, arms=results,
                     comparisons={**comparisons(results, COMPARISONS), **execution_comparison(results)},
                     measures={} if detection is None else {"critic_detection": detection},
                     seeds=list(seeds), seconds=sum(r.metrics["run_seconds"] for r in results.values()),
                     settings={"this_invocation_seconds": round(time.perf_counter() - started, 1),
                               "config": config_path, "overrides": base, "train_file": str(train),
                               "train_problems": n_train, "heldout_file": str(heldout_file or heldout),
                               "heldout_problems": n_heldout, "heldout_dropped_as_seen": dropped,
                               "arms": {a: list(ARMS[a]) for a in arms},
                               # One digest: every arm and seed measured its critic on the same outputs.
                               "detection_set_digests": digests},
                     notes=[f"held-out problems whose function is also a training problem's, left out: {dropped}",
                            *([] if len(digests) <= 1 else
                              [f"the detection sets differ between runs ({len(digests)} digests): the detection "
                               "rates are not on the same outputs and are not compared"]),
                            *table, *(f"{a}: {x}" for a in arms for x in results[a].notes)])


def share_cache(donors: list[Path], out: Path) -> None:
    """Start run folder `out` with the model calls the finished `donors` made. The untrained
    generator answers the held-out problems greedily (round 0) and samples its round-1
    outputs under the seed's sampling seed, and the base critic proposes on them and on the
    detection set: the same calls in every arm, so each arm trains on the SAME outputs (the
    arms differ only in how pairs are found from them, and the two critic arms only from
    round 2 on) and the calls are paid once. A call of trained weights has another model id
    and never hits."""
    import sqlite3

    from coevo.rundir.store import STORE_FILE, RunStore

    RunStore(out).close()  # the schema; the run itself starts on it (`resume`: no config yet)
    with sqlite3.connect(out / STORE_FILE) as db:
        for donor in donors:
            db.execute("ATTACH DATABASE ? AS donor", (str(donor / STORE_FILE),))
            db.execute(f"INSERT OR IGNORE INTO llm_cache ({CACHE_COLUMNS}) SELECT {CACHE_COLUMNS} FROM donor.llm_cache")
            db.commit()
            db.execute("DETACH DATABASE donor")


def family_file(work_dir: Path, seed: int, per_family: int) -> Path:
    """`code_families` problems at `seed`, written once into work_dir."""
    from coevo.tasks.code_families import generate

    path = work_dir / f"code_families_seed{seed}_x{per_family}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in generate(seed, per_family)), encoding="utf-8")
    return path


def unseen(heldout: Path, train: Path, work_dir: Path) -> tuple[Path, int]:
    """(the held-out file without the problems whose function a training problem defines, how
    many were left out): `add_6` drawn at two seeds is one problem, and a problem trained on
    is not held out. The file itself where none is left out."""
    from coevo.tasks.code import load_code_problems

    trained = {s.meta["entry_point"] for s in load_code_problems(train)}
    rows = [line for line in heldout.read_text(encoding="utf-8").splitlines() if line.strip()]
    kept = [line for line, s in zip(rows, load_code_problems(heldout)) if s.meta["entry_point"] not in trained]
    if len(kept) == len(rows):
        return heldout, 0
    if not kept:
        raise ValueError(f"every problem of {heldout} is also a training problem: nothing is held out")
    path = work_dir / f"heldout_unseen_{heldout.stem}.jsonl"
    path.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return path, len(rows) - len(kept)


def arm_from_summaries(summaries: Mapping[int, Mapping[str, Any]], run_dirs: Mapping[int, Path]) -> ArmResult:
    """The arm's paired pass@1 from each seed's summary.json (round 0 before, the last round
    after; keys `problem#seed`), with its pairs and training as notes, and as metrics: errors
    found per verification call and per execution, and every round's numbers (`per_iteration`)."""
    before: dict[str, float] = {}
    after: dict[str, float] = {}
    notes: list[str] = []
    found = calls = 0
    for seed, summary in sorted(summaries.items()):
        rounds = summary["rounds"]
        if not rounds:
            raise ValueError(f"seed {seed}: the run has no finished round to score")
        before |= _per_item(summary["baseline"], seed)
        after |= _per_item(rounds[-1]["eval"], seed)
        seed_found, seed_calls = errors_and_calls(run_dirs[seed], rounds[-1])
        found, calls = found + seed_found, calls + seed_calls
        for rec in rounds:
            training = rec.get("training") or {}
            notes.append(f"seed {seed} round {rec['round']}: pairs {rec.get('pairs')}, "
                         + ", ".join(f"{role} {info.get('steps')} DPO steps (max |Δw| {info.get('weight_delta')})"
                                     for role, info in training.items())
                         + f"; pass@1 {rec['eval'].get('pass_at_1')}")
    result = arm_result(before, after, notes)
    per_round = iterations(summaries, run_dirs)
    executions = sum(r["executions"] for r in per_round)
    exposed = sum(r["errors_found"] for r in per_round)
    result.metrics = {
        "errors_per_call": _rate(found, calls), "errors_found": found, "verification_calls": calls,
        # App. B.2's unit: sandbox programs run (2 per critic proposal, 1 per hidden test).
        "executions": executions, "outputs_shown_failing": exposed,
        "errors_per_execution": _rate(exposed, executions),
        "per_iteration": [{k: v for k, v in r.items() if k != "detection_scores"} for r in per_round],
        # Each round's detected (1) / missed (0) per `item#seed`: comparisons recompute from these.
        "detection_scores": {str(r["round"]): r["detection_scores"] for r in per_round
                             if r["detection_scores"] is not None},
        "detection_set_digests": sorted({d.get("digest") for summary in summaries.values()
                                         for d in summary.get("detection") or [] if d.get("digest")}),
        "run_seconds": run_seconds(summaries),
    }
    return result


def run_seconds(summaries: Mapping[int, Mapping[str, Any]]) -> float:
    """The time the arm's runs spent running, summed over seeds and over the processes of a
    resumed run (provenance `duration_s`): a miniature resumed across sessions finishes in
    seconds, and its own wall time would say so."""
    return round(sum(float((s.get("provenance") or {}).get("duration_s") or 0.0) for s in summaries.values()), 1)


def iterations(summaries: Mapping[int, Mapping[str, Any]], run_dirs: Mapping[int, Path]) -> list[dict[str, Any]]:
    """Round r = 0..T of one arm, pooled over its seeds: held-out pass@1 (Wilson) and its paired
    gain from round 0; the critic's detection rate on the fixed set (Wilson over `item#seed`;
    None where no critic was measured) and the share of its proposals confirmed there; the
    on-policy detection rate of the round's training proposals (Fig. 4's reading); both sides'
    DPO pairs; the round's verification executions and the outputs they showed failing."""
    last = max(len(summary["rounds"]) for summary in summaries.values())
    work = {seed: round_work(run_dirs[seed]) for seed in summaries}
    out: list[dict[str, Any]] = []
    for r in range(last + 1):
        scores: dict[str, float] = {}
        base: dict[str, float] = {}
        detected: dict[str, float] = {}
        measured = caught = proposed = on_policy_caught = on_policy = executions = shown_failing = 0
        pairs = {"generator": 0, "critic": 0}
        for seed, summary in sorted(summaries.items()):
            rounds = summary["rounds"]
            if r > len(rounds):
                continue
            base |= _per_item(summary["baseline"], seed)
            scores |= _per_item(summary["baseline"] if r == 0 else rounds[r - 1]["eval"], seed)
            for d in summary.get("detection") or []:
                if d.get("round") == r:
                    measured += 1
                    detected |= {f"{item}#{seed}": float(v) for item, v in (d.get("per_item") or {}).items()}
                    caught += int(d.get("proposals_caught", 0))
                    proposed += int(d.get("validator_calls", 0))
            if r == 0:
                continue
            rec = rounds[r - 1]
            for role in pairs:
                pairs[role] += int((rec.get("pairs") or {}).get(role, 0))
            critic = rec.get("critic") or {}
            if critic.get("detection_rate") is not None and critic.get("proposals"):
                on_policy += int(critic["proposals"])
                on_policy_caught += round(critic["detection_rate"] * critic["proposals"])
            used = int((rec.get("counts") or {}).get("used", 0))
            earlier = int((rounds[r - 2].get("counts") or {}).get("used", 0)) if r > 1 else 0
            # The run counts in App. B.2's unit: 2 executions a critic proposal (reference and
            # output), 1 a hidden test (records.VerificationCounts).
            executions += used - earlier
            shown_failing += work[seed].get(r, 0)
        keys = sorted(set(base) & set(scores))
        gain = paired_difference([scores[k] for k in keys], [base[k] for k in keys])
        out.append({
            "round": r,
            "pass_at_1": _rate(sum(scores.values()), len(scores)),
            "gain_from_round0": {"value": gain.mean_diff, "ci": [gain.low, gain.high], "n": gain.n_pairs},
            "detection_rate": _rate(sum(detected.values()), len(detected)) if measured else None,
            "proposal_catch_rate": _rate(caught, proposed) if measured else None,
            "training_detection_rate": _rate(on_policy_caught, on_policy) if on_policy else None,
            "pairs": pairs if r else None,
            "executions": executions, "errors_found": shown_failing,
            "errors_per_execution": _rate(shown_failing, executions) if r else None,
            "detection_scores": detected if measured else None,
        })
    return out


def round_work(run_dir: Path) -> dict[int, int]:
    """{round: outputs its verification showed failing}: a train output with a caught critic
    proposal among its N, or with a hidden test failing (enumeration). An output is one error
    however many of its proposals caught it: enumeration, too, learns one verdict per output."""
    proposals, scores = _verdict_records(run_dir)
    failing: dict[int, set[tuple[str, Any]]] = {}
    for _, rec in proposals:
        if rec.get("verdict") == "caught" and rec.get("round") is not None:
            failing.setdefault(int(rec["round"]), set()).add((rec.get("sample_id"), rec.get("output_index")))
    for key, rec in scores:
        if float(rec.get("score", 1.0)) < 1.0 and rec.get("round") is not None:
            failing.setdefault(int(rec["round"]), set()).add((rec.get("sample_id"), key))
    return {r: len(outputs) for r, outputs in failing.items()}


def detection_measure(arms: Mapping[str, ArmResult]) -> Measure | None:
    """The critic arms scored by their critic, not their generator: per `item#seed` of the
    fixed set, detected (1) or not (0) by the base critic (round 0: `before`, the same critic
    and draws in both arms) and by the last round's (`after`); `co_trained_minus_static_critic`
    pairs the two arms' changes. None where no arm measured its critic."""
    scored: dict[str, ArmResult] = {}
    for name, arm in arms.items():
        by_round = arm.metrics.get("detection_scores") or {}
        if len(by_round) < 2:
            continue
        first, last = min(by_round, key=int), max(by_round, key=int)
        scored[name] = arm_result(by_round[first], by_round[last],
                                  [f"detection on the fixed set: round {first} critic before, round {last} after"])
    if not scored:
        return None
    return Measure(target=DETECTION_TARGET, arms=scored,
                   comparisons=comparisons(scored, [("co_trained", "static_critic")]))


def execution_comparison(arms: Mapping[str, ArmResult]) -> dict[str, Comparison]:
    """`co_trained_minus_enumerative_errors_per_execution`, where both arms ran: errors found
    per verification execution over every round, a difference of two proportions with
    Newcombe's hybrid score interval (n: both arms' executions). The executions themselves
    are counts, in each arm's metrics."""
    co, enum = arms.get("co_trained"), arms.get("enumerative")
    if co is None or enum is None:
        return {}
    x, y = co.metrics.get("errors_per_execution") or {}, enum.metrics.get("errors_per_execution") or {}
    if not (x.get("n") and y.get("n")):
        return {}
    value, lo, hi = newcombe(co.metrics["outputs_shown_failing"], x["n"], enum.metrics["outputs_shown_failing"], y["n"])
    return {"co_trained_minus_enumerative_errors_per_execution": Comparison(value=value, ci=[lo, hi],
                                                                            n=x["n"] + y["n"])}


def newcombe(found_a: int, n_a: int, found_b: int, n_b: int) -> tuple[float, float, float]:
    """p_a − p_b with Newcombe's hybrid score 95 % interval (from each side's Wilson interval):
    sound where a rate is near 0 or 1, as errors per execution are."""
    from coevo.eval.stats import wilson_interval

    p_a, lo_a, hi_a = wilson_interval(found_a, n_a)
    p_b, lo_b, hi_b = wilson_interval(found_b, n_b)
    d = p_a - p_b
    return d, d - ((p_a - lo_a) ** 2 + (hi_b - p_b) ** 2) ** 0.5, d + ((hi_a - p_a) ** 2 + (p_b - lo_b) ** 2) ** 0.5


def iteration_lines(arms: Mapping[str, ArmResult]) -> list[str]:
    """One line per arm and round: pass@1, the critic's detection rate on the fixed set (with
    intervals), pairs, executions and errors found per execution."""
    lines = []
    for name, arm in arms.items():
        for r in arm.metrics.get("per_iteration") or []:
            parts = [f"{name} round {r['round']}: pass@1 {_interval(r['pass_at_1'])}"]
            if r["gain_from_round0"]["value"] is not None and r["round"]:
                parts.append(f"gain from round 0 {_signed(r['gain_from_round0'])}")
            if r["detection_rate"] is not None:
                parts.append(f"critic detection (fixed set) {_interval(r['detection_rate'])}")
            if r["training_detection_rate"] is not None:
                parts.append(f"on training proposals {_interval(r['training_detection_rate'])}")
            if r["pairs"] is not None:
                parts.append(f"pairs generator {r['pairs']['generator']} / critic {r['pairs']['critic']}")
                parts.append(f"{r['executions']} executions, errors per execution "
                             f"{_interval(r['errors_per_execution'])}")
            lines.append("; ".join(parts))
    return lines


def _interval(rate: Mapping[str, Any]) -> str:
    if rate.get("value") is None:
        return f"— (n={rate.get('n', 0)})"
    lo, hi = rate["ci"]
    return f"{rate['value']:.3f} [{lo:.3f}, {hi:.3f}] (n={rate['n']})"


def _signed(rate: Mapping[str, Any]) -> str:
    lo, hi = rate["ci"]
    interval = f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else ""
    return f"{rate['value']:+.3f}{interval} (n={rate['n']})"


def _verdict_records(run_dir: Path) -> tuple[list[Any], list[Any]]:
    """A run's stored critic verdicts (`rlac_proposal`) and enumeration scores (`rlac_enumerative`)."""
    from coevo.rundir.store import RunStore

    store = RunStore(run_dir, read_only=True)
    try:
        return store.get_records("rlac_proposal"), store.get_records("rlac_enumerative")
    finally:
        store.close()


def errors_and_calls(run_dir: Path, last_round: Mapping[str, Any]) -> tuple[int, int]:
    """(errors found, validator calls spent) over a run's rounds: caught proposals (critic
    arms) or outputs failing a test (enumeration), against `counts.used`."""
    proposals, scores = _verdict_records(run_dir)
    found = (sum(1 for _, rec in proposals if rec.get("verdict") == "caught")
             + sum(1 for _, rec in scores if float(rec.get("score", 1.0)) < 1.0))
    return found, int((last_round.get("counts") or {}).get("used", 0))


def _per_item(evaluation: Mapping[str, Any], seed: int) -> dict[str, float]:
    items = evaluation.get("per_item")
    if items is None:
        raise ValueError("summary.json has no per-problem outcomes (`per_item`): run it again with this version")
    return {f"{sid}#{seed}": float(v) for sid, v in items.items()}


def _rate(successes: int, n: int) -> dict[str, Any]:
    """{value, ci, n}: a proportion with its Wilson 95 % interval (None under one call)."""
    from coevo.eval.stats import wilson_interval

    if n < 1:
        return {"value": None, "ci": [None, None], "n": 0}
    value, lo, hi = wilson_interval(successes, n)
    return {"value": value, "ci": [lo, hi], "n": n}
