"""Ordering of search hits: the caller's server / risk filter, summing sparse score lists, the
BM25 confidence used by "no tool fits", and the final top-``limit`` order (score, then name, then
the least risky among near-equal hits). Pure: no I/O."""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from registry.search.bm25 import BM25Params
from registry.search.result import SearchHit
from registry.tool import Risk, ToolRecord

__all__ = ["NEAR_EQUAL", "ToolFilter", "add_scores", "bm25_confidence", "least_risky_first", "top_hits"]

NEAR_EQUAL = 0.02
"""Hits whose scores are within this share of the top score's of each other count as near-equal:
among them the least risky ranks first."""


class ToolFilter:
    """The caller's ``servers`` / ``max_risk`` restriction."""

    def __init__(self, servers: Collection[str] | None, max_risk: Risk | None) -> None:
        self.servers = None if servers is None else frozenset(servers)
        self.max_risk = max_risk

    def __call__(self, rec: ToolRecord) -> bool:
        if self.servers is not None and rec.server not in self.servers:
            return False
        return self.max_risk is None or rec.risk <= self.max_risk

    def array_mask(self, st: Any, slots: np.ndarray) -> np.ndarray:
        """Per slot: passes the filter (``st``: an index state with ``server_ids``,
        ``server_code`` and ``risk_level``)."""
        sel = np.ones(len(slots), dtype=bool)
        if self.servers is not None:
            codes = [st.server_ids[s] for s in self.servers if s in st.server_ids]
            sel &= np.isin(st.server_code[slots], np.asarray(codes, dtype=np.int32))
        if self.max_risk is not None:
            sel &= st.risk_level[slots] <= self.max_risk.level
        return sel


def add_scores(
    a_slots: np.ndarray, a_scores: np.ndarray, b_slots: np.ndarray, b_scores: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sum two sparse score vectors (slot arrays need not be sorted; slots unique within each)."""
    slots = np.union1d(a_slots, b_slots)
    out = np.zeros(len(slots))
    out[np.searchsorted(slots, a_slots)] += a_scores
    out[np.searchsorted(slots, b_slots)] += b_scores
    return slots, out


def bm25_confidence(
    params: BM25Params, scores: np.ndarray, weights: Sequence[float] | None, n_tokens: int, n_docs: int
) -> float:
    """Best BM25 score over the most a document could score for this query (0..1): every query
    token present with the rarest possible IDF (``ln(N+1)``) and a saturated term frequency."""
    if not len(scores) or not n_docs:
        return 0.0
    total_weight = float(sum(weights)) if weights is not None else float(n_tokens)
    per_token = math.log(n_docs + 1) * (params.delta + params.k1 + 1)
    best = total_weight * per_token
    return min(1.0, float(scores.max()) / best) if best > 0 else 0.0


def top_hits(
    records: Sequence[ToolRecord | None], slots: np.ndarray, scores: np.ndarray, limit: int
) -> list[SearchHit]:
    """The ``limit`` best slots: score descending, then qualified name ascending (deterministic);
    then, among near-equal hits (:data:`NEAR_EQUAL`), the least risky first."""
    if not len(slots):
        return []
    if len(slots) > limit:
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        sel = scores >= kth
        slots, scores = slots[sel], scores[sel]
    order = sorted(range(len(slots)), key=lambda i: (-scores[i], records[slots[i]].qualified_name))  # type: ignore[union-attr]
    hits = [SearchHit(records[slots[i]], float(scores[i])) for i in order[:limit]]  # type: ignore[arg-type]
    return least_risky_first(hits)


def least_risky_first(hits: list[SearchHit]) -> list[SearchHit]:
    """Within runs of near-equal scores, order by risk (lowest first), keeping score order otherwise."""
    if len(hits) < 2:
        return hits
    tol = NEAR_EQUAL * max(abs(hits[0].score), 1e-12)
    out: list[SearchHit] = []
    group: list[SearchHit] = [hits[0]]
    for h in hits[1:]:
        if group[0].score - h.score <= tol:
            group.append(h)
        else:
            out.extend(sorted(group, key=lambda x: x.tool.risk.level))
            group = [h]
    out.extend(sorted(group, key=lambda x: x.tool.risk.level))
    return out
