"""coevo's rewards as TRL reward functions, for your own trainer or notebook.

Each function here returns a reward function with the signature TRL's `GRPOTrainer` calls,

    reward_fn(prompts, completions, **dataset_columns) -> list[float]     (one per completion)

with a `__name__` (TRL logs `rewards/<name>/mean`) and a `rows(...)` helper that builds the
dataset rows it reads (a `prompt` column and the extra columns TRL hands it):

- `taiscore(judge, actor)` — the TAIScore critic's reward (§4.2): each completion is a
  critique c of a response y0; the actor revises y0 under c into y1; the judge scores
  J(x, y0, c, y1). Raw scores, as the paper's GRPO takes them (TRL normalises per group).
- `rlac(validator, critic)` — the RLAC generator's reward (Algorithm 1, line 6): each
  completion is an output a; the critic names one likely failure; the validator checks it;
  reward 0 when it caught a real failure, else 1.

- `judge(scorer, kind=None)` — any policy's reward from a coevo judge: a function of (prompt,
  completion), a `python:` spec of one, or (kind="gold_rubric") a model judging each row's criteria.

The first two reuse the loops' own code (`make_reward_fn`, the RLAC domains, proposal and check), so
a reward computed here is the one `coevo run` trains on. Docs and examples: docs/api.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from coevo.core.strict import ConfigError

RewardFunction = Callable[..., list[float]]

#: The model spec forms, for errors that must say what a spec looks like.
SPEC_FORMS = "smollm2, hf:PATH_OR_ID, vllm:PATH_OR_ID, gguf:PATH, openai:MODEL@URL, replay:FILE"


# --------------------------------------------------------------------------- any policy


def judge(scorer: Any, kind: str | None = None, *, column: str = "rubric", sampling: Any = None,
          store: Any = None) -> RewardFunction:
    """A TRL reward for an ordinary policy (prompt -> completion), from a coevo judge.

    - `kind` None: `scorer` is `f(prompt, completion) -> float | None` (None: unreadable,
      TRL's NaN, left out of the step's mean), or a `python:FILE.py:f` spec of it.
    - `kind="gold_rubric"`: `scorer` is a model spec (`smollm2`, `openai:MODEL@URL`,
      `hf:...`) or a loaded model; each row's criteria are in dataset column `column` (a
      list of criterion strings, or of {name, description, weight}); the reward is the
      gold-rubric judge's score, its reasons logged to TRL's completions table (`judge_reason`).
    - `kind="key_points"`: the reference-based judge: each row's reference key points in
      column `column` (default "key_points", a list of strings); the reward is the share the
      completion supports (DeepResearch-Gym's KPR / 100, one judge call per key point).
    Calls are cached in `store` (a RunStore or a folder) when given.
    """
    store = _run_store(store)
    if kind is None:
        return _function_reward(scorer, store)
    if kind not in ("gold_rubric", "key_points"):
        raise ConfigError(f"judge(kind={kind!r}): a policy's reward takes kind None (a function of prompt and "
                          "completion), 'gold_rubric' (a model judging each row's criteria) or 'key_points' (a "
                          "model checking each row's reference key points)")
    from coevo.roles.judging import judge_for
    from coevo.core.types import Sampling

    model = _load(scorer, "scorer", store) if isinstance(scorer, str) else _cached(scorer, store)
    decoding = _sampling(sampling, Sampling(temperature=0.0, max_tokens=512), "sampling")
    if kind == "key_points":
        return _key_points_reward(model, decoding, column if column != "rubric" else "key_points")
    gold = judge_for("gold_rubric", model, decoding)

    def gold_rubric(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        _require_columns(columns, [column], len(completions), "judge(kind='gold_rubric')")
        samples = [_rubric_sample(i, _plain(p), rubric) for i, (p, rubric) in enumerate(zip(prompts, columns[column]))]
        judged = gold.judge(samples, [_plain(c) for c in completions])
        if callable(columns.get("log_extra")):  # TRL's completions table: why each score
            columns["log_extra"]("judge_reason", [" ".join(j.reasons.values())[:500] for j in judged])
        return [j.score if j.valid else None for j in judged]

    return gold_rubric


def _key_points_reward(model: Any, sampling: Any, column: str) -> RewardFunction:
    """The reference-based reward: the share of each row's reference key points (its dataset
    column `column`, a list of strings) the completion supports, DeepResearch-Gym's KPR / 100
    under its official protocol (one judge call per key point)."""
    from coevo.roles.deepresearch_official import report_judges
    from coevo.core.types import Sample

    points, _ = report_judges(model, sampling, "official")

    def key_points(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        _require_columns(columns, [column], len(completions), "judge(kind='key_points')")
        samples = [Sample(id=f"row{i}", prompt=_plain(p), meta={"key_points": list(found or [])})
                   for i, (p, found) in enumerate(zip(prompts, columns[column]))]
        judged = points.judge(samples, [_plain(c) for c in completions])
        return [j.scores["kpr"] / 100.0 if j.valid and "kpr" in j.scores else None for j in judged]

    return key_points


def _function_reward(scorer: Any, store: Any) -> RewardFunction:
    """A reward from f(prompt, completion) -> float | None, or a `python:FILE.py:f` spec of it."""
    from coevo.llm.python_functions import is_python_spec, load_python_function
    from coevo.monitor.generation import python_scorer

    if isinstance(scorer, str) and is_python_spec(scorer):
        scorer = python_scorer(_translated(lambda: load_python_function(scorer), "scorer", scorer), "judge")
    if not callable(scorer):
        raise ConfigError(f"judge({scorer!r}): give f(prompt, completion) -> float, a python:FILE.py:f spec, or a "
                          "model spec with kind='gold_rubric'")
    function = scorer

    def reward(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float | None]:
        found = [function(_plain(p), _plain(c)) for p, c in zip(prompts, completions)]
        return [None if value is None else float(value) for value in found]

    reward.__name__ = getattr(function, "__name__", "judge")  # TRL logs rewards/<name>/mean
    return reward


def _rubric_sample(index: int, prompt: str, rubric: Any) -> Any:
    from coevo.core.types import Criterion, Rubric, Sample

    items = [rubric] if isinstance(rubric, (str, dict)) else list(rubric or [])
    criteria = [Criterion(name=item[:80], description=item) if isinstance(item, str) else Criterion(**item)
                for item in items]
    return Sample(id=f"row{index}", prompt=prompt, rubric=Rubric(criteria=criteria))


def _plain(text: Any) -> str:
    """A prompt or completion as TRL hands it (a string, or chat messages) as plain text."""
    if isinstance(text, list):
        return "\n".join(str(m.get("content", "")) if isinstance(m, dict) else str(m) for m in text)
    return str(text)


# --------------------------------------------------------------------------- TAIScore


def taiscore(
    judge: Any,
    actor: Any,
    *,
    reward: str = "taiscore",
    revision: Any = None,
    judge_sampling: Any = None,
    invalid_reward: float = 0.0,
    store: Any = None,
    on_scored: Callable[[list[Any]], None] | None = None,
    critic_template: str = "critic",
) -> RewardFunction:
    """The TAIScore critic's GRPO reward: critique c -> actor revision y1 -> judge score.

    `judge`: a model spec (`openai:MODEL@URL`, `smollm2`, ...), a `python:FILE.py:FUNCTION`
    spec, a plain Python function `reward(x, y0, critique, y1) -> float | None`, a loaded
    `ChatModel`, or a ready `Scorer` (any coevo judge). `actor`: a model spec, a loaded
    `ChatModel` or an `Actor` role; it revises y0 under each critique. `reward`: `taiscore`,
    `outcome_gain` or `critique_quality` (this one judges (x, y0, c) and asks no revision).
    `revision` / `judge_sampling`: a `Sampling` or a dict of its fields over the paper's
    defaults (revision T 0.2, 2048 tokens: give `{"max_tokens": 64}` for a quick try).
    `store`: a run folder (path or `RunStore`) caching every model call, so a rerun asks
    nothing twice. `on_scored(rollouts)`: each batch's rollouts with their judgments.

    Dataset columns: every row needs `x` (the user's prompt), `y0` (the response the critic
    critiques) and `sample_id` (any id of the row's query), beside TRL's `prompt` (the
    critic's prompt). `reward_fn.rows(xs, y0s, ids=None)` builds such rows, their `prompt`
    the paper's critic prompt (Table 6), ready for `datasets.Dataset.from_list`.

    Rules are the TAIScore authors' (`make_reward_fn`): an empty critique or revision, or a
    judge answer that cannot be read, gets `invalid_reward` and stays in its GRPO group.
    """
    from coevo.algorithms.taiscore import make_reward_fn
    from coevo.roles.judges import REWARD_JUDGES
    from coevo.settings.role_specs import RefinementRoleSpecs

    if reward not in REWARD_JUDGES:
        raise ConfigError(f"taiscore(reward={reward!r}): the critic's reward is one of {', '.join(REWARD_JUDGES)}")
    defaults = RefinementRoleSpecs()
    run_store = _run_store(store)
    scorer = _reward_judge(judge, reward, _sampling(judge_sampling, defaults.judge.sampling, "judge_sampling"),
                           run_store)
    reviser = _actor(actor, _sampling(revision, defaults.actor.sampling.revision, "revision"), run_store)
    inner = make_reward_fn(reviser, scorer, reward, invalid_reward=invalid_reward, on_scored=on_scored)

    def reward_fn(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        _require_columns(columns, ("x", "y0", "sample_id"), len(completions), "taiscore")
        return inner(prompts, completions, **columns)

    reward_fn.__name__ = inner.__name__
    reward_fn.rows = _critic_rows(critic_template)  # type: ignore[attr-defined]
    reward_fn.coevo_judge = scorer  # type: ignore[attr-defined]  # what coevo.audit.audit_judge audits
    return reward_fn


def _critic_rows(template_name: str) -> Callable[..., list[dict[str, Any]]]:
    from coevo.prompts import load_template

    template = load_template(template_name)

    def rows(xs: Sequence[str], y0s: Sequence[str], ids: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """One row per (x, y0): the critic's prompt as a chat message, and x, y0, sample_id.
        y0 is used whole: shorten a very long one yourself (the run's critic cuts its middle)."""
        if len(xs) != len(y0s) or (ids is not None and len(ids) != len(xs)):
            raise ValueError(f"rows: {len(xs)} prompts, {len(y0s)} responses"
                             + (f", {len(ids)} ids" if ids is not None else "") + ": give one of each per row")
        ids = list(ids) if ids is not None else [f"row{i}" for i in range(len(xs))]
        return [{"prompt": [{"role": "user", "content": template.render(prompt=x, response=y0)}],
                 "x": x, "y0": y0, "sample_id": str(sid)} for x, y0, sid in zip(xs, y0s, ids)]

    return rows


def _reward_judge(judge: Any, reward: str, sampling: Any, store: Any) -> Any:
    """The `Scorer` behind a TAIScore reward, from whatever form the user gave the judge."""
    from coevo.roles.judging import rollout_judge
    from coevo.llm.python_functions import PythonFunction, check_python_spec, is_python_spec

    if isinstance(judge, str) and is_python_spec(judge):
        # Probed once now: a wrong signature or a raising function is said before training.
        function = _translated(lambda: check_python_spec(judge, ["reward"], "judge"), "judge", judge)
        return rollout_judge(reward, function.bound(store) if store is not None else function, sampling)
    if isinstance(judge, str):
        return rollout_judge(reward, _load(judge, "judge", store), sampling)
    if isinstance(judge, PythonFunction):
        return rollout_judge(reward, judge.bound(store) if store is not None else judge, sampling)
    if callable(getattr(judge, "score", None)):
        return judge  # already a Scorer: a coevo judge, or the user's own
    if callable(getattr(judge, "generate", None)):
        return rollout_judge(reward, _cached(judge, store), sampling)
    if callable(judge):
        return rollout_judge(reward, _function_judge(judge, store), sampling)
    raise ConfigError(f"judge={judge!r}: give a model spec ({SPEC_FORMS}), a python:FILE.py:FUNCTION spec, a "
                      "function reward(x, y0, critique, y1) -> float, a loaded ChatModel or a Scorer")


def _function_judge(function: Callable[..., Any], store: Any) -> Any:
    """A plain Python function as a `python:` judge, so it gets the same invalid-answer
    handling (and, with a store, the same call cache) as a function named by a spec."""
    from coevo.llm.python_functions import function_as_python

    try:
        return function_as_python(function, "reward", ("x", "y0", "critique", "y1"), store)
    except TypeError as exc:
        raise ConfigError(f"judge={getattr(function, '__name__', 'reward')}: a judge function takes (x, y0, "
                          f"critique, y1) and returns a float (None: unreadable); {exc}") from exc


def _actor(actor: Any, sampling: Any, store: Any) -> Any:
    """The `Actor` role that revises y0 under each critique."""
    from coevo.roles.actor import Actor

    if isinstance(actor, Actor):
        return actor
    return Actor(_model(actor, "actor", store), sampling, revise_sampling=sampling)


def _model(model: Any, argument: str, store: Any) -> Any:
    """The model that writes (the actor's revisions, the critic's claims): a spec or a
    loaded `ChatModel`; a `python:` function cannot write, it only stands for a judge."""
    from coevo.llm.python_functions import is_python_spec

    if isinstance(model, str) and is_python_spec(model):
        raise ConfigError(f"{argument}={model!r}: a python: function stands where a judge goes; the "
                          f"{argument} writes text and must be a model ({SPEC_FORMS})")
    if isinstance(model, str):
        return _load(model, argument, store)
    if callable(getattr(model, "generate", None)):
        return _cached(model, store)
    raise ConfigError(f"{argument}={model!r}: give a model spec ({SPEC_FORMS}) or a loaded ChatModel")


# --------------------------------------------------------------------------- RLAC


def rlac(
    validator: Any = "code",
    critic: Any = "smollm2",
    *,
    task: str | None = None,
    samples: Iterable[Any] | Mapping[str, Any] = (),
    config: Any = None,
    critic_sampling: Any = None,
    store: Any = None,
    on_checked: Callable[[list[tuple[Any, ...]]], None] | None = None,
) -> RewardFunction:
    """The RLAC generator's reward: the critic names one likely failure of each completion,
    the validator checks it, and the reward is `coevo.algorithms.rlac.reward(verdict)`:
    0.0 when the validator confirms the failure (caught), else 1.0 (survived, or a proposal
    the validator rejects as invalid: the output was not shown to fail).

    `validator`: `"code"` (HumanEval-style problems: the critic's test runs on the reference
    solution and on the output, in the sandbox), `"facts"` (biographies: the critic's wrong
    fact is checked against the knowledge corpus by the judge model `config.roles.judge.model`),
    `"random"` (the noisy-validator ablation) or your own `Validator` object (then say
    `task=`). `critic`: a model spec or a loaded `ChatModel`; it answers in the domain's form
    (`config.critic_form`, a JSON schema by default). `config`: an `RlacConfig` or a dict of
    its fields (roles, critic form, facts / code settings, seed); the code
    sandbox refuses to run without isolation (bubblewrap) unless `code.unsafe_exec` is
    allowed as `coevo run --unsafe-exec` allows it. `store`: a run folder caching the
    critic's calls. `on_checked(items)`: each batch's (sample, output, proposal, verdict).

    Dataset columns: `sample_id`, naming one of the problems (coevo `Sample`s: for code,
    `coevo.tasks.code.load_code_problems("bundled:code_easy")` or `load_humaneval()`; for
    facts, `coevo.tasks.bios.bio_samples()`), given as `samples=` or through
    `reward_fn.rows(samples)`, which also builds each row's `prompt`: the paper's generator
    prompt for the problem (App. A.1), as chat messages.
    """
    from coevo.algorithms.rlac import RlacConfig
    from coevo.algorithms.rlac.domains import DOMAINS
    from coevo.roles.rlac import RlacCritic

    task = _rlac_task(validator, task)
    settings = _rlac_config(RlacConfig, task, config)
    run_store = _run_store(store)
    domain = DOMAINS[task](settings, run_store)
    checker = _rlac_validator(validator, domain, settings)
    critic_spec = settings.roles.critic
    critic_role = RlacCritic(_model(critic, "critic", run_store), critic_spec.sampling, critic_spec.template)
    sampling = _sampling(critic_sampling, critic_spec.sampling, "critic_sampling")
    problems: dict[str, Any] = {}
    _register(problems, samples)
    reward_fn = _rlac_reward_fn(domain, checker, critic_role, sampling, settings.seed, problems, on_checked)
    reward_fn.__name__ = f"rlac_{task}_reward"
    reward_fn.rows = _generator_rows(domain, problems)  # type: ignore[attr-defined]
    return reward_fn


def _rlac_reward_fn(domain: Any, checker: Any, critic: Any, sampling: Any, seed: int,
                    problems: dict[str, Any], on_checked: Callable[..., None] | None) -> RewardFunction:
    from coevo.algorithms.rlac import reward
    from coevo.algorithms.rlac.domains import check_proposals

    batches = itertools.count()

    def reward_fn(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        _require_columns(columns, ("sample_id",), len(completions), "rlac")
        # A seed per call, as RLAC's loop seeds each round: a later step's critic samples
        # afresh instead of repeating the claims it made on the same outputs before.
        items = _proposals(domain, critic, problems, columns["sample_id"], completions,
                           sampling.model_copy(update={"seed": seed * 1000 + next(batches)}))
        verdicts = check_proposals(checker, items)
        if on_checked:
            on_checked([(*item, verdict) for item, verdict in zip(items, verdicts)])
        return [float(reward(verdict)) for verdict in verdicts]

    return reward_fn  # type: ignore[return-value]


def _generator_rows(domain: Any, problems: dict[str, Any]) -> Callable[..., list[dict[str, Any]]]:
    def rows(samples: Iterable[Any] | Mapping[str, Any]) -> list[dict[str, Any]]:
        """One row per problem: its generator prompt as chat messages, and its sample_id
        (the problems are remembered: the reward looks them up by that id)."""
        listed = _register(problems, samples)
        return [{"prompt": [m.model_dump() for m in domain.generator_prompt(s)], "sample_id": s.id} for s in listed]

    return rows


def _proposals(domain: Any, critic: Any, problems: dict[str, Any], ids: Sequence[Any],
               completions: Sequence[Any], sampling: Any) -> list[tuple[Any, str, Any]]:
    """(sample, output, the critic's proposal) per completion, as RLAC's loop makes them:
    reasoning stripped from the output, one critic answer each under the domain's schema."""
    from coevo.algorithms.taiscore import completion_text
    from coevo.roles.parsing import strip_reasoning

    unknown = sorted({str(i) for i in ids} - set(problems))
    if unknown:
        raise ValueError(f"rlac reward: no problem with sample_id {unknown[:5]}; pass the problems as "
                         "rlac(samples=...) or build the dataset with reward_fn.rows(samples)")
    samples = [problems[str(i)] for i in ids]
    answers = [strip_reasoning(completion_text(c)).strip() for c in completions]
    texts = critic.propose([domain.critic_prompt(s, a) for s, a in zip(samples, answers)],
                           [domain.critic_schema(s, a) for s, a in zip(samples, answers)], sampling, 1)
    return [(s, a, domain.proposal(s, a, row[0])) for s, a, row in zip(samples, answers, texts)]


def _rlac_task(validator: Any, task: str | None) -> str:
    """The task (code | facts) whose prompts and proposal form the reward uses."""
    named = validator if isinstance(validator, str) else getattr(validator, "name", None)
    if isinstance(validator, str) and validator not in ("code", "facts", "random"):
        raise ConfigError(f"rlac(validator={validator!r}): give 'code', 'facts', 'random' or a Validator object")
    if not isinstance(validator, str) and not callable(getattr(validator, "check", None)):
        raise ConfigError(f"rlac(validator={validator!r}): a validator has check(sample, output, proposal) -> "
                          "Verdict (coevo.validators.base.Validator)")
    chosen = task or (named if named in ("code", "facts") else None)
    if chosen not in ("code", "facts"):
        raise ConfigError(f"rlac(validator={validator!r}): say which task its proposals are in: task='code' "
                          "or task='facts'")
    if isinstance(validator, str) and validator != "random" and chosen != validator:
        raise ConfigError(f"rlac(validator={validator!r}, task={task!r}): the {validator} validator checks "
                          f"{validator} proposals; drop task= or make them agree")
    return chosen


def _rlac_config(config_class: Any, task: str, config: Any) -> Any:
    """The RlacConfig the reward takes its prompts, critic form and settings from."""
    if config is None:
        return config_class(task=task)
    if isinstance(config, Mapping):
        config = config_class.model_validate({"task": task, **config})
    if not isinstance(config, config_class):
        raise ConfigError(f"rlac(config={config!r}): give an RlacConfig or a dict of its fields")
    if config.task != task:
        raise ConfigError(f"rlac: config.task is {config.task!r} but the reward's task is {task!r}; "
                          "make them agree (or leave task out of config)")
    return config


def _rlac_validator(validator: Any, domain: Any, settings: Any) -> Any:
    if validator == "random":
        from coevo.validators.base import RandomValidator

        return RandomValidator(seed=settings.seed)
    return domain.validator if isinstance(validator, str) else validator


def _register(problems: dict[str, Any], samples: Iterable[Any] | Mapping[str, Any]) -> list[Any]:
    """Add problems (coevo `Sample`s, or dicts of their fields) to the reward's lookup."""
    from coevo.core.types import Sample

    listed = list(samples.values()) if isinstance(samples, Mapping) else list(samples)
    parsed = [s if isinstance(s, Sample) else Sample.model_validate(s) for s in listed]
    problems.update({s.id: s for s in parsed})
    return parsed


# --------------------------------------------------------------------------- shared


def _require_columns(columns: Mapping[str, Any], names: Sequence[str], n: int, reward: str) -> None:
    """Say which dataset column is missing, and how to build the rows, before a KeyError would."""
    missing = [name for name in names if name not in columns]
    if missing:
        raise ValueError(f"the {reward} reward needs dataset column(s) {', '.join(missing)} beside `prompt`; "
                         f"build the dataset with reward_fn.rows(...) (docs/api.md)")
    short = [name for name in names if len(columns[name]) != n]
    if short:
        raise ValueError(f"the {reward} reward got {n} completions but column(s) {', '.join(short)} of another "
                         "length")


def _sampling(value: Any, default: Any, argument: str) -> Any:
    """A `Sampling` (kept) or a dict of fields over `default` (validated: a typo is an error)."""
    if value is None:
        return default
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(type(default).model_fields))
        if unknown:  # said in one line, with the fields there are, not as a pydantic dump
            import difflib

            near = {name: difflib.get_close_matches(name, list(type(default).model_fields), n=1) for name in unknown}
            hints = ", ".join(f"{name!r}" + (f" (did you mean {near[name][0]!r}?)" if near[name] else "")
                              for name in unknown)
            raise ConfigError(f"{argument}={dict(value)!r}: no field {hints}; a Sampling has "
                              f"{', '.join(type(default).model_fields)}")
        try:
            return type(default).model_validate({**default.model_dump(), **value})
        except ValueError as exc:
            first = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in getattr(exc, "errors", list)())
            raise ConfigError(f"{argument}={dict(value)!r}: {first or exc}") from None
    from coevo.core.types import Sampling

    if isinstance(value, Sampling):
        return value
    raise ConfigError(f"{argument}={value!r}: give a coevo Sampling or a dict of its fields (max_tokens, ...)")


def _load(spec: str, argument: str, store: Any) -> Any:
    """`load_model(spec)`, a spec that cannot load said as a ConfigError naming the argument."""
    from coevo.llm.specs import check_spec, load_model

    _translated(lambda: check_spec(spec), argument, spec)  # no loading: an unknown form, a missing file
    return load_model(spec, store=store)


def _translated(call: Callable[[], Any], argument: str, spec: str) -> Any:
    from coevo.llm.base import ModelError

    try:
        return call()
    except ModelError as exc:
        raise ConfigError(f"{argument}={spec!r}: {exc}") from exc


def _cached(model: Any, store: Any) -> Any:
    if store is None:
        return model
    from coevo.llm.cache import CachedModel

    return CachedModel(model, store)


def _run_store(store: Any) -> Any:
    """None, a `RunStore`, or a folder to open one in (created if need be)."""
    if store is None or not isinstance(store, (str, Path)):
        return store
    from coevo.rundir.store import RunStore

    return RunStore(store)
