"""Warnings about numbers that look more certain than they are:
  - headline numbers from fewer items than an interval needs ("too few to tell");
  - generations cut off at their token limit (per role, naming the stages; the critic's GRPO
    samples from TRL's clipped ratio): a judge then scores text that ends mid-sentence;
  - training stages so short that their weight change only shows Adam's first steps, which move
    every weight by about the learning rate whatever the reward meant;
and the checks cheap enough for the runs list too (`coevo.view.runinfo.run_marks`): a judge mostly
unreadable, a judge that failed the run's audit, most outputs cut off (`cut_off_at_a_glance`).
`coevo.view.warnings.run_warnings` adds these to the run page, report.html and `coevo show`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from coevo.eval.metric_defs import MIN_ITEMS, describe, latest_estimates

from coevo.view.findings import Finding

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore

#: Above this share of a role's outputs cut at their token limit, its texts are not what the
#: judges should be scoring (a revision that ends "They both" is scored as finished).
CUT_OFF_SHARE = 0.25
#: Above this share of unreadable judgments a judge's numbers are mostly noise.
INVALID_RATE = 0.2
#: Training stages of at most this many optimizer steps: Adam's bias-corrected first steps
#: move each weight by about the learning rate, whatever direction the reward asked for.
FEW_STEPS = 3
#: A largest weight change within this many learning rates per step is what those steps do
#: to any gradient: it shows training ran, not that it learned.
ADAM_STEP_MULTIPLE = 4.0


def invalid_judgments(store: RunStore) -> list[Finding]:
    """Judges whose outputs could not be read more than INVALID_RATE of the time."""
    out = []
    for judge, counts in sorted(store.judgment_counts().items()):
        total = counts["valid"] + counts["invalid"]
        if total and counts["invalid"] / total > INVALID_RATE:
            out.append(Finding(kind="invalid-judgments", text=(
                f"judge {judge!r}: {counts['invalid']} of {total} judgments ({counts['invalid'] / total:.0%}) "
                "could not be read, so its scores rest on the rest only. A small judge model is noisy: point "
                "the judge role at a larger model, or give it more max_tokens.")))
    return out


def judge_audit(store: RunStore, metrics: list[dict[str, Any]]) -> list[Finding]:
    """Per judge the run audited, a warning when its latest audited round failed a
    check: how many, the first flag in words, what it means (view/audit.py)."""
    from coevo.audit.in_run import run_records
    from coevo.view.audit import audit_warnings, is_audit_metric

    audited = [m for m in metrics if is_audit_metric(m["name"])]
    if not audited:
        return []
    return [Finding(kind="judge-audit", text=text) for text in audit_warnings(audited, run_records(store))]


def _finding(kind: str, text: str) -> Finding:
    return Finding(kind=kind, text=text)


def too_few_items(metrics: list[dict[str, Any]], headline: list[str]) -> list[Finding]:
    """One warning naming the headline numbers measured on fewer than MIN_ITEMS items."""
    estimates = latest_estimates(metrics, headline)
    few = [(name, e) for name, e in estimates.items() if e.too_few]
    if not few:
        return []
    listed = ", ".join(f"{describe(name).title} ({name}, n={e.n})" for name, e in few)
    return [_finding("small-n", (
        f"{listed}: measured on fewer than {MIN_ITEMS} items, so no interval is shown: a difference between "
        "rounds or runs of this size can be chance alone. Evaluate on more held-out items "
        "(the config's data sizes) before reading a gain from these numbers."))]


def cut_off_generations(store: RunStore, metrics: list[dict[str, Any]]) -> list[Finding]:
    """Per role, the share of its model calls that stopped at their token limit, with the
    stages where they did (the run's call records; calls of older runs, which record no role,
    grouped by their limit), and per GRPO stage TRL's clipped ratio of the critic's samples."""
    from coevo.view.calls import call_info, cut_off_shares

    by_role: dict[str, list[dict[str, Any]]] = {}
    for group in cut_off_shares(store):
        if group["role"] is not None or group["stage"] is not None:  # older runs' calls: below
            by_role.setdefault(str(group["role"] or "a role"), []).append(group)
    out = [finding for role, groups in by_role.items() for finding in _cut_off_finding(role, groups)]
    untagged: Counter[int | None] = Counter()
    untagged_cut: Counter[int | None] = Counter()
    for call in store.cached_calls(limit=None, untagged=True):
        info = call_info(call)
        untagged[info.max_tokens] += 1
        untagged_cut[info.max_tokens] += bool(info.cut_off)
    for limit, n in untagged.items():
        label = f"calls with a {limit}-token limit" if limit else "calls with no known limit"
        out += _cut_off_finding(f"{label} (this run records no role per call)",
                                [{"stage": None, "n": n, "cut_off": untagged_cut[limit]}])
    for m in metrics:
        if m["name"] == "grpo_clipped_ratio" and m["value"] is not None and m["value"] >= CUT_OFF_SHARE:
            out.append(_finding("cut-off", (
                f"{m['stage']} round {m['round']}: {m['value']:.0%} of the critic's GRPO samples stopped at their "
                "token limit (TRL's clipped ratio): the reward scored unfinished critiques. Raise the critic's "
                "max_tokens, or ask for shorter critiques in its prompt.")))
    return out


def cut_off_at_a_glance(store: RunStore) -> list[Finding]:
    """The runs list's cheap form of `cut_off_generations`: one warning when CUT_OFF_SHARE of
    all the run's model outputs stopped at their token limit, naming the roles they came from.
    It reads the cut-off calls only (and counts the rest), as a list of many runs must."""
    from coevo.view.calls import call_info

    total = store.cache_size()
    if not total:
        return []
    cut = Counter(call_info(call).role or "calls of no recorded role"
                  for call in store.cached_calls(limit=None, cut_off=True))
    n = sum(cut.values())
    if n / total < CUT_OFF_SHARE:
        return []
    roles = ", ".join(f"{role} {count}" for role, count in cut.most_common())
    return [_finding("cut-off", (
        f"{n} of {total} model outputs ({n / total:.0%}) stopped at their token limit ({roles}): the judges "
        "scored unfinished texts. See the run page's warnings and the Samples page's \"cut off\" filter."))]


def _cut_off_finding(who: str, groups: list[dict[str, Any]]) -> list[Finding]:
    """One warning for `who` when CUT_OFF_SHARE of its outputs over all `groups` (per stage:
    {stage, n, cut_off}) were cut, naming the stages where any were."""
    n, cut = sum(g["n"] for g in groups), sum(g["cut_off"] for g in groups)
    if not n or cut / n < CUT_OFF_SHARE:
        return []
    stages = [f"{g['stage']} {g['cut_off']}/{g['n']}" for g in groups if g["cut_off"] and g["stage"]]
    where = f" (by stage: {', '.join(stages)})" if stages else ""
    return [_finding("cut-off", (
        f"{who}: {cut} of {n} outputs ({cut / n:.0%}) stopped at their token limit{where}, so they end mid-text "
        "and the judges scored unfinished answers. Raise this role's max_tokens (its sampling block) or ask for "
        "shorter outputs; the Samples page's \"cut off\" filter lists them."))]


def adam_first_steps(stage_results: dict[str, Any]) -> list[Finding]:
    """Training stages of at most FEW_STEPS steps whose largest weight change is within what
    Adam's first steps do to any gradient (ADAM_STEP_MULTIPLE times the learning rate of each
    step). The rates are each step's as TRL logged it: a scheduled rate differs per step, so one
    rate scaled by the step count would name a rate the stage never used."""
    out = []
    for stage, result in stage_results.items():
        if not isinstance(result, dict):
            continue
        steps, delta = result.get("steps"), (result.get("metrics") or {}).get("weight_delta")
        if not isinstance(steps, int) or not 0 < steps <= FEW_STEPS or not delta:
            continue
        rates = step_learning_rates(result)
        # Without a learning rate there is no yardstick for "about one Adam step": no warning.
        if not rates:
            continue
        # Steps whose rate was not logged are taken at the largest logged one (an upper bound).
        yardstick = sum(rate for _, rate in rates) + max(0, steps - len(rates)) * max(rate for _, rate in rates)
        if yardstick <= 0 or delta > ADAM_STEP_MULTIPLE * yardstick:
            continue
        named = ", ".join(f"{rate:g}" if step is None else f"{rate:g} (step {step})" for step, rate in rates)
        which = "the learning rate TRL logged at each step" if rates[0][0] is not None else "its last logged " \
            "learning rate"
        out.append(_finding("adam-first-step", (
            f"{stage}: {steps} optimizer step{'s' if steps != 1 else ''}, largest absolute weight change "
            f"{delta:.2g}; {which}: {named}. Adam's first steps move every weight by about that step's learning "
            "rate whatever the reward meant, so this shows that training ran, not that the policy learned what its "
            "reward asks: judge that from held-out metrics over more steps (benchmarks/learning_curves.py).")))
    return out


def step_learning_rates(result: dict[str, Any]) -> list[tuple[int | None, float]]:
    """[(step, learning rate)] as the stage's TRL history logged them; [(None, rate)] from its
    final metrics where it kept no history; [] where neither holds a positive rate."""
    rates = []
    for i, entry in enumerate(result.get("history") or []):
        if isinstance(entry, dict) and "train_runtime" not in entry:
            rate = entry.get("learning_rate")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate >= 0:
                rates.append((int(entry.get("step", i + 1)), float(rate)))
    if rates and any(rate > 0 for _, rate in rates):
        return rates
    rate = (result.get("metrics") or {}).get("learning_rate")
    return [(None, float(rate))] if isinstance(rate, (int, float)) and rate > 0 else []
