"""Gradient checkpointing on the CPU: what it costs in time, what it saves in memory, and
whether the gradients stay the same (issue 25).

coevo trains with gradient checkpointing on a CPU by default (`machine_training_args`: the
quickstart's peak 9.8 -> 7.0 GB with the other memory changes); a block's
`trl: {gradient_checkpointing: false}` turns it off. Each row is a fresh process: the
embedded model (SmolLM2-135M, fp32, train mode), one warm-up, then `--repeats` forward and
backward passes of a GRPO-like loss (the sequence's token log-probabilities) on random token
ids of the given shape; its peak resident memory. The two settings alternate. A last pair of
processes saves the gradients of one pass each and compares them.

    python benchmarks/grad_checkpointing.py [--shapes 2x460 1x800] [--repeats 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import resource, sys, time, torch
from coevo.train.trainable import load_trainable
checkpointing, grads = sys.argv[1] == "on", sys.argv[5]
batch, length, repeats = (int(a) for a in sys.argv[2:5])
torch.manual_seed(0)
model = load_trainable("smollm2").model
model.train()
model.config.use_cache = False
if checkpointing:
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
ids = torch.randint(100, 40000, (batch, length))
def step():
    model.zero_grad(set_to_none=True)
    logits = model(input_ids=ids).logits[:, :-1].float()
    (-torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).mean()).backward()
step()
times = []
for _ in range(repeats):
    start = time.perf_counter(); step(); times.append(time.perf_counter() - start)
if grads != "-":
    torch.save({n: p.grad for n, p in model.named_parameters() if p.grad is not None}, grads)
print(" ".join(f"{t:.3f}" for t in times), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def one(checkpointing: bool, batch: int, length: int, repeats: int, grads: str = "-") -> tuple[list[float], float]:
    """(seconds of each timed forward + backward, peak RSS in MB) of one fresh process."""
    done = subprocess.run([sys.executable, "-c", CHILD, "on" if checkpointing else "off", str(batch), str(length),
                           str(repeats), grads], capture_output=True, text=True, check=True)
    *times, peak = done.stdout.split()[-(repeats + 1):]
    return [float(t) for t in times], float(peak)


def same_gradients(batch: int, length: int) -> dict:
    """Whether one pass's gradients are equal with and without checkpointing."""
    import torch

    with tempfile.TemporaryDirectory() as folder:
        on, off = Path(folder) / "on.pt", Path(folder) / "off.pt"
        one(True, batch, length, 1, str(on))
        one(False, batch, length, 1, str(off))
        a, b = torch.load(on), torch.load(off)
    largest = max(float((a[n] - b[n]).abs().max()) for n in a)
    return {"parameters": len(a), "bit_identical": all(torch.equal(a[n], b[n]) for n in a),
            "largest_difference": largest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=["2x460", "1x800"],
                        help="BATCHxLENGTH: the critic's learning test's micro-batch, the quickstart's")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=2, help="processes per setting, alternating")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    rows = []
    for shape in args.shapes:
        batch, length = (int(v) for v in shape.split("x"))
        found: dict[str, dict[str, list[float]]] = {"on": {"s": [], "mb": []}, "off": {"s": [], "mb": []}}
        for _ in range(args.pairs):
            for name in ("on", "off"):
                times, peak = one(name == "on", batch, length, args.repeats)
                found[name]["s"] += times
                found[name]["mb"].append(peak)
        on, off = (statistics.median(found[k]["s"]) for k in ("on", "off"))
        row = {"shape": shape, "n": len(found["on"]["s"]), "seconds_on": on, "seconds_off": off,
               "time_off_over_on": off / on, "peak_mb_on": max(found["on"]["mb"]),
               "peak_mb_off": max(found["off"]["mb"]), "gradients": same_gradients(batch, length)}
        rows.append(row)
        print(f"{shape}: forward+backward {on:.2f} s with checkpointing, {off:.2f} s without "
              f"({row['time_off_over_on']:.2f}x, medians of {row['n']}); peak {row['peak_mb_on']:.0f} MB vs "
              f"{row['peak_mb_off']:.0f} MB; gradients {row['gradients']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
