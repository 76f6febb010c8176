"""Writing a trained model's weights as a llama.cpp GGUF: the template read each time vs once.

Every llama.cpp copy of a trained role (each GRPO step's rollout copy with `rollout_engine:
llamacpp`, each role's generation copy per round) takes the embedded model's GGUF as its
template for metadata and vocabulary. Reading that template means parsing its 49,152-token
vocabulary. The two paths alternate in one session, so both see the same machine load:
"each time" clears the process's cache of the template before every export (the path before
the cache), "once" keeps it. The first export of the session, which reads the template on
both paths, is left out.

    .venv/bin/python benchmarks/gguf_export.py [--repeats 5] [--json FILE]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from report import report  # benchmarks/report.py (scripts run from their folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    from transformers import AutoModelForCausalLM

    from coevo.llm import embedded, gguf_export

    model = AutoModelForCausalLM.from_pretrained(str(embedded.hf_dir()))
    seconds: dict[str, list[float]] = {"each_time": [], "once": []}
    with tempfile.TemporaryDirectory(prefix="gguf-export-") as tmp:
        gguf_export.export_gguf(model, Path(tmp) / "warm.gguf")  # imports, page cache, the first read
        for repeat in range(args.repeats):
            for path in seconds:
                if path == "each_time":
                    gguf_export._template_reader.cache_clear()
                started = time.perf_counter()
                gguf_export.export_gguf(model, Path(tmp) / f"{path}-{repeat}.gguf")
                seconds[path].append(round(time.perf_counter() - started, 2))
                (Path(tmp) / f"{path}-{repeat}.gguf").unlink()
    median = {path: statistics.median(values) for path, values in seconds.items()}
    report({"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}",
            "repeats": args.repeats, "seconds": seconds, "median_s": median,
            "ratio_once_vs_each_time": round(median["once"] / median["each_time"], 2)}, args.json)


if __name__ == "__main__":
    main()
