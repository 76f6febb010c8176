"""What every condition of a TAIScore run shares: config, store, data, judge, and the Backend
(coevo/algorithms/backend.py) that loads and trains its models."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from coevo.algorithms.backend import Backend
from coevo.algorithms.taiscore.config import TaiScoreConfig
from coevo.llm.python_functions import PythonFunction
from coevo.rundir.store import RunStore
from coevo.core.types import Sample

# ─── the loop ───────────────────────────────────────────────────────────────────────


@dataclass
class Context:
    """What every condition shares: config, store, data, judge, backend."""

    config: TaiScoreConfig
    store: RunStore
    backend: Backend
    judge_model: Any
    shards: list[list[Sample]]
    held_out: list[Sample]
    _frozen: dict[tuple[str, str], Any] = field(default_factory=dict)

    def cached(self, model: Any) -> Any:
        """A fresh cache wrapper: it reads the model's id once, so re-wrap after training.
        A Python scorer caches its own calls, keyed by its source (see python_functions)."""
        from coevo.llm.cache import CachedModel

        if isinstance(model, PythonFunction):
            return model.bound(self.store)
        return CachedModel(model, self.store)

    def frozen(self, spec: str, role: str, options: dict[str, Any] | None = None) -> Any:
        """The frozen model `spec` in `role`'s place, with that role's backend options (or
        `options`, for a model outside `roles:` such as the evaluator's judge), loaded once."""
        if (spec, role) not in self._frozen:
            self._frozen[spec, role] = self.backend.load_frozen(
                spec, **(self.config.roles.options_for(role) if options is None else options))
        return self._frozen[spec, role]
