"""`coevo judge`: score a JSONL file of rollouts with one judge, each line written back with
its judgment (the judge built by coevo/roles/judging.py)."""

from __future__ import annotations

import json
from pathlib import Path

from coevo.core.jsonl import iter_jsonl
from coevo.core.strict import ConfigError
from coevo.core.types import JudgeSampling, Rollout, Sampling
from coevo.roles.judges import KIND_OF_JUDGE, REWARD_JUDGES, judge_reads
from coevo.roles.judging import judge_as_reward, judge_name, rollout_judge
from coevo.roles.parsing import strip_reasoning
from coevo.tasks.loaders import DataError


def read_rollouts(path: Path) -> list[Rollout]:
    """Rollouts from JSONL: `x` (or `prompt`), `y0` (or `response`), optional `c`, `y1`."""
    if path.is_dir():
        raise DataError(f"input {path} is a folder: give a JSONL file, one JSON object per line")
    if not path.is_file():
        raise DataError(f"input file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:  # a binary file (a .parquet, a .zip) given as --input
        raise DataError(f"input file {path} is not UTF-8 text (byte {exc.start}): give a JSONL file, one JSON "
                        "object per line") from None
    rollouts = []
    for lineno, row in iter_jsonl(text.splitlines(), str(path), DataError):
        x, y0 = row.get("x", row.get("prompt")), row.get("y0", row.get("response"))
        if x is None or y0 is None:
            raise DataError(f"{path}:{lineno}: needs 'x' (or 'prompt') and 'y0' (or 'response'); "
                            f"has {sorted(row)}")
        rollouts.append(Rollout(sample_id=str(row.get("id", row.get("sample_id", lineno))), x=x, y0=y0,
                                c=row.get("c", row.get("critique")), y1=row.get("y1", row.get("revision"))))
    if not rollouts:
        raise DataError(f"input file {path} holds no rollouts: give one JSON line per rollout "
                        "with 'x' and 'y0' (and 'c', 'y1' where the judge needs them)")
    return rollouts


def judge_file(kind: str, input_path: Path, out_path: Path, judge_spec: str,
               sampling: Sampling | None = None, scoring: str | None = None) -> dict[str, int]:
    """Score a JSONL of rollouts with one judge; write each line back with its judgment.

    `scoring` (expected | sampled) overrides the sampling's; judges that serve as GRPO
    rewards also write `judgment.reward` under the training rules of `judge_as_reward`.
    The pairwise judge judges each (y0, y1) in both shown orders and averages
    (`coevo.eval.both_orders.both_orders_judgment`: `consistent`, `won_by`, `orders`).
    """
    from coevo.llm.python_functions import check_python_spec, is_python_spec
    from coevo.llm.specs import load_model
    from coevo.settings.role_specs import JudgeRole

    kind = judge_name(kind)
    if kind == "gold_rubric":
        raise ConfigError("the gold_rubric judge needs samples with rubrics, which a rollouts file does not "
                          "carry: use `coevo run` with a controls or refine config instead")
    if is_python_spec(judge_spec):  # probed before any file is read or written
        if kind not in KIND_OF_JUDGE:
            raise ConfigError(f"--judge {judge_spec}: a Python function cannot stand for the {kind!r} judge; "
                              f"it can for {', '.join(KIND_OF_JUDGE)}")
        check_python_spec(judge_spec, [KIND_OF_JUDGE[kind]], "--judge")
    rollouts = read_rollouts(input_path)
    sampling = sampling or JudgeRole().sampling
    if scoring is not None:
        sampling = JudgeSampling(**{**sampling.model_dump(), "scoring": scoring})
    scorer = rollout_judge(kind, load_model(judge_spec), sampling)
    if kind == "pairwise":  # an evaluation: a position preference must not move it
        from coevo.eval.both_orders import BothOrdersScorer

        scorer = BothOrdersScorer(scorer)  # type: ignore[arg-type]
    needs_critique, needs_revision = judge_reads(kind, "c"), judge_reads(kind, "y1")
    missing = [r.sample_id for r in rollouts
               if (needs_critique and r.c is None) or (needs_revision and r.y1 is None)]
    if missing:
        raise DataError(f"{input_path}: judge {kind!r} needs "
                        + " and ".join(n for n, need in (("a critique 'c'", needs_critique),
                                                          ("a revision 'y1'", needs_revision)) if need)
                        + f"; lines with ids {missing[:5]} lack them")
    if needs_critique and kind in REWARD_JUDGES:
        # As the critic's GRPO reward sees it: reasoning stripped, empty critiques not judged.
        for rollout in rollouts:
            rollout.c = strip_reasoning(rollout.c or "")
        judge_as_reward(rollouts, scorer, kind, needs_revision=needs_revision)
        judgments = [r.judgments[kind] for r in rollouts]
    else:
        judgments = scorer.score(rollouts)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    with out_path.open("w", encoding="utf-8") as f:
        for rollout, judgment in zip(rollouts, judgments):
            f.write(json.dumps({**rollout.model_dump(exclude={"judgments"}),
                                "judgment": judgment.model_dump()}, ensure_ascii=False) + "\n")
    valid = sum(j.valid for j in judgments)
    return {"valid": valid, "invalid": len(judgments) - valid}
