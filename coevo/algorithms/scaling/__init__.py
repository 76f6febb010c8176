"""TAIScore's controlled zero-shot analysis (§3.1, Figure 1, Appendix A, Table 5):
`algorithm: scaling`, critic and refiner scaling on fixed initial responses.

One module per part, read in this order:

    config.py        the comparisons (Table 5's rows, or grids) and the shared role settings
    cells.py         the grid: cells (y0 source, critic, refiner), stages, compared pairs
    loop.py          y0 once per source, one critique per (y0, critic), one revision per cell, judged
    deltas.py        per-example scores, Table 5's paired deltas with CIs, per-cell means
    figure.py        Figure 1: the mean deltas as bars (plotly), written into the run folder
    paper.py         the paper's settings, the departures from them, and `coevo plan`
"""

from coevo.algorithms.scaling.config import ScalingConfig
from coevo.algorithms.scaling.deltas import ScalingSummary
from coevo.algorithms.scaling.loop import run_scaling

__all__ = ["ScalingConfig", "ScalingSummary", "run_scaling"]
