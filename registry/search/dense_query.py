"""Dense helpers of a free-text search: the query vector (LRU cache), the caller's candidate slots
(memo) and the cosine per slot. Used by ``registry.search.index``; fusion itself is in
``registry.search.dense``.

Thread-safety: :class:`QueryVectors` guards its cache with a lock; :class:`DenseCandidates`
keeps one tuple published with one assignment (a race only recomputes the same slots).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from registry.search.dense import Embedder

__all__ = ["FEW_CANDIDATES", "QUERY_VECTOR_CACHE", "DenseCandidates", "QueryVectors", "cosines"]

QUERY_VECTOR_CACHE = 256
"""Query vectors kept by default (LRU)."""

FEW_CANDIDATES = 8
"""Dense scoring reads only the candidate rows when they are at most 1/8 of the slots."""


class QueryVectors:
    """Query text → unit vector (float32), with a small LRU cache: agents repeat searches.

    ``size`` (query vectors kept) may be changed at any time; it applies from the next insert.
    """

    def __init__(self, size: int = QUERY_VECTOR_CACHE) -> None:
        self.size = size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str, embedder: Embedder) -> np.ndarray:
        """``text``'s query vector (``embedder.embed_query``, cached)."""
        with self._lock:
            vec = self._cache.get(text)
            if vec is not None:
                self._cache.move_to_end(text)
                return vec
        vec = np.asarray(embedder.embed_query(text), dtype=np.float32)
        with self._lock:
            self._cache[text] = vec
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        return vec


class DenseCandidates:
    """Slots with a vector that the caller may see (before the server / risk filter),
    remembered for the last ``(has_vec, mask)`` pair: both arrays are never changed in place
    (an update publishes new ones), so identity is a safe key (saves a copy and a scan of
    every slot per search: about 0.1 ms at 100k tools)."""

    def __init__(self) -> None:
        self._last: tuple[np.ndarray, np.ndarray | None, np.ndarray] | None = None

    def slots(self, has_vec: np.ndarray, cap: int, mask: np.ndarray | None) -> np.ndarray:
        """Sorted read-only int array of the slots below ``cap`` with ``has_vec`` and ``mask``
        (``None``: every slot visible)."""
        last = self._last
        if last is not None and last[0] is has_vec and last[1] is mask:
            return last[2]
        cand = has_vec[:cap].copy()
        if mask is not None:
            cand &= mask[:cap]
        slots = np.flatnonzero(cand)
        slots.flags.writeable = False
        self._last = (has_vec, mask, slots)
        return slots


def cosines(
    matrix: np.ndarray, cap: int, slots: np.ndarray, qv: np.ndarray, bounds: Sequence[tuple[int, int]] | None = None
) -> np.ndarray:
    """Cosine per slot (``cap`` float32 values) of the rows that matter: all of them with one
    matrix-vector product (it streams the whole matrix: memory-bound, about 0.6 ms at 10k tools and
    8 ms at 100k for 512 dimensions), or only ``slots``'s rows when the caller may rank few (a
    gather then the product: 0.14 ms for 1k of 10k rows, 1 ms for 5k of 100k; past about a fifth
    of the rows the gather costs more than it saves). Other slots get 0 (never read). Each row's
    value is the same either way (one dot product per row, same kernel: checked bit for bit).

    With ``bounds`` (the column range of each model of a stacked vector,
    ``registry.search.fusion.part_bounds``): ``(cap, parts)``, one matrix-vector product per part
    over its columns (a strided view, no copy: 1.2 ms for 896 dimensions at 10k tools, where one
    matrix product with a two-column query matrix took 4.4 ms).
    """
    rows = matrix[:cap]
    if bounds is None:
        if len(slots) * FEW_CANDIDATES > cap:
            return rows @ qv
        out = np.zeros(cap, dtype=np.float32)
        if len(slots):
            out[slots] = rows[slots] @ qv
        return out
    out = np.zeros((cap, len(bounds)), dtype=np.float32)
    few = len(slots) * FEW_CANDIDATES <= cap
    picked = rows[slots] if few and len(slots) else None
    for k, (a, b) in enumerate(bounds):
        if not qv[a:b].any():
            continue  # an inactive part: never read
        if few:
            if picked is not None:
                out[slots, k] = picked[:, a:b] @ qv[a:b]
        else:
            out[:, k] = rows[:, a:b] @ qv[a:b]
    return out
