"""A training stage faked for the learning tests: the callbacks see every step as TRL's
trainer would show it, and the stage returns a TrainResult with the given metrics."""

from coevo.train.common import TrainResult


def stepped(settings, callbacks, **metrics) -> TrainResult:
    """Call each callback's `on_step_end` at steps 1..settings.max_steps; the stage's result
    (weight_delta 0.5 and reward_mean 0.25 unless `metrics` says otherwise)."""

    class State:
        global_step = 0

    for step in range(1, settings.max_steps + 1):
        State.global_step = step
        for callback in callbacks:
            callback.on_step_end(None, State, None)
    return TrainResult(checkpoint="x", steps=settings.max_steps, seconds=1.0, seconds_per_step=0.1, peak_rss_mb=1.0,
                       metrics={"weight_delta": 0.5, "reward_mean": 0.25, **metrics})


def taiscore_rules(critique: str) -> list[dict]:
    """Replay rules for a TAIScore round: every revision says REVISED, every critique is
    `critique`, every first answer is the same."""
    return [{"match": "Revised Response:", "completion": "REVISED answer"},
            {"match": "Your Critique:", "completion": critique},
            {"completions": ["First answer."]}]


#: A pairwise judge (a `python:` file's text) that prefers whichever answer was revised.
PREFER_REVISED_JUDGE = """
def prefer_revised(x, a, b):
    return "a" if "REVISED" in a else "b" if "REVISED" in b else "tie"
"""
