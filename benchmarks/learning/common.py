"""What the TAIScore learning curves share: the bundled writing split, the frozen engine's
initial responses (cached in the work folder), and a TRL callback that measures the target
every few optimizer steps while training runs."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from learning.curve import mean
from coevo.eval.checkable import SOURCE
from coevo.llm.python_functions import check_python_spec, is_python_spec
from coevo.core.types import Sample

if TYPE_CHECKING:
    from coevo.train.common import TrainResult

log = logging.getLogger(__name__)


def checked_reward(spec: str, kind: str, option: str = "--reward") -> None:
    """A loop's `--reward` (or another `option` taking one) must be a `python:` spec whose
    function works as `kind`: one line naming the problem (ValueError / ModelError) before any
    model loads."""
    if not is_python_spec(spec):
        raise ValueError(f"{option} must be a python: spec (python:FILE.py:FUNCTION), got {spec!r}")
    check_python_spec(spec, [kind], option)


def writing_split(heldout: int, seed: int = 0, source: str = SOURCE) -> tuple[list[Sample], list[Sample]]:
    """(train, held-out): a seeded split of `source` by a hash of each id, so the same
    prompts are held out whatever the file's order."""
    from coevo.tasks.loaders import load_samples

    samples = load_samples(source)
    if not 0 < heldout < len(samples):
        raise ValueError(f"heldout must be between 1 and {len(samples) - 1} ({source} has {len(samples)} prompts), "
                         f"got {heldout}")
    ranked = sorted(samples, key=lambda s: hashlib.sha256(f"{seed}:{s.id}".encode()).hexdigest())
    return ranked[heldout:], ranked[:heldout]


def cached_texts(path: Path, keys: list[str], make: Callable[[list[str]], list[str]]) -> dict[str, str]:
    """{key: text} kept in the JSON file `path`: only the keys it lacks are made (a rerun
    of a benchmark reuses the initial responses it already paid for)."""
    have: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    todo = [k for k in keys if k not in have]
    if todo:
        have.update(zip(todo, make(todo)))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(have, indent=1))
    return {k: have[k] for k in keys}


def measuring_callback(every: int, last: int, measure: Callable[[], Mapping[str, float]],
                       points: list[tuple[int, Mapping[str, float]]]) -> Any:
    """A TRL/transformers callback appending (step, measure()) every `every` steps and at
    step `last` (the end of training), so the curve has its after point from the same
    weights that training leaves."""
    from transformers import TrainerCallback

    class Measure(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            step = state.global_step
            if step % every == 0 or step == last:
                points.append((step, measure()))
                log.info("step %d: target %s", step, mean(points[-1][1]))

    return Measure()


def split_prompts(heldout: int, train_prompts: int | None, score_train: bool) -> tuple[list[Sample], list[Sample]]:
    """(training prompts, scored prompts) of the bundled writing split: `heldout` prompts held
    out, at most `train_prompts` (all where None) kept for training. The actor's and the critic's
    curves share it."""
    train, held = writing_split(heldout)
    train = train[:train_prompts] if train_prompts else train
    # score_train: the target on the training prompts themselves (the fast learning tests).
    return train, train if score_train else held


def train_measuring(train: Callable[[list[Any]], TrainResult], measure: Callable[[], Mapping[str, float]],
                    every: int, steps: int) -> tuple[TrainResult, list[tuple[int, Mapping[str, float]]]]:
    """`train(callbacks)`, with `measure()` taken before training (step 0), every `every`
    steps of it and at its last step: (its result, the curve's points). The actor's and the
    critic's curves share it."""
    points: list[tuple[int, Mapping[str, float]]] = [(0, measure())]
    result = train([measuring_callback(every, steps, measure, points)])
    if points[-1][0] != result.steps:
        # Training ended at another step than `steps`: the after point is still the
        # weights it left.
        points.append((result.steps, measure()))
    return result, points
