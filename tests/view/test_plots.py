"""The run page's plots read as a researcher needs: panels titled in words, y axes with units
and honest ranges (a rate on all of [0, 1], a 1–10 score on all of 1–10), box
plots with their points on the box, and small-multiple grids that can reflow for a narrow page."""

from __future__ import annotations

import re

import pytest

from coevo.eval.metric_defs import describe
from coevo.view.plot_axes import y_range
from coevo.view.plots import distribution_figures, metric_figures, small_multiples, training_figures


def _metrics(values: dict[str, list[float]], stage: str = "coevolution") -> list[dict]:
    """Store rows: each metric's values in rounds 0, 1, ..."""
    return [{"name": name, "stage": stage, "round": r, "value": v}
            for name, vs in values.items() for r, v in enumerate(vs)]


def _panels(figure: dict) -> dict[str, tuple[dict, dict]]:
    """{panel title (no markup): (its annotation, its y axis)} of a small-multiples figure."""
    layout = figure["figure"]["layout"] if "figure" in figure else figure["layout"]
    out = {}
    for i, note in enumerate(layout["annotations"]):
        out[re.sub(r"</?b>", "", note["text"])] = (note, layout["yaxis" if i == 0 else f"yaxis{i + 1}"])
    return out


def _all_panels(figures: list[dict]) -> dict[str, tuple[dict, dict]]:
    return {title: panel for f in figures for title, panel in _panels(f).items()}


def test_panel_titles_and_axis_titles_come_from_the_registry():
    panels = _all_panels(metric_figures(_metrics({
        "gold_score": [5.0, 6.0], "win_rate_vs_round0": [0.5, 0.6], "grpo_zero_std_fraction": [1.0, 0.5],
        "actor_weight_delta": [0.002, 0.004]})))
    for name in ("gold_score", "win_rate_vs_round0", "grpo_zero_std_fraction", "actor_weight_delta"):
        definition = describe(name)
        assert definition.title in panels, (name, list(panels))
        note, axis = panels[definition.title]
        assert axis["title"]["text"] == definition.axis_label  # the unit and the scale
        assert note["hovertext"].startswith(f"<i>{name}</i>")  # the raw name, then what it means
        assert definition.definition.split()[0] in note["hovertext"]
    assert panels["Gold-rubric score"][1]["title"]["text"] == "points (1–10)"
    assert panels["Win rate vs round 0"][1]["title"]["text"] == "share of pairs (0–1)"
    assert not any("_" in title for title in panels)  # no logged name as a title


def test_points_hover_with_their_unit_and_the_definition():
    (figure,) = metric_figures(_metrics({"gold_score": [5.0, 6.0]}))
    (trace,) = figure["figure"]["data"]
    assert "%{y:.4g} points" in trace["hovertemplate"]
    assert "Mean score the gold-rubric judge gave" in trace["hovertemplate"].replace("<br>", " ")


def test_training_curves_have_units():
    history = [{"step": s, "loss": 0.7 - 0.1 * s, "kl": 0.01 * s, "grad_norm": 1.0 + s, "reward": 3.0 + s,
                "frac_reward_zero_std": 0.25 * s} for s in (1, 2, 3)]
    (figure,) = training_figures([{"stage": "c/round1/critic", "history": history}], {"c/round1/critic": "grpo"})
    panels = _panels(figure)
    assert panels["loss"][1]["title"]["text"] == "loss"
    assert panels["KL"][1]["title"]["text"] == "nats"
    assert panels["grad norm"][1]["title"]["text"] == "L2 norm"
    assert panels["zero-std fraction"][1]["title"]["text"] == "share of groups (0–1)"
    assert "KL divergence" in panels["KL"][0]["hovertext"]


@pytest.mark.parametrize("values", [[0.5, 0.51], [0.0, 0.0], [1.0, 1.0], [0.2, 0.9]])
def test_a_rate_is_drawn_on_all_of_zero_to_one(values):
    rows = _metrics({"win_rate_vs_round0": values, "win_rate_vs_round0_lo": [v / 2 for v in values],
                     "win_rate_vs_round0_hi": [min(1.0, v + 0.1) for v in values]})
    (figure,) = metric_figures(rows)
    (_, axis), = _panels(figure).values()
    low, high = axis["range"]
    assert -0.05 <= low <= 0 and 1 <= high <= 1.05


def test_a_tiny_change_on_a_bounded_scale_is_drawn_flat():
    (figure,) = metric_figures(_metrics({"gold_score": [4.9011, 4.9015]}))
    (_, axis), = _panels(figure).values()
    low, high = axis["range"]
    assert high - low >= 0.9  # 10 % of the 1–10 scale: +0.0004 is a flat line
    assert low <= 4.9011 and 4.9015 <= high and low >= 1 - 0.3 and high <= 10 + 0.3
    # near the top of its scale the axis stays on the scale, not centred past 10
    low, high = y_range([9.99, 9.995], describe("gold_score"))["range"]
    assert high <= 10.3 and high - low >= 0.9 and low <= 9.99


@pytest.mark.parametrize(("name", "values", "scale"), [
    ("gold_score", [3.0, 6.3], (1.0, 10.0)), ("gold_score", [5.2, 5.4], (1.0, 10.0)),
    ("refine_delta", [0.1, 0.5], (-9.0, 9.0)), ("kpr", [40.0, 41.0], (0.0, 100.0))])
def test_a_bounded_metric_is_drawn_on_its_whole_scale(name, values, scale):
    """A change from two items of half a point on a 1–10 score looks like half a point on
    1–10, not a cliff across a window zoomed onto it."""
    (figure,) = metric_figures(_metrics({name: values}))
    (_, axis), = _panels(figure).values()
    low, high = axis["range"]
    pad = 0.03 * (scale[1] - scale[0])
    assert low == pytest.approx(scale[0] - pad) and high == pytest.approx(scale[1] + pad)


def test_a_value_outside_its_scale_is_still_drawn():
    assert y_range([11.5, 5.0], describe("gold_score"))["range"][1] >= 11.5  # a bug upstream stays visible


def test_per_step_training_curves_include_length_cut_off_and_entropy():
    history = [{"step": s, "loss": 0.5, "completions/mean_length": 40.0 + s, "completions/clipped_ratio": 0.5,
                "entropy": 2.0 - 0.1 * s} for s in (1, 2)]
    (figure,) = training_figures([{"stage": "c/round1/critic", "history": history}], {"c/round1/critic": "grpo"})
    panels = _panels(figure)
    assert panels["completion length"][1]["title"]["text"] == "tokens"
    assert panels["completions cut at their limit"][1]["range"][0] <= 0 <= 1 <= \
        panels["completions cut at their limit"][1]["range"][1]
    assert panels["entropy"][1]["title"]["text"] == "nats"


def test_an_open_ended_metric_is_never_zoomed_past_its_magnitude():
    assert y_range([12.1, 12.3], describe("grpo_seconds_per_step"))["range"][1] - \
        y_range([12.1, 12.3], describe("grpo_seconds_per_step"))["range"][0] >= 1.2
    constant = y_range([0.002, 0.002], describe("actor_weight_delta"))["range"]
    assert constant[0] < 0.002 < constant[1] and constant[1] - constant[0] == pytest.approx(0.0002)
    assert y_range([0.1, 5.0], describe("grpo_seconds_per_step")) == {}  # a real change: autorange
    assert y_range([0.01, 0.011], describe("facts_correct"))["range"][0] >= -0.01  # a count stays >= 0


def test_box_points_sit_on_their_box_with_a_unit():
    (figure,) = distribution_figures({"critic training reward (GRPO)": {
        "coevolution": {"1": [3.6, 3.9, 3.1], "2": [4.0, 4.2, 3.8]}}})
    (trace,) = figure["figure"]["data"]
    assert trace["type"] == "box" and trace["boxpoints"] == "all" and trace["pointpos"] == 0
    assert 0 < trace["jitter"] <= 1  # spread across the box's width, not past it
    assert trace["x"] == ["1"] * 3 + ["2"] * 3
    assert figure["figure"]["layout"]["yaxis"]["title"]["text"] == describe("reward_mean").axis_label


def test_a_grid_has_a_height_per_row_and_a_layout_per_column_count():
    panels = [(f"panel {i}", {"a": [(0, 1.0), (1, 2.0)]}) for i in range(7)]
    figure = small_multiples("Seven", panels, "round")["figure"]
    layouts = dict((cols, updates) for cols, updates in figure["grid"]["layouts"])
    assert list(layouts) == [3, 2, 1] and figure["grid"]["min_panel_px"] > 0
    # rows x the panel height: 3, 4 and 7 rows
    heights = {cols: updates["height"] for cols, updates in layouts.items()}
    assert figure["layout"]["height"] == heights[3] and heights[3] < heights[2] < heights[1]
    assert heights[1] - heights[2] == 3 * (heights[2] - heights[3])
    for cols, updates in layouts.items():
        # no two panels' plotting areas overlap in any layout
        boxes = [(updates[f"xaxis{k}.domain"], updates[f"yaxis{k}.domain"]) for k in ["", *map(str, range(2, 8))]]
        for i, (xa, ya) in enumerate(boxes):
            for xb, yb in boxes[i + 1:]:
                assert xa[1] <= xb[0] or xb[1] <= xa[0] or ya[1] <= yb[0] or yb[1] <= ya[0], cols
        # the x title under the bottom panel of each column only
        titled = [k for k in ["", *map(str, range(2, 8))] if updates[f"xaxis{k}.title.text"]]
        assert len(titled) == cols
    assert "grid" not in small_multiples("One", panels[:1], "round")["figure"]  # nothing to reflow
