"""Learned reranking of a hybrid search's best fused candidates: generic per-candidate features
and a LambdaRank tree ensemble walked in numpy.

The seam is :class:`Reranker` (``SearchIndex(reranker=...)``): given the candidates' qualified
names and their :data:`RERANK_FEATURES` matrix, it returns one score per candidate (higher is
better). :class:`TreeReranker` is the shipped implementation: gradient-boosted regression trees
trained with LightGBM's ``lambdarank`` objective by ``bench/search_rerank.py`` (on permissively
licensed data only: MetaTool, MIT; the Docker MCP registry, MIT; LiveMCPBench's tools,
Apache-2.0) and exported to ``registry/search/data/rerank.npz`` as flat node arrays. Walking the
trees needs numpy alone (no LightGBM or scipy at run time): every tree advances one level per
step for every candidate at once (``max depth`` vectorised steps). The shipped ensemble (60
trees, depth ≤ 6) makes the stage cost about 1 ms CPU per search (``bench/README.md``).

Off by default (:data:`RERANK_ENV`): on dev it lifts warm search (usage memory) by 1.1 R@5 but
moves cold sets by −0.2 to +0.2, short of "raises every dev set".

Features read only the caller's visible candidates and the query, never the catalog's other
tools, so scores reveal nothing about hidden tools. Pure apart from :func:`load_tree_reranker`
reading the packaged array file and :func:`rerank_enabled` reading the environment.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from registry.search.document import schema_texts
from registry.search.ranking import least_risky_first
from registry.search.result import SearchHit
from registry.search.trees import leaf_sums
from registry.tool import ToolRecord

__all__ = ["RERANK_DEPTH", "RERANK_ENV", "RERANK_FEATURES", "FieldTokens", "RerankInput", "Reranker", "TreeReranker",
           "default_reranker", "load_tree_reranker", "rerank_enabled", "rerank_features", "rerank_hits"]

RERANK_DEPTH = 50
"""Fused candidates the reranker reorders (tool_search's largest ``limit``)."""

RERANK_FEATURES = (
    "fused", "fused_gap", "log1p_fused_rank",
    "bm25_rel", "log1p_bm25_rank", "bm25_confidence",
    "cos_multi", "cos_multi_gap", "log1p_cos_multi_rank",
    "cos_english", "cos_english_gap", "log1p_cos_english_rank", "english_active",
    "log1p_query_tokens", "name_overlap", "server_overlap", "param_overlap", "description_overlap",
    "memory_cosine", "has_memory",
)
"""Per candidate, in column order: the fused score, its gap to the best and its rank; BM25 over
the best candidate's BM25 and its rank among the candidates, and the query's BM25 confidence;
for each dense part (multilingual USE, English MiniLM) the cosine, its gap to the best
candidate's and its rank, and whether the English part ran; the query's token count; the share
of the query's distinct tokens found in the tool's name, server name, parameter names and
description; the best cosine of the query to the tool's remembered queries (usage memory, 0
without) and whether the tool has any."""

_N_PARTS = 2


@runtime_checkable
class Reranker(Protocol):
    """Scores a hybrid search's best fused candidates.

    ``n_parts`` is how many dense parts the features expect (the index skips reranking for an
    embedder of another shape); ``score`` takes the candidates' qualified names and their
    ``(n, len(RERANK_FEATURES))`` feature matrix and returns ``(n,)`` scores, higher is better.
    """

    n_parts: int

    def score(self, names: Sequence[str], features: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class TreeReranker:
    """A tree ensemble as flat node arrays (a leaf has ``feature == -1``; its value in ``value``).

    Attributes:
        feature, threshold, left, right, value: per node; an inner node sends a candidate left
            when ``x[feature] <= threshold`` (LightGBM's numerical split without missing values).
        roots: the first node of each tree.
        depth: the deepest tree's number of levels (walk steps).
        base_scale: the fused score times this is the starting score the trees correct (the
            trees were boosted from it: LightGBM's ``init_score``); 0: the trees alone.
        feature_names: must equal :data:`RERANK_FEATURES`.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int
    base_scale: float = 0.0
    feature_names: tuple[str, ...] = RERANK_FEATURES
    n_parts: int = _N_PARTS

    def __post_init__(self) -> None:
        if tuple(self.feature_names) != RERANK_FEATURES:
            raise ValueError(f"reranker trained on features {self.feature_names}, this version computes "
                             f"{RERANK_FEATURES}: retrain with bench/search_rerank.py")

    def score(self, names: Sequence[str], features: np.ndarray) -> np.ndarray:
        """``base_scale`` × the fused score plus the trees' leaf values, per row of ``features``
        (``(n, F)`` float)."""
        x = np.asarray(features, dtype=np.float64)
        base = self.base_scale * x[:, 0] if len(x) else np.zeros(0)
        return base + leaf_sums(x, self)

    def save(self, path: Path | str) -> None:
        """Write the arrays to an ``.npz`` file (read back by :func:`load_tree_reranker`)."""
        np.savez_compressed(path, feature=self.feature, threshold=self.threshold, left=self.left, right=self.right,
                            value=self.value, roots=self.roots, depth=np.int64(self.depth),
                            base_scale=np.float64(self.base_scale),
                            feature_names=np.asarray(self.feature_names), n_parts=np.int64(self.n_parts))


def load_tree_reranker(path: Path | str) -> TreeReranker:
    """The reranker saved at ``path`` by :meth:`TreeReranker.save`.

    Raises:
        OSError: the file cannot be read; ValueError: it was trained on other features.
    """
    with np.load(path, allow_pickle=False) as z:
        return TreeReranker(
            feature=z["feature"].astype(np.int32), threshold=z["threshold"].astype(np.float64),
            left=z["left"].astype(np.int32), right=z["right"].astype(np.int32), value=z["value"].astype(np.float64),
            roots=z["roots"].astype(np.int32), depth=int(z["depth"]), base_scale=float(z["base_scale"]),
            feature_names=tuple(str(s) for s in z["feature_names"]), n_parts=int(z["n_parts"]),
        )


_DEFAULT: list[TreeReranker] = []

RERANK_ENV = "TOOLHOST_SEARCH_RERANK"
"""``1`` turns the shipped reranker on for hybrid search with both dense models (default off:
trained on the data we may ship, it did not raise every dev set; ``bench/search_rerank.py``)."""


def rerank_enabled() -> bool:
    """Whether :data:`RERANK_ENV` asks for the shipped reranker."""
    return os.environ.get(RERANK_ENV, "0").strip().lower() in ("1", "true", "on", "yes")


def default_reranker() -> TreeReranker:
    """The shipped reranker (``registry/search/data/rerank.npz``), loaded once per process."""
    if not _DEFAULT:
        with resources.as_file(resources.files("registry.search") / "data" / "rerank.npz") as path:
            _DEFAULT.append(load_tree_reranker(path))
    return _DEFAULT[0]


class FieldTokens:
    """Per tool: the distinct tokens of its name (and title), server, parameter names and
    description, kept for the tools of the latest searches (bounded: cleared past ``size``)."""

    def __init__(self, tokenizer, size: int = 20_000) -> None:
        self._tokenizer = tokenizer
        self._size = size
        self._cache: dict[tuple[str, str], tuple[frozenset[str], ...]] = {}

    def get(self, rec: ToolRecord) -> tuple[frozenset[str], ...]:
        key = (rec.qualified_name, rec.definition_hash)
        hit = self._cache.get(key)
        if hit is None:
            if len(self._cache) >= self._size:
                self._cache.clear()
            names, _descs, _enums = schema_texts(rec.input_schema)
            title = rec.title or rec.annotations.title or ""
            tok = self._tokenizer
            hit = (frozenset(tok(f"{rec.original_name} {title}")), frozenset(tok(rec.server)),
                   frozenset(tok(" ".join(names))), frozenset(tok(rec.description or "")))
            self._cache[key] = hit
        return hit


def _rank(values: np.ndarray) -> np.ndarray:
    """0 for the highest value (ties share the better rank)."""
    order = np.sort(values)[::-1]
    return np.searchsorted(-order, -values, side="left").astype(np.float64)


def rerank_features(
    query_tokens: Sequence[str],
    records: Sequence[ToolRecord],
    fields: FieldTokens,
    fused: np.ndarray,
    bm25: np.ndarray,
    cos: np.ndarray,
    active: Sequence[bool],
    memory: np.ndarray,
    has_memory: np.ndarray,
    bm25_confidence: float,
) -> np.ndarray:
    """The ``(n, len(RERANK_FEATURES))`` matrix of ``n`` candidates (fused order).

    Args:
        query_tokens: the query's tokens (before expansion).
        records: the candidates' tools.
        fields: the field-token cache of the index.
        fused: fused scores; bm25: raw BM25 scores (0: no match); cos: ``(n, 2)`` cosines of
            the multilingual and the English part (a part that did not run: zeros).
        active: per dense part, whether it ran for this query.
        memory: best cosine to the tool's remembered queries (0 without); has_memory: 0/1.
        bm25_confidence: the query's :func:`registry.search.ranking.bm25_confidence`.
    """
    n = len(records)
    out = np.zeros((n, len(RERANK_FEATURES)))
    if not n:
        return out
    fused = np.asarray(fused, dtype=np.float64)
    out[:, 0] = fused
    out[:, 1] = fused.max() - fused
    out[:, 2] = np.log1p(_rank(fused))
    bm = np.asarray(bm25, dtype=np.float64)
    top = bm.max()
    out[:, 3] = bm / top if top > 0 else 0.0
    out[:, 4] = np.log1p(np.where(bm > 0, _rank(bm), n))
    out[:, 5] = bm25_confidence
    for k in range(_N_PARTS):
        col = 6 + 3 * k
        if k < cos.shape[1] and active[k]:
            c = np.asarray(cos[:, k], dtype=np.float64)
            out[:, col] = c
            out[:, col + 1] = c.max() - c
            out[:, col + 2] = np.log1p(_rank(c))
        else:
            out[:, col + 2] = math.log1p(n)
    out[:, 12] = float(len(active) > 1 and bool(active[1]))
    q = set(query_tokens)
    out[:, 13] = math.log1p(len(query_tokens))
    if q:
        for i, rec in enumerate(records):
            for j, toks in enumerate(fields.get(rec)):
                out[i, 14 + j] = len(q & toks) / len(q)
    out[:, 18] = memory
    out[:, 19] = has_memory
    return out


def _lookup(slots: np.ndarray, values: np.ndarray, want: np.ndarray) -> np.ndarray:
    """``values`` at ``want`` slots (0 where a slot is not among ``slots``)."""
    out = np.zeros(len(want))
    if not len(slots):
        return out
    order = np.argsort(slots, kind="stable")
    s, v = slots[order], np.asarray(values, dtype=np.float64)[order]
    pos = np.minimum(np.searchsorted(s, want), len(s) - 1)
    hit = s[pos] == want
    out[hit] = v[pos[hit]]
    return out


@dataclass(frozen=True)
class RerankInput:
    """What a hybrid search hands the reranking stage besides its fused candidates.

    Attributes:
        query_tokens: the query's tokens before expansion.
        bm_slots, bm_scores: BM25 matches (raw scores, usage memory's lexical part included).
        cos: ``(capacity, parts)`` cosines by slot (after the usage memory's lift).
        active: per dense part, whether it ran.
        mem_slots, mem_cos: tools with remembered queries and their best cosine to this query.
        bm25_confidence: the query's BM25 confidence.
    """

    query_tokens: Sequence[str]
    bm_slots: np.ndarray
    bm_scores: np.ndarray
    cos: np.ndarray
    active: Sequence[bool]
    mem_slots: np.ndarray
    mem_cos: np.ndarray
    bm25_confidence: float


def rerank_hits(reranker: Reranker, fields: FieldTokens, cands: Sequence[SearchHit], slots: np.ndarray,
                inp: RerankInput, limit: int) -> list[SearchHit]:
    """The ``limit`` best of ``cands`` (fused order, slots ``slots``) by ``reranker``'s scores,
    each hit's score the logistic of the reranker's (0..1); ties by qualified name, then the
    least risky first among near-equal hits."""
    if not cands:
        return []
    cos = inp.cos[slots] if inp.cos.ndim == 2 else inp.cos[slots][:, None]
    x = rerank_features(
        inp.query_tokens, [h.tool for h in cands], fields, np.array([h.score for h in cands]),
        _lookup(inp.bm_slots, inp.bm_scores, slots), cos, inp.active, _lookup(inp.mem_slots, inp.mem_cos, slots),
        np.isin(slots, inp.mem_slots).astype(np.float64), inp.bm25_confidence,
    )
    raw = np.asarray(reranker.score([h.tool.qualified_name for h in cands], x), dtype=np.float64)
    probs = 1.0 / (1.0 + np.exp(-np.clip(raw, -60, 60)))
    order = sorted(range(len(cands)), key=lambda i: (-raw[i], cands[i].tool.qualified_name))
    return least_risky_first([SearchHit(cands[i].tool, float(probs[i])) for i in order[:limit]])
