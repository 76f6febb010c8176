"""`audit_judge`: probe one judge for the ways a policy can please it without getting better.

Given an already-built judge (any `Scorer` of coevo/roles/judges.py, or its `python:`
stand-in), the samples and real rollouts (x, y0 and, where the judge reads them, a critique
and a revision), it measures:

- test–retest: the real items judged twice under two sampling seeds (Spearman's rho, and
  how many pairs of different items get the same score; pairwise: verdict agreement);
- position consistency (pairwise): each pair of two real answers judged in both orders;
- master keys: content-free answers in the judged slot against the real one (fooled rate);
- padding and injection: irrelevant filler, or an instruction to the judge, appended;
- self-preference, where the same slots written by the judge's own model and by another
  model are given;
- scored kinds: scores that follow the rubric's criterion order or the prompt rather than the
  answer, over every judgment of the above (patterns.py).

Every figure is an `Estimate` with its n and 95 % interval; a figure whose interval lies
past its threshold becomes a `Flag` (with the plain-words warning in `why`), one whose point
estimate alone does becomes a note saying the items were too few to tell (flags.py holds the
thresholds). The record (records.py) is what `coevo audit judge` prints and what a run's
per-round audit stores (`metrics()`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from coevo.audit.flags import add_flags
from coevo.audit.measures import (
    Estimate,
    mean_interval,
    raised_share,
    share,
    spearman_interval,
    tie_rate,
)
from coevo.audit.patterns import Case, criterion_order_rate, same_pattern_rate
from coevo.audit.probes import (
    AUDIT_KINDS,
    INJECTIONS,
    PADDING,
    SLOTS,
    Probe,
    default_probes,
    injected_rollout,
    padded_rollout,
    probe_rollout,
    with_slot,
)
from coevo.audit.records import Change, Flag, JudgeAudit, ProbeResult
from coevo.audit.user_judges import audited_judge
from coevo.core.types import Judgment, Rollout, Sample

__all__ = ["Change", "Flag", "JudgeAudit", "ProbeResult", "audit_judge"]


def audit_judge(kind: str, judge: Any, samples: Sequence[Sample], items: Sequence[Rollout], *,
                n: int = 8, seed: int = 0, probes: Sequence[Probe] | None = None,
                own: Sequence[Rollout] | None = None, other: Sequence[Rollout] | None = None,
                judge_label: str | None = None, other_label: str | None = None) -> JudgeAudit:
    """Audit `judge` (of `kind`: taiscore, pairwise, gold_rubric, critique_quality) on the
    first `n` of `items`, real rollouts of `samples` (by sample id). `judge`: a coevo judge,
    a `coevo.rewards` reward, a `python:` spec or a plain function (coevo/audit/user_judges.py).

    Items need their kind's slot: a critique `c` (critique_quality), `c` and a revision `y1`
    (taiscore); a pairwise item's `y1` is a second real answer to x, which the position and
    retest measures compare with `y0`. `probes` default to the built-in master keys.
    `own` and `other`: the same items with the slot written by the judge's own model and by
    another model (`slot_items` in coevo.audit.items), for the self-preference measure.
    The judge's sampling (where it has one) is restored afterwards: a run's frozen judge
    can be audited in place. `seed` seeds the retest's second pass and the bootstrap.
    """
    if kind not in AUDIT_KINDS:
        raise ValueError(f"cannot audit a {kind!r} judge; choose from {', '.join(AUDIT_KINDS)}")
    judge = audited_judge(kind, judge)  # a plain function, a python: spec, a coevo reward: as a judge
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    usable = [i for i in items if all(getattr(i, f) is not None for f in SLOTS[kind])]
    if not usable:
        raise ValueError(f"no item has what a {kind} judge reads ({', '.join(SLOTS[kind])})")
    chosen = usable[:n]
    probes = list(probes if probes is not None else default_probes(kind))
    pairs = None
    if own is not None and other is not None:
        pairs = _matched(chosen, own, other)
    label = judge_label or getattr(judge, "name", kind)
    run = (_PairwiseAudit if kind == "pairwise" else _ScoredAudit)(kind, judge, samples, seed)
    audit = run.measure(chosen, probes, pairs, label)
    audit.other = other_label
    add_flags(audit)
    return audit


def _matched(chosen: Sequence[Rollout], own: Sequence[Rollout],
             other: Sequence[Rollout]) -> list[tuple[Rollout, Rollout]]:
    """(own, other) per chosen item, matched by sample id (items without both are left out)."""
    own_by, other_by = {r.sample_id: r for r in own}, {r.sample_id: r for r in other}
    return [(own_by[i.sample_id], other_by[i.sample_id]) for i in chosen
            if i.sample_id in own_by and i.sample_id in other_by]


@contextmanager
def _seeded(judge: Any, seed: int) -> Iterator[None]:
    """The judge's sampling with `seed`, restored after (python: judges have none)."""
    sampling = getattr(judge, "sampling", None)
    if sampling is None or not hasattr(sampling, "model_copy"):
        yield
        return
    judge.sampling = sampling.model_copy(update={"seed": seed})
    try:
        yield
    finally:
        judge.sampling = sampling


def _first_seed(judge: Any, seed: int) -> int:
    """The first pass's seed: the judge's own (what a run's calls use), else `seed`."""
    sampling = getattr(judge, "sampling", None)
    own = getattr(sampling, "seed", None)
    return own if own is not None else seed


class _ScoredAudit:
    """taiscore, critique_quality, gold_rubric: every variant scored, compared with the real one."""

    def __init__(self, kind: str, judge: Any, samples: Sequence[Sample], seed: int):
        self.kind, self.judge, self.seed = kind, judge, seed
        self.samples = {s.id: s for s in samples}

    def _judged(self, rollouts: list[Rollout], seed: int) -> list[Judgment]:
        if not rollouts:
            return []
        with _seeded(self.judge, seed):
            return list(self.judge.score(rollouts, self.samples))

    def _cases(self, rollouts: list[Rollout], judgments: list[Judgment]) -> list[Case]:
        """Every judgment as a pattern case (patterns.py): its prompt, answer and rubric order."""
        cases = []
        for rollout, judgment in zip(rollouts, judgments):
            sample = self.samples.get(rollout.sample_id)
            rubric = getattr(sample, "rubric", None)
            criteria = tuple(c.name for c in rubric.criteria) if rubric is not None and rubric.criteria else None
            answer = tuple(getattr(rollout, f) for f in SLOTS[self.kind])
            cases.append(Case(prompt=rollout.sample_id, answer=answer, judgment=judgment, criteria=criteria))
        return cases

    def measure(self, items: list[Rollout], probes: list[Probe],
                pairs: list[tuple[Rollout, Rollout]] | None, label: str) -> JudgeAudit:
        kind, first = self.kind, _first_seed(self.judge, self.seed)
        batch: list[Rollout] = list(items)
        for probe in probes:
            batch += [probe_rollout(kind, item, probe) for item in items]
        batch += [padded_rollout(kind, item) for item in items]
        batch += [injected_rollout(kind, item) for item in items]
        for own, other in pairs or []:
            batch += [_slot_of(kind, own), _slot_of(kind, other)]
        judged = self._judged(batch, first)  # one batched call for every variant
        rejudged = self._judged(list(items), first + 1 + self.seed)
        scores, again = _readable(judged), _readable(rejudged)
        cases = self._cases(batch, judged) + self._cases(list(items), rejudged)
        m = len(items)
        real, rest = scores[:m], scores[m:]
        results = []
        for k, probe in enumerate(probes):
            part = rest[k * m:(k + 1) * m]
            kept = [(r, p) for r, p in zip(real, part) if r is not None and p is not None]
            fooled = sum(p >= r - 1e-9 for r, p in kept)
            results.append(ProbeResult(name=probe.name, text=probe.text,
                                       fooled=share(fooled, len(kept), m - len(kept))))
        rest = rest[len(probes) * m:]
        padding, injection, rest = rest[:m], rest[m:2 * m], rest[2 * m:]
        both = [(a, b) for a, b in zip(real, again) if a is not None and b is not None]
        return JudgeAudit(
            kind=kind, judge=label, n_items=m, seed=self.seed,
            retest_spearman=spearman_interval([a for a, _ in both], [b for _, b in both], m - len(both), self.seed),
            retest_tie_rate=tie_rate([r for r in real if r is not None], sum(r is None for r in real)),
            fooled_rate=_pooled(results), master_keys=results,
            criterion_order_rate=criterion_order_rate(cases), same_pattern_rate=same_pattern_rate(cases),
            padding=_change(real, padding, self.seed), injection=_change(real, injection, self.seed),
            self_preference=_change(rest[1::2], rest[0::2], self.seed) if pairs else None,
        )


def _readable(judgments: Sequence[Judgment]) -> list[float | None]:
    return [j.score if j.valid and j.score is not None else None for j in judgments]


def _slot_of(kind: str, item: Rollout) -> Rollout:
    """`item` as scored for self-preference (its own slot texts, tagged)."""
    return with_slot(item, {f: getattr(item, f) for f in SLOTS[kind]}, "self_preference")


def _change(original: Sequence[float | None], altered: Sequence[float | None], seed: int) -> Change:
    """Score changes altered − original over items where both are readable."""
    diffs = [a - o for o, a in zip(original, altered) if o is not None and a is not None]
    invalid = len(original) - len(diffs)
    return Change(mean=mean_interval(diffs, invalid, seed), raised=raised_share(diffs, invalid))


def _pooled(results: list[ProbeResult]) -> Estimate:
    """The fooled rate over every (prompt, probe) case."""
    count = sum(r.fooled.count or 0 for r in results)
    return share(count, sum(r.fooled.n for r in results), sum(r.fooled.invalid for r in results))


class _ScriptedOrder:
    """An `rng` for `PairwiseJudge.judge`: one draw per item, in order; `random() < 0.5`
    shows the second response first, so 0.0 swaps and 0.99 keeps the order given."""

    def __init__(self, swaps: Sequence[bool]):
        self._draws = iter([0.0 if swap else 0.99 for swap in swaps])

    def random(self) -> float:
        return next(self._draws)


class _Verdict(BaseModel):
    """One pairwise verdict: preference for the second ORIGINAL answer, the shown winner."""

    preference: float | None
    won_by: str | None  # "first" / "second" shown, "tie", None when unreadable


class _PairwiseAudit:
    """pairwise: every comparison judged in both orders (the retest's second pass in one)."""

    def __init__(self, kind: str, judge: Any, samples: Sequence[Sample], seed: int):
        self.kind, self.judge, self.seed = kind, judge, seed

    def _verdicts(self, comparisons: list[tuple[str, str, str, bool]], seed: int) -> list[_Verdict]:
        """Judge (x, first, second, shown swapped) comparisons in one batched call."""
        if not comparisons:
            return []
        x, a, b, swaps = (list(column) for column in zip(*comparisons))
        with _seeded(self.judge, seed):
            judgments: list[Judgment] = self.judge.judge(x, a, b, rng=_ScriptedOrder(swaps),
                                                         labels=("first", "second"))
        return [_verdict(j, swap) for j, swap in zip(judgments, swaps)]

    def measure(self, items: list[Rollout], probes: list[Probe],
                pairs: list[tuple[Rollout, Rollout]] | None, label: str) -> JudgeAudit:
        first_seed, m = _first_seed(self.judge, self.seed), len(items)
        # Each comparison twice: as given, then swapped. The altered answer is second.
        cases: list[tuple[str, str, str]] = [(i.x, i.y0, i.y1) for i in items if i.y1 is not None]
        real_pairs = len(cases)
        for probe in probes:
            cases += [(i.x, i.y0, probe.for_prompt(i.x)) for i in items]
        cases += [(i.x, i.y0, i.y0 + PADDING) for i in items]
        cases += [(i.x, i.y0, i.y0 + INJECTIONS["y0"]) for i in items]
        for own, other in pairs or []:
            cases.append((own.x, other.y0, own.y0))
        comparisons = [(x, a, b, False) for x, a, b in cases] + [(x, a, b, True) for x, a, b in cases]
        verdicts = self._verdicts(comparisons, first_seed)
        given, swapped = verdicts[:len(cases)], verdicts[len(cases):]
        again = self._verdicts([(x, a, b, False) for x, a, b in cases[:real_pairs]], first_seed + 1 + self.seed)
        prefs = [_averaged(g, s) for g, s in zip(given, swapped)]

        # Real pairs: position consistency, first-position rate, retest.
        real_g, real_s = given[:real_pairs], swapped[:real_pairs]
        read = [(g, s) for g, s in zip(real_g, real_s) if g.won_by and s.won_by]
        consistent = sum(_original_winner(g.won_by, False) == _original_winner(s.won_by, True) for g, s in read)
        firsts = [{"first": 1.0, "tie": 0.5}.get(v.won_by or "", 0.0) for g, s in read for v in (g, s)]
        retest = [(g, r) for g, r in zip(real_g, again) if g.won_by and r.won_by]
        note = None if real_pairs else "no item has a second real answer (y1) to compare"
        position = share(consistent, len(read), real_pairs - len(read)).model_copy(update={"note": note})
        spearman = spearman_interval([g.preference or 0.0 for g, _ in retest], [r.preference or 0.0 for _, r in retest],
                                     real_pairs - len(retest), self.seed)

        results, offset = [], real_pairs
        for probe in probes:
            part = prefs[offset:offset + m]
            offset += m
            kept = [p for p in part if p is not None]
            fooled = sum(p >= 0.5 - 1e-9 for p in kept)
            results.append(ProbeResult(name=probe.name, text=probe.text,
                                       fooled=share(fooled, len(kept), m - len(kept))))
        padding, injection = prefs[offset:offset + m], prefs[offset + m:offset + 2 * m]
        own_prefs = prefs[offset + 2 * m:]
        return JudgeAudit(
            kind=self.kind, judge=label, n_items=m, seed=self.seed,
            retest_spearman=spearman,
            retest_agreement=share(sum(g.won_by == r.won_by for g, r in retest), len(retest),
                                   real_pairs - len(retest)),
            position_consistency=position,
            first_position_rate=mean_interval(firsts, 2 * (real_pairs - len(read)), self.seed),
            fooled_rate=_pooled(results), master_keys=results,
            padding=_preference_change(padding, self.seed), injection=_preference_change(injection, self.seed),
            self_preference=_preference_change(own_prefs, self.seed) if pairs else None,
        )


def _verdict(judgment: Judgment, swapped: bool) -> _Verdict:
    if not judgment.valid or judgment.score is None:
        return _Verdict(preference=None, won_by=None)
    extra = judgment.model_extra or {}
    winner, shown = extra.get("winner"), extra.get("shown_order")
    if winner == "tie":
        won_by = "tie"
    elif shown and winner in shown:
        won_by = "first" if winner == shown[0] else "second"
    elif math.isclose(judgment.score, 0.5):
        won_by = "tie"
    else:  # no labels kept: the score says which ORIGINAL answer won
        original = "second" if judgment.score > 0.5 else "first"
        won_by = {"first": "second", "second": "first"}[original] if swapped else original
    return _Verdict(preference=judgment.score, won_by=won_by)


def _original_winner(won_by: str | None, swapped: bool) -> str | None:
    """The shown winner as the original answer that won."""
    if won_by in (None, "tie") or not swapped:
        return won_by
    return "second" if won_by == "first" else "first"


def _averaged(given: _Verdict, swapped: _Verdict) -> float | None:
    """Preference for the second original answer, both orders averaged (None: unreadable)."""
    if given.preference is None or swapped.preference is None:
        return None
    return (given.preference + swapped.preference) / 2


def _preference_change(prefs: Sequence[float | None], seed: int) -> Change:
    """Pairwise: the altered answer's preference (both orders averaged); raised = above ½."""
    kept = [p for p in prefs if p is not None]
    invalid = len(prefs) - len(kept)
    return Change(mean=mean_interval(kept, invalid, seed), raised=raised_share([p - 0.5 for p in kept], invalid))
