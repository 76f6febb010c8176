"""The one place judges are built by name: every loop, command and reward asks here.

Every judge is a `coevo.roles.base.Scorer` (`score(rollouts, samples) -> judgments`);
`rollout_judge` builds one from the name used in configs and on the CLI (on a model, or on a
`python:` function standing for it), `grader_for` builds DecoEvo's gold grader, and
`judge_as_reward` turns judgments into GRPO rewards under the TAIScore authors' rules.
Scoring a JSONL file (`coevo judge`) is coevo/eval/judge_file.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coevo.core.strict import ConfigError
from coevo.llm.base import ChatModel
from coevo.roles.base import Scorer
from coevo.roles.judges import JUDGE_NAMES
from coevo.roles.python_scorers import grader_for, judge_for
from coevo.core.types import Judgment, Rollout, Sampling

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


def judge_model(spec: str, load_frozen: Callable[..., Any], **options: Any) -> Any:
    """The model behind a judge spec: a `python:` function loaded here (it needs no backend
    and keeps its own call cache), anything else through `load_frozen` (a `Backend`'s, so a
    test's fake stands in for it) with the role's options."""
    from coevo.llm.python_functions import is_python_spec, load_python_function

    return load_python_function(spec) if is_python_spec(spec) else load_frozen(spec, **options)


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


__all__ = ["JUDGE_NAMES", "grader_for", "judge_as_reward", "judge_for", "judge_model", "judge_name", "rollout_judge"]
