"""coevo: co-evolve an LLM generator with its evaluator (TAIScore, RLAC, DecoEvo)."""

__version__ = "0.1.0"
