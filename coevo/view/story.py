"""A run's story, told before its details: what ran, what changed, what to trust, and what to
run next. The run page and report.html show it as a card at the top; `Story.lines()` is the
same story as plain text, for the console.

- **What ran**: the rounds measured, the training stages with their steps, the DPO pairs, the
  held-out items and the rollouts saved.
- **What changed**: each headline metric (runinfo.HEADLINE_METRICS) from its first to its last
  round, and each judge-audit measure that failed (view/changes.py).
- **What to trust**: the run's warnings split into this run's settings and findings
  (`Finding.about`, view/findings.py).
- **What to run next**: the run's own `next_steps` (store meta, a list of strings), else a
  line per algorithm: plan the paper's config, then what the settings warnings ask for.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from coevo.rundir.store import RunStore, stage_round
from coevo.view.changes import Change, failed_audit_changes, headline_changes
from coevo.view.findings import Finding, split_findings
from coevo.view.training_changes import monitor_changes

#: Headline rows the card shows at most (the rounds tables have the rest).
MAX_CHANGES = 8
#: Beside the runs list's headline metrics, the held-out gold each loop logs per round where it
#: has none of those (DecoEvo's diagnostic gold score).
STORY_METRICS = ("diag_gold",)
#: Headline metrics that are not measured on held-out items (their n is not the items').
NOT_HELD_OUT = ("reward_mean", "invalid_judgment_rate")
#: Training stages listed one by one; past this many they are counted by kind.
STAGES_LISTED = 4
#: Each algorithm's paper config (examples/): what a run of the paper's settings would be.
PAPER_CONFIGS = {"taiscore": "examples/taiscore_full.yaml", "rlac": "examples/rlac_bio_full.yaml",
                 "decoevo": "examples/decoevo_full.yaml", "scaling": "examples/scaling_full.yaml",
                 "controls": "examples/controls.yaml", "refine": "examples/refine.yaml"}
#: What a settings warning asks of the next run.
SETTINGS_NEXT = {
    "small-n": "Evaluate on more held-out items (the config's evaluation / data sizes): with fewer than 5 no "
               "change can be told from chance.",
    "adam-first-step": "Train for more steps (grpo.max_steps / dpo.max_steps): a stage of a step or two shows "
                       "that training ran, not what it learned.",
    "cut-off": "Raise the cut-off role's max_tokens (its sampling block), or ask it for shorter outputs.",
}


class Story(BaseModel):
    """What `run_story` finds: the run page's card and `lines()` for the console."""

    algorithm: str
    ran: list[str] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    settings: list[Finding] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    next_steps: list[str] = Field(default_factory=list)
    #: Whether `next_steps` are the run's own (store meta) rather than this module's defaults.
    next_from_run: bool = False
    #: Headline rows left out past MAX_CHANGES.
    more_changes: int = 0

    def lines(self) -> list[str]:
        """The story as plain-text lines, in the card's order."""
        out = ["What ran:", *(f"  {line}" for line in self.ran), "What changed:"]
        for c in self.changes:
            difference = f"; difference {c.difference}" if c.difference else ""
            first = c.first if c.first_round is None else f"round {c.first_round} {c.first}"
            last = c.last if c.last_round is None else f"round {c.last_round} {c.last}"
            moved = first if first == last else f"{first} -> {last}"  # an audit measure: one round
            out.append(f"  {c.title} ({c.stage}): {moved}{difference}: {c.reading}")
        if self.more_changes:
            out.append(f"  ({self.more_changes} more in the rounds tables)")
        if not self.changes:
            out.append("  no headline metric was logged")
        out.append("What to trust:")
        for label, found in (("this run's settings", self.settings), ("findings", self.findings)):
            out += [f"  {label}: {f.kind}: {f.text}" for f in found]
        if not (self.settings or self.findings):
            out.append("  no warning sign found")
        return [*out, "What to run next:", *(f"  {step}" for step in self.next_steps)]


def run_story(store: RunStore, summary: dict[str, Any], *, warnings: list[Finding] | None = None,
              results: dict[str, Any] | None = None, pairs: int | None = None,
              rollouts: int | None = None, round_label: str = "round") -> Story:
    """The story of the run in `store` (`summary`: its summary.json). `warnings`, `results`
    (the training stages' results), `pairs` (how many DPO pairs it kept) and `rollouts` (how
    many it saved): what the caller read already; read here where not given. `round_label`:
    what the store's round column counts (DecoEvo's inner steps)."""
    from coevo.view.runinfo import HEADLINE_METRICS, read_algorithm

    metrics = store.metrics()
    if warnings is None or results is None:
        from coevo.view.warnings import run_warnings, training_results

        logs = store.training_logs()
        results = training_results(store, logs) if results is None else results
        warnings = run_warnings(store, stage_results=results, logs=logs) if warnings is None else warnings
    algorithm = read_algorithm(store.run_dir)
    headline = headline_changes(metrics, [*HEADLINE_METRICS, *STORY_METRICS])
    # A stage's curve first: one round gives each held-out metric two points, a training
    # stage gives its reward and anchors a curve (and says more of the reward than its mean).
    training = monitor_changes(summary.get("monitor"))
    if any(c.name == "monitor_reward" for c in training):
        headline = [c for c in headline if c.name != "reward_mean"]
    # A number logged in one round has no change to read; the rounds tables keep it.
    headline = [c for c in headline if c.tone != "once"]
    changes = training + headline[:MAX_CHANGES] + failed_audit_changes(metrics)
    settings, findings = split_findings(warnings)
    own = store.get_meta("next_steps")
    own_steps = [str(s) for s in own if str(s).strip()] if isinstance(own, list) else []
    items = max((c.n for c in headline if c.n is not None and c.name not in NOT_HELD_OUT), default=None)
    if rollouts is None:
        rollouts = sum(n for _, n in store.rollout_stages())
    ran = ran_lines(metrics, results, summary, pairs=pairs, rollouts=rollouts, items=items, round_label=round_label)
    return Story(algorithm=algorithm, changes=changes, settings=settings, findings=findings, ran=ran,
                 next_steps=own_steps or next_steps(algorithm, store.get_meta("config", {}) or {}, settings),
                 next_from_run=bool(own_steps), more_changes=max(0, len(headline) - MAX_CHANGES))


def ran_lines(metrics: list[dict[str, Any]], results: dict[str, Any], summary: dict[str, Any], *,
              pairs: int | None, rollouts: int, items: int | None, round_label: str = "round") -> list[str]:
    """What ran, a line per kind of thing: rounds, training stages, pairs, items, rollouts, calls."""
    rounds = sorted({m["round"] for m in metrics if m["round"] is not None})
    out = []
    if rounds:
        out.append(f"{len(rounds)} {round_label}s measured ({rounds[0]}–{rounds[-1]})" if len(rounds) > 1
                   else f"1 {round_label} measured ({round_label} {rounds[0]})")
    out.append(_stages_line(results))
    if pairs:
        out.append(f"{pairs} DPO pair{'s' * (pairs != 1)} trained on")
    if items:
        out.append(f"{items} held-out item{'s' * (items != 1)} per measured {round_label} (the headline numbers' n)")
    calls = ((summary.get("cost") or {}).get("total") or {}).get("calls")
    out.append(f"{rollouts} rollout{'s' * (rollouts != 1)} saved"
               + (f", {calls} model completion{'s' * (calls != 1)}" if isinstance(calls, int) else ""))
    return out


def _stages_line(results: dict[str, Any]) -> str:
    """The training stages: each with its kind, round and steps, or counted by kind when many."""
    stages = [(name, r) for name, r in results.items() if isinstance(r, dict)]
    if not stages:
        return "no training stage (nothing was trained, or no stage finished)"
    if len(stages) <= STAGES_LISTED:
        listed = ", ".join(f"{name.rsplit('/', 1)[-1]} {(r.get('kind') or 'training').upper()}"
                           f"{_round_words(name, r)}: {r.get('steps', '?')} step{'s' * (r.get('steps') != 1)}"
                           for name, r in stages)
        return f"{len(stages)} training stage{'s' * (len(stages) != 1)}: {listed}"
    kinds = Counter((r.get("kind") or "training").upper() for _, r in stages)
    steps = sum(r.get("steps") or 0 for _, r in stages)
    counted = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    return f"{len(stages)} training stages ({counted}), {steps} optimizer steps in all"


def _round_words(name: str, result: dict[str, Any]) -> str:
    r = stage_round(name, result.get("round"))
    return f" round {r}" if r is not None else ""


def next_steps(algorithm: str, config: dict[str, Any], settings: list[Finding]) -> list[str]:
    """The default next steps: the paper's config planned, then run, then what each kind of
    settings warning asks for (SETTINGS_NEXT)."""
    paper = PAPER_CONFIGS.get(algorithm)
    if algorithm == "rlac" and config.get("task") == "code":
        paper = "examples/rlac_code_full.yaml"
    out = []
    if paper:
        out += [f"coevo plan {paper}", f"coevo run {paper} --out runs/{algorithm}_full"]
    for kind in dict.fromkeys(f.kind for f in settings):
        if kind in SETTINGS_NEXT:
            out.append(SETTINGS_NEXT[kind])
    return out or ["coevo runs RUNS --compare: set this run beside another of the same algorithm"]
