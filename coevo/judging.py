"""Judges by name, over rollouts: what pipelines, configs and `coevo judge` share.

Every judge is a `coevo.roles.base.Scorer` (`score(rollouts, samples_by_id) -> judgments`);
this module builds judges from the names used in configs and on the CLI, turns judgments
into GRPO rewards under the TAIScore authors' rules, and scores a JSONL file (`coevo judge`).
"""

from __future__ import annotations

import json
from pathlib import Path

from coevo.config import ConfigError
from coevo.jsonl import iter_jsonl
from coevo.llm.base import ChatModel
from coevo.roles.parsing import strip_reasoning
from coevo.roles.base import Scorer
from coevo.roles.judges import JUDGE_NAMES, KIND_OF_JUDGE, REWARD_JUDGES, judge_reads
from coevo.roles.python_scorers import judge_for
from coevo.tasks.loaders import DataError
from coevo.types import JudgeSampling, Judgment, Rollout, Sampling

# JUDGE_NAMES (spelled as configs spell them; help texts and errors show this spelling),
# REWARD_JUDGES and KIND_OF_JUDGE are derived in roles/judges.py from what each judge
# declares it reads and serves as. A hyphen is read as an underscore, so `coevo judge
# outcome-gain` (the CLI's old spelling) still works.


def judge_name(name: str) -> str:
    """The canonical spelling of a judge's name (`outcome-gain` -> `outcome_gain`); an
    unknown name is a ConfigError that lists the known ones."""
    canonical = name.strip().replace("-", "_")
    if canonical not in JUDGE_NAMES:
        raise ConfigError(f"unknown judge {name!r}; choose from {', '.join(JUDGE_NAMES)}")
    return canonical


def rollout_judge(name: str, model: ChatModel, sampling: Sampling, template: str | None = None) -> Scorer:
    """A judge by config name (every judge is a `Scorer` over rollouts); on a `python:`
    scorer (a `PythonFunction` from `load_model`), the function standing for it."""
    return judge_for(judge_name(name), model, sampling, template)


def judge_as_reward(rollouts: list[Rollout], judge: Scorer, name: str,
                    *, invalid_reward: float = 0.0, needs_revision: bool = True) -> list[float]:
    """Judge rollouts as training rewards, under the TAIScore authors' rules
    (`compute_score_batched` in their reward code), and return one reward per rollout.

    A rollout with an empty critique (or, where the judge reads one, an empty revision) is
    not judged and gets `invalid_reward`; so does an answer the judge could not give
    readably after its re-ask. Such rewards stay in their GRPO group's mean and std. Each
    rollout's `judgments[name]` holds the judgment with the reward it gave in `reward`.
    """
    scorable = [r for r in rollouts if (r.c or "").strip() and (not needs_revision or (r.y1 or "").strip())]
    for rollout, judgment in zip(scorable, judge.score(scorable) if scorable else []):
        judgment.reward = judgment.score if judgment.valid and judgment.score is not None else invalid_reward
        rollout.judgments[name] = judgment
    for rollout in rollouts:
        if name not in rollout.judgments:
            missing = "an empty critique" if not (rollout.c or "").strip() else "an empty revision"
            rollout.judgments[name] = Judgment(judge=name, valid=False, reward=invalid_reward,
                                               error=f"{missing}: not judged")
    return [float(r.judgments[name].reward) for r in rollouts]  # type: ignore[arg-type]


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
    from coevo.role_specs import JudgeRole

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
