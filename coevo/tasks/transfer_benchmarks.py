"""DecoEvo's transfer benchmarks, read from the user's copy of their official files: EQ-Bench
Creative Writing v3 (`eqbench_cw:PATH`) and LLMEval-Med (`llmeval_med:PATH`).

Neither carries a gold rubric: each is graded its own way (roles/benchmark_graders.py), the
grader chosen by the sample's `meta["benchmark"]` (algorithms/decoevo/transfer.py).

- EQ-Bench CW v3 (EQ-bench/creative-writing-bench, `data/creative_writing_prompts_v3.json`): one
  JSON object keyed "1".."32", each `{category, title, writing_prompt, seed_modifiers}`; the
  prompt's `<SEED>` is replaced by a seed modifier. The benchmark's iteration i uses modifier
  (i - 1) mod len; its README recommends 3 iterations, so each prompt gives `ITERATIONS` samples
  (96 in all), `eqbench-cw-<key>-<i>`.
- LLMEval-Med (llmeval/LLMEval-Med, `dataset/dataset.json`): one JSON object keyed by category,
  each a list of `{category1, category2, scene, round, problem, groupCode, sanswer, checklist?,
  difficulty?}`. A multi-turn item (`round` > 1) needs the conversation before it, which a
  skill transfer does not replay: only first turns are read (the rest counted in `removed`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from coevo.tasks.deepresearch import RowRemoved
from coevo.tasks.errors import DataError
from coevo.core.types import Sample

#: The benchmark's recommended iterations per prompt (its README: 32 prompts x 3 = 96 pieces).
ITERATIONS = 3
SEED = "<SEED>"


def whole_file_rows(name: str, path: Path, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(label, row) of a benchmark published as one JSON document rather than JSONL."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, ValueError) as exc:
        raise DataError(f"{where}: not the benchmark's JSON file ({type(exc).__name__}: {exc}); give its "
                        f"official file as {name}:PATH") from None
    if not isinstance(data, dict):
        raise DataError(f"{where}: the {name} file is one JSON object (keyed by prompt or category); "
                        f"this one is a {type(data).__name__}")
    if name == "eqbench_cw":
        for key, entry in data.items():
            for i in range(1, ITERATIONS + 1):
                yield f"prompt {key}", {"key": key, "iteration": i, **(entry if isinstance(entry, dict) else {})}
    else:
        for category, items in data.items():
            if not isinstance(items, list):
                raise DataError(f"{where}: category {category!r} must hold a list of items")
            for n, item in enumerate(items, start=1):
                yield f"{category} item {n}", {"_category": category, "_n": n, **item}


def eqbench_cw_row(row: dict[str, Any], where: str) -> Sample:
    """One piece to write: the prompt with its iteration's seed modifier in place of `<SEED>`."""
    prompt, modifiers = row.get("writing_prompt"), row.get("seed_modifiers")
    if not isinstance(prompt, str) or not prompt.strip():
        raise DataError(f"{where}: 'writing_prompt' must be a non-empty string; the entry has keys {sorted(row)}")
    if not isinstance(modifiers, list) or not modifiers:
        raise DataError(f"{where}: 'seed_modifiers' must be a non-empty list (the benchmark's v3 file has them)")
    modifier = str(modifiers[(row["iteration"] - 1) % len(modifiers)])
    return Sample(id=f"eqbench-cw-{row['key']}-{row['iteration']}", prompt=prompt.replace(SEED, modifier),
                  genre=row.get("category"), meta={"benchmark": "eqbench_cw", "title": row.get("title"),
                                                   "iteration": row["iteration"]})


def llmeval_med_row(row: dict[str, Any], where: str) -> Sample:
    """One first-turn question with its expert reference answer and, where given, its checklist."""
    if int(row.get("round") or 1) > 1:
        raise RowRemoved("later_turn")
    for key in ("problem", "sanswer"):
        if not isinstance(row.get(key), str) or not row[key].strip():
            raise DataError(f"{where}: {key!r} must be a non-empty string (LLMEval-Med's question and its "
                            f"reference answer); the item has keys {sorted(row)}")
    checklist = row.get("checklist")
    return Sample(id=f"llmeval-med-{row['_category']}-{row['_n']}", prompt=row["problem"],
                  genre=row.get("category2") or row["_category"],
                  meta={"benchmark": "llmeval_med", "category": row["_category"], "reference": row["sanswer"],
                        "checklist": checklist if isinstance(checklist, str) and checklist.strip() else None})


__all__ = ["ITERATIONS", "eqbench_cw_row", "llmeval_med_row", "whole_file_rows"]
