"""What every metric a run logs means: one registry, used by the run page, the runs list, the
compare page, `coevo show` and the console tables, so a number reads the same everywhere.

A metric's definition says what it measures in words, its unit and scale (a rate lies on
[0, 1], a 1–10 judge score on [1, 10]), and whether it is an estimate from a sample (then it
is shown with its n and a 95 % interval, or "too few to tell"). Its n and interval are read
from the metrics logged beside it (`name_n`, `name_lo`, `name_hi`, and the older count names
in `N_FROM`); a rate logged with its n but no interval gets a Wilson interval here.

`coevo metrics` prints this registry (`describe` each name).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel

#: Fewer items than this and an interval says nothing useful: shown as "too few to tell".
MIN_ITEMS = 5

Kind = Literal["rate", "score", "delta", "mean", "count", "seconds", "memory", "loss", "training", "other"]


class MetricDef(BaseModel):
    """One metric's meaning: a title in words, a one-sentence definition, its unit and scale."""

    name: str
    title: str
    definition: str
    unit: str = ""
    #: The scale's ends (None: open); a plot's axis spans at least this range's relevant part.
    low: float | None = None
    high: float | None = None
    kind: Kind = "other"
    #: A sample estimate (of a mean or a share over items): shown with n and an interval.
    estimate: bool = False

    @property
    def axis_label(self) -> str:
        """`unit (low–high)` for a plot's y axis, e.g. "share of pairs (0–1)"."""
        if self.low is None or self.high is None:
            return self.unit or self.title
        # "0–1", but "−9 to 9": a minus sign beside a range dash reads as one mark.
        joined = " to " if self.low < 0 else "–"
        scale = f" ({_short(self.low)}{joined}{_short(self.high)})"
        return f"{self.unit or self.title}{scale}"


class Estimate(BaseModel):
    """A logged value with what is known of its precision."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int | None = None

    @property
    def too_few(self) -> bool:
        return self.n is not None and self.n < MIN_ITEMS

    def text(self, digits: int = 3) -> str:
        return estimate_text(self.value, self.low, self.high, self.n, digits)


def _rate(title: str, definition: str, unit: str = "share (0–1)") -> dict:
    return {"title": title, "definition": definition, "unit": unit.split(" (")[0], "low": 0.0, "high": 1.0,
            "kind": "rate", "estimate": True}


def _training(title: str, definition: str, unit: str = "", kind: Kind = "training") -> dict:
    return {"title": title, "definition": definition, "unit": unit, "kind": kind}


#: (name pattern, definition) in match order: the first full match wins. `{1}` in a title or
#: definition is the pattern's first group (a judge's or a stage's name).
DEFINITIONS: tuple[tuple[str, dict], ...] = (
    # -- results ---------------------------------------------------------------------------
    ("gold_score", {"title": "Gold-rubric score", "definition": "Mean score the gold-rubric judge gave the "
                    "round's held-out answers (1–10; the rubric is never shown to the trained roles).",
                    "unit": "points", "low": 1.0, "high": 10.0, "kind": "score", "estimate": True}),
    # DeepResearch-Gym's report-level metrics (TAIScore §5.1; coevo/eval/deepresearch_gym.py).
    ("kpr", {"title": "Key-point recall (KPR)", "definition": "Mean percent of a held-out report's reference "
             "key points that the evaluator judge found supported by the report (DeepResearch-Gym; higher "
             "is better).", "unit": "percent of key points", "low": 0.0, "high": 100.0, "kind": "score",
             "estimate": True}),
    ("kpc", {"title": "Key-point contradiction (KPC)", "definition": "Mean percent of a held-out report's "
             "reference key points that the evaluator judge found contradicted by the report "
             "(DeepResearch-Gym; lower is better).", "unit": "percent of key points", "low": 0.0, "high": 100.0,
             "kind": "score", "estimate": True}),
    ("report_quality", {"title": "Report quality", "definition": "Mean over held-out reports of the evaluator "
                        "judge's 1-10 mean over report-level criteria (clarity, depth, balance, breadth, "
                        "support, insightfulness), mapped onto 0-100.", "unit": "points", "low": 0.0,
                        "high": 100.0, "kind": "score", "estimate": True}),
    ("(kpr|kpc|report_quality)_set_sd", {"title": "{1}: sd over output sets", "definition": "Standard "
                                         "deviation of {1} across the checkpoint's output sets (Table 1's ±).",
                                         "unit": "points", "kind": "other"}),
    ("(kpr|kpc|report_quality)_sets", {"title": "{1}: output sets", "definition": "Output sets whose {1} "
                                       "could be read (the mean is over these).", "unit": "sets",
                                       "kind": "count"}),
    # TAIScore's results tables (algorithms/taiscore/evaluation.py: GAIN).
    (r"gold_gain vs round 0 \(95% CI\)", {"title": "Gold gain over round 0", "definition": "Paired difference "
                                          "of the gold-rubric score, last round minus round 0, over the held-out "
                                          "prompts both rounds scored (each seed against its own round 0), with "
                                          "its paired bootstrap 95 % interval and number of pairs.",
                                          "unit": "points", "low": -9.0, "high": 9.0, "kind": "delta"}),
    ("gold_score_set_sd", {"title": "Gold score: sd over seeds", "definition": "Standard deviation of the "
                           "gold-rubric score across seeds.", "unit": "points", "kind": "other"}),
    ("win_rate_vs_(round0|y0)", _rate("Win rate vs {1}", "Share of held-out pairs the pairwise judge preferred "
                                      "this round's answer over {1}'s, each pair judged in both shown orders "
                                      "(a tie or a split verdict counts one half).", "share of pairs")),
    ("position_consistency_vs_(round0|y0)", _rate("Position consistency vs {1}", "Share of pairs the pairwise "
                                                  "judge gave the same verdict in both shown orders (a judge "
                                                  "reading the content is near 1).", "share of pairs")),
    ("first_position_rate_vs_(round0|y0)", _rate("First-shown wins vs {1}", "Share of verdicts that went to the "
                                                 "answer shown first (0.5 is no position preference).",
                                                 "share of verdicts")),
    # After DPO: the same measure, taken after the round's DPO with the updated actor (its y0
    # and y1 both come from it): its own words, so a reader never takes it for the before-DPO number.
    ("refine_after_dpo_constraint_pass_rate", _rate("Constraints met (revisions after DPO)", "Share of the "
                                                    "held-out revisions y1 that met ALL their prompt's checkable "
                                                    "constraints, measured after the round's DPO with the updated "
                                                    "actor (IFEval's prompt-level strict accuracy).",
                                                    "share of answers")),
    ("refine_after_dpo_constraint_check_rate", _rate("Single constraints met (revisions after DPO)", "Share of "
                                                     "the single constraint checks the held-out revisions y1 met, "
                                                     "measured after the round's DPO with the updated actor "
                                                     "(IFEval's instruction-level accuracy; no interval).",
                                                     "share of checks")),
    ("(refine_|)constraint_pass_rate", _rate("Constraints met ({1} held-out)", "Share of the "
                                             "held-out answers that met ALL their prompt's checkable "
                                             "constraints (IFEval's prompt-level strict accuracy, "
                                             "checked by Python).", "share of answers")),
    ("(refine_|)constraint_check_rate", _rate("Single constraints met ({1} held-out)", "Share "
                                              "of the single constraint checks the held-out answers "
                                              "met (IFEval's instruction-level accuracy; no interval: "
                                              "one answer's checks are not independent).",
                                              "share of checks")),
    ("refine_S_y1", {"title": "Revision score S(y1)", "definition": "Mean judge score of the "
                     "revisions y1 the critique led to (1–10).", "unit": "points", "low": 1.0,
                     "high": 10.0, "kind": "score", "estimate": True}),
    ("refine_S_y1_after_dpo", {"title": "Revision score S(y1) after DPO", "definition": "Mean judge score of "
                               "the revisions y1, measured after the round's DPO: the updated actor answers "
                               "and revises, the round's critic critiques (1–10).", "unit": "points",
                               "low": 1.0, "high": 10.0, "kind": "score", "estimate": True}),
    ("refine_delta", {"title": "Refinement gain S(y1) − S(y0)", "definition": "Mean change in "
                      "judge score from the first answer y0 to the revision y1 (−9 to +9).",
                      "unit": "points", "low": -9.0, "high": 9.0, "kind": "delta", "estimate": True}),
    ("refine_delta_after_dpo", {"title": "Refinement gain S(y1) − S(y0) after DPO", "definition": "Mean change "
                                "in judge score from y0 to the revision y1, both written by the actor after the "
                                "round's DPO (−9 to +9): what the critique still adds to the updated actor.",
                                "unit": "points", "low": -9.0, "high": 9.0, "kind": "delta", "estimate": True}),
    ("pass_at_1", _rate("pass@1", "Share of held-out problems whose one sampled program passed every hidden "
                        "test.", "share of problems")),
    ("factscore_precision", _rate("FActScore precision", "Share of the answers' atomic facts the validator "
                                  "found supported.", "share of facts")),
    ("facts_(correct|incorrect)", {"title": "Facts {1}", "definition": "Number of atomic facts found {1}.",
                                   "unit": "facts", "kind": "count"}),
    ("detection_rate", _rate("Critic detection rate", "Share of the critic's proposals the validator confirmed "
                             "as real failures of the generator's output.", "share of proposals")),
    ("outcome_(caught|survived|invalid)", _rate("Proposals {1}", "Share of the critic's proposals whose "
                                                "validation came out {1}.", "share of proposals")),
    ("(gold|test)_mean", {"title": "{1} score (mean)", "definition": "Mean {1} grade of the solver's answers "
                          "(0–1).", "unit": "score", "low": 0.0, "high": 1.0, "kind": "score", "estimate": True}),
    ("diag_(gold|proxy)", {"title": "Diagnostic {1} score", "definition": "Mean {1} grade on the diagnostic "
                           "set (0–1).", "unit": "score", "low": 0.0, "high": 1.0, "kind": "score",
                           "estimate": True}),
    ("train_proxy", {"title": "Training proxy score", "definition": "Mean rubric-generator grade on the "
                     "training batch (0–1).", "unit": "score", "low": 0.0, "high": 1.0, "kind": "score",
                     "estimate": True}),
    ("probe_adequacy", _rate("Probe adequacy", "Share of probe answers the rubric generator graded as the "
                             "gold grader did.")),
    # -- judges, rewards, critics ----------------------------------------------------------
    ("reward_mean", {"title": "Critic reward (mean)", "definition": "Mean reward the critic's critiques got "
                     "from the reward judge during training.", "unit": "reward", "kind": "mean",
                     "estimate": True}),
    ("reward_sd", {"title": "Critic reward (sd)", "definition": "Standard deviation of the critic's rewards "
                   "(0: a constant reward teaches nothing).", "unit": "reward", "kind": "other"}),
    ("(reward_)?invalid_(judgment_)?rate", _rate("Unreadable judgments", "Share of judge outputs that could not "
                                                 "be read as a verdict or score.", "share of judgments")),
    # -- the judge audit --------------------------------------------------------------------
    ("audit_(\\w+?)_fooled_rate", _rate("{1} judge fooled", "Share of master-key probes (a colon, "
                                        "'Thought process:', an empty answer...) the {1} judge scored at or above "
                                        "a real answer.", "share of probes")),
    ("audit_(\\w+?)_position_consistency", _rate("{1} judge position consistency", "Share of pairs the {1} judge "
                                                 "decided the same in both shown orders.", "share of pairs")),
    ("audit_(\\w+?)_first_position_rate", _rate("{1} judge first-shown wins", "Share of the {1} judge's verdicts "
                                                "that went to the first-shown answer.", "share of verdicts")),
    ("audit_(\\w+?)_retest_spearman", {"title": "{1} judge test–retest", "definition": "Spearman correlation of "
                                       "the {1} judge's scores of the same items asked twice (−1 to 1).",
                                       "unit": "Spearman ρ", "low": -1.0, "high": 1.0, "kind": "score",
                                       "estimate": True}),
    ("audit_(\\w+?)_retest_agreement", _rate("{1} judge test–retest agreement", "Share of pairs the {1} judge "
                                             "decided the same when asked twice.", "share of pairs")),
    ("audit_(\\w+?)_retest_tie_rate", _rate("{1} judge retest ties", "Share of retest items scored equal "
                                            "(many ties hide a judge's noise).", "share of items")),
    ("audit_(\\w+?)_(padding|injection)_raised", {"title": "{1} judge raised by {2}", "definition": "Mean rise "
                                                  "in the {1} judge's score when {2} text is added to an answer.",
                                                  "unit": "points", "kind": "delta", "estimate": True}),
    ("audit_(\\w+?)_self_preference", _rate("{1} judge self-preference", "Share of pairs the {1} judge gave to "
                                            "its own model's answer.", "share of pairs")),
    ("audit_(\\w+?)_flags", {"title": "{1} judge audit flags", "definition": "Number of the {1} judge's audit "
                             "measures whose whole interval lies past its threshold.", "unit": "flags",
                             "kind": "count"}),
    # -- training --------------------------------------------------------------------------
    ("(actor|critic|generator|\\w+?)_weight_delta", _training("{1} largest weight change", "Largest absolute "
                                                              "change of any one of the {1}'s trained weights in "
                                                              "this round's stage, max |w_after − w_before| (Adam's "
                                                              "first step alone moves each weight by about the "
                                                              "learning rate, whatever the reward meant).",
                                                              "max |Δw|")),
    ("(grpo|dpo)_loss", _training("{1} mean loss", "Mean training loss over the stage's steps (TRL's train_loss; "
                                  "the last step's loss where TRL logged no mean).", "loss", "loss")),
    ("(grpo|dpo)_grad_norm", _training("{1} gradient norm", "Mean gradient norm over the stage's steps.",
                                       "L2 norm")),
    ("grpo_zero_std_fraction", _rate("GRPO groups with equal rewards", "Share of GRPO groups whose rewards were "
                                     "all equal (they give no gradient).", "share of groups")),
    ("grpo_reward_group_sd", _training("GRPO reward spread in a group", "Mean standard deviation of rewards "
                                       "within a GRPO group.", "reward")),
    ("grpo_clipped_ratio", _rate("Critiques cut at their limit", "Share of the critic's GRPO samples that "
                                 "stopped at their token limit.", "share of samples")),
    ("kl_from_base", _training("KL from the base model", "Mean KL divergence of the trained policy from its "
                               "reference.", "nats")),
    # -- pairs -----------------------------------------------------------------------------
    ("pairs_(selected|ties|y0_wins|y1_wins)", {"title": "Pairs: {1}", "definition": "Preference pairs built "
                                               "for DPO: {1}.", "unit": "pairs", "kind": "count"}),
    ("(generator|critic)_pairs", {"title": "{1} DPO pairs", "definition": "Preference pairs the {1} was trained "
                                  "on this round.", "unit": "pairs", "kind": "count"}),
    # -- bookkeeping counts (how much was measured; the rounds tables' counts) ------------------
    ("eval_prompts", {"title": "Held-out prompts", "definition": "Held-out prompts evaluated this round: the n "
                      "of the round's held-out scores.", "unit": "prompts", "kind": "count"}),
    ("eval_judgments", {"title": "Held-out judgments", "definition": "Judge answers on the round's held-out "
                        "items (constraint checks, which are code, not counted).", "unit": "judgments",
                        "kind": "count"}),
    ("eval_invalid", {"title": "Unreadable held-out judgments", "definition": "Judge answers on the round's "
                      "held-out items that could not be read as a score or verdict.", "unit": "judgments",
                      "kind": "count"}),
    ("(\\w*)critic_prompts_shortened", {"title": "Critic prompts shortened", "definition": "Critic prompts cut "
                                        "to fit the critic's prompt budget (their y0 shortened).", "unit": "prompts",
                                        "kind": "count"}),
    ("(\\w+?)_count", {"title": "{1}: items", "definition": "Number of items {1} was measured on (its n).",
                       "unit": "items", "kind": "count"}),
    ("(\\w+?)_n", {"title": "{1}: n", "definition": "Number of items behind {1} (its n).", "unit": "items",
                   "kind": "count"}),
    # -- cost ------------------------------------------------------------------------------
    ("(\\w+?)_seconds_per_step", _training("{1} seconds per step", "Wall-clock seconds per training step.",
                                           "seconds", "seconds")),
    ("(\\w+?)_peak_rss_mb", _training("{1} peak memory", "Peak resident memory of the process during the stage.",
                                      "MB", "memory")),
    ("(\\w+?)_first_step_seconds", _training("{1} first step", "Wall-clock seconds of the stage's first optimizer "
                                             "step (it also pays for warm-up).", "seconds", "seconds")),
    ("(\\w+?)_steady_step_seconds", _training("{1} seconds per later step", "Mean wall-clock seconds of the "
                                              "stage's optimizer steps after its first.", "seconds", "seconds")),
    ("(\\w+?)_steady_tokens_per_s", _training("{1} training tokens/s", "Prompt and completion tokens trained on "
                                              "per second, over the steps after the first.", "tokens/s", "seconds")),
    ("(\\w+?)_peak_gpu_mb", _training("{1} peak GPU memory", "Peak GPU memory torch allocated during the stage "
                                      "(everything held then, both roles included).", "MB", "memory")),
    ("(\\w+?)_time_share", {"title": "{1} time share", "definition": "Share of the stage's time spent in {1}.",
                            "unit": "share", "low": 0.0, "high": 1.0, "kind": "other"}),
    ("calls_(\\w+)", {"title": "Verifier calls ({1})", "definition": "Validator calls counted as {1}.",
                      "unit": "calls", "kind": "count"}),
    ("output_tokens", {"title": "Output tokens", "definition": "Tokens the models wrote.", "unit": "tokens",
                       "kind": "count"}),
    ("heldout_output_chars", {"title": "Held-out answer length", "definition": "Mean characters of the held-out "
                              "answers.", "unit": "characters", "kind": "mean"}),
)

#: Where a metric's n is logged when not as `name_n`: (name pattern, candidate count names).
N_FROM: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"(position_consistency|first_position_rate)_(vs_\w+)", ("win_rate_{2}_n",)),
    (r"(\w*)constraint_(pass|check)_rate", ("{1}constraint_count",)),
    (r"(gold_score|refine_S_y1|refine_delta|invalid_judgment_rate)", ("eval_prompts",)),
    (r"(refine_S_y1|refine_delta)_after_dpo", ("eval_prompts",)),
    (r"pass_at_1|factscore_precision", ("heldout_count", "heldout_n")),
    (r"reward_mean|reward_invalid_rate", ("reward_count",)),
    (r"detection_rate|outcome_\w+", ("proposals",)),
)

_COMPILED = [(re.compile(pattern + r"\Z"), spec) for pattern, spec in DEFINITIONS]


def describe(name: str) -> MetricDef:
    """The definition of metric `name`; an unknown name gets its name in words and no scale."""
    for pattern, spec in _COMPILED:
        match = pattern.match(name)
        if match:
            groups = [(g or "").replace("_", " ") for g in match.groups()]
            fill = {"title": lambda s: _fill(s, groups, capital=True), "definition": lambda s: _fill(s, groups)}
            return MetricDef(name=name, **{k: fill[k](v) if k in fill else v for k, v in spec.items()})
    return MetricDef(name=name, title=name.replace("_", " "), definition="(no definition registered)")


def is_defined(name: str) -> bool:
    """Whether `name` has a definition of its own here (not the fallback for unknown names)."""
    return any(pattern.match(name) for pattern, _ in _COMPILED)


def _fill(text: str, groups: list[str], capital: bool = False) -> str:
    for i, group in enumerate(groups, start=1):
        text = text.replace(f"{{{i}}}", group if group != "round0" else "round 0")
    text = " ".join(text.split()).replace("( ", "(")
    text = re.sub(r"\b(grpo|dpo|sft)\b", lambda m: m.group(1).upper(), text)
    return text[:1].upper() + text[1:] if capital else text


def is_interval_part(name: str) -> bool:
    """`name_lo`, `name_hi`, `name_n`: parts of another metric's estimate, not metrics to show."""
    return name.endswith(("_lo", "_hi", "_n"))


def estimate_of(values: Mapping[str, float | None], name: str) -> Estimate:
    """`name`'s value with its interval and n from the same stage and round's metrics; a rate
    with an n but no logged interval gets a Wilson interval (its value times n successes)."""
    value = values.get(name)
    low, high = values.get(f"{name}_lo"), values.get(f"{name}_hi")
    n = _n_of(values, name)
    definition = describe(name)
    if (low is None or high is None) and definition.kind == "rate" and value is not None and n:
        # A rate's interval here is the one the metrics compute, not a second copy of Wilson's
        # formula.
        from coevo.eval.stats import wilson_interval

        _, low, high = wilson_interval(max(0.0, min(1.0, value)) * n, n)
    return Estimate(value=value, low=low, high=high, n=n)


def _n_of(values: Mapping[str, float | None], name: str) -> int | None:
    candidates = [f"{name}_n"]
    for pattern, names in N_FROM:
        match = re.fullmatch(pattern, name)
        if match:
            candidates += [_fill(c, [g or "" for g in match.groups()]) for c in names]
    for candidate in candidates:
        n = values.get(candidate)
        if isinstance(n, (int, float)) and not math.isnan(n):
            return int(n)
    return None


def estimate_text(value: float | None, low: float | None = None, high: float | None = None,
                  n: int | None = None, digits: int = 3, signed: bool = False) -> str:
    """`0.516 [0.100, 0.911] (n=12)`; from fewer than MIN_ITEMS items the interval is replaced by
    "too few to tell"; no n known: the value and interval alone. `signed`: a difference
    (`+0.181 [+0.102, +0.263] (n=48)`)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    shown = _number(value, digits, signed)
    if n is not None and n < MIN_ITEMS:
        return f"{shown} (n={n}: too few to tell)"
    if low is not None and high is not None:
        shown += f" [{_number(low, digits, signed)}, {_number(high, digits, signed)}]"
    return shown + (f" (n={n})" if n is not None else "")


def _number(value: float, digits: int, signed: bool = False) -> str:
    # Fixed decimals, integers too: "1.000" beside "0.516" reads as the same kind of number;
    # a value those decimals would write as 0.000 (a learning rate, 1.5e-05) in scientific notation.
    if value and abs(value) < 0.5 * 10 ** -digits:
        return f"{value:+.{digits - 1}g}" if signed else f"{value:.{digits - 1}g}"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _short(value: float) -> str:
    text = str(int(value)) if float(value).is_integer() else f"{value:g}"
    return text.replace("-", "−")


def values_by_stage_round(metrics: list[dict]) -> dict[tuple[str, int | None], dict[str, float | None]]:
    """`store.metrics()` rows as {(stage, round): {name: value}}: the unit `estimate_of` reads."""
    out: dict[tuple[str, int | None], dict[str, float | None]] = {}
    for m in metrics:
        out.setdefault((m["stage"], m["round"]), {})[m["name"]] = m["value"]
    return out


def latest_estimates(metrics: list[dict], names: list[str]) -> dict[str, Estimate]:
    """Each of `names` as last logged (highest round; among stages of that round, the last
    logged), with the interval and n logged beside it in that stage and round."""
    grouped = values_by_stage_round(metrics)
    found: dict[str, Estimate] = {}
    for name in names:
        places = [(stage, r) for stage, r in grouped if grouped[(stage, r)].get(name) is not None]
        if places:
            # The highest round; among equals the last logged (the trained condition's row).
            _, place = max(enumerate(places), key=lambda ip: (-1 if ip[1][1] is None else ip[1][1], ip[0]))
            found[name] = estimate_of(grouped[place], name)
    return found


def is_defined(name: str) -> bool:
    """Whether the registry has a definition for `name` (not just its name in words)."""
    return any(pattern.match(name) for pattern, _ in _COMPILED)


def definitions_note(names: list[str]) -> str:
    """What the registered metrics among `names` mean, one line each, for under a console
    table: `name: definition (unit)`."""
    lines = []
    for name in dict.fromkeys(n for n in names if isinstance(n, str) and is_defined(n)):
        definition = describe(name)
        unit = f" [{definition.axis_label}]" if definition.unit else ""
        lines.append(f"{name}: {definition.definition}{unit}")
    return "\n".join(lines)
