"""What an annotation page shows beside the two texts: which of them stopped at its token limit
(a reader must know a text is unfinished, or they judge its cut-off ending as the writer's
choice), and at the end of a batch, how the annotator's labels agree with the judge's verdicts
on the same pairs, with its n and an interval only from MIN_ITEMS pairs or more.

Neither names a side: a text is marked where it is shown, and the agreement is a count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coevo.view.annotate_pairs import Pair

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore
    from coevo.view.annotate_conditions import ComparisonSpec


def _field(pair: Pair, candidate: str) -> str:
    """The rollout field a candidate's text is (as calls.cut_off_texts names them)."""
    if pair.kind == "revision":
        return candidate  # y0 or y1
    if pair.kind == "critique":
        return "c"
    return "y0"  # vs_round0, vs_condition: each side is a round's or a condition's first answer


def cut_texts(store: RunStore, kind: str, spec: ComparisonSpec | None = None) -> set[tuple[str, str]]:
    """The (field, text) pairs of the texts cut off at their token limit that a batch of `kind`
    may show: the run's, and for comparisons of conditions with another run, that run's too."""
    from coevo.view.calls import cut_off_texts

    found = cut_off_texts(store)
    if kind == "vs_condition" and spec is not None and spec.against is not None:
        from coevo.rundir.store import RunStore

        other = RunStore(spec.against, read_only=True)
        try:
            found |= cut_off_texts(other)
        finally:
            other.close()
    return found


def cut_off_sides(pair: Pair, cut: set[tuple[str, str]]) -> dict[str, bool]:
    """{candidate: whether its text came from a call that stopped at its token limit}."""
    out = {}
    for candidate, text in zip(pair.candidates, pair.texts):
        text = text.strip()
        out[candidate] = bool(text) and ((_field(pair, candidate), text) in cut or ("any", text) in cut)
    return out


@dataclass
class BatchAgreement:
    """An annotator's labels of a batch against the judge's verdicts on the same pairs:
    `text` says it with its n (and an interval from MIN_ITEMS pairs on), `ties` what was left out."""

    judge: str | None
    n_pairs: int
    n_agree: int
    n_tied: int
    n_margin_ties: int
    tie_margin: float
    agreement: float | None
    text: str
    ties: str


def batch_agreement(records: dict[str, dict[str, Any]], pairs: list[Pair]) -> BatchAgreement | None:
    """The agreement of the labels `records` (pair key -> label record) with the judge that
    scored most of their pairs (annotate_export.rank_judges' choice, the judge.jsonl an export
    writes), as `coevo eval agreement` measures it (a judge's share within its margin of 0.5 is
    a tie); None where no judge scored any of the labelled pairs."""
    from coevo.eval.agreement import pairwise_agreement
    from coevo.eval.metric_defs import estimate_text
    from coevo.view.annotate_export import rank_judges

    labelled = [p for p in pairs if p.key in records]
    counts: dict[str, int] = {}
    for pair in labelled:
        for name in pair.judges:
            counts[name] = counts.get(name, 0) + 1
    ranked = rank_judges(counts)
    if not ranked:
        return None
    judge = ranked[0]
    human: dict[str, dict[str, float]] = {}
    scores: dict[str, dict[str, float]] = {}
    for pair in labelled:
        winner = records[pair.key]["winner"]
        human[pair.key] = {c: 0.5 if winner == "tie" else float(winner == c) for c in pair.candidates}
        given = {c: s for c, s in pair.judges.get(judge, {}).items() if s is not None}
        if len(given) == 2:
            scores[pair.key] = given
    found = pairwise_agreement(human, scores)
    text = (estimate_text(found.agreement, found.agreement_lo, found.agreement_hi, found.n_pairs)
            if found.agreement is not None else "none (n=0: no pair both you and the judge decided)")
    unscored = len(labelled) - len(scores)
    ties = (f"{found.n_tied} pair{'s' if found.n_tied != 1 else ''} tied by you or the judge left out "
            f"({found.n_margin_ties} of them the judge's share within ±{found.tie_margin:g} of 0.5)"
            + (f"; {unscored} the judge could not score" if unscored else ""))
    return BatchAgreement(judge=judge, n_pairs=found.n_pairs, n_agree=found.n_agree, n_tied=found.n_tied,
                          n_margin_ties=found.n_margin_ties, tie_margin=found.tie_margin,
                          agreement=found.agreement, text=text, ties=ties)
