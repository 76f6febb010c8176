"""The grid of the controlled analysis: which cells (y0 source, critic, refiner) a config asks
for, and which pairs of cells each reported delta compares.

A cell's work is shared wherever its parts are the same: one y0 per source (an actor's
responses, or a data column), one critique per (y0 source, critic), one revision per
(y0 source, critic, refiner). So a refiner block whose y0 and critique are a critic block's
reuses them, and every cell of a block sees the very same y0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from coevo.algorithms.scaling.config import COLUMN, ScalingConfig


@dataclass(frozen=True)
class Cell:
    """One condition: y0 from `y0` (a model spec or `column:NAME`), critiqued by `critic`,
    revised by `refiner`."""

    y0: str
    critic: str
    refiner: str

    @property
    def y0_stage(self) -> str:
        return y0_stage(self.y0)

    @property
    def critique_stage(self) -> str:
        return f"critique[{self.y0} | {self.critic}]"

    @property
    def revise_stage(self) -> str:
        return f"revise[{self.y0} | {self.critic} | {self.refiner}]"

    def label(self) -> str:
        return f"y0 {short_name(self.y0)}, critic {short_name(self.critic)}, refiner {short_name(self.refiner)}"


def y0_stage(source: str) -> str:
    return f"y0[{source}]"


@dataclass(frozen=True)
class Comparison:
    """One reported delta: `larger` minus `smaller`, paired per example (a row of Table 5)."""

    kind: Literal["critic", "refiner"]
    setting: str
    smaller: Cell
    larger: Cell

    @property
    def scaling(self) -> str:
        """Table 5's "Scaling" column: the model that changes, smaller -> larger."""
        varied = "critic" if self.kind == "critic" else "refiner"
        return f"{short_name(getattr(self.smaller, varied))} → {short_name(getattr(self.larger, varied))}"


def short_name(spec: str) -> str:
    """`vllm:Qwen/Qwen3-8B` -> `Qwen3-8B`; `openai:m@http://h/v1` -> `m`; `column:y0` stays."""
    if spec.startswith(COLUMN):
        return spec
    kind, sep, rest = spec.partition(":")
    name = rest if sep and "/" not in kind else spec
    return name.split("@", 1)[0].rstrip("/").rsplit("/", 1)[-1] or spec


def comparisons(config: ScalingConfig) -> list[Comparison]:
    """Every delta the config asks for, critic blocks first, in the order written."""
    out: list[Comparison] = []
    for block in config.critic_scaling:
        for actor in block.actor_specs():
            source = COLUMN + block.y0_column if block.y0_column else actor
            label = block.setting or short_name(actor)
            if block.setting and len(block.actor_specs()) > 1:
                label = f"{block.setting}: {short_name(actor)}"
            out += [Comparison("critic", label, Cell(source, small, actor), Cell(source, large, actor))
                    for small, large in block.compared()]
    for block in config.refiner_scaling:
        source = block.y0_from or COLUMN + (block.y0_column or "")
        label = block.setting or f"{short_name(source)} y0 + {short_name(block.critique_from)} critique"
        out += [Comparison("refiner", label, Cell(source, block.critique_from, small),
                           Cell(source, block.critique_from, large)) for small, large in block.compared()]
    return out


def cells_of(found: list[Comparison]) -> list[Cell]:
    """The cells the comparisons need, once each, in order."""
    return list(dict.fromkeys(cell for c in found for cell in (c.smaller, c.larger)))


def grid_cells(config: ScalingConfig) -> list[Cell]:
    """Every cell of every block, the ones no pair compares too: a grid block computes each
    actor x critic cell, so its per-cell means are all there."""
    cells = cells_of(comparisons(config))
    for block in config.critic_scaling:
        for actor in block.actor_specs():
            source = COLUMN + block.y0_column if block.y0_column else actor
            cells += [Cell(source, critic, actor) for critic in block.critics]
    for block in config.refiner_scaling:
        source = block.y0_from or COLUMN + (block.y0_column or "")
        cells += [Cell(source, block.critique_from, refiner) for refiner in block.refiners]
    return list(dict.fromkeys(cells))
