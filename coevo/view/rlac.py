"""The viewer's RLAC page: every critic proposal with its verdict and the validator's evidence.

`/runs/{run_id}/proposals` lists the proposals a run's critic made (store records kind
`rlac_proposal`, one per proposal on one output), filterable by verdict and round: the test
(code) or the claimed fact (facts), the verdict and its reason, and what the validator saw
(the sandbox's outputs and traceback on the reference and the candidate; the sentence, the
authenticity check, the retrieved passages and the entailment judge's answer). Above them:
verdict counts per round and the held-out metric against verification calls spent (the
paper's Fig. 2b), drawn from the per-round metrics, so it grows while a run is going.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Request

if TYPE_CHECKING:
    from coevo.rundir.store import RunStore

router = APIRouter()

PAGE_SIZE = 50
VERDICTS = ("caught", "survived", "invalid")

#: The validators' evidence keys in reading order, with their labels; `block` ones are long
#: texts (outputs, tracebacks) shown as preformatted blocks. Unknown keys follow, as they are.
EVIDENCE = (
    ("reason", "the critic's stated reason", False),
    ("test", "test", True),
    ("reference_status", "reference run", False),
    ("reference_output", "reference output", True),
    ("reference_stderr", "reference traceback / stderr", True),
    ("candidate_status", "candidate run", False),
    ("candidate_output", "candidate output", True),
    ("candidate_stderr", "candidate traceback / stderr", True),
    ("entity", "entity", False),
    ("sentence", "sentence number", False),
    ("sentence_text", "the sentence", True),
    ("error_fact", "claimed error (fact)", True),
    ("authenticity", "authenticity check", True),
    ("passages", "retrieved passages", True),
    ("judge_answer", "entailment judge's answer", True),
)


def proposals(store: RunStore) -> list[dict[str, Any]]:
    """Every critic proposal of the run with its verdict, in the order they were made."""
    return [{"key": key, **record} for key, record in store.get_records("rlac_proposal")]


def claim_of(record: dict[str, Any]) -> str:
    """What the proposal says fails: the test (code), the claimed wrong fact (facts), else
    the critic's text itself."""
    details = record.get("details") or {}
    if details.get("test"):
        return str(details["test"])
    if details.get("error_fact"):
        sentence = details.get("sentence")
        return f"sentence {sentence}: {details['error_fact']}" if sentence is not None else str(details["error_fact"])
    return str(record.get("proposal", ""))


def evidence(details: dict[str, Any]) -> list[dict[str, Any]]:
    """The validator's details as labelled rows: known keys in reading order, then the rest.
    Lists (retrieved passages) stay lists; empty values are left out."""
    rows, known = [], set()
    for key, label, block in EVIDENCE:
        known.add(key)
        if details.get(key) not in (None, "", []):
            rows.append({"key": key, "label": label, "value": details[key], "block": block})
    for key, value in details.items():
        if key not in known and value not in (None, "", []):
            rows.append({"key": key, "label": key, "value": value,
                         "block": isinstance(value, (list, dict)) or len(str(value)) > 80})
    return rows


def verdict_counts(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per round: how many proposals were caught / survived / invalid, and their shares."""
    by_round: dict[int, dict[str, int]] = {}
    for r in records:
        counts = by_round.setdefault(int(r.get("round", 0)), dict.fromkeys(VERDICTS, 0))
        counts[r.get("verdict", "invalid")] = counts.get(r.get("verdict", "invalid"), 0) + 1
    rows = []
    for rnd, counts in sorted(by_round.items()):
        total = sum(counts.values())
        rows.append({"round": rnd, "total": total, **counts,
                     **{f"{v}_share": counts[v] / total if total else None for v in VERDICTS}})
    return rows


def verification_figure(store: RunStore) -> dict[str, Any] | None:
    """The held-out metric (FactScore precision or pass@1) against verification calls spent
    by the end of each round: by this run, and by enumerative checking of the same outputs."""
    from coevo.eval.metric_defs import describe
    from coevo.view.plots import Panel, drawn_interval, small_multiples

    values: dict[tuple[str, int], dict[str, float]] = {}
    for m in store.metrics():
        if m["stage"] in ("generator", "verification") and m["round"] is not None and m["value"] is not None:
            values.setdefault((m["stage"], m["round"]), {})[m["name"]] = m["value"]
    metric = next((name for name in ("factscore_precision", "pass_at_1")
                   if any(name in v for (stage, _), v in values.items() if stage == "generator")), None)
    if metric is None:
        return None
    lines: dict[str, list[tuple[Any, ...]]] = {"calls this run made": [], "enumerative checking of the same outputs": []}
    for (stage, rnd), gen in sorted(values.items(), key=lambda kv: kv[0][1]):
        if stage != "generator" or gen.get(metric) is None:
            continue
        calls = values.get(("verification", rnd), {})
        # The round's 95 % interval as an error bar and its n in the hover: a step of 0.05
        # in pass@1 over 40 problems is inside the noise, and the figure should say so.
        n = gen.get("heldout_count")
        lo, hi = drawn_interval(gen.get(f"{metric}_lo"), gen.get(f"{metric}_hi"), n)  # none under 5 items
        hover = ", ".join(([f"n = {n:g}"] if n is not None else [])
                          + ([f"95% CI [{lo:.3g}, {hi:.3g}]"] if lo is not None and hi is not None else []))
        for line, name in (("calls this run made", "calls_rlac"), ("enumerative checking of the same outputs",
                                                                   "calls_enumerative")):
            if calls.get(name) is not None:
                lines[line].append((calls[name], gen[metric], lo, hi, hover))
    lines = {k: v for k, v in lines.items() if v}
    if not lines:
        return None
    words = describe(metric).title
    figure = small_multiples(f"{words} vs verification calls",
                             [Panel(f"held-out {words} after each round", lines, metric=metric)], "verification calls",
                             integer_x=False, columns=1)
    figure["figure"]["layout"]["height"] = 360
    figure["id"] = "plot-verification"
    return figure


# ─── route ──────────────────────────────────────────────────────────────────────────


@router.get("/runs/{run_id}/proposals")
def proposals_page(request: Request, run_id: str, verdict: str = "", round: str = "", page: int = 1):
    """The RLAC critic's proposals, their verdicts and the validator's evidence."""
    from coevo.view.context import reading, render
    from coevo.view.plots import figure_json

    if verdict not in ("", *VERDICTS):
        raise HTTPException(status_code=400, detail=f"verdict must be one of {', '.join(VERDICTS)}, not {verdict!r}")
    try:
        wanted_round = int(round) if round.strip() else None
    except ValueError:
        raise HTTPException(status_code=400, detail=f"round must be a number, not {round!r}") from None
    with reading(request, run_id) as store:
        records = proposals(store)
        figure = verification_figure(store)
        enumerative = [record for _, record in store.get_records("rlac_enumerative")]
    kept = [r for r in records if (not verdict or r.get("verdict") == verdict)
            and (wanted_round is None or r.get("round") == wanted_round)]
    pages = max(1, -(-len(kept) // PAGE_SIZE))
    page = min(max(1, page), pages)
    shown = [{**r, "claim": claim_of(r), "evidence": evidence(r.get("details") or {})}
             for r in kept[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]]
    query = {k: v for k, v in request.query_params.items() if k != "page"}
    return render(request, "proposals.html", run_id=run_id, active="proposals", needs_plotly=figure is not None,
                  proposals=shown, total=len(records), matched=len(kept), counts=verdict_counts(records),
                  rounds=sorted({r["round"] for r in records if r.get("round") is not None}), verdict=verdict, round=wanted_round,
                  verdicts=VERDICTS, figure=figure, figure_json=figure_json, enumerative=enumerative,
                  page=page, pages=pages, query=query)
