"""What a plot panel's y axis says and spans: its title with units, and a range that does not
lie about the size of a change.

The words come from the metric registry (coevo/eval/metric_defs.py): a per-round metric is
`describe`d by its name; TRL's per-step history keys (`loss`, `kl`, ...) are not metrics the
store logs, so their definitions are here (`TRAINING`).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from coevo.eval.metric_defs import MetricDef, describe

#: TRL's per-step history keys worth a panel, in panel order: what each one means and its unit.
TRAINING: dict[str, MetricDef] = {d.name: d for d in (
    MetricDef(name="loss", title="loss", definition="The trainer's loss at this step (GRPO's clipped policy "
              "loss, DPO's −log σ of the reward margin).", unit="loss", kind="loss"),
    MetricDef(name="reward", title="reward mean", definition="Mean reward of the step's sampled completions.",
              unit="reward", kind="mean"),
    MetricDef(name="reward_std", title="reward sd", definition="Standard deviation of the step's rewards (0: "
              "nothing to learn from).", unit="reward", low=0.0, kind="training"),
    MetricDef(name="kl", title="KL", definition="Mean KL divergence of the policy from its reference model at "
              "this step.", unit="nats", low=0.0, kind="training"),
    MetricDef(name="grad_norm", title="grad norm", definition="L2 norm of the gradient at this step (before "
              "clipping).", unit="L2 norm", low=0.0, kind="training"),
    MetricDef(name="frac_reward_zero_std", title="zero-std fraction", definition="Share of the step's GRPO "
              "groups whose rewards were all equal (they give no gradient).", unit="share of groups", low=0.0,
              high=1.0, kind="rate"),
    MetricDef(name="rewards/margins", title="DPO reward margin", definition="Mean implicit reward of the chosen "
              "answer minus the rejected one's (β × log-probability ratio to the reference).",
              unit="β × log ratio", kind="training"),
    MetricDef(name="rewards/accuracies", title="DPO reward accuracy", definition="Share of the step's pairs whose "
              "chosen answer got the higher implicit reward.", unit="share of pairs", low=0.0, high=1.0,
              kind="rate"),
    MetricDef(name="completions/mean_length", title="completion length", definition="Mean length of the step's "
              "sampled completions, in tokens (a policy that learns to pad grows it).", unit="tokens", low=0.0,
              kind="training"),
    MetricDef(name="completions/clipped_ratio", title="completions cut at their limit", definition="Share of the "
              "step's completions that stopped at their token limit (TRL's clipped ratio): the reward scored "
              "unfinished text.", unit="share of completions", low=0.0, high=1.0, kind="rate"),
    MetricDef(name="entropy", title="entropy", definition="Mean per-token entropy of the policy over the step's "
              "completions (a fast fall: the policy collapses onto a few phrasings).", unit="nats", low=0.0,
              kind="training"),
    MetricDef(name="learning_rate", title="learning rate", definition="The optimiser's learning rate at this step.",
              unit="learning rate", low=0.0, kind="training"),
)}

#: Quantities that cannot be negative though the registry gives no scale: an axis around them
#: never dips below 0.
NON_NEGATIVE = ("count", "seconds", "memory")
#: The narrowest axis an open-ended quantity is drawn on, as a share of its values' magnitude.
MIN_SHARE_OF_MAGNITUDE = 0.10
#: Room beyond a scale's ends, as a share of the axis, so a point at 0 or 1 is not cut by the frame.
EDGE_PAD = 0.03


def definition_of(metric: str | MetricDef | None) -> MetricDef | None:
    """A panel's metric as a definition: a registry name is `describe`d."""
    return describe(metric) if isinstance(metric, str) else metric


def y_range(values: list[float], metric: MetricDef | None) -> dict[str, Any]:
    """A panel's y range (`{}`: plotly's autorange) for its values, interval ends included.

    Plotly zooms in on whatever the values span, which drew a gold score of 4.9011 then
    4.9015 (on a 1–10 scale) as a climb across the panel, a rate of 0.5 then 0.51 as a leap, and
    a constant 0.002 on the 0 tick. One rule instead:
    - a metric with a scale (a rate on [0, 1], a 1–10 score, a −9 to 9 difference) is drawn on
      all of it: a change is seen against the whole scale, so a step from two items that moves
      a score by half a point looks like half a point, not a cliff;
    - an open-ended quantity keeps plotly's autorange unless its values span less than
      MIN_SHARE_OF_MAGNITUDE of their magnitude (12.1 s then 12.3 s per step is a 2 % change,
      not a doubling); a count, seconds or memory axis never dips below 0.
    Values outside a scale (a bug upstream) are always inside the range: never hidden."""
    finite = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    low, high = (metric.low, metric.high) if metric is not None else (None, None)
    if metric is not None and low is None and metric.kind in NON_NEGATIVE:
        low = 0.0
    if low is not None and high is not None:
        pad = EDGE_PAD * (high - low)
        return {"range": [min([low - pad, *finite]), max([high + pad, *finite])]}
    if not finite:
        return {}
    vmin, vmax = min(finite), max(finite)
    min_width = MIN_SHARE_OF_MAGNITUDE * max(abs(vmin), abs(vmax))
    if min_width == 0 or vmax - vmin >= min_width:
        return {}
    pad = EDGE_PAD * min_width
    start = (vmin + vmax - min_width) / 2
    if low is not None and start < low - pad:
        start = min(low - pad, vmin)
    return {"range": [start, start + min_width]}


def axis_title(metric: MetricDef | None) -> dict[str, Any] | None:
    """The y axis's title: its unit and scale ("share of pairs (0–1)")."""
    if metric is None:
        return None
    return {"text": metric.axis_label, "font": {"size": 10, "color": "#5f6b76"}}


def hover_definition(metric: MetricDef | None, width: int = 64) -> str:
    """The metric's definition as hover text (plotly does not wrap it), its raw name first."""
    if metric is None:
        return ""
    return "<br>".join([f"<i>{metric.name}</i>", *textwrap.wrap(metric.definition, width)])


def unit_suffix(metric: MetricDef | None) -> str:
    """` points` after a hovered value (a unit that is a sentence would crowd the hover: none)."""
    return f" {metric.unit}" if metric is not None and metric.unit and len(metric.unit) <= 24 else ""
