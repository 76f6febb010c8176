"""Critique-content controls (TAIScore §5.3, Table 3b, App. D.6): the same y0 revised under no
critique, a generic one, a shuffled one and the matched one. In reading order:

    loop.py      the config, the four feedback conditions and the run (`algorithm: controls`)
    paper.py     Table 3b's settings, where a config departs from them, and `coevo plan`
    estimate.py  the model calls `coevo plan` counts
"""

from coevo.algorithms.controls.loop import ControlsConfig, ControlsSummary, feedback_for, run_controls

__all__ = ["ControlsConfig", "ControlsSummary", "feedback_for", "run_controls"]
