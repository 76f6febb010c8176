"""Plain-words warnings about a run: the signs that a number on the page cannot be trusted.

Each check reads what the algorithms store (metrics, training stage results and their
TRL history, judgments, rollouts, meta) and says what it saw and what to do about it:
  - a training stage that changed no weight, or logged zero loss and zero grad norm;
  - a judge whose outputs were unreadable more than 20 % of the time;
  - a reward that was constant (sd 0, or every GRPO group with equal rewards);
  - a model judge that gave every answer the same score (it agreed with everything);
  - GRPO critiques that copy their input, with the reward they got (view/copy_warnings.py);
  - a metric at its ceiling in every round (it cannot show a gain), on few problems;
  - length inflation (revisions, or later rounds' answers, much longer);
  - a judge that failed checks of the run's judge audit in its latest audited round;
  - headline numbers from too few items, cut-off generations, and training stages whose
    weight change only shows Adam's first steps (view/trust_warnings.py, which also holds the
    unreadable-judge and judge-audit checks: the runs list makes them too, via runinfo.py);
and the warnings the run itself recorded (meta "warnings").
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any


from coevo.eval.constraints import CONSTRAINTS
from coevo.view.runinfo import HEADLINE_METRICS
from coevo.rundir.store import RunStore
from coevo.view.copy_warnings import copied_critiques
from coevo.view.findings import Finding
from coevo.view.pair_warnings import too_few_pairs
from coevo.view.plots import logged_steps
# The checks a list of runs also makes live in trust_warnings.py (runinfo.py reads them there).
from coevo.view.trust_warnings import (adam_first_steps, cut_off_generations, invalid_judgments, judge_audit,
                                       too_few_items)

#: Revisions (or last-round answers) this many times longer than the first: length inflation.
LENGTH_RATIO = 1.5
#: Fewer held-out items than this and a perfect score says little, CI or not.
FEW_ITEMS = 10
#: Judges need at least this many readable scores before "all the same" means anything.
MIN_JUDGMENTS = 4
#: Below this share of pairs judged the same in both shown orders, a pairwise judge's
#: verdicts are mostly its position preference (a judge reading content is near 1).
POSITION_CONSISTENCY = 0.5

#: Judges that are checks in code whatever their judgments' `source` says (the constraint
#: checks of coevo/eval/constraints.py record no source of their own).
CODE_CHECKERS = (CONSTRAINTS,)

#: Metrics with a known best value: (ceiling, what it means).
CEILINGS = {"gold_score": 10.0, "refine_S_y1": 10.0, "refine_S_y1_after_dpo": 10.0, "pass_at_1": 1.0,
            "factscore_precision": 1.0, "win_rate_vs_round0": 1.0, "gold_mean": 1.0, "test_mean": 1.0,
            "diag_gold": 1.0}


def run_warnings(store: RunStore, *, stage_results: dict[str, Any] | None = None,
                 logs: list[dict[str, Any]] | None = None, rollouts: list[Any] | None = None) -> list[Finding]:
    """Every warning about the run, computed ones first, then the run's own (meta "warnings").
    `stage_results` / `logs` / `rollouts`: the training stages' results and histories and
    the run's rollouts, when the caller already read them."""
    metrics = store.metrics()
    logs = store.training_logs() if logs is None else logs
    stage_results = training_results(store, logs) if stage_results is None else stage_results
    found: list[Finding] = []
    found += unchanged_policy(stage_results, logs, metrics)
    found += too_few_pairs(store, metrics)
    found += invalid_judgments(store)
    found += constant_reward(metrics, logs)
    found += agreeing_judges(store)
    found += copied_critiques(store)
    found += position_bias(metrics)
    found += judge_audit(store, metrics)
    found += at_ceiling(metrics, store)
    found += length_inflation(store, metrics, rollouts)
    found += cut_off_generations(store, metrics)
    found += adam_first_steps(stage_results)
    found += too_few_items(metrics, list(HEADLINE_METRICS))
    found += [Finding(kind="run", text=str(w)) for w in store.get_meta("warnings", []) or []]
    return found


def training_results(store: RunStore, logs: list[dict[str, Any]]) -> dict[str, Any]:
    """{stage: its stored TrainResult dict} for every finished training stage, in the order
    they finished: those with a history, and those of older runs that kept none."""
    out = {log["stage"]: store.step_result(log["stage"]) or {} for log in logs}
    for name in store.finished_steps():
        if name not in out:
            result = store.step_result(name)
            if isinstance(result, dict) and "checkpoint" in result and "steps" in result:
                out[name] = result
    return out


def unchanged_policy(stage_results: dict[str, Any], logs: list[dict[str, Any]],
                     metrics: list[dict[str, Any]]) -> list[Finding]:
    """Stages whose largest weight change was 0, or whose every logged step had zero loss
    and zero grad norm: they trained nothing."""
    out, named = [], set()
    for stage, result in stage_results.items():
        delta = (result.get("metrics") or {}).get("weight_delta") if isinstance(result, dict) else None
        if delta == 0.0:
            named.add(stage)
            out.append(Finding(kind="no-learning", text=(
                f"{stage}: training changed no weight (largest change 0): this stage did not change the policy. "
                "Check the learning rate, that rewards vary within a group (GRPO) and that pairs differ (DPO).")))
    for log in logs:
        if log["stage"] in named:
            continue
        steps = logged_steps(log["history"])
        losses, norms = _numbers(steps, "loss"), _numbers(steps, "grad_norm")
        if losses and norms and all(v == 0 for v in losses) and all(v == 0 for v in norms):
            named.add(log["stage"])
            out.append(Finding(kind="no-learning", text=(
                f"{log['stage']}: loss and grad norm were 0 at every logged step ({len(steps)}): nothing was "
                "learned. With GRPO this means every group's rewards were equal; use expected scoring, more "
                "generations per prompt or a stronger judge.")))
    # Runs whose stage results carry no weight_delta still log it as a per-round metric.
    for m in metrics:
        if m["name"].endswith("weight_delta") and m["value"] == 0.0:
            role = m["name"][: -len("_weight_delta")] or "policy"
            label = f"{m['stage']} round {m['round']}: the {role}"
            if not any(s.startswith(f"{m['stage']}/round{m['round']}/") for s in named):
                out.append(Finding(kind="no-learning", text=(
                    f"{label}'s weights did not change in training (largest change 0): this stage did not "
                    "change the policy.")))
    return out


def _numbers(steps: list[dict[str, Any]], key: str) -> list[float]:
    """The numeric values of `key` over logged steps (steps that did not log it left out)."""
    return [e[key] for e in steps if isinstance(e.get(key), (int, float))]


def constant_reward(metrics: list[dict[str, Any]], logs: list[dict[str, Any]]) -> list[Finding]:
    """A training reward with no spread: nothing for GRPO to prefer. Said once per stage: from
    TRL's per-step history where it was kept, else from the round's reward metrics."""
    out, covered = [], set()
    for log in logs:
        steps = logged_steps(log["history"])
        zero, std = _numbers(steps, "frac_reward_zero_std"), _numbers(steps, "reward_std")
        if (zero and all(v >= 1.0 for v in zero)) or (std and all(v == 0 for v in std)):
            covered.add((log["stage"].split("/round")[0], log.get("round")))
            out.append(Finding(kind="constant-reward", text=(
                f"{log['stage']}: the reward was constant within every group at every logged step "
                f"({len(steps)}), so every advantage was 0 and the policy could not learn from it.")))
    by_key: dict[tuple[str, Any], dict[str, float | None]] = defaultdict(dict)
    for m in metrics:
        by_key[(m["stage"], m["round"])][m["name"]] = m["value"]
    for (stage, r), values in by_key.items():
        if (stage, r) in covered:
            continue
        sd, count = values.get("reward_sd"), values.get("reward_count")
        if sd == 0.0 and (count is None or count > 1):
            out.append(Finding(kind="constant-reward", text=(
                f"{stage} round {r}: every training reward was {values.get('reward_mean')} (sd 0): "
                "the reward told no critique from another, so GRPO had nothing to learn from.")))
        elif values.get("grpo_zero_std_fraction") == 1.0:
            out.append(Finding(kind="constant-reward", text=(
                f"{stage} round {r}: every GRPO group had equal rewards (zero-std fraction 1.0), so no "
                "generation was preferred over another.")))
    return out


def agreeing_judges(store: RunStore) -> list[Finding]:
    """Model judges that gave every readable answer the same score (a pairwise judge: the same
    side). A checker in code (a `python:` scorer, the constraint checks) is left out: it gives
    what its code computes, and no stronger judge would change that."""
    out = []
    for judge in sorted(store.judgment_counts()):
        judgments = store.judgments(judge)
        if not is_model_judge(judgments):
            continue
        scores = [j.score for j in judgments if j.valid and j.score is not None]
        if len(scores) >= MIN_JUDGMENTS and max(scores) == min(scores):
            what = "preferred the same side in" if "pairwise" in judge else "gave the same score to"
            out.append(Finding(kind="judge-agrees", text=(
                f"judge {judge!r} {what} all {len(scores)} of its readable judgments (score {scores[0]:g}): "
                "it agreed with everything, so it tells nothing apart. Check its prompt and parsing, or use a "
                "stronger judge or expected scoring.")))
    return out


def is_model_judge(judgments: list[Any]) -> bool:
    """Whether any of a judge's judgments came from a model: not from a `python:` scorer
    (`source="python"`) nor from a check in code (CODE_CHECKERS)."""
    return any(j.source != "python" and j.judge not in CODE_CHECKERS for j in judgments)


def position_bias(metrics: list[dict[str, Any]]) -> list[Finding]:
    """Pairwise evaluations (judged in both orders, coevo.eval.both_orders) whose judge named
    the same response in both orders for fewer than POSITION_CONSISTENCY of the items."""
    out = []
    by_key: dict[tuple[str, Any], dict[str, float | None]] = defaultdict(dict)
    for m in metrics:
        by_key[(m["stage"], m["round"])][m["name"]] = m["value"]
    for (stage, r), values in sorted(by_key.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1)):
        for name, consistency in sorted(values.items()):
            if not name.startswith("position_consistency_") or consistency is None:
                continue
            if consistency >= POSITION_CONSISTENCY:
                continue
            suffix = name.removeprefix("position_consistency_")
            n, first = values.get(f"win_rate_{suffix}_n"), values.get(f"first_position_rate_{suffix}")
            items = f" of {n:.0f} pairs" if n is not None else " of the pairs"
            shown = (f"; the response shown first won {first:.0%} of its verdicts" if first is not None else "")
            where = stage if r is None else f"{stage} round {r}"
            out.append(Finding(kind="position-bias", text=(
                f"{where}: the pairwise judge named the same response in both shown orders for only "
                f"{consistency:.0%}{items} (position consistency {consistency:.2f}){shown}. win_rate_{suffix} "
                "averages both orders, so the bias cannot move it, but the judge mostly reads the order, not the "
                "responses: its win rate sits near 0.5 whatever the models do. Use a stronger judge.")))
    return out


def at_ceiling(metrics: list[dict[str, Any]], store: RunStore) -> list[Finding]:
    """Metrics at their best possible value in every round: they cannot show a gain."""
    out = []
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    items: dict[str, float] = {}
    for m in metrics:
        if m["name"] in CEILINGS and m["value"] is not None:
            values[(m["stage"], m["name"])].append(m["value"])
        if m["name"] == "eval_prompts" and m["value"] is not None:
            items[m["stage"]] = m["value"]
    held_out = _held_out_count(store)
    for (stage, name), vals in sorted(values.items()):
        ceiling = CEILINGS[name]
        if vals and all(math.isclose(v, ceiling) for v in vals):
            n = items.get(stage) or held_out
            few = f" on only {int(n)} held-out item{'s' if n != 1 else ''}, too few for a confidence interval" \
                if n is not None and n < FEW_ITEMS else ""
            rounds = f"every round ({len(vals)})" if len(vals) > 1 else "its only measurement"
            out.append(Finding(kind="ceiling", text=(
                f"{stage}: {name} is at its ceiling ({ceiling:g}) in {rounds}{few}: it cannot show whether "
                "training helped. Use harder or more held-out items, or a finer-grained score.")))
    return out


def _held_out_count(store: RunStore) -> int | None:
    """How many held-out items the run measured on, where it says: TAIScore keeps their ids
    (meta "held_out"), an RLAC config names them (data.heldout_ids) or their number (data.heldout)."""
    held_out = store.get_meta("held_out")
    if isinstance(held_out, list) and held_out:
        return len(held_out)
    data = (store.get_meta("config") or {}).get("data") or {}
    if isinstance(data.get("heldout_ids"), list) and data["heldout_ids"]:
        return len(data["heldout_ids"])
    return data["heldout"] if isinstance(data.get("heldout"), int) else None


def length_inflation(store: RunStore, metrics: list[dict[str, Any]], rollouts: list[Any] | None = None
                     ) -> list[Finding]:
    """Revisions much longer than the answers they revise, or held-out answers growing over rounds."""
    out = []
    revised = [r for r in (store.rollouts() if rollouts is None else rollouts) if r.y1]
    if revised:
        ratio = sum(len(r.y1 or "") for r in revised) / max(1, sum(len(r.y0) for r in revised))
        if ratio > LENGTH_RATIO:
            out.append(Finding(kind="length-inflation", text=(
                f"revisions are {ratio:.2f}x as long as the answers they revise ({len(revised)} rollouts): a judge "
                "that rewards length can be gamed this way; compare scores at equal length.")))
    by_stage: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for m in metrics:
        if m["name"] in ("heldout_output_chars", "output_tokens") and m["value"] and m["round"] is not None:
            by_stage[f"{m['stage']}: {m['name']}"].append((m["round"], m["value"]))
    for label, points in by_stage.items():
        points.sort()
        if len(points) > 1 and points[-1][1] > LENGTH_RATIO * points[0][1]:
            out.append(Finding(kind="length-inflation", text=(
                f"{label} grew from {points[0][1]:.0f} (round {points[0][0]}) to {points[-1][1]:.0f} "
                f"(round {points[-1][0]}): outputs got {points[-1][1] / points[0][1]:.2f}x longer.")))
    return out
