"""What changed while a stage trained, as the story card reads it (view/story.py): per stage
the reward-hacking monitor watched, the training reward over its last half of steps against
its first half, and each anchor at its last check against its first (paired by held-out item).

These are the numbers a run of a single round can show: its held-out metrics have two points,
its training reward and anchors have a curve. Each is read as `changes.read_change` reads a
headline metric: too few items on either side is said in words, else the interval decides.
"""

from __future__ import annotations

from typing import Any

from coevo.eval.metric_defs import MIN_ITEMS, estimate_text
from coevo.view.anchors import anchor_words
from coevo.view.changes import Change, Tone, interval_reading

#: What the trained role's reward is, by the monitored stage's kind.
REWARD_TITLE = "Training reward (the reward its GRPO stage optimised)"


def monitor_changes(monitor: dict[str, Any] | None) -> list[Change]:
    """The reward's and the anchors' changes of every monitored stage (summary.json's
    `monitor`), the reward first."""
    out: list[Change] = []
    for stage, report in ((monitor or {}).get("stages") or {}).items():
        if (reward := report.get("reward_change")) is not None:
            out.append(_reward_change(stage, reward))
        for spec, change in (report.get("anchor_changes") or {}).items():
            out.append(_anchor_change(stage, spec, change))
    return out


def _reward_change(stage: str, c: dict[str, Any]) -> Change:
    first_steps, last_steps = c["first_steps"], c["last_steps"]
    n = min(c["first_n"], c["last_n"])
    difference, reading, tone = _read(c, n, "completions")
    return Change(name="monitor_reward", title=REWARD_TITLE,
                  definition="The mean reward of the stage's completions over its first half of optimizer steps and "
                             "over its last half; the difference's interval is Welch's (normal).",
                  stage=stage, first=f"steps {_span(first_steps)}: {estimate_text(c['first'], n=c['first_n'])}",
                  last=f"steps {_span(last_steps)}: {estimate_text(c['last'], n=c['last_n'])}", n=c["last_n"],
                  difference=difference, reading=reading, tone=tone)


def _anchor_change(stage: str, spec: str, c: dict[str, Any]) -> Change:
    words = anchor_words(spec)
    difference, reading, tone = _read(c, c["n"], "held-out items")
    return Change(name=f"monitor_anchor:{spec}", title=f"Monitor anchor: {words['title']}",
                  definition=f"{words['about']} Measured on the same held-out prompts at the stage's first check and "
                             "its last; the difference is paired by prompt (bootstrap interval).",
                  stage=stage, first=f"step {c['first_step']}: {estimate_text(c['first'], n=c['n'])}",
                  last=f"step {c['last_step']}: {estimate_text(c['last'], n=c['n'])}", n=c["n"],
                  difference=difference, reading=reading, tone=tone)


def _read(c: dict[str, Any], n: int, unit: str) -> tuple[str, str, Tone]:
    if n < MIN_ITEMS:
        return "", f"too few to tell: {n} {unit} a side, and a change needs {MIN_ITEMS} or more", "too-few"
    low, high = c["ci"]
    return (estimate_text(c["gain"], low, high, c["n"], signed=True), *interval_reading(low, high))


def _span(steps: list[int]) -> str:
    return str(steps[0]) if steps[0] == steps[1] else f"{steps[0]}–{steps[1]}"
