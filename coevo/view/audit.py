"""The "Judge audit" panel of the run page, and the audit's warnings.

A run that audits its frozen judges every round (`audit:` in a config; coevo/audit/in_run.py)
logs `audit_<judge>_<measure>` per round, with `_lo`, `_hi` (Wilson 95 %) and `_n`, and
`audit_<judge>_flags` (how many checks the judge failed); the run store's meta "audit" keeps
each round's full record, with a plain-words `why` per flag. The panel plots per judge the
fooled rate (content-free answers scored at least as high as a real one) and, for the
pairwise judge, position consistency, by round, the interval as error bars, n in the hover,
and the threshold that flags a judge as a dotted line; under it, a table of each round's
flags in words. A run without audit metrics gets no panel.

The warnings (one per judge whose latest audited round has flags) are shared by the run
page, `coevo report` and `coevo show`.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Any

from coevo.view import plots

TITLE = "Judge audit by round"
#: The prefix of every audit metric (plots.metric_figures leaves them to this panel).
PREFIX = "audit_"
#: The judges a run audits, in panel order, and what each one decides in the loop.
ROLES = {"reward": "Its rewards can be gamed: a rising critic reward may not mean better critiques.",
         "pairwise": "The actor's DPO pairs and win_rate_vs_round0 rest on this judge, so they can follow what "
                     "fools it rather than quality.",
         # TAIScore: the gold-rubric judge behind gold_score, the run's headline number.
         "gold": "gold_score, the run's headline number, rests on this judge, so it can move without the answers "
                 "getting better, or stay put while they do.",
         # RLAC facts: the entailment judge that confirms the critic's claimed wrong facts.
         "validator": "The critic's rewards can be gamed: a claim it confirms may not be a real failure.",
         # DecoEvo: the frozen judge grading under the current rubric-generator skill's rubrics.
         "grader": "Its grades can be gamed: a rising test score may not mean better answers."}
#: (judge, measure, panel title, what n counts, the threshold's name in coevo.audit.flags).
PANELS = (("reward", "fooled_rate", "reward judge: fooled rate (master keys)", "cases", "FOOLED_RATE_MAX"),
          ("pairwise", "fooled_rate", "pairwise judge: fooled rate (master keys)", "cases", "FOOLED_RATE_MAX"),
          ("pairwise", "position_consistency", "pairwise judge: position consistency", "pairs",
           "POSITION_CONSISTENCY_MIN"),
          ("gold", "fooled_rate", "gold-rubric judge: fooled rate (master keys)", "cases", "FOOLED_RATE_MAX"),
          ("gold", "criterion_order_rate", "gold-rubric judge: prompts scored in criterion order", "prompts",
           "CRITERION_ORDER_MAX"),
          ("validator", "fooled_rate", "facts validator: fooled rate (content-free claims)", "cases",
           "FOOLED_RATE_MAX"),
          ("grader", "fooled_rate", "grader (judge + rubric skill): fooled rate (master keys)", "cases",
           "FOOLED_RATE_MAX"))
THRESHOLD = "flag threshold"
#: Rounds of flags the table lists, latest first (a long run's early rounds are in summary.json).
TABLE_ROUNDS = 10


def is_audit_metric(name: str) -> bool:
    return name.startswith(PREFIX)


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _threshold(name: str) -> float | None:
    """A flag threshold of coevo/audit/flags.py, by its constant's name."""
    from coevo.audit import flags

    value = getattr(flags, name, None)
    return float(value) if _finite(value) else None


def _logged(metrics: list[dict[str, Any]]) -> dict[tuple[str, int, str], float]:
    """{(stage, round, name): value} of the audit metrics logged with a round."""
    return {(m["stage"], int(m["round"]), m["name"]): m["value"] for m in metrics
            if m["round"] is not None and is_audit_metric(m["name"]) and _finite(m["value"])}


def audit_figure(metrics: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The panel's figure: a panel per (judge, measure) logged in some round, a line per stage,
    the 95 % interval as error bars and n in the hover; None when nothing was logged."""
    logged = _logged(metrics)
    panels: list[tuple[Any, ...]] = []
    for judge, measure, title, unit, threshold_name in PANELS:
        name = f"{PREFIX}{judge}_{measure}"
        series: dict[str, list[tuple[Any, ...]]] = {}
        for (stage, r, metric), value in sorted(logged.items()):
            if metric != name:
                continue
            n, flags = logged.get((stage, r, f"{name}_n")), logged.get((stage, r, f"{PREFIX}{judge}_flags"))
            ends = logged.get((stage, r, f"{name}_lo")), logged.get((stage, r, f"{name}_hi"))
            # From fewer than MIN_ITEMS cases no bar (the tables say "too few to tell").
            lo, hi = plots.drawn_interval(*ends, n)
            hover = [f"n = {n:g} {unit}"] if n is not None else []
            if lo is not None and hi is not None:
                hover.append(f"95% CI [{lo:.3g}, {hi:.3g}]")
            elif None not in ends:
                hover.append("too few to tell (no interval)")
            if flags is not None:
                hover.append(f"the {judge} judge failed {flags:g} check{'s' if flags != 1 else ''} this round")
            series.setdefault(stage, []).append((r, float(value), lo, hi, ", ".join(hover)))
        if not series:
            continue
        threshold = _threshold(threshold_name)
        if threshold is not None:
            rounds = sorted({p[0] for points in series.values() for p in points})
            series[THRESHOLD] = [(r, threshold, None, None, f"flagged when the whole CI is "
                                  f"{'above' if 'MAX' in threshold_name else 'below'} {threshold:g}")
                                 for r in rounds]
        panels.append(plots.Panel(title, series, metric=name))  # a rate: drawn on all of [0, 1]
    if not panels:
        return None
    figure = plots.small_multiples(TITLE, panels, "round", columns=3)
    for trace in figure["figure"]["data"]:
        if trace["name"] == THRESHOLD:  # a rule to read the points against, not a measurement
            trace.update({"mode": "lines", "line": {"color": "#9aa4ae", "dash": "dot", "width": 1.5}})
    figure["json"] = plots.figure_json(figure["figure"])
    return figure


def flag_lines(record: dict[str, Any]) -> list[str]:
    """A record's flags in words, as the console says them: each master key's own flag folded
    into the overall master-keys flag (the probes named), the other flags as they are."""
    flags = [f for f in record.get("flags") or [] if isinstance(f, dict) and f.get("why")]
    keys = [f for f in flags if str(f.get("probe", "")).startswith("master_key:")]
    lines = [f["why"] for f in flags if not str(f.get("probe", "")).startswith("master_key:")]
    overall = next((f for f in flags if f.get("probe") == "master_keys"), None)
    if keys and overall is not None:
        names = ", ".join(str(f["probe"]).removeprefix("master_key:") for f in keys)
        lines[lines.index(overall["why"])] += f" (flagged probes: {names})"
    elif keys:
        lines.extend(f["why"] for f in keys)
    return lines


def _where(key: str) -> tuple[str, int | None]:
    """A record's "<condition>/round<r>" as (condition, r)."""
    found = re.fullmatch(r"(.*)/round(\d+)", key or "")
    return (found.group(1), int(found.group(2))) if found else (key or "", None)


def flag_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The table under the figure: per audited round (latest first, TABLE_ROUNDS of them) and
    judge, the number of flags and each in words, or why the audit could not run."""
    rows = []
    for record in records:
        stage, r = _where(str(record.get("round", "")))
        flags = record.get("flags") or []
        rows.append({"stage": stage, "round": r, "judge": record.get("judge_role") or "?",
                     "kind": record.get("kind"), "flags": len(flags) if not record.get("error") else None,
                     "lines": flag_lines(record), "error": record.get("error")})
    rows.sort(key=lambda row: (-(row["round"] if row["round"] is not None else -1), row["stage"],
                               list(ROLES).index(row["judge"]) if row["judge"] in ROLES else len(ROLES)))
    latest = sorted({row["round"] for row in rows}, key=lambda r: -1 if r is None else r, reverse=True)
    keep = set(latest[:TABLE_ROUNDS])
    return [row for row in rows if row["round"] in keep]


def audit_section(metrics: list[dict[str, Any]], records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The panel: its figure and table of flags; None when the run logged no audit metric."""
    if not any(is_audit_metric(m["name"]) for m in metrics):
        return None
    rows = flag_rows(records)
    audited = len({_where(str(record.get("round", "")))[1] for record in records})
    return {"figure": audit_figure(metrics), "rows": rows,
            "rounds_left_out": audited - len({row["round"] for row in rows})}


def latest_flags(metrics: list[dict[str, Any]]) -> list[tuple[str, str, int, float]]:
    """Per stage and judge, its latest audited round's flag count: (stage, judge, round, flags)."""
    latest: dict[tuple[str, str], tuple[int, float]] = {}
    for (stage, r, name), value in _logged(metrics).items():
        judge = name.removeprefix(PREFIX).removesuffix("_flags")
        if not name.endswith("_flags") or judge not in ROLES:
            continue
        if (stage, judge) not in latest or r > latest[(stage, judge)][0]:
            latest[(stage, judge)] = (r, value)
    return sorted(((stage, judge, r, value) for (stage, judge), (r, value) in latest.items()),
                  key=lambda t: (t[0], list(ROLES).index(t[1])))


def audit_warnings(metrics: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[str]:
    """A sentence per judge whose latest audited round failed a check: how many, the first
    flag's words (from the round's record), and what it means for the run."""
    by_where = defaultdict(dict)
    for record in records:
        by_where[str(record.get("round", ""))][record.get("judge_role")] = record
    found = latest_flags(metrics)
    several = len({stage for stage, *_ in found}) > 1
    out = []
    for stage, judge, r, flags in found:
        if flags <= 0:
            continue
        record = by_where.get(f"{stage}/round{r}", {}).get(judge) or {}
        why = next((f["why"] for f in record.get("flags") or [] if isinstance(f, dict) and f.get("why")), None)
        first = f" ({_short(why)})" if why else ""
        where = f"{stage} round {r}" if several else f"round {r}"
        out.append(f"the {judge} judge failed {flags:g} audit check{'s' if flags != 1 else ''} in {where}{first}. "
                   f"{ROLES[judge]} See the run page's Judge audit panel; a stronger judge is the fix.")
    return out


def _short(text: str, limit: int = 240) -> str:
    """A flag's sentence without the consequence the warning states itself, at most `limit` long."""
    text = text.split(": a policy trained on this judge", 1)[0].split(": its rewards can be gamed", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


def store_audit_warnings(store: Any) -> list[str]:
    """`audit_warnings` of the run in `store` (for `coevo report` and `coevo show`)."""
    from coevo.audit.in_run import run_records

    metrics = [m for m in store.metrics() if is_audit_metric(m["name"])]
    return audit_warnings(metrics, run_records(store)) if metrics else []
