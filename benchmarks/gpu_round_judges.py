"""The judges of benchmarks/gpu_round.py's TAIScore round (`python:` module form): plain Python,
so the round's time is the trained models' and the glue's, not a judge model's, and every
stage has something to learn from. Random-initialised models write random tokens: these
functions only need to be deterministic and to spread their scores.
"""


def reward(x, y0, critique, y1):
    # Distinct characters of the critique and its revision: random text differs in it, so every
    # GRPO group has a spread (a group of equal rewards would give no gradient).
    return float(len(set(critique)) + len(set(y1 or "")) / 100)


def pairwise(x, a, b):
    # The longer answer (random tokens decode to texts of different lengths): about half the
    # revisions beat their y0, so the DPO stage always has pairs.
    return "a" if len(a) > len(b) else ("b" if len(b) > len(a) else "tie")


def gold(x, response, rubric):
    return float(len(response.split()))
