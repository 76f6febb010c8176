"""Outputs that copy their input: a critique that is y0 again, an answer that is its prompt.

An output that repeats what it was given is degenerate whatever it is paid: a critique that
copies the response it was asked to critique points at nothing, yet a judge that scores the
revision it leads to (the actor, given its own answer back, changes little and keeps what was
good) or the overlap with y0 can pay it more than a real critique, and GRPO then teaches the
critic to stop critiquing.

**Definition.** An output *copies* its inputs when at least `COPY_COVERAGE` of its words lie
inside runs of `COPY_NGRAM` consecutive words that also occur, in that order, in one of its
inputs (the answer y0, the prompt x, or the whole prompt it was asked with). Words are
lower-cased runs of letters and digits, so a copy with its punctuation, line breaks or
markdown changed is still a copy. Outputs of fewer than `COPY_NGRAM` words are never copies
(empty and too-short outputs are the other degeneracy statistics' business).

Two readings of it: `copy_statistics`, a training step's share of copies (and, with the
rewards, how often a copy was the best-paid completion of its group), for the monitor
(degeneracy.py); `critique_copies`, the copies among a run's stored GRPO rollouts with the
reward on copies beside the reward on real critiques, for summary.json and the run's warnings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from coevo.eval.stats import t_interval
from coevo.eval.metric_defs import MIN_ITEMS

#: Run length, in words, that counts as copied. Five: a critique quotes a phrase of the answer
#: it points at (two to four words, or a sentence inside its own words), and a five-word run
#: shared by two texts by chance is rare outside stock phrases, which never cover most of one.
COPY_NGRAM = 5
#: Share of the output's words inside copied runs that makes the output a copy: "mostly a
#: copy". A critique quoting the sentence it faults and then saying what is wrong stays well
#: below it; a copy with a sentence dropped, reordered or added at either end stays above.
COPY_COVERAGE = 0.8
#: GRPO rollouts are stored per stage under this suffix, each with `condition="grpo"`.
GRPO_STAGE_SUFFIX = "/grpo"
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The text's words: lower-cased runs of letters and digits."""
    return _WORD.findall(text.lower())


def _grams(tokens: Sequence[str], n: int = COPY_NGRAM) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def copied_share(output: str, inputs: Sequence[str | None]) -> float:
    """The share of `output`'s words inside a COPY_NGRAM-word run found in one of `inputs`
    (0 for an output shorter than a run)."""
    tokens = words(output)
    if len(tokens) < COPY_NGRAM:
        return 0.0
    found: set[tuple[str, ...]] = set()
    for text in inputs:
        if text:
            found |= _grams(words(text))
    covered = [False] * len(tokens)
    for i in range(len(tokens) - COPY_NGRAM + 1):
        if tuple(tokens[i:i + COPY_NGRAM]) in found:
            covered[i:i + COPY_NGRAM] = [True] * COPY_NGRAM
    return sum(covered) / len(tokens)


def is_copy(output: str, inputs: Sequence[str | None]) -> bool:
    """Whether `output` copies its `inputs` (the module's definition)."""
    return copied_share(output, inputs) >= COPY_COVERAGE


def copy_statistics(texts: Sequence[str], inputs: Sequence[Sequence[str | None]],
                    rewards: Sequence[float | None] | None = None) -> dict[str, float]:
    """A step's copy statistics: `copy_share`, the share of `texts` that copy their `inputs`
    (aligned); with `rewards`, over the groups of completions that share their inputs (a GRPO
    group) and hold both a copy and a real output (neither a copy nor empty),
    `copy_rewarded_share`, the share whose best-paid copy was paid more than every real
    output, and `copy_groups`, how many such groups."""
    if not texts or len(inputs) != len(texts):
        return {}
    copies = [is_copy(t, i) for t, i in zip(texts, inputs)]
    stats = {"copy_share": sum(copies) / len(copies)}
    if rewards is None or len(rewards) != len(texts):
        return stats
    groups: dict[tuple[str, ...], list[tuple[bool, float]]] = {}
    for text, given, copy, reward in zip(texts, inputs, copies, rewards):
        if reward is not None and (copy or words(text)):
            groups.setdefault(tuple(t or "" for t in given), []).append((copy, float(reward)))
    contrasted = rewarded = 0
    for members in groups.values():
        paid_copies = [r for c, r in members if c]
        paid_real = [r for c, r in members if not c]
        if paid_copies and paid_real:
            contrasted += 1
            rewarded += max(paid_copies) > max(paid_real)
    if contrasted:
        stats["copy_rewarded_share"] = rewarded / contrasted
        stats["copy_groups"] = float(contrasted)
    return stats


def mean_estimate(values: Sequence[float]) -> dict[str, float | int | None]:
    """{mean, n, lo, hi}: the Student-t 95 % interval only from MIN_ITEMS values up (the
    project's rule: fewer are too few to tell)."""
    values = [float(v) for v in values]
    if not values:
        return {"mean": None, "n": 0, "lo": None, "hi": None}
    if len(values) < MIN_ITEMS:
        return {"mean": sum(values) / len(values), "n": len(values), "lo": None, "hi": None}
    mean, low, high = t_interval(values)
    return {"mean": mean, "n": len(values), "lo": low, "hi": high}


def _reward(rollout: Any) -> float | None:
    """The GRPO reward a stored rollout was given (its judgment's `reward`, else its score)."""
    for judgment in rollout.judgments.values():
        value = judgment.reward if judgment.reward is not None else judgment.score
        if value is not None:
            return float(value)
    return None


def critique_copies(store: Any) -> dict[str, Any] | None:
    """The copies among the run's GRPO critiques (stages ending in `/grpo`): how many of how
    many, per stage, the reward on copies beside the reward on real critiques (neither copies
    nor empty), and the best-paid copy (its rollout id, stage, reward and what it copies).
    None when the run stored no GRPO critique."""
    rows = [row for stage, _ in store.rollout_stages() if stage.endswith(GRPO_STAGE_SUFFIX)
            for row in store.rollout_rows(stage)
            if row["rollout"].condition == "grpo" and row["rollout"].c is not None]
    if not rows:
        return None
    copies, real, by_stage = [], [], {}
    for row in rows:
        rollout = row["rollout"]
        copy = is_copy(rollout.c, [rollout.y0, rollout.x])
        counts = by_stage.setdefault(row["stage"], [0, 0])
        counts[0] += copy
        counts[1] += 1
        reward = _reward(rollout)
        if copy:
            copies.append((row, reward))
        elif words(rollout.c) and reward is not None:
            real.append(reward)
    paid = [(row, reward) for row, reward in copies if reward is not None]
    worst = max(paid, key=lambda pair: pair[1], default=None)
    return {"critiques": len(rows), "copies": len(copies),
            "by_stage": {stage: {"copies": k, "critiques": n} for stage, (k, n) in by_stage.items()},
            "reward_on_copies": mean_estimate([r for _, r in paid]),
            "reward_on_critiques": mean_estimate(real),
            "worst": None if worst is None else {
                "rollout_id": worst[0]["id"], "stage": worst[0]["stage"], "sample_id": worst[0]["rollout"].sample_id,
                "reward": worst[1], "copies": _source(worst[0]["rollout"])},
            "definition": f"a critique with at least {COPY_COVERAGE:.0%} of its words in {COPY_NGRAM}-word runs "
                          "found in y0 or x"}


def _source(rollout: Any) -> str:
    """What a copied critique copies: "y0", "x", or "x and y0" (only both together cover it)."""
    if is_copy(rollout.c, [rollout.y0]):
        return "y0"
    return "x" if is_copy(rollout.c, [rollout.x]) else "x and y0"
