"""Does llama.cpp's prompt-prefix reuse cut the judge audit's cost, and does it change answers?
(issue 25: the frozen judge is 62 % of the quickstart, mostly the audit's calls, and prompt
processing is its bottleneck: 125 k prompt tokens against 13 k written.)

The audit's calls share long prefixes: every variant of one item (the real critique and
revision, 7 master keys, padding, an injection, a retest) repeats the judge's instructions,
the prompt and y0, and differs only in what follows. llama-cpp-python keeps the KV cache of the
previous call and evaluates only the tokens past the common prefix, but the suffix's batches
then start wherever the prefix ended, and logits computed in differently shaped batches differ
in their last bits. coevo's reuse keeps only whole blocks (`coevo/llm/llamacpp_prefix.py`) so
every call computes what a fresh one would.

    python benchmarks/judge_prefix.py [--items 2] [--blocks 64 128 256] [--json OUT]

The audit's 22 calls (2 items x 11 variants) as one batched call, as the audit makes it, on the
embedded model: a reset before every call at llama-cpp-python's batch of 512 (coevo until
now); a reset at each block size (what the block alone costs); coevo's aligned reuse at each
block size (the batch sorted so shared beginnings follow each other), and the same calls one at
a time in the audit's order (items interleaved); llama-cpp-python's own unaligned reuse. Greedy
answers with the top-5 log-probabilities of every answer token: "identical" means every text
and every log-probability equals the reset run's at the same block size, bit for bit.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from coevo.audit.probes import INJECTIONS, MASTER_KEYS, PADDING
from coevo.llm.embedded import gguf_path
from coevo.llm.llamacpp import LlamaCppModel
from coevo.prompts import load_template
from coevo.tasks.loaders import load_samples
from coevo.core.types import Message, Sampling

CRITIQUE = ("The response lists three points but never answers the question's second part, and its "
            "closing paragraph repeats the opening. Answer the second part and cut the repetition.")


def audit_prompts(items: int) -> list[list[str]]:
    """Per item, its 11 variants as the audit asks them (real, 7 keys, padding, injection, retest)."""
    template = load_template("judge_taiscore")
    out = []
    for sample in load_samples("bundled:writing", limit=items):
        y0 = f"Here is my answer to: {sample.prompt}\n" + "It covers the main idea in plain words. " * 12
        y1 = y0 + "\nIt now answers the second part too."
        variants = [(CRITIQUE, y1)] + [(key.text.replace("{prompt}", sample.prompt),) * 2
                                       for key in MASTER_KEYS if key.name != "empty"]
        variants += [(CRITIQUE + PADDING, y1 + PADDING), (CRITIQUE + INJECTIONS["c"], y1 + INJECTIONS["y1"]),
                     (CRITIQUE, y1)]
        out.append([template.render(prompt=sample.prompt, response=y0, critique=c, revision=y) for c, y in variants])
    return out


def timed(model: LlamaCppModel, prompts: list[str], one_at_a_time: bool = False) -> tuple[float, list]:
    sampling = Sampling(temperature=0.0, max_tokens=16, seed=0, logprobs=5)
    conversations = [[Message(role="user", content=p)] for p in prompts]
    started = time.perf_counter()
    if one_at_a_time:
        outputs = [model.generate([c], sampling)[0][0] for c in conversations]
    else:
        outputs = [out[0] for out in model.generate(conversations, sampling)]
    seconds = time.perf_counter() - started
    return seconds, [(o.text, o.top_logprobs) for o in outputs]


def unaligned(model: LlamaCppModel) -> LlamaCppModel:
    """llama-cpp-python's own reuse: the kept prefix never cut back to whole blocks."""
    model._prefix.before_prompt = lambda: None
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=2)
    parser.add_argument("--blocks", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    grouped = audit_prompts(args.items)
    interleaved = [variants[k] for k in range(len(grouped[0])) for variants in grouped]
    rows: dict[str, dict] = {}

    def row(name: str, model: LlamaCppModel, baseline: list | None, one_at_a_time: bool = False) -> list:
        timed(model, interleaved[:1])  # warm-up: the first call pays for loading
        if model._prefix is not None:
            model.llama.reset()
        seconds, answers = timed(model, interleaved, one_at_a_time)
        model.close()
        same = None if baseline is None else sum(a == b for a, b in zip(answers, baseline))
        rows[name] = {"seconds": round(seconds, 1), "identical": same}
        print(f"{name:<52} {seconds:>6.1f} s  identical to the reset run: "
              f"{'-' if same is None else f'{same} of {len(answers)}'}", flush=True)
        return answers

    row("reset, batch 512 (coevo until now)", LlamaCppModel(gguf_path(), reuse_prefix=False, prefix_block=512), None)
    for block in args.blocks:
        base = row(f"reset, batch {block}", LlamaCppModel(gguf_path(), reuse_prefix=False, prefix_block=block), None)
        row(f"aligned reuse, block {block}, one batched call", LlamaCppModel(gguf_path(), prefix_block=block), base)
        row(f"aligned reuse, block {block}, audit order one by one", LlamaCppModel(gguf_path(), prefix_block=block),
            base, one_at_a_time=True)
        row(f"unaligned reuse, batch {block}, one batched call",
            unaligned(LlamaCppModel(gguf_path(), prefix_block=block)), base)
    if args.json:
        args.json.write_text(json.dumps({"calls": len(interleaved), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
