"""Code standing for DecoEvo's scoring roles: the criterion judge, the structural auditor and
the near-tie audit's blind stage, each a `python:MODULE:FUNCTION` of the config's
(`roles.judge.scorer`, `roles.auditor.structural_scorer`, `roles.auditor.preference_scorer`).

Each stand-in has the interface of the role it replaces (roles/decoevo.py), so the loop, the
judge audit and the records treat both alike. Why code: a gate judged by a 135M judge
cannot tell two skills apart (its scores of one skill move as much as those of two), so no
solver edit passes its margin on merit; a checkable judge makes the gate's only noise the
solver's sampling, which the run can measure and set its margin above (gate_noise.py).

The functions are pure and cheap: their calls are not cached in the run store (a resumed run
re-asks them for nothing), and they are probed once, when the role is built, so a bad spec
ends the run before its first step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from coevo.llm.base import ModelError, user
from coevo.llm.python_functions import PROBE_PROMPT, load_python_function
from coevo.roles.decoevo import BlindVerdict, ContrastiveAuditor, CriterionJudgment, StructuralAudit, rubric_score
from coevo.roles.judges import order_swapped
from coevo.core.types import Message, Rubric, Sample, Sampling

log = logging.getLogger(__name__)

#: The probe call of each stand-in: arguments of the types a run passes.
_PROBE_RUBRIC = {"criteria": [{"name": "c1", "description": "Is clear.", "weight": 1.0}]}
PROBES: dict[str, tuple[Any, ...]] = {
    "judge": (PROBE_PROMPT, "Rain taps on the roof.", "Is clear."),
    "structural": (PROBE_PROMPT, _PROBE_RUBRIC),
    "preference": (PROBE_PROMPT, "Rain falls.", "Rain taps on the roof."),
}


def load_scorer(spec: str, kind: str, where: str) -> Callable[..., Any]:
    """The function `spec` names, probed once with `kind`'s arguments (ModelError otherwise)."""
    loaded = load_python_function(spec)
    if loaded.function is None:
        raise ModelError(f"{where} {spec!r}: name the function, as python:MODULE:FUNCTION")
    function = getattr(loaded.module, loaded.function)
    try:
        value = function(*PROBES[kind])
    except Exception as exc:
        raise ModelError(f"{where} {spec!r} raised {type(exc).__name__}: {exc} on a probe call "
                         f"{PROBES[kind]!r}; fix it before the run") from exc
    if not ANSWERS[kind][1](value):
        raise ModelError(f"{where} {spec!r} returned {value!r} on a probe call; it must return {ANSWERS[kind][0]}")
    return function


def _field(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else value


def _unit(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1


#: What each stand-in must return: (in words, the check).
ANSWERS: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "judge": ('a bool or {"satisfied": bool, "rationale": str}',
              lambda v: isinstance(_field(v, "satisfied"), bool)),
    "structural": ('a number in [0, 1] or {"adequacy": number in [0, 1], "rationale", "repair"}',
                   lambda v: _unit(_field(v, "adequacy"))),
    "preference": ('"a", "b", "tie" or "equivalent", or {"preference": ..., "rationale": str}',
                   lambda v: str(_field(v, "preference")).strip().lower() in ("a", "b", "tie", "equivalent")),
}


class _Checked:
    """Calls the function per item; an exception makes that item unreadable, never the run's end."""

    scoring = "sampled"  # no token probabilities: the value returned is the score

    def __init__(self, function: Callable[..., Any], spec: str):
        self.function, self.spec = function, spec
        self._warned = False

    def call(self, *args: Any) -> tuple[Any, str | None]:
        try:
            return self.function(*args), None
        except Exception as exc:  # the function failed on this item: keep the run going
            error = f"{self.spec} raised {type(exc).__name__}: {exc}"
            if not self._warned:
                self._warned = True
                log.warning("%s (this item is unreadable; later failures are counted, not said)", error)
            return None, error


class CheckedCriterionJudge(_Checked):
    """The criterion judge as code: one call per criterion, score = satisfied points / total."""

    def __init__(self, function: Callable[..., Any], spec: str, sampling: Sampling):
        super().__init__(function, spec)
        # Kept for the judge audit, which seeds a retest through it and restores it.
        self.sampling = sampling

    def judge(self, questions: Sequence[Sample], responses: Sequence[str],
              rubrics: Sequence[Rubric | None]) -> list[CriterionJudgment]:
        """One judgment per (question, response, rubric); a missing rubric is invalid."""
        if not len(questions) == len(responses) == len(rubrics):
            raise ValueError("questions, responses and rubrics must have the same length")
        return [self._one(q, r, rubric) if rubric is not None else CriterionJudgment(error="no rubric for this question")
                for q, r, rubric in zip(questions, responses, rubrics)]

    def _one(self, question: Sample, response: str, rubric: Rubric) -> CriterionJudgment:
        satisfied, rationales = {}, {}
        for c in rubric.criteria:
            value, error = self.call(question.prompt, response, c.description)
            verdict = value.get("satisfied") if isinstance(value, dict) else value
            if error or not isinstance(verdict, bool):
                return CriterionJudgment(raw=repr(value), error=error or f"{self.spec} gave no bool for {c.name}")
            satisfied[c.name] = verdict
            rationales[c.name] = str(value.get("rationale", "")) if isinstance(value, dict) else ""
        score = rubric_score(rubric, satisfied)
        raw = json.dumps({"verdicts": [{"id": n, "satisfied": v, "rationale": rationales[n]}
                                       for n, v in satisfied.items()]})
        return CriterionJudgment(satisfied, rationales, score, raw, sampled=score)


class CheckedStructuralAuditor(_Checked):
    """The structural auditor as code: (question, rubric) -> adequacy 0-1, rationale, repair."""

    def audit(self, questions: Sequence[Sample], rubrics: Sequence[Rubric | None]) -> list[StructuralAudit]:
        """One audit per question; a question without a readable rubric gets adequacy 0."""
        out = []
        for q, rubric in zip(questions, rubrics):
            if rubric is None:  # covered by nothing, as the model auditor scores it
                out.append(StructuralAudit(q.id, 0.0, "no readable rubric", "", error="no rubric"))
                continue
            value, error = self.call(q.prompt, rubric.model_dump(mode="json"))
            found = value if isinstance(value, dict) else {"adequacy": value}
            adequacy = found.get("adequacy")
            if error or isinstance(adequacy, bool) or not isinstance(adequacy, (int, float)) or not 0 <= adequacy <= 1:
                out.append(StructuralAudit(q.id, None, raw=repr(value), error=error or "no adequacy in [0, 1]"))
                continue
            out.append(StructuralAudit(q.id, float(adequacy), str(found.get("rationale", "")),
                                       str(found.get("repair", "")), raw=json.dumps(found, default=str),
                                       sampled=float(adequacy)))
        return out


class CheckedContrastiveAuditor(ContrastiveAuditor):
    """The near-tie audit with its blind stage as code; the explanation (stage 2) stays on the
    backbone, continuing a conversation in which the blind verdict is the auditor's answer."""

    def __init__(self, preference: Callable[..., Any], spec: str, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.checked = _Checked(preference, spec)

    def blind_preferences(self, questions: Sequence[Sample],
                          pairs: Sequence[tuple[str, str]]) -> list[BlindVerdict]:
        """Stage 1 by the function, on the question and the two responses alone, in the shown order."""
        out = []
        for q, (a, b) in zip(questions, pairs):
            swapped = order_swapped(f"{q.id}|{a}|{b}", self.seed)
            shown_a, shown_b = (b, a) if swapped else (a, b)
            value, error = self.checked.call(q.prompt, shown_a, shown_b)
            found = value if isinstance(value, dict) else {"preference": value}
            label = str(found.get("preference", "")).strip().lower()
            label = "equivalent" if label == "tie" else label
            prompt = self.template.render(question=q.prompt, response_a=shown_a, response_b=shown_b)
            answer = json.dumps({"rationale": str(found.get("rationale", "")), "preference": label.upper()
                                 if label in ("a", "b") else label})
            conversation = [*user(prompt), Message(role="assistant", content=answer)]
            if error or label not in ("a", "b", "equivalent"):
                out.append(BlindVerdict(None, conversation=conversation, valid=False,
                                        error=error or "no preference a / b / equivalent"))
                continue
            shown = None if label == "equivalent" else "ab".index(label)
            preferred = None if shown is None else (1 - shown if swapped else shown)
            out.append(BlindVerdict(preferred, str(found.get("rationale", "")), swapped, conversation))
        return out
