"""RLAC's instructions: loaded per task and split into training and held-out sets by a stable key."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from coevo.algorithms.rlac.config import RlacConfig
from coevo.core.types import Sample

if TYPE_CHECKING:
    pass

# --------------------------------------------------------------------------- the loop


def load_instructions(config: RlacConfig, source: str | None) -> list[Sample]:
    """Every instruction of a source, in file order (no model loads): facts, one biography
    instruction per person of the {title, text} corpus; code, one per problem."""
    if config.task == "facts":
        from coevo.tasks.bios import BUNDLED_CORPUS, bio_samples

        return bio_samples(source or BUNDLED_CORPUS, sentences=config.data.sentences)
    from coevo.tasks.code import load_code_problems

    return load_code_problems(source or "humaneval")


def instruction_key(config: RlacConfig, sample: Sample) -> str:
    """The id a config pins an instruction by: a person's name (facts), a problem id (code)."""
    return str(sample.meta["entity"]) if config.task == "facts" else sample.id


def split_data(config: RlacConfig) -> tuple[list[Sample], list[Sample]]:
    """Disjoint train / held-out instructions: pinned ids, or a seeded draw. With
    `data.heldout_source` the held-out ones come from that source (drawn or pinned on their
    own); otherwise both come from `data.source`."""
    from coevo.tasks.loaders import DataError

    data = config.data
    samples = load_instructions(config, data.source)

    def pick(pool: list[Sample], ids: list[str]) -> list[Sample]:
        by_key = {instruction_key(config, s).lower(): s for s in pool} | {s.id.lower(): s for s in pool}
        missing = [i for i in ids if i.lower() not in by_key]
        if missing:
            raise DataError(f"data ids not found: {missing}; e.g. {[instruction_key(config, s) for s in pool[:4]]}")
        return [by_key[i.lower()] for i in ids]

    def draw(pool: list[Sample], n: int, offset: int, where: str) -> list[Sample]:
        if len(pool) < offset + n:
            raise DataError(f"need {offset + n} instructions from {where}, it has {len(pool)}; "
                            "lower data.train / data.heldout or bring more")
        order = list(pool)
        random.Random(data.seed).shuffle(order)
        return order[offset:offset + n]

    if data.heldout_source is not None:
        train = pick(samples, data.train_ids) if data.train_ids else draw(samples, data.train, 0, "data.source")
        others = load_instructions(config, data.heldout_source)
        heldout = (pick(others, data.heldout_ids) if data.heldout_ids
                   else draw(others, data.heldout, 0, "data.heldout_source"))
    elif data.train_ids or data.heldout_ids:
        train, heldout = pick(samples, data.train_ids or []), pick(samples, data.heldout_ids or [])
    else:
        train = draw(samples, data.train, 0, "data.source")
        heldout = draw(samples, data.heldout, data.train, "data.source")
    if {s.id for s in train} & {s.id for s in heldout}:
        raise DataError("train and held-out instructions overlap; give disjoint train_ids / heldout_ids")
    return train, heldout
