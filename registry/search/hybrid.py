"""The dense half of a free-text search: cosines of the query vector against the caller's
candidate tools, the usage memory's dense lift, the "no tool fits" signals of the dense ranking,
and the fusion with the BM25 candidates. Used by :meth:`registry.search.SearchIndex.search`;
the fusion rules are in ``registry.search.dense`` (one model) and ``registry.search.fusion``
(several models, and the lexical anchor). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from registry.search.abstain_signals import DenseView
from registry.search.dense import FusionParams, fuse
from registry.search.dense_query import cosines
from registry.search.fusion import LexicalAnchor, PartedFusion, anchor_lexical, fuse_parts, part_bounds, query_matrix
from registry.search.index_state import IndexState
from registry.search.memory import MemoryIndex
from registry.search.rerank import RerankInput

__all__ = ["DenseOutcome", "HybridSettings", "hybrid_scores"]

_NO_SLOTS = np.zeros(0, dtype=np.int64)
_NO_SCORES = np.zeros(0)


@dataclass(frozen=True)
class HybridSettings:
    """How a search fuses (read from the index's attributes at each search).

    Attributes:
        part_dims: each model's width for an embedder of several models, ``None`` for one model.
        fusion: BM25 + one model (``registry.search.dense``).
        parted_fusion: BM25 + several models (``registry.search.fusion``).
        anchor: the lexical anchor applied after the fusion of several models when every model
            reads the query (``None``: fused order only; see :class:`LexicalAnchor`).
        memory: the usage memory; ``memory_dense`` its factor on remembered-query cosines (0: off).
        rerank_parts: the reranker's number of dense parts (``None``: no reranker).
    """

    part_dims: tuple[int, ...] | None
    fusion: FusionParams
    parted_fusion: PartedFusion
    anchor: LexicalAnchor | None
    memory: MemoryIndex
    memory_dense: float
    rerank_parts: int | None


@dataclass(frozen=True)
class DenseOutcome:
    """Fused candidates and what the rest of the search reads from the dense ranking.

    Attributes:
        slots, scores: fused candidates (any order).
        view: the dense stage as the "no tool fits" signals read it (cosines after the memory's lift).
        rerank: the reranking stage's input (``None``: no reranking for this search).
    """

    slots: np.ndarray
    scores: np.ndarray
    view: DenseView
    rerank: RerankInput | None


def hybrid_scores(
    cfg: HybridSettings,
    st: IndexState,
    qv: np.ndarray,
    dense_slots: np.ndarray,
    bm_slots: np.ndarray,
    bm_scores: np.ndarray,
    query_tokens: Sequence[str],
    bm_conf: float,
) -> DenseOutcome:
    """Fuse the BM25 candidates ``(bm_slots, bm_scores)`` with the cosines of ``qv`` (the
    query's ``(dim,)`` vector) over ``dense_slots`` (non-empty: the caller's visible, filtered
    tools with a vector) in index state ``st`` (which has vectors)."""
    assert st.vectors is not None
    cap = len(st.records)
    parted = cfg.part_dims is not None
    active = None
    if cfg.part_dims is not None:
        dense_mat = cosines(st.vectors.matrix, cap, dense_slots, qv, part_bounds(cfg.part_dims))
        qv, active = query_matrix(qv, cfg.part_dims)  # for the memory's rows
    else:
        dense_mat = cosines(st.vectors.matrix, cap, dense_slots, qv)
    mem = (_NO_SLOTS, _NO_SCORES)
    if cfg.memory and cfg.memory_dense > 0:
        # A remembered query close to this one lifts its tool's dense score.
        m_slots, m_sims = cfg.memory.dense_scores(st.generation, st.by_name, st.corpus.slot_of, qv)
        mem = (m_slots, m_sims[:, 0] if parted and len(m_slots) else m_sims)
        if len(m_slots):
            # Several models: the lift reads and moves the first (multilingual) model's
            # cosines only, the scale ``memory_dense`` was fitted on.
            dense_mat = dense_mat.copy()
            if parted:
                dense_mat[m_slots, 0] = np.maximum(dense_mat[m_slots, 0], cfg.memory_dense * m_sims[:, 0])
            else:
                dense_mat[m_slots] = np.maximum(dense_mat[m_slots], cfg.memory_dense * m_sims)
    # Every slot a candidate (all visible, all embedded, no free slot): no gather.
    cand_mat = dense_mat if len(dense_slots) == cap else dense_mat[dense_slots]
    # Signals read the (first) multilingual model's cosines.
    dense_all = dense_mat[:, 0] if parted else dense_mat
    cand_cos = cand_mat[:, 0] if parted else cand_mat
    view = DenseView(dense_slots, cand_mat, dense_all, st.has_vec, active)
    rerank = None
    if active is not None and cfg.rerank_parts == len(active):
        rerank = RerankInput(query_tokens, bm_slots, bm_scores, dense_mat, active, *mem, bm_conf)
    if active is not None:
        slots, scores = fuse_parts(bm_slots, bm_scores, dense_slots, dense_mat, active, st.has_vec,
                                   cfg.parted_fusion, cand_mat)
    else:
        slots, scores = fuse(bm_slots, bm_scores, dense_slots, dense_all, st.has_vec, cfg.fusion, cand_cos)
    if cfg.anchor is not None and active is not None and active.all():
        # Only where it was chosen: the three-way fusion of a query every model reads (English).
        slots, scores = anchor_lexical(bm_slots, bm_scores, slots, scores, cfg.anchor)
    return DenseOutcome(slots, scores, view, rerank)
