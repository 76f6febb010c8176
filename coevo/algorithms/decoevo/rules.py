"""DecoEvo's acceptance rules as pure functions: the solver gate (margin delta), the Pareto
rule on the audits (eta, tau), the score-coupled rule of SC-CoEvo, and near-tie selection."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_EPS = 1e-9  # margins are compared with a tolerance: 0.55 - 0.5 must count as 0.05


# ====================================================================== acceptance rules
@dataclass
class Decision:
    """An acceptance rule's verdict: accept or not, why (in words), and what it measured."""

    accept: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def solver_gate(incumbent: list[float | None], candidate: list[float | None], delta: float) -> Decision:
    """Accept S' iff mean paired gain over the solver gate >= delta (same questions, same
    cached rubrics); questions where either judgment is unreadable are left out."""
    pairs = [(a, b) for a, b in zip(incumbent, candidate) if a is not None and b is not None]
    if not pairs:
        return Decision(False, "no solver-gate question was judged readably for both skills",
                        {"n_pairs": 0})
    inc = sum(a for a, _ in pairs) / len(pairs)
    cand = sum(b for _, b in pairs) / len(pairs)
    gain = cand - inc
    accept = gain >= delta - _EPS
    verb = "beats" if accept else "does not beat"
    return Decision(accept, f"gate score {cand:.3f} vs {inc:.3f} (gain {gain:+.3f}) {verb} the "
                            f"margin delta={delta:g} on {len(pairs)} paired questions",
                    {"gate_incumbent": inc, "gate_candidate": cand, "gain": gain, "n_pairs": len(pairs),
                     "gate_tie": gate_tie(inc, cand)})


def gate_tie(incumbent: float | None, candidate: float | None) -> bool | None:
    """Whether a gate comparison is an exact tie (None: nothing was compared).

    Equal up to float rounding (_EPS): a tie cannot be told apart by any margin delta, so
    the gate rejects the candidate without having measured a difference.
    """
    if incumbent is None or candidate is None:
        return None
    return abs(candidate - incumbent) <= _EPS


def outer_step_due(steps_since_outer: int, stall: int, k: int, s: int) -> bool:
    """The outer loop runs every k inner steps or after s consecutive solver rejections."""
    return steps_since_outer >= k or stall >= s


def select_near_ties(scores: list[list[float | None]], epsilon: float, max_pairs: int,
                     texts: list[list[str]] | None = None) -> list[tuple[int, int, int, float]]:
    """(question, i, j, gap) of at most `max_pairs` rollout pairs with gap <= epsilon.

    Smallest gaps first; a rollout is never used twice, so a question with many near-ties
    cannot dominate. Pairs of identical texts are skipped (nothing to distinguish).
    """
    candidates = []
    for q, row in enumerate(scores):
        for i in range(len(row)):
            for j in range(i + 1, len(row)):
                if row[i] is None or row[j] is None:
                    continue
                if texts is not None and texts[q][i].strip() == texts[q][j].strip():
                    continue
                gap = abs(row[i] - row[j])
                if gap <= epsilon + _EPS:
                    candidates.append((gap, q, i, j))
    used: set[tuple[int, int]] = set()
    chosen = []
    for gap, q, i, j in sorted(candidates):
        if len(chosen) >= max_pairs:
            break
        if (q, i) in used or (q, j) in used:
            continue
        used.update({(q, i), (q, j)})
        chosen.append((q, i, j, gap))
    return chosen


def resolution_rate(margins: list[tuple[str, float | None]], gamma: float) -> float | None:
    """Question-balanced share of frozen records whose margin S(y+) - S(y-) >= gamma.

    `margins` holds (question id, margin) per record; an unreadable judgment (None) counts
    as unresolved. None when there is no record (the objective is then unavailable).
    """
    by_question: dict[str, list[float]] = {}
    for qid, margin in margins:
        by_question.setdefault(qid, []).append(float(margin is not None and margin >= gamma - _EPS))
    if not by_question:
        return None
    return sum(sum(v) / len(v) for v in by_question.values()) / len(by_question)


def pareto_accept(deltas: dict[str, float | None], eta: float, tau: float) -> Decision:
    """Accept iff some available objective improves by >= eta and none drops by more than tau.

    `deltas` maps objective -> candidate minus incumbent (None = unavailable, e.g. no
    frozen contrastive record). No weighted aggregation of the objectives.
    """
    available = {k: v for k, v in deltas.items() if v is not None}
    shown = ", ".join(f"d{k}={v:+.3f}" for k, v in available.items())
    if not available:
        return Decision(False, "no audit objective available")
    improved = [k for k, v in available.items() if v >= eta - _EPS]
    regressed = [k for k, v in available.items() if v < -tau - _EPS]
    if regressed:
        return Decision(False, f"{', '.join(regressed)} regressed by more than tau={tau:g} ({shown})")
    if not improved:
        return Decision(False, f"no objective improved by eta={eta:g} ({shown})")
    return Decision(True, f"{', '.join(improved)} improved by >= eta={eta:g}, none regressed "
                          f"beyond tau={tau:g} ({shown})")


def score_coupled_accept(proxy_incumbent: float | None, proxy_candidate: float | None,
                         eta: float) -> Decision:
    """SC-CoEvo: accept G' iff the current solver scores >= eta higher under G' rubrics."""
    if proxy_incumbent is None or proxy_candidate is None:
        return Decision(False, "solver score under the rubrics could not be read")
    gain = proxy_candidate - proxy_incumbent
    accept = gain >= eta - _EPS
    return Decision(accept, f"solver aggregate score {proxy_candidate:.3f} vs {proxy_incumbent:.3f} "
                            f"(gain {gain:+.3f}) {'>=' if accept else '<'} eta={eta:g} (score-coupled)")
