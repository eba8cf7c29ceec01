"""Walking gradient-boosted trees exported as flat node arrays (LightGBM's numerical splits), in numpy.

Both learned models of the search — the reranker (:mod:`registry.search.rerank`) and "no tool fits"
(:mod:`registry.search.abstain`) — are tree ensembles trained with LightGBM (a training-only
dependency) and shipped as arrays; this is the one walk they share. Pure: no I/O.
"""

from __future__ import annotations

import numpy as np

__all__ = ["leaf_sums"]


def leaf_sums(x: np.ndarray, *, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray, right: np.ndarray,
              value: np.ndarray, roots: np.ndarray, depth: int) -> np.ndarray:
    """Per row of ``x`` (``(n, F)`` float64), the sum over the trees of the leaf each row reaches: ``(n,)``.

    Nodes are flat arrays: an inner node sends a row left when ``x[feature] <= threshold`` (LightGBM's
    numerical split without missing values), else right; a leaf has ``feature == -1`` and its score in
    ``value``. ``roots``: each tree's first node; ``depth``: the deepest tree's number of levels (at
    most that many vectorised steps)."""
    n = len(x)
    if not n or not len(roots):
        return np.zeros(n)
    nodes = np.broadcast_to(roots, (n, len(roots))).copy()
    rows = np.arange(n)[:, None]
    for _ in range(depth):
        f = feature[nodes]
        inner = f >= 0
        if not inner.any():
            break
        go_left = x[rows, np.where(inner, f, 0)] <= threshold[nodes]
        nodes = np.where(inner, np.where(go_left, left[nodes], right[nodes]), nodes)
    return value[nodes].sum(axis=1)
