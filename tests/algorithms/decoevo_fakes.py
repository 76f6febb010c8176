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
    """A small DecoEvo config on the data file `data` (see `write_data`)."""
    from coevo.algorithms.decoevo import DecoEvoConfig

    base = dict(data={"source": str(data)}, model="replay:unused", seeds=[0], inner_steps=2, k=1, s=1,
                batch_size=2, m=3, max_pairs=3, epsilon=0.5,
                partitions={"sizes": {"test": 2, "diagnostic": 2}})
    return DecoEvoConfig(**{**base, **overrides})


def method_run(cfg, model, method="decoevo", store=None):
    """One method's run on `model` (every role), as the runner builds it."""
    from coevo.algorithms.decoevo import Meter, MethodRun, build_roles, make_partitions
    from coevo.tasks.loaders import load_samples

    parts = make_partitions(load_samples(cfg.data.source), cfg.partitions)
    meter = Meter(model)
    return MethodRun(method, 0, cfg, parts, build_roles(cfg, meter, meter, 0), store, meter)
