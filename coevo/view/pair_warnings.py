"""The run's warning about DPO stages that got too few preference pairs (kind `no-pairs`).

A DPO stage learns from pairs; a round that built none leaves its role untrained (its weights
stay the round's start), and one pair is a single comparison, which two optimizer steps only
memorise; either way its held-out numbers cannot move for a reason no metric shows. This
warning names each stage that was to train and got fewer than MIN_PAIRS, and why, from the
records the round kept:

- RLAC (`rlac_proposal` verdicts): the generator's pairs set an output the critic's first
  proposal did not catch against one it caught, on the same problem; the critic's set a
  proposal that caught its output against one that did not, on the same output. So the cause
  is which side was missing: every output caught (no chosen side), none caught (no rejected
  side, often because every proposal was invalid), or both sides seen only on different
  problems. The baselines (`rlac_enumerative`, `rlac_reward` scores): every output of a
  problem scored the same.
- TAIScore (the round's `pairs_*` counts): the critique-blind pairwise judge preferred few
  revisions over their initial response (ties, the initial response preferred, unreadable
  verdicts), or `pairs_per_round` kept only one.

A GRPO stage whose every group had equal rewards is the same failure for GRPO; `constant_reward`
in view/warnings.py warns it (kind `constant-reward`), so it is not said twice here. DecoEvo
trains no weights.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from coevo.view.findings import Finding

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore

KIND = "no-pairs"
#: Fewer pairs than this and a DPO stage has nothing to generalise from (one pair is one
#: comparison; none leaves the role untrained).
MIN_PAIRS = 2
#: RLAC's round steps in the run store (rlac/stages.py: `rlac:round1`).
RLAC_ROUND = re.compile(r"^rlac:round(\d+)$")
#: The stored scores of RLAC's baselines, by `verification`.
BASELINE_SCORES = {"enumerative": "rlac_enumerative", "reward_model": "rlac_reward"}


def too_few_pairs(store: RunStore, metrics: list[dict[str, Any]] | None = None) -> list[Finding]:
    """The `no-pairs` warnings of the run in `store`: RLAC's and TAIScore's DPO stages that
    were to train and got fewer than MIN_PAIRS pairs, each with its cause (module doc).
    `metrics`: the store's metrics, where the caller already read them."""
    return rlac_pair_warnings(store) + taiscore_pair_warnings(store.metrics() if metrics is None else metrics)


# -- RLAC ----------------------------------------------------------------------------------

def rlac_pair_warnings(store: RunStore) -> list[Finding]:
    """One warning per (round, role) of an RLAC run whose DPO stage got too few pairs."""
    rounds = _rlac_rounds(store)
    if not rounds:
        return []
    config = store.get_meta("config") or {}
    verification = config.get("verification", "critic")
    # The critic trains only against a validator's verdicts on its own proposals (rlac/loop.py).
    critic_trains = config.get("critic_training") == "adversarial" and verification == "critic"
    roles = ("generator", "critic") if critic_trains else ("generator",)
    proposals = _proposals_by_round(store) if verification == "critic" else {}
    scores = _scores_by_round(store, BASELINE_SCORES[verification]) if verification in BASELINE_SCORES else {}
    out = []
    for r, record in rounds:
        for role in roles:
            n = int((record.get("pairs") or {}).get(role, 0))
            if n >= MIN_PAIRS:
                continue
            if verification != "critic":
                cause = baseline_cause(scores.get(r, {}))
            elif role == "generator":
                cause = generator_cause(_first_verdicts(proposals.get(r, [])))
            else:
                cause = critic_cause(_verdicts_per_output(proposals.get(r, [])))
            out.append(Finding(kind=KIND, text=f"round {r}: {_pairs_said(role, n)}: {cause}."))
    return out


def _rlac_rounds(store: RunStore) -> list[tuple[int, dict[str, Any]]]:
    """(round, its stored RoundRecord) for every finished RLAC iteration, in round order."""
    found = []
    for name in store.finished_steps():
        match = RLAC_ROUND.match(name)
        record = store.step_result(name) if match else None
        if isinstance(record, dict) and "pairs" in record:  # round 0 is the baseline: no pairs
            found.append((int(match.group(1)), record))
    return sorted(found, key=lambda item: item[0])


def _pairs_said(role: str, n: int) -> str:
    """How many pairs the role got and what that did to its stage."""
    if n == 0:
        return f"the {role} got no DPO pairs (n=0), so it was not trained this round"
    return f"the {role} got {n} DPO pair (fewer than {MIN_PAIRS}), so its stage learned from one comparison"


def _proposals_by_round(store: RunStore) -> dict[int, list[dict[str, Any]]]:
    by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for _, record in store.get_records("rlac_proposal"):
        by_round[record["round"]].append(record)
    return by_round


def _first_verdicts(proposals: list[dict[str, Any]]) -> dict[str, list[str]]:
    """{problem: the verdict of the first proposal on each of its outputs}: the generator's
    reward reads only that one (rlac/loop.py, generator_dataset)."""
    firsts: dict[str, list[str]] = defaultdict(list)
    for p in sorted(proposals, key=lambda p: (p["sample_id"], p["output_index"])):
        if p["proposal_index"] == 0:
            firsts[p["sample_id"]].append(p["verdict"])
    return firsts


def _verdicts_per_output(proposals: list[dict[str, Any]]) -> dict[tuple[str, int], list[str]]:
    """{(problem, output): the verdicts of every proposal on it}: the critic's pairs are
    made within one output's proposals."""
    per_output: dict[tuple[str, int], list[str]] = defaultdict(list)
    for p in proposals:
        per_output[(p["sample_id"], p["output_index"])].append(p["verdict"])
    return per_output


def generator_cause(firsts: dict[str, list[str]]) -> str:
    """Why the generator's outputs made fewer than MIN_PAIRS pairs, from the first proposal's
    verdict on each output, by problem (a pair needs a caught and an uncaught output of one)."""
    verdicts = [v for per_problem in firsts.values() for v in per_problem]
    n, problems = len(verdicts), len(firsts)
    if not n:
        return "no critic verdicts on its outputs were stored this round, so the cause is unknown"
    counts = Counter(verdicts)
    where = f"{_count(n, 'output')} on {_count(problems, 'problem')}"
    if counts["caught"] == n:
        return (f"every generator output was caught ({where}): the critic's proposal exposed a real failure in "
                "each (code: the output failed the critic's test), so no output was the chosen side. Train on "
                "problems the generator can sometimes solve, or sample more outputs per problem (k)")
    if counts["caught"] == 0:
        return (f"no generator output was caught ({where}: {_verdict_counts(counts)}), so no output was the "
                f"rejected side{_invalid_hint(counts, n)}")
    both = sum(1 for per_problem in firsts.values() if len(set(v == "caught" for v in per_problem)) == 2)
    return (f"{counts['caught']} of {n} outputs were caught; {_of(both, problems, 'problem')} had both a caught "
            "and an uncaught output, and pairs compare outputs of one problem (distinct texts, at most "
            "max_pairs_per_instruction each): more problems or more outputs per problem (k) give more pairs")


def critic_cause(per_output: dict[tuple[str, int], list[str]]) -> str:
    """Why the critic's proposals made fewer than MIN_PAIRS pairs (a pair needs a proposal
    that caught its output and one that did not, on the same output)."""
    verdicts = [v for per in per_output.values() for v in per]
    n, outputs = len(verdicts), len(per_output)
    if not n:
        return "no critic verdicts were stored this round, so the cause is unknown"
    counts = Counter(verdicts)
    where = f"{_count(n, 'proposal')} on {_count(outputs, 'output')}"
    if counts["caught"] == n:
        return f"every critic proposal caught its output ({where}), so no proposal was the rejected side"
    if counts["caught"] == 0:
        return (f"no critic proposal caught its output ({where}: {_verdict_counts(counts)}), so no proposal "
                f"was the chosen side{_invalid_hint(counts, n)}")
    both = sum(1 for per in per_output.values() if len(set(v == "caught" for v in per)) == 2)
    return (f"{counts['caught']} of {n} proposals caught their output; {_of(both, outputs, 'output')} drew both "
            "a catching and a non-catching proposal, and pairs compare proposals on one output (outputs that fail "
            "on some inputs only, or more proposals per output (n), give more pairs)")


def _count(n: int, noun: str) -> str:
    """"1 problem", "3 problems"."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _of(k: int, n: int, noun: str) -> str:
    """"1 of 1 problem", "2 of 3 problems"."""
    return f"{k} of {_count(n, noun)}"


def _verdict_counts(counts: Counter[str]) -> str:
    return ", ".join(f"{counts[v]} {v}" for v in ("caught", "survived", "invalid") if counts[v]) or "none"


def _invalid_hint(counts: Counter[str], n: int) -> str:
    """What to check when most proposals could not be checked at all."""
    if counts["invalid"] * 2 <= n:
        return ""
    return (f". {counts['invalid']} of {n} proposals were invalid (the validator could not use them): check the "
            "critic's format (critic_form) and max_tokens")


def _scores_by_round(store: RunStore, kind: str) -> dict[int, dict[str, list[float]]]:
    """{round: {problem: the baseline's score of each output}} from its stored scores."""
    by_round: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for _, record in store.get_records(kind):
        by_round[record["round"]][record["sample_id"]].append(float(record["score"]))
    return by_round


def baseline_cause(scores: dict[str, list[float]]) -> str:
    """Why a baseline (enumerative checking, a reward model) made too few pairs: its pairs set
    a higher- over a lower-scoring output of one problem."""
    values = [s for per_problem in scores.values() for s in per_problem]
    if not values:
        return "no output scores were stored this round, so the cause is unknown"
    where = f"{_count(len(values), 'output')} on {_count(len(scores), 'problem')}"
    if len(set(values)) == 1:
        return f"every output scored {values[0]:g} ({where}), so none was preferred over another"
    spread = sum(1 for per_problem in scores.values() if len(set(per_problem)) > 1)
    return (f"{_of(spread, len(scores), 'problem')} had outputs with different scores ({where}), and pairs "
            "compare outputs of one problem")


# -- TAIScore ------------------------------------------------------------------------------

def taiscore_pair_warnings(metrics: list[dict[str, Any]]) -> list[Finding]:
    """One warning per (condition, round) of a TAIScore run whose actor DPO stage got too few
    pairs, from the round's `pairs_*` counts (taiscore/pairs.py, PairCounts)."""
    counts: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for m in metrics:
        if m["name"].startswith("pairs_") and isinstance(m["value"], (int, float)) and m["round"] is not None:
            counts[(m["stage"], m["round"])][m["name"].removeprefix("pairs_")] = m["value"]
    out = []
    for (condition, r), found in sorted(counts.items()):
        if "selected" not in found or found["selected"] >= MIN_PAIRS:
            continue
        n = int(found["selected"])
        out.append(Finding(kind=KIND, text=(
            f"{condition}/round{r}/actor: {_pairs_said('actor', n)}: {taiscore_cause(found)}.")))
    return out


def taiscore_cause(found: dict[str, float]) -> str:
    """Why the pairwise judge's filter kept fewer than MIN_PAIRS revisions."""
    candidates, wins, selected = (int(found.get(k, 0)) for k in ("candidates", "y1_wins", "selected"))
    if wins > selected:
        return (f"the pairwise judge preferred {wins} of {candidates} revisions over their initial response, but "
                f"pairs_per_round kept {selected}: raise pairs_per_round")
    said = ", ".join(f"{int(found.get(k, 0))} {words}" for k, words in (
        ("ties", "ties"), ("y0_wins", "initial response preferred"), ("invalid", "unreadable")) if found.get(k))
    return (f"the pairwise judge preferred the revision over its initial response in only {wins} of {candidates} "
            f"candidates ({said or 'no other verdicts'}): use more queries (data.limit), a stronger judge "
            "(roles.judge.model) or a stronger critic")
