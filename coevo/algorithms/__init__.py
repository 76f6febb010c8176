"""coevo.algorithms: one package per system (`taiscore/`, `rlac/`, `decoevo/`), TAIScore's
controlled zero-shot analysis (`scaling/`: `scaling/config.py`, `scaling/cells.py`,
`scaling/loop.py`, `scaling/deltas.py`, `scaling/figure.py`, `scaling/paper.py`), and the
modules beside them (`backend.py`, `engines.py`, `refine.py`, `controls.py`)."""
