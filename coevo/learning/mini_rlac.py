"""RLAC in miniature: a co-trained critic against a static critic and enumeration, on code.

The RLAC paper's central comparison (Fig. 4, Table 1): the generator trained on the verdicts
of a critic that trains against it improves more, and finds more errors per verification
call, than one trained with a frozen critic or with enumerative checking of every test.
Here, one `coevo run` of the code config per (arm, seed), the arms differing only in how
the generator's DPO pairs are found:

- `co_trained`: `critic_training: adversarial` (both sides DPO, Algorithm 1);
- `static_critic`: `critic_training: static` (the critic proposes, never trains);
- `enumerative`: `verification: enumerative` (every reference test of every output runs;
  pairs by score, AceCoder-Rule's way).

Gold: held-out pass@1 of the generator, greedy, every hidden test in the sandbox, per
(problem, seed); before = round 0 (the untrained generator, the same in every arm), after =
the last round. Training problems: one of each `coevo.tasks.code_families` family (seed 0);
held-out problems come from `--heldout FILE` (code rows as `bundled:code_easy`'s), by
default another seeded draw of the families, less any problem whose function a training
problem defines (`add_6` drawn twice is one problem). Errors found per verification call: caught proposals per proposal
checked (critic arms), failing outputs per test run (enumeration), over every round and
seed, with a Wilson interval.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from coevo.learning.miniature import ArmResult, Miniature, arm_result, comparisons

log = logging.getLogger(__name__)

PAPER = "rlac"
TARGET = "held-out pass@1 of the generator (greedy, hidden tests in the sandbox), per problem and seed"
DEFAULT_CONFIG = "examples/rlac_code_easy.yaml"
#: arm -> the config keys that make it (everything else is the config's).
ARMS: dict[str, tuple[str, ...]] = {
    "co_trained": ("critic_training=adversarial", "verification=critic"),
    "static_critic": ("critic_training=static", "verification=critic"),
    "enumerative": ("critic_training=adversarial", "verification=enumerative"),
}
COMPARISONS = [("co_trained", "static_critic"), ("co_trained", "enumerative")]
#: Every run: one round of 8 DPO steps of 4 pairs (about one pass over a round's ~40
#: generator pairs) at 1e-5. The sweep (BENCHMARKS.md, "Miniatures"): at 5e-5 the generator's
#: held-out pass@1 collapsed (0.656 -> 0.250, 28 problems lost, 2 gained: it began writing
#: each function twice); the tiny config's 2 steps at 5e-6 moved weights 7.6e-6.
DEFAULT_OVERRIDES: tuple[str, ...] = ("iterations=1", "dpo.learning_rate=1e-5", "dpo.batch_size=4",
                                      "dpo.max_steps=8")
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
    from coevo.runner import run_experiment
    from coevo.store import STORE_FILE

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
    return Miniature(paper=PAPER, target=TARGET, arms=results, comparisons=comparisons(results, COMPARISONS),
                     seeds=list(seeds), seconds=round(time.perf_counter() - started, 1),
                     settings={"config": config_path, "overrides": base, "train_file": str(train),
                               "train_problems": n_train, "heldout_file": str(heldout_file or heldout),
                               "heldout_problems": n_heldout, "heldout_dropped_as_seen": dropped,
                               "arms": {a: list(ARMS[a]) for a in arms}},
                     notes=[f"held-out problems whose function is also a training problem's, left out: {dropped}",
                            *(f"{a}: {x}" for a in arms for x in results[a].notes)])


def share_cache(donors: list[Path], out: Path) -> None:
    """Start run folder `out` with the model calls the finished `donors` made. The untrained
    generator answers the held-out problems greedily (round 0) and samples its round-1
    outputs under the seed's sampling seed: the same calls in every arm, so each arm trains
    on the SAME outputs (the arms differ only in how pairs are found from them) and the
    calls are paid once. A call of trained weights has another model id and never hits."""
    import sqlite3

    from coevo.store import STORE_FILE, RunStore

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
    after; keys `problem#seed`), with its pairs, training and errors per call as notes and
    metrics."""
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
    result.metrics = {"errors_per_call": _rate(found, calls), "errors_found": found, "verification_calls": calls}
    return result


def errors_and_calls(run_dir: Path, last_round: Mapping[str, Any]) -> tuple[int, int]:
    """(errors found, validator calls spent) over a run's rounds: caught proposals (critic
    arms) or outputs failing a test (enumeration), against `counts.used`."""
    from coevo.store import RunStore

    store = RunStore(run_dir, read_only=True)
    try:
        proposals = store.get_records("rlac_proposal")
        scores = store.get_records("rlac_enumerative")
    finally:
        store.close()
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
