"""The model-backed part of the definition scanner: the learned probe's unit scorer.

See :mod:`host.safety.probe`.
"""

from host.safety.probe import (
    ENV_LEARNED,
    EmbeddingScorer,
    learned_scan_enabled,
    load_definition_scorer,
    load_probe,
    open_score_cache,
)
from host.safety.score_cache import ScoreCache

__all__ = [
    "ENV_LEARNED",
    "EmbeddingScorer",
    "ScoreCache",
    "learned_scan_enabled",
    "load_definition_scorer",
    "load_probe",
    "open_score_cache",
]
