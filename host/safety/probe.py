"""The learned poisoned-definition signal's scorer: text units → USE embeddings → linear probe.

:class:`EmbeddingScorer` is the :class:`registry.safety.learned.UnitScorer` the pin store uses on
discovery and every re-list (:class:`host.store.pin_safety.PinSafety`, once per definition hash):
it embeds a definition's text units with the multilingual Universal Sentence Encoder the search
index already loads (:func:`host.search.load_embedder`, shared, never a second copy) and scores
them with the shipped probe (``registry/safety/data/probe.npz``, trained by
``bench/definition_scan_train.py``).

:func:`load_definition_scorer` gives ``None`` and logs one line when the model is off
(``TOOLHOST_DENSE_SEARCH=0``), not installed, or not the model the probe was trained on; then
the rules alone decide.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import numpy as np

from host.safety.score_cache import ScoreCache
from host.search.embedder import ENV_DENSE, StackedEmbedder, UseEmbedder, load_embedder
from registry.safety.learned import LinearProbe

__all__ = ["ENV_LEARNED", "EmbeddingScorer", "learned_scan_enabled", "load_definition_scorer", "load_probe",
           "open_score_cache"]

ENV_LEARNED = "TOOLHOST_LEARNED_SCAN"
"""``1``/``true``/``on`` or ``0``/``false``/``off``: the learned signal on or off, over the
config file's ``toolhost.definition_scan.learned``."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

log = logging.getLogger("toolhost.safety")

_probe: LinearProbe | None = None


def load_probe() -> LinearProbe:
    """The shipped probe (``registry/safety/data/probe.npz``), read once per process."""
    global _probe
    if _probe is None:
        with resources.as_file(resources.files("registry.safety") / "data" / "probe.npz") as path:
            with np.load(path) as arrays:
                _probe = LinearProbe.from_arrays(arrays)
    return _probe


class EmbeddingScorer:
    """:class:`registry.safety.learned.UnitScorer` over a USE embedder and a :class:`LinearProbe`.

    Raises:
        ValueError: the embedder is not the model the probe was trained on (``model_id`` differs).
    """

    def __init__(self, embedder: UseEmbedder, probe: LinearProbe) -> None:
        if embedder.model_id != probe.model_id:
            raise ValueError(f"the definition probe was trained on {probe.model_id}, the loaded model is "
                             f"{embedder.model_id}; retrain it with bench/definition_scan_train.py --write")
        self.embedder = embedder
        self.probe = probe
        self.threshold = probe.threshold

    def scores(self, texts: Sequence[str]) -> Sequence[float]:
        """One score in 0..1 per text (about 2 ms per short text on one core)."""
        if not texts:
            return []
        return self.probe.score_vectors(self.embedder.embed(list(texts))).tolist()


def learned_scan_enabled(configured: bool = True) -> bool:
    """Whether the learned signal is on: ``$TOOLHOST_LEARNED_SCAN`` when set, else ``configured``
    (the config file's ``toolhost.definition_scan.learned``, default ``True``).

    Raises:
        ValueError: the variable is set to something else than a yes/no word.
    """
    raw = os.environ.get(ENV_LEARNED, "").strip().lower()
    if not raw:
        return configured
    if raw in _TRUE or raw in _FALSE:
        return raw in _TRUE
    raise ValueError(f"{ENV_LEARNED}={raw!r}: expected 1/true/on or 0/false/off")


def load_definition_scorer(enabled: bool | str | None = None) -> EmbeddingScorer | None:
    """The scorer of the learned signal, or ``None`` (rules alone; one log line says why).

    ``enabled`` as in :func:`host.search.load_embedder` (``None`` reads ``$TOOLHOST_DENSE_SEARCH``).
    """
    embedder = load_embedder(enabled)
    if embedder is None:
        log.info("definition scanner: learned signal off (dense model off or missing, %s); rules alone", ENV_DENSE)
        return None
    use = embedder.parts[0] if isinstance(embedder, StackedEmbedder) else embedder
    try:
        if not isinstance(use, UseEmbedder):
            raise ValueError(f"the first dense model is {use.model_id}, not the multilingual USE")
        return EmbeddingScorer(use, load_probe())
    except (ValueError, OSError, KeyError) as exc:
        log.warning("definition scanner: learned signal off (%s); rules alone", exc)
        return None


def open_score_cache(data_dir: Path, scorer: EmbeddingScorer) -> ScoreCache | None:
    """The saved scores of ``scorer``'s probe in ``<data_dir>/search`` (:class:`ScoreCache`), or
    ``None`` with one log line when the file cannot be opened (scores then live in memory only)."""
    try:
        return ScoreCache(data_dir / "search", scorer.probe.version)
    except (sqlite3.Error, OSError) as exc:
        log.warning("definition scanner: cannot keep learned scores in %s (%s); scoring again after "
                    "each restart", data_dir / "search", exc)
        return None
