"""Python scorers as judges: a `python:` spec's function wrapped as each judge kind.

Each wrapper has the interface of the model judge it stands for (`score` as a `Scorer`, and
the `judge(...)` call the loops use), and returns `Judgment`s with `source="python"`, so the
loops, stores and reports treat both alike; `judge_for` picks the one a model or a function
needs, so no loop branches on which it got.

A function that raises, or returns the wrong type, on one item mid-run makes that item's
judgment invalid (its error kept, a warning said once) instead of ending the run: the
probe at the start (`check_python_spec`) already showed the function works.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from coevo.llm.python_functions import PythonFunction, answer_problem, pairwise_answer
from coevo.roles.judges import JUDGES, KIND_OF_JUDGE, shown_swapped
from coevo.core.types import Judgment, Rollout, Sample, Sampling

log = logging.getLogger(__name__)

def judge_for(name: str, model: Any, sampling: Sampling, template: str | Path | None = None,
              **options: Any) -> Any:
    """The judge `name` on `model`: the model judge, or (a `PythonFunction`) its Python
    stand-in. `options` go to the model judge (e.g. PairwiseJudge's `order_seed`, which the
    Python pairwise judge takes too)."""
    if not isinstance(model, PythonFunction):
        return JUDGES[name](model, sampling, template, **options)
    if name not in KIND_OF_JUDGE:
        raise ValueError(f"{model.spec!r}: a Python function cannot stand for the {name!r} judge; "
                         f"it can for {', '.join(KIND_OF_JUDGE)}")
    if name == "pairwise":
        return PythonPairwiseJudge(model, order_seed=options.get("order_seed", 0))
    if name == "gold_rubric":
        return PythonGoldJudge(model)
    return PythonRewardJudge(model, name)


def grader_for(model: Any, sampling: Sampling, kind: str = "gold_rubric") -> Any:
    """DecoEvo's gold grader on `model`: GoldRubricJudge (1-10 per criterion), HealthBench's
    met/unmet grading with signed points (`kind="healthbench"`), or a Python grader in [0, 1]."""
    if isinstance(model, PythonFunction):
        return PythonGoldJudge(model, kind="grader")
    if kind == "healthbench":
        from coevo.roles.decoevo import HealthBenchGrader

        return HealthBenchGrader(model, sampling)
    return JUDGES["gold_rubric"](model, sampling)


class _PythonJudge:
    """Calls the function once per item; an exception or a wrong answer is an invalid item."""

    name: str
    kind: str
    scoring = "sampled"  # no token probabilities: the value returned is the score

    def __init__(self, function: PythonFunction):
        self.function = function
        self._warned = False

    def _call(self, *args: Any) -> tuple[Any, str | None, bool]:
        """(answer, error or None, cached)."""
        try:
            value, cached = self.function.call(self.kind, *args)
        except Exception as exc:  # the user's code failed on this item: keep the run going
            error = f"{self.function.spec} raised {type(exc).__name__}: {exc}"
            if not self._warned:
                self._warned = True
                log.warning("%s (this item's judgment is invalid; later failures are counted, not said)", error)
            return None, error, False
        problem = answer_problem(self.kind, value)
        return (None, f"{self.function.spec} {problem}", cached) if problem else (value, None, cached)

    def _judgment(self, value: Any, error: str | None, cached: bool, score: float | None = None,
                  **extra: Any) -> Judgment:
        """The Judgment of one answer; `score` defaults to the answer itself (a number)."""
        valid = error is None and value is not None
        if error is None and value is None:
            error = "the function returned None (unreadable)"
        if score is None and valid:
            score = float(value)
        return Judgment(judge=self.name, score=score if valid else None, sampled=score if valid else None,
                        raw=repr(value), valid=valid, error=error, source="python",
                        function=self.function.spec, cached=cached, **extra)


class PythonRewardJudge(_PythonJudge):
    """A GRPO reward judge: `reward(x, y0, critique, y1)`; None is an unreadable answer,
    which `judge_as_reward` turns into `invalid_reward` inside its GRPO group."""

    kind = "reward"

    def __init__(self, function: PythonFunction, name: str = "taiscore"):
        super().__init__(function)
        self.name = name

    def score(self, rollouts: Sequence[Rollout], samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """One Judgment per rollout: the function's reward (y1 is None for critique_quality)."""
        return [self._judgment(*self._call(r.x, r.y0, r.c, r.y1)) for r in rollouts]

    judge = score


class PythonPairwiseJudge(_PythonJudge):
    """`pairwise(x, a, b)`, called with the two responses in the order shown, which is
    randomised per item exactly as `PairwiseJudge` does; "a"/"b" are mapped back to the
    original labels, so a function with a position bias is measured as the model judge is."""

    name, kind = "pairwise", "pairwise"

    def __init__(self, function: PythonFunction, order_seed: int = 0):
        super().__init__(function)
        self.order_seed = order_seed

    def judge(self, prompts: Sequence[str], first: Sequence[str], second: Sequence[str], *,
              ids: Sequence[str] | None = None, seed: int = 0, rng: random.Random | None = None,
              labels: tuple[str, str] = ("first", "second"),
              swapped: Sequence[bool] | None = None) -> list[Judgment]:
        """Compare `first[i]` with `second[i]`; `preference` 1.0 when the second wins, the
        shown order from `swapped`, `rng` or the seeded ids (as `PairwiseJudge.judge`), extra
        fields `winner` and `shown_order`."""
        if not len(prompts) == len(first) == len(second):
            raise ValueError("prompts, first and second must have the same length")
        judgments = []
        for swap, x, a, b in zip(shown_swapped(prompts, ids, seed, rng, swapped), prompts, first, second):
            shown = [labels[1], labels[0]] if swap else [labels[0], labels[1]]
            value, error, cached = self._call(x, b if swap else a, a if swap else b)
            answer = pairwise_answer(value)
            if answer is None:
                judgments.append(self._judgment(None, error, cached, shown_order=shown, winner=None))
                continue
            winner = "tie" if answer == "tie" else shown["ab".index(answer)]
            preference = 0.5 if winner == "tie" else float(winner == labels[1])
            judgments.append(self._judgment(answer, None, cached, score=preference, scores={"preference": preference},
                                            reasons={"answer": answer, "shown_order": ", ".join(shown)},
                                            shown_order=shown, winner=winner))
        return judgments

    def score(self, rollouts: Sequence[Rollout], samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """The `Scorer` call: is each rollout's y1 preferred over its y0?"""
        return self.judge_rollouts(rollouts, seed=self.order_seed)

    def judge_rollouts(self, rollouts: Sequence[Rollout], *, seed: int = 0,
                       rng: random.Random | None = None) -> list[Judgment]:
        """Is y1 preferred over y0? `preference` 1.0 = y1 wins (the DPO-eligible case)."""
        missing = [r.sample_id for r in rollouts if r.y1 is None]
        if missing:
            raise ValueError(f"rollouts of samples {missing[:5]} have no y1 to compare")
        return self.judge([r.x for r in rollouts], [r.y0 for r in rollouts], [r.y1 or "" for r in rollouts],
                          ids=[r.sample_id for r in rollouts], seed=seed, rng=rng, labels=("y0", "y1"))


class PythonGoldJudge(_PythonJudge):
    """`gold(x, response, rubric)` (any scale: the model's gold is 1-10), or with
    kind="grader" DecoEvo's `grader(question, answer, rubric)` in [0, 1]. The rubric is the
    sample's as a plain dict ({criteria: [{name, description, weight}]}), None without one."""

    name = "gold_rubric"

    def __init__(self, function: PythonFunction, kind: str = "gold"):
        super().__init__(function)
        self.kind = kind

    def score(self, rollouts: Sequence[Rollout], samples: Mapping[str, Sample] | None = None) -> list[Judgment]:
        """Each rollout's final response (y1, else y0) against its sample's rubric."""
        missing = [r.sample_id for r in rollouts if r.sample_id not in (samples or {})]
        if missing:
            raise ValueError(f"the gold judge needs the samples of the rollouts it scores; none given for "
                             f"ids {missing[:5]}")
        return self.judge([samples[r.sample_id] for r in rollouts], [r.y1 or r.y0 for r in rollouts])  # type: ignore[index]

    def judge(self, samples: Sequence[Sample], responses: Sequence[str]) -> list[Judgment]:
        """One Judgment per (sample, response), in order."""
        if len(samples) != len(responses):
            raise ValueError("samples and responses must have the same length")
        return [self._judgment(*self._call(s.prompt, y, s.rubric.model_dump(mode="json") if s.rubric else None))
                for s, y in zip(samples, responses)]
