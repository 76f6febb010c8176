"""The reward-hacking monitor on the critic's GRPO stage (`monitor:`, docs/monitor.md).

Each anchor is a reward of the plan's kind computed by another scorer (a `python:` function,
or a second judge `judge:MODEL`) on the first `monitor.prompts` held-out prompts: the critic,
as GRPO has left it at that moment, critiques the current actor's response to each, and the
anchor scores the critique (with the actor's revision, where the reward kind reads one). The
critic samples from its weights as they are at that check, uncached (a cached call of the
untrained critic would answer for the trained one and the anchor could never move): on a
llama.cpp copy written at the check where `critic_engine: llamacpp` (a few seconds of export
against ~16 tokens/s in transformers), else in the trained model itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from coevo.algorithms.engines import generating_on
from coevo.roles.judging import judge_model, rollout_judge
from coevo.llm.call_tags import tagged
from coevo.roles.critic import Critic
from coevo.core.types import Sample

if TYPE_CHECKING:
    from coevo.monitor.callback import HackingMonitor


def critic_monitor(run: Any, stage: str, held_out: Sequence[Sample], y0: Mapping[str, str],
                   make_reward: Callable[[Any], Callable[..., list[float]]],
                   calls_stage: str = "monitor") -> HackingMonitor | None:
    """The monitor of a critic GRPO stage named `stage` (None where `monitor.enabled` is off):
    one anchor per `monitor.anchors` entry, each `make_reward(judge)` over the held-out (x, y0),
    its calls filed under `calls_stage`."""
    from coevo.monitor.callback import HackingMonitor

    config = run.ctx.config
    if not config.monitor.enabled:
        return None
    critic = Critic(run.critic_local, run.critique_sampling, config.roles.critic.template,
                    max_prompt_tokens=run.grpo_settings.max_prompt_length)
    folder = run.store.run_dir / "engines" / "monitor"

    def copies(n: int) -> Any:
        return run.ctx.backend.load_gguf_copy(run.critic_local, folder / f"{stage.replace('/', '-')}-{n}.gguf")

    sample = critique_sampler(critic, held_out, y0, copies if config.critic_engine == "llamacpp" else None)
    anchors = {}
    for spec in config.monitor.anchors:
        model = judge_model(spec.removeprefix("judge:"), lambda name: run.ctx.frozen(name, "judge"))
        judge = rollout_judge(run.plan.reward, run.ctx.cached(model), config.roles.judge.sampling)
        anchors[spec] = critique_anchor(sample, make_reward(judge), held_out, y0, calls_stage)
    return HackingMonitor(anchors, every=config.monitor.every, stop=config.monitor.stop, stage=stage)


def critique_sampler(critic: Critic, items: Sequence[Sample], y0: Mapping[str, str],
                     copies: Callable[[int], Any] | None) -> Callable[[int], list[str]]:
    """`sample(n)`: the critic's critiques of the items at the n-th check, sampled once and
    shared by every anchor of that check (`copies(n)`: an engine copy of its weights, where given)."""
    sampled: dict[int, list[str]] = {}

    def sample(n: int) -> list[str]:
        if n not in sampled:
            with generating_on(critic, copies(n) if copies else None):
                sampled.clear()  # only the current check's critiques are asked for again
                sampled[n] = [c[0] for c in critic.critique([s.prompt for s in items], [y0[s.id] for s in items])]
        return sampled[n]

    return sample


def critique_anchor(sample: Callable[[int], list[str]], reward_fn: Callable[..., list[float]],
                    items: Sequence[Sample], y0: Mapping[str, str],
                    calls_stage: str = "monitor") -> Callable[[], dict[str, float]]:
    """A measurement: {item id: the anchor's reward of the critique `sample` gives at this
    check}, its model calls filed under `calls_stage`."""
    measured = 0

    def measure() -> dict[str, float]:
        nonlocal measured
        measured += 1
        xs, y0s = [s.prompt for s in items], [y0[s.id] for s in items]
        # Its calls are the monitor's own stage, not the GRPO reward's it runs inside.
        with tagged(stage=calls_stage):
            values = reward_fn([None] * len(items), sample(measured), x=xs, y0=y0s, sample_id=[s.id for s in items])
        return {s.id: float(v) for s, v in zip(items, values) if v is not None}

    return measure
