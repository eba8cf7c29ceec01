"""Walking gradient-boosted trees exported as flat node arrays (LightGBM's numerical splits), in numpy.

Both learned models of the search — the reranker (:mod:`registry.search.rerank`) and "no tool fits"
(:mod:`registry.search.abstain`) — are tree ensembles trained with LightGBM (a training-only
dependency) and shipped as arrays; this is the one walk they share. Pure: no I/O.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["TreeNodes", "leaf_sums"]


class TreeNodes(Protocol):
    """An ensemble's flat node arrays: an inner node sends a row left when ``x[feature] <= threshold``
    (LightGBM's numerical split without missing values), else right; a leaf has ``feature == -1`` and
    its score in ``value``. ``roots``: each tree's first node; ``depth``: the deepest tree's number of
    levels (at most that many vectorised steps)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int


def leaf_sums(x: np.ndarray, trees: TreeNodes) -> np.ndarray:
    """Per row of ``x`` (``(n, F)`` float64), the sum over ``trees`` of the leaf each row reaches: ``(n,)``."""
    n = len(x)
    if not n or not len(trees.roots):
        return np.zeros(n)
    nodes = np.broadcast_to(trees.roots, (n, len(trees.roots))).copy()
    rows = np.arange(n)[:, None]
    for _ in range(trees.depth):
        f = trees.feature[nodes]
        inner = f >= 0
        if not inner.any():
            break
        go_left = x[rows, np.where(inner, f, 0)] <= trees.threshold[nodes]
        nodes = np.where(inner, np.where(go_left, trees.left[nodes], trees.right[nodes]), nodes)
    return trees.value[nodes].sum(axis=1)
