"""Replay answers for every DecoEvo role, keyed on each template's own wording."""

from __future__ import annotations

import json
import math

from coevo.llm.replay import ReplayModel

# A phrase unique to each role's template: the replay rule matches on it.
SOLVER = "Write your answer to the task now."
GENERATOR = "You write a grading rubric"
JUDGE = "Grade the answer against each criterion"
SOLVER_REWRITER = "You improve a skill document"
STRUCTURAL = "You audit a grading rubric"
BLIND = "Compare two answers to the same task"
EXPLAIN = "Your preference is fixed"
GENERATOR_REWRITER = "You improve the principles"
GOLD = "You are an expert evaluator"
GOLD_SECRET = "GOLD-SECRET"


#: The fakes' skill texts are markers the replay rules match on ("SKILL V1", "NEW SOLVER
#: SKILL"), not skills: the skill-form audit would refuse every one of them, so configs built
#: here turn it off (tests/algorithms/test_decoevo_skill_form.py tests it with real skills).
MARKERS_ARE_NOT_SKILLS = {"enabled": False}


def rubric(*criteria):
    return json.dumps({"criteria": [{"criterion": c, "points": p} for c, p in criteria]})


def verdicts(*flags):
    return json.dumps({"verdicts": [{"id": f"c{i}", "rationale": f"reason {i}", "satisfied": f}
                                    for i, f in enumerate(flags, 1)]})


def scored_verdicts(*criteria):
    """Verdicts with recorded token log-probabilities, as a replay completion object.

    Each criterion is (written flag, P(" true"), P(" false")) at the token of its verdict;
    what is left of the mass goes to ' "', a token that spells no verdict (the judge's raw
    distribution is not bound by the answer's grammar).
    """
    tokens, top = ['{"verdicts": ['], [{}]
    for i, (flag, p_true, p_false) in enumerate(criteria, 1):
        tokens.append(("" if i == 1 else ", ") + f'{{"id": "c{i}", "rationale": "reason {i}", "satisfied":')
        top.append({})
        alternatives = {" true": p_true, " false": p_false}
        if 1 - p_true - p_false > 1e-9:
            alternatives[' "'] = 1 - p_true - p_false
        tokens.append(" true" if flag else " false")
        top.append({t: math.log(p) for t, p in alternatives.items()})
        tokens.append("}")
        top.append({})
    tokens.append("]}")
    top.append({})
    # A written token always appears among its own alternatives.
    top = [alts or {token: 0.0} for token, alts in zip(tokens, top)]
    return {"text": "".join(tokens), "tokens": tokens, "top_logprobs": top}


def rules(**override):
    """Default answers for every role; `override` replaces one role's rule list."""
    table = {
        "solver": [{"match": SOLVER, "completions": ["answer one", "answer two", "answer three"]}],
        "generator": [{"match": GENERATOR, "completions": [rubric(("Meets the length", 2), ("Avoids cliches", 1))]}],
        "judge": [{"match": JUDGE, "completions": [verdicts(True, False)]}],
        "solver_rewriter": [{"match": SOLVER_REWRITER,
                             "completions": [json.dumps({"diagnosis": "d", "skill": "NEW SOLVER SKILL"})]}],
        "structural": [{"match": STRUCTURAL, "completions": [json.dumps(
            {"rationale": "the rubric omits the audience", "adequacy": 6, "repair": "cover the audience"})]}],
        "blind": [{"match": BLIND, "completions": [json.dumps({"rationale": "A is vivid", "preference": "A"})]}],
        "explain": [{"match": EXPLAIN, "completions": [json.dumps(
            {"why_missed": "no vividness criterion", "principle": "check vivid detail"})]}],
        "generator_rewriter": [{"match": GENERATOR_REWRITER,
                                "completions": [json.dumps({"analysis": "a", "skill": "NEW GENERATOR SKILL"})]}],
        "gold": [{"match": GOLD, "completions": [json.dumps(
            {"criteria": [{"name": "quality", "score": 7, "reason": "fine"}]})]}],
    }
    table.update(override)
    return [rule for group in table.values() for rule in group]


#: Skill texts of `method_telling_rules`: each final solver skill answers differently, and
#: the gold grader grades each answer differently, so every method lands on its own score.
SKILL_V0 = "SKILL V0"
EASY_G = "EASY GENERATOR SKILL"
HARD_G = "HARD GENERATOR SKILL"
#: Gold grade (1-10) of each solver skill's answers; a final skill's test mean is (g - 1) / 9.
GOLD_GRADES = {"answer-v3h": 9, "answer-v3": 6, "answer-v2": 5, "answer-v1": 4, "answer-v0": 2}


def method_telling_rules():
    """Replay rules under which the four methods end on four different solver skills.

    With inner_steps=3, k=1 (outer steps after steps 1 and 2), initial S = SKILL_V0:
      step 1   every optimising method: S V0 -> V1 (the gate gains 1/3).
      outer 1  G0 -> EASY_G (rubrics everything satisfies): SC-CoEvo accepts it (the solver's
               score rises 1/3 -> 1), DecoEvo refuses it (structural adequacy 0.7 -> 0.2).
      step 2   SkillOpt, DecoEvo: V1 -> V2. SC-CoEvo: nothing unmet under EASY_G, a stall.
      outer 2  DecoEvo's near-tie explanations now see V2's scores (0.67) and propose HARD_G
               (adequacy 0.9), which it accepts; SC-CoEvo's rewriter returns EASY_G unchanged.
      step 3   SkillOpt: V2 -> V3 (under G0). DecoEvo: V2 -> V3 HARD (the unmet "sea image"
               criterion of HARD_G). SC-CoEvo: a stall.
    Final S: zero_shot V0, sc_coevo V1, skillopt V3, decoevo V3 HARD (see GOLD_GRADES).
    """
    r0 = rubric(("Meets the length", 2), ("Avoids cliches", 1))
    easy = rubric(("Is text", 1), ("Has words", 1))
    hard = rubric(("Uses a sea image", 2), ("Meets the length", 2), ("Avoids cliches", 1))

    def answers(marker):  # two distinct rollouts of equal score: a near-tie to audit
        return [marker, f"{marker} (take 2)"]

    def rewrite(skill):
        return [json.dumps({"diagnosis": "d", "skill": skill})]

    # Rules are tried in order: "SKILL V3 HARD" before "SKILL V3", "answer-v3h" before "answer-v3".
    return rules(
        solver=[{"match": [SOLVER, f"SKILL V{v}"], "completions": answers(f"answer-v{tag}")}
                for v, tag in (("3 HARD", "3h"), ("3", "3"), ("2", "2"), ("1", "1"), ("0", "0"))],
        generator=[{"match": [GENERATOR, EASY_G], "completions": [easy]},
                   {"match": [GENERATOR, HARD_G], "completions": [hard]},
                   {"match": GENERATOR, "completions": [r0]}],
        judge=[{"match": [JUDGE, "Is text"], "completions": [verdicts(True, True)]},
               {"match": [JUDGE, "Uses a sea image", "answer-v3h"], "completions": [verdicts(True, True, False)]},
               {"match": [JUDGE, "Uses a sea image", "answer-v3"], "completions": [verdicts(False, True, True)]},
               {"match": [JUDGE, "Uses a sea image"], "completions": [verdicts(False, True, False)]},
               {"match": [JUDGE, "answer-v3"], "completions": [verdicts(True, True)]},
               {"match": [JUDGE, "answer-v2"], "completions": [verdicts(True, False)]},
               {"match": [JUDGE, "answer-v1"], "completions": [verdicts(False, True)]},
               {"match": JUDGE, "completions": [verdicts(False, False)]}],
        solver_rewriter=[{"match": [SOLVER_REWRITER, "SKILL V2", "Uses a sea image"], "completions": rewrite("SKILL V3 HARD")},
                         {"match": [SOLVER_REWRITER, "SKILL V2"], "completions": rewrite("SKILL V3")},
                         {"match": [SOLVER_REWRITER, "SKILL V1"], "completions": rewrite("SKILL V2")},
                         {"match": [SOLVER_REWRITER, "SKILL V0"], "completions": rewrite("SKILL V1")}],
        structural=[{"match": [STRUCTURAL, "Is text"], "completions": [json.dumps(
                        {"rationale": "misses every constraint", "adequacy": 2, "repair": "r"})]},
                    {"match": [STRUCTURAL, "Uses a sea image"], "completions": [json.dumps(
                        {"rationale": "covers it", "adequacy": 9, "repair": "r"})]},
                    {"match": STRUCTURAL, "completions": [json.dumps(
                        {"rationale": "omits the audience", "adequacy": 7, "repair": "r"})]}],
        explain=[{"match": [EXPLAIN, "answer A 0.67"], "completions": [json.dumps(
                     {"why_missed": "no imagery criterion", "principle": "PRINCIPLE HARD"})]},
                 {"match": EXPLAIN, "completions": [json.dumps({"why_missed": "w", "principle": "p"})]}],
        generator_rewriter=[{"match": [GENERATOR_REWRITER, "PRINCIPLE HARD"],
                             "completions": [json.dumps({"analysis": "a", "skill": HARD_G})]},
                            {"match": GENERATOR_REWRITER, "completions": [json.dumps({"analysis": "a", "skill": EASY_G})]}],
        gold=[{"match": [GOLD, marker], "completions": [json.dumps(
                  {"criteria": [{"name": "quality", "score": grade, "reason": "r"}]})]}
              for marker, grade in GOLD_GRADES.items()],
    )


def replay(**override) -> ReplayModel:
    return ReplayModel(rules=rules(**override))


def write_data(path, n=28):
    """n writing prompts with a one-criterion gold rubric whose text no role may see."""
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"q{i:02d}", "prompt": f"Write poem number {i} about the sea.",
                                "rubric": {"criteria": [{"name": "quality",
                                                         "description": f"{GOLD_SECRET} {i}",
                                                         "weight": 1}]}}) + "\n")
    return path


def config(data, **overrides):
    """A small DecoEvo config on the data file `data` (see `write_data`); `roles` entries
    are added to the replay backbone's."""
    from coevo.algorithms.decoevo import DecoEvoConfig

    base = dict(data={"source": str(data)}, seeds=[0], inner_steps=2, k=1, s=1,
                batch_size=2, m=3, max_pairs=3, epsilon=0.5,
                partitions={"sizes": {"test": 2, "diagnostic": 2}}, skill_form=MARKERS_ARE_NOT_SKILLS)
    roles = {"backbone": {"model": "replay:unused"}, **overrides.pop("roles", {})}
    return DecoEvoConfig(**{**base, "roles": roles, **overrides})


def method_run(cfg, model, method="decoevo", store=None, **options):
    """One method's run on `model` (every role), as the runner builds it; `options` go to
    MethodRun (policy, proposers, initial_skills)."""
    from coevo.algorithms.decoevo.backbone import Meter, build_decoevo_roles
    from coevo.algorithms.decoevo.loop import MethodRun
    from coevo.algorithms.decoevo.data import make_partitions
    from coevo.tasks.loaders import load_samples

    parts = make_partitions(load_samples(cfg.data.source), cfg.partitions)
    meter = Meter(model)
    return MethodRun(method, 0, cfg, parts, build_decoevo_roles(cfg, meter, meter, 0), store, meter, **options)


def replay_run_config(folder, **overrides) -> dict:
    """A whole `coevo run` config of the four methods on two seeds, 3 inner steps (unless
    `overrides` say otherwise), on a replay model that answers by method
    (`method_telling_rules`); its data and replay file go into `folder`."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = write_data(folder / "data.jsonl")
    model = folder / "replay.jsonl"
    model.write_text("\n".join(json.dumps(r) for r in method_telling_rules()) + "\n")
    return {
        "algorithm": "decoevo", "data": {"source": str(data)}, "roles": {"backbone": {"model": f"replay:{model}"}},
        "seeds": [0, 1], "inner_steps": 3, "k": 1, "batch_size": 2, "m": 2, "epsilon": 0.5,
        "initial_solver_skill": SKILL_V0, "partitions": {"sizes": {"test": 3, "diagnostic": 2}},
        "skill_form": MARKERS_ARE_NOT_SKILLS, **overrides,
    }


# -- checkable scoring (examples/decoevo_checkable.yaml) on the bundled writing prompts ------
#: Real skills (the skill-form audit passes them); each is also the marker its rules match on.
REAL_SOLVER_SKILL = "Use every word the task requires and stay under its word limit."
EASY_GENERATOR_SKILL = "Write criteria every answer can meet, such as an engaging tone and clear writing."
#: A generated rubric that refers to two checkable requirements (the word limit, required
#: words) and one the code cannot check; and one that refers to none (easier to satisfy).
COVERING_RUBRIC = rubric(("Respects the word limit", 2), ("Uses every required word", 2), ("Is vivid", 1))
EASY_RUBRIC = rubric(("Is engaging", 1), ("Reads clearly", 1))
#: The initial skill's answer breaks every required word; the real skill's meets them often.
SHORT_ANSWER = "A short answer."


def checkable_rules(solver_rewrite: str | None = None, generator_rewrite: str = EASY_GENERATOR_SKILL) -> list[dict]:
    """Replay answers for a checkable run: the solver answers by its skill, the rubric
    generator writes COVERING_RUBRIC under the initial skill and EASY_RUBRIC under
    EASY_GENERATOR_SKILL; the rewriters return `solver_rewrite` (None: the incumbent, a
    stall) and `generator_rewrite`."""
    from coevo.algorithms.decoevo.config import DEFAULT_SOLVER_SKILL

    def rewrite(note, skill):
        return [json.dumps({note: "n", "skill": skill})]

    return rules(
        solver=[{"match": [SOLVER, REAL_SOLVER_SKILL],
                 "completions": ["lantern harbour rain canopy heat", "lantern harbour rain, canopy, heat"]},
                {"match": SOLVER, "completions": [SHORT_ANSWER, SHORT_ANSWER + " Truly."]}],
        generator=[{"match": [GENERATOR, EASY_GENERATOR_SKILL], "completions": [EASY_RUBRIC]},
                   {"match": GENERATOR, "completions": [COVERING_RUBRIC]}],
        solver_rewriter=[{"match": SOLVER_REWRITER,
                          "completions": rewrite("diagnosis", solver_rewrite or DEFAULT_SOLVER_SKILL)}],
        generator_rewriter=[{"match": GENERATOR_REWRITER, "completions": rewrite("analysis", generator_rewrite)}],
    )


def checkable_run_config(folder, rules_: list[dict] | None = None, **overrides) -> dict:
    """examples/decoevo_checkable.yaml on a replay backbone (`checkable_rules` unless
    `rules_`), 2 inner steps; `overrides` replace top-level keys."""
    from pathlib import Path

    from coevo.settings.config import read_yaml

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model = folder / "replay.jsonl"
    model.write_text("\n".join(json.dumps(r) for r in (rules_ or checkable_rules())) + "\n")
    raw = read_yaml(Path(__file__).resolve().parents[2] / "examples" / "decoevo_checkable.yaml")
    raw["roles"]["backbone"]["model"] = f"replay:{model}"
    return {**raw, "inner_steps": 2, **overrides}
