"""DecoEvo's acceptance rules as pure functions: the solver gate (margin delta) and the
margin from the gate's measured noise, the Pareto rule on the audits (eta, tau), the
score-coupled rule of SC-CoEvo, near-tie selection, and the form a skill must keep."""

from __future__ import annotations

import re
import statistics
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


# ====================================================================== a rewrite is still a skill
#: Verbs a skill's instructions open with ("Read the task ...", "Turn each requirement ...").
INSTRUCTION_VERBS = frozenset("""
    add address adjust aim answer ask avoid be begin break check choose cite close compare conclude
    consider count cover cut define describe do don't emphasise emphasize end ensure expand explain
    find finish focus follow format give grade group highlight identify include introduce keep lead
    let limit list look make mark match meet mention name number open organise organize penalise
    penalize phrase plan prefer prioritise prioritize put quote read re-read reread remove repeat
    require respect reward score separate shorten show spell split start state stay stop structure
    summarise summarize tailor tell think treat turn use verify watch weight write
""".split())
#: Words that make any sentence an instruction, wherever they stand.
DIRECTIVES = ("must", "should", "always", "never", "do not", "don't", "make sure", "avoid")
_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")
_CLAUSE_BREAK = re.compile(r"[.!?;:\n]+")
_LEADER = re.compile(r"^[\s\-*•\d.)(]+")  # bullet or number before an item's first word


def instructs(text: str) -> bool:
    """Whether some sentence of `text` is an instruction: it opens with an instruction verb
    (after any bullet or number) or uses a directive (must, should, always, never, avoid ...)."""
    lowered = f" {' '.join(text.lower().split())} "
    if any(f" {d} " in lowered for d in DIRECTIVES):
        return True
    for clause in _CLAUSE_BREAK.split(text):
        words = _WORD.findall(_LEADER.sub("", clause))
        if words and words[0].lower() in INSTRUCTION_VERBS:
            return True
    return False


def skill_form(text: str, min_words: int) -> Decision | None:
    """None when `text` still reads as a skill; otherwise the refusal, with why.

    A skill instructs: it has at least `min_words` words (a title such as "Project Manager
    Issues" instructs nothing) and some sentence that instructs (`instructs`). Checked before
    any gate, the same for every method, so a refused rewrite costs no gate call.
    """
    words = len(_WORD.findall(text))
    if words < min_words:
        return Decision(False, f"refused by the skill-form audit: {words} words, under the {min_words} a skill "
                               f"needs to instruct anything ({text[:80]!r})",
                        {"skill_form": "too_short", "skill_words": words})
    if not instructs(text):
        return Decision(False, "refused by the skill-form audit: no sentence instructs (none opens with an "
                               "instruction verb or says must / should / always / never / avoid)",
                        {"skill_form": "no_instruction", "skill_words": words})
    return None


# ====================================================================== the margin from the noise
def noise_delta(means: list[float], k: float = 2.0, floor: float = 0.01) -> dict[str, Any]:
    """The solver gate's margin from its measured noise.

    `means` are one skill's gate scores (mean over the gate questions) under independent
    sampling seeds. The gain between two identical skills is the difference of two such
    means, so its sd is sqrt(2) times theirs (over all pairs of draws, the mean squared
    difference is exactly twice their sample variance). delta = max(k * sd, floor): k sd
    keeps a candidate that differs only by sampling from passing, and the floor keeps a
    gate whose scores did not move at all from accepting every tie.
    """
    if len(means) < 2:
        raise ValueError(f"the gate's noise needs at least 2 draws, got {len(means)}")
    sd = statistics.stdev(means) * 2 ** 0.5
    gains = [b - a for i, a in enumerate(means) for b in means[i + 1:]]
    return {"draw_means": list(means), "gains": gains, "gain_sd": sd, "k": k, "floor": floor,
            "delta": max(k * sd, floor)}
