"""coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo).

The public Python API (docs/api.md): every name below is importable from `coevo` itself,
e.g. `from coevo import run_experiment, load_model, rewards`.

    run_experiment, plan_experiment      a config (file or dict) -> a run folder; its plan
    load_model, base_model_path          a model spec -> a ChatModel; a spec's weights folder
    rollout_judge, judge_as_reward, ...  judges by name, and the judge classes themselves
    CodeValidator, FactValidator, ...    RLAC's validators and the code sandbox
    audit_judge, JudgeAudit, ...         the judge audit (docs/audit.md)
    rewards                              coevo's rewards as TRL reward functions

Names are resolved on first use (PEP 562's module `__getattr__`), so `import coevo` loads
nothing else: the CLI and every `coevo.*` import start fast, and torch or pydantic load only
when a name that needs them is asked for.
"""

from __future__ import annotations

import importlib
from typing import Any

from coevo.version import __version__

# Strings, not import statements: the table costs nothing to define, and no module the names
# point at is imported until a user asks for the name. ("module" alone: the module itself.)
_PUBLIC: dict[str, str] = {
    # running configs
    "run_experiment": "coevo.run.runner:run_experiment",
    "plan_experiment": "coevo.run.runner:plan_experiment",
    "TaiScoreConfig": "coevo.algorithms.taiscore:TaiScoreConfig",
    "RlacConfig": "coevo.algorithms.rlac:RlacConfig",
    "DecoEvoConfig": "coevo.algorithms.decoevo:DecoEvoConfig",
    # models
    "load_model": "coevo.llm.specs:load_model",
    "base_model_path": "coevo.llm.specs:base_model_path",
    "ChatModel": "coevo.llm.base:ChatModel",
    # records and settings
    "Sample": "coevo.core.types:Sample",
    "Rollout": "coevo.core.types:Rollout",
    "Judgment": "coevo.core.types:Judgment",
    "Sampling": "coevo.core.types:Sampling",
    "JudgeSampling": "coevo.core.types:JudgeSampling",
    "Proposal": "coevo.core.types:Proposal",
    "Verdict": "coevo.core.types:Verdict",
    # roles and judges
    "Actor": "coevo.roles.actor:Actor",
    "Critic": "coevo.roles.critic:Critic",
    "refine": "coevo.roles.refinement:refine",
    "Scorer": "coevo.roles.base:Scorer",
    "JUDGE_NAMES": "coevo.roles.judging:JUDGE_NAMES",
    "rollout_judge": "coevo.roles.judging:rollout_judge",
    "judge_as_reward": "coevo.roles.judging:judge_as_reward",
    "judge_file": "coevo.eval.judge_file:judge_file",
    "TaiScoreJudge": "coevo.roles.judges:TaiScoreJudge",
    "CritiqueQualityJudge": "coevo.roles.judges:CritiqueQualityJudge",
    "AdherenceJudge": "coevo.roles.judges:AdherenceJudge",
    "OutcomeGainJudge": "coevo.roles.judges:OutcomeGainJudge",
    "PairwiseJudge": "coevo.roles.judges:PairwiseJudge",
    "GoldRubricJudge": "coevo.roles.judges:GoldRubricJudge",
    "QueryFilterJudge": "coevo.roles.judges:QueryFilterJudge",
    # validators (RLAC)
    "Validator": "coevo.validators.base:Validator",
    "RandomValidator": "coevo.validators.base:RandomValidator",
    "CodeValidator": "coevo.validators.code:CodeValidator",
    "ReferenceTests": "coevo.validators.code:ReferenceTests",
    "Sandbox": "coevo.validators.sandbox:Sandbox",
    "FactValidator": "coevo.validators.facts:FactValidator",
    "build_fact_validator": "coevo.validators.facts:build_fact_validator",
    # the judge audit
    "audit_judge": "coevo.audit:audit_judge",
    "JudgeAudit": "coevo.audit:JudgeAudit",
    "AUDIT_KINDS": "coevo.audit:AUDIT_KINDS",
    "default_probes": "coevo.audit:default_probes",
    "read_probes": "coevo.audit:read_probes",
    # rewards for your own trainer
    "rewards": "coevo.rewards",
    # errors
    "ConfigError": "coevo.core.strict:ConfigError",
    "ModelError": "coevo.llm.base:ModelError",
}

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use, and keep the name here for later uses."""
    target = _PUBLIC.get(name)
    if target is None:
        raise AttributeError(f"module 'coevo' has no attribute {name!r}")
    module_name, _, attribute = target.partition(":")
    module = importlib.import_module(module_name)
    value = getattr(module, attribute) if attribute else module
    globals()[name] = value  # the next lookup is an ordinary attribute: no second import
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
