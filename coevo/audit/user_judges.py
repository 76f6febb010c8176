"""The judge a TRL user holds, made auditable: `audit_judge` takes it as it is.

A user auditing from Python holds one of: a coevo judge (a `Scorer`, or a pairwise judge),
a reward callable from `coevo.rewards` (it carries its judge), a `python:FILE.py[:f]` spec,
or a plain function of the kind's signature (`coevo.llm.python_functions.SIGNATURES`):

    taiscore / critique_quality   reward(x, y0, critique, y1) -> float | None
    pairwise                      pairwise(x, a, b) -> "a" | "b" | "tie"
    gold_rubric                   gold(x, response, rubric) -> float

A function or spec becomes the same Python judge a config's `python:` judge is
(coevo/roles/python_scorers.py), so its unreadable answers and position handling are the
run's own.
"""

from __future__ import annotations

from typing import Any

#: The function name each audited kind calls in a Python judge's module.
FUNCTION_OF_KIND = {"taiscore": "reward", "critique_quality": "reward", "pairwise": "pairwise", "gold_rubric": "gold"}
ARGUMENTS = {"reward": ("x", "y0", "critique", "y1"), "pairwise": ("x", "a", "b"), "gold": ("x", "response", "rubric")}


def audited_judge(kind: str, judge: Any) -> Any:
    """`judge` as a coevo judge of `kind` (see the module doc); TypeError naming the forms."""
    from coevo.llm.python_functions import PythonFunction, is_python_spec, load_python_function
    from coevo.roles.judging import judge_for
    from coevo.core.types import Sampling

    if callable(getattr(judge, "score", None)) or callable(getattr(judge, "judge", None)):
        return judge  # already a coevo judge
    held = getattr(judge, "coevo_judge", None)
    if held is not None:  # a coevo.rewards reward function: the judge behind it
        return held
    if isinstance(judge, str) and is_python_spec(judge):
        judge = load_python_function(judge)
    elif callable(judge):
        judge = _as_python_function(kind, judge)
    if isinstance(judge, PythonFunction):
        return judge_for(kind, judge, Sampling())
    signature = f"{FUNCTION_OF_KIND.get(kind, 'reward')}({', '.join(ARGUMENTS[FUNCTION_OF_KIND.get(kind, 'reward')])})"
    raise TypeError(f"audit_judge({kind!r}, {judge!r}): give a coevo judge, a coevo.rewards reward, a "
                    f"python:FILE.py:f spec, or a function {signature}")


def _as_python_function(kind: str, function: Any) -> Any:
    """A plain function as the Python judge module a `python:` spec would load."""
    from coevo.llm.python_functions import function_as_python

    name = FUNCTION_OF_KIND[kind]
    try:
        return function_as_python(function, name, ARGUMENTS[name])
    except TypeError as exc:
        raise TypeError(f"audit_judge: a {kind} judge function takes ({', '.join(ARGUMENTS[name])}); {exc}") from None


__all__ = ["audited_judge"]
