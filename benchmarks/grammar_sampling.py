"""Schema-bound sampling on llama.cpp: the grammar checked on every candidate first (llama-cpp-python's
chain) vs on the drawn token first (llama.cpp's own order, `coevo/llm/llamacpp_grammar.py`).

The judge audit's TAIScore calls (benchmarks/judge_prefix.py's: `--items` items x 11 variants)
under the judge's own answer schema (reasons capped at 160 characters, as the example configs
ask), on the embedded model, each chain twice: greedy (the answers must be the same, token for
token) and at the judge's sampling (T 0.2, top_p 1, seeded: the same distribution, another
random stream, so the answers are compared by their final scores' mean, not one by one).
Reported: seconds, completion tokens per second, and how often the grammar refused the drawn
token (each refusal costs one full mask).

    .venv/bin/python benchmarks/grammar_sampling.py [--items 2] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path

from judge_prefix import audit_prompts  # benchmarks/judge_prefix.py (scripts run from their folder)
from report import report

from coevo.llm.embedded import gguf_path
from coevo.llm.llamacpp import LlamaCppModel, _cpus
from coevo.llm.llamacpp_grammar import GrammarLastSampler
from coevo.roles.judges import TaiScoreJudge
from coevo.roles.schemas import scored_dimensions
from coevo.core.types import Message, Sampling


def final_score(text: str) -> float | None:
    try:
        return float(json.loads(text)["score"])
    except (ValueError, KeyError, TypeError):
        return None


def run(model: LlamaCppModel, prompts: list[str], sampling: Sampling) -> dict:
    """One batched call, as the audit makes it; the texts, seconds and refusals."""
    conversations = [[Message(role="user", content=p)] for p in prompts]
    model.generate(conversations[:1], sampling.model_copy(update={"max_tokens": 8}))  # warm-up
    samplers, make = [], model.llama._init_sampler  # each call's sampler, to count its refusals

    def recorded(**settings):
        samplers.append(make(**settings))
        return samplers[-1]

    model.llama._init_sampler = recorded
    started = time.perf_counter()
    outputs = [out[0] for out in model.generate(conversations, sampling)]
    seconds = time.perf_counter() - started
    tokens = sum(o.completion_tokens for o in outputs)
    scores = [s for s in (final_score(o.text) for o in outputs) if s is not None]
    counted = [x for x in samplers if isinstance(x, GrammarLastSampler)]
    steps, refused = sum(x.steps for x in counted), sum(x.refused for x in counted)
    return {"seconds": round(seconds, 1), "completion_tokens": tokens, "tokens_per_s": round(tokens / seconds, 1),
            "readable": len(scores), "mean_score": round(statistics.mean(scores), 2) if scores else None,
            "refused_share": round(refused / steps, 3) if steps else None, "texts": [o.text for o in outputs]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    prompts = [p for variants in audit_prompts(args.items) for p in variants]
    schema = json.dumps(scored_dimensions(TaiScoreJudge.dimensions, TaiScoreJudge.final_key, reason_limit=160))
    samplings = {"greedy": Sampling(temperature=0.0, max_tokens=320, json_schema=schema),
                 "T 0.2, top_p 1, seed 0": Sampling(temperature=0.2, top_p=1.0, max_tokens=320, seed=0,
                                                    json_schema=schema)}
    result = {"machine": f"{platform.machine()}, {_cpus()} CPUs, {platform.platform()}", "calls": len(prompts),
              "rows": {}}
    for name, sampling in samplings.items():
        for chain, grammar_last in (("grammar first (llama-cpp-python)", False), ("grammar last (coevo)", True)):
            model = LlamaCppModel(gguf_path(), grammar_last=grammar_last)
            row = run(model, prompts, sampling)
            model.close()
            result["rows"][f"{name} · {chain}"] = row
            print(f"{name:<24} {chain:<34} {row['seconds']:>6.1f} s {row['tokens_per_s']:>6.1f} tok/s "
                  f"refused {row['refused_share']}", flush=True)
        first, last = (result["rows"][f"{name} · {c}"]["texts"] for c in
                       ("grammar first (llama-cpp-python)", "grammar last (coevo)"))
        result["rows"][f"{name} · identical answers"] = sum(a == b for a, b in zip(first, last))
    for row in result["rows"].values():
        if isinstance(row, dict):
            row.pop("texts")
    report(result, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
