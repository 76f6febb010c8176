"""What the models wrote, as the run page shows it beside the numbers: the DPO pairs a stage
trained on, and the first and the last round's answers to the same held-out prompt.

- `dpo_pairs`: TAIScore's pairs (`pairs/<condition>/round<r>` records: the revision y1 the
  critique-blind pairwise judge preferred over y0) with that judge's probability that the
  chosen answer is the better one, read from the pool rollout it judged; RLAC's pairs
  (`rlac_pair` records), whose preference is the validator's verdict, not a probability.
- `round_answers`: per kind of evaluation stage (the round number taken out of its name), the
  held-out prompts answered both in its first and its last round, each with both answers and
  their judges' scores, side by side.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from coevo.rundir.store import RunStore, stage_round

#: Pairs listed on the run page (the rest are counted).
PAIRS_SHOWN = 20
#: Prompts shown with their first- and last-round answers (the first open, the rest folded).
PROMPTS_SHOWN = 6
#: The TAIScore loop's pool stages, where each pair's pairwise verdict was made.
POOL = re.compile(r"(?P<prefix>.*)/pool\d+")


def dpo_pairs(store: RunStore, dpo_stages: list[str], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """{"rows": the first PAIRS_SHOWN pairs, "total", "judged": whether any has a judge's
    probability}; None where the run kept no pair. `dpo_stages`: the run's DPO training stages
    (`<prefix>/<role>`); `rows`: `store.rollout_rows()`."""
    verdicts = _pool_verdicts(rows)
    out = []
    for stage in dpo_stages:
        prefix = stage.rsplit("/", 1)[0]
        for _, pair in store.get_records(f"pairs/{prefix}"):
            verdict = verdicts.get((prefix, pair.get("sample_id")))
            out.append(_pair_row(pair, stage_round(stage, None), verdict))
    for _, pair in store.get_records("rlac_pair"):
        out.append(_pair_row(pair, pair.get("round"), None, source=pair.get("source")))
    if not out:
        return None
    return {"rows": out[:PAIRS_SHOWN], "total": len(out), "judged": any(r["probability"] is not None for r in out)}


def _pair_row(pair: dict[str, Any], r: int | None, verdict: Any, source: str | None = None) -> dict[str, Any]:
    probability = getattr(verdict, "expected", None) if verdict is not None else None
    winner = (verdict.model_extra or {}).get("winner") if verdict is not None else None
    return {"round": r, "sample_id": pair.get("sample_id"), "source": source, "prompt": pair.get("prompt", ""),
            "chosen": pair.get("chosen", ""), "rejected": pair.get("rejected", ""),
            "chosen_chars": len(pair.get("chosen") or ""), "rejected_chars": len(pair.get("rejected") or ""),
            "probability": probability, "winner": winner,
            "verdict_score": getattr(verdict, "score", None) if verdict is not None else None}


def _pool_verdicts(rows: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """{(round prefix, sample id): the pairwise judgment of y1 over y0} in the pool stages."""
    found = {}
    for row in rows:
        match = POOL.fullmatch(row["stage"])
        judgment = row["rollout"].judgments.get("pairwise")
        if match and judgment is not None and judgment.valid:
            found[(match.group("prefix"), row["rollout"].sample_id)] = judgment
    return found


def _kind(stage: str) -> str:
    return re.sub(r"round\d+", "round*", stage)


def round_answers(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first and last round's answers to the same held-out prompts: {"kind", "first",
    "last", "prompts": [{"sample_id", "x", "first": answer, "last": answer}], "shared"}, an
    answer being {"stage", "id", "y0", "y1", "judges": [(name, score text)]}; from the
    evaluation stages (names ending in /eval) where there are any, else any stage kind logged
    in two rounds or more. None where no prompt was answered in two rounds."""
    by_kind: dict[str, dict[int, dict[str, dict[str, Any]]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        r = stage_round(row["stage"], row["round"])
        if r is not None:
            # The first rollout of a prompt in a round: a control's other conditions are not its answer.
            by_kind[_kind(row["stage"])][r].setdefault(row["rollout"].sample_id, row)
    candidates = [(kind, rounds) for kind, rounds in by_kind.items() if len(rounds) > 1
                  and set(rounds[min(rounds)]) & set(rounds[max(rounds)])]
    evaluations = [c for c in candidates if c[0].endswith("/eval")]
    if not (evaluations or candidates):
        return None
    kind, rounds = (evaluations or candidates)[0]
    first, last = min(rounds), max(rounds)
    shared = sorted(set(rounds[first]) & set(rounds[last]), key=lambda s: rounds[first][s]["id"])
    prompts = [{"sample_id": s, "x": rounds[first][s]["rollout"].x, "first": _answer(rounds[first][s]),
                "last": _answer(rounds[last][s])} for s in shared[:PROMPTS_SHOWN]]
    return {"kind": kind, "first": first, "last": last, "prompts": prompts, "shared": len(shared)}


def _answer(row: dict[str, Any]) -> dict[str, Any]:
    rollout = row["rollout"]
    judges = [(name, "unreadable" if not j.valid or j.score is None else f"{j.score:g}")
              for name, j in rollout.judgments.items()]
    return {"stage": row["stage"], "id": row["id"], "y0": rollout.y0, "y1": rollout.y1, "judges": judges,
            "y0_chars": len(rollout.y0 or ""), "y1_chars": None if rollout.y1 is None else len(rollout.y1)}
