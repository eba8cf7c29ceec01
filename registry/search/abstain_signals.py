"""The measurements behind "no tool fits": per-stage top scores and gaps, whether the stages agree,
how much of the query the visible catalog knows at all. Each is a few linear passes over arrays
the search already has (about 0.1 ms at 10k tools). Pure: no I/O.

Every value is computed over the caller's visible tools only, so no signal reveals a hidden tool.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from registry.search.bm25 import Corpus, Stats
from registry.tool import ToolRecord

__all__ = [
    "FEATURES",
    "DenseView",
    "Signals",
    "measure",
    "StageShape",
    "agreement5",
    "dense_signals",
    "names_a_tool",
    "query_coverage",
    "rank_agreement",
    "stage_shape",
    "vocab_share",
]

SPREAD_RANK = 10
"""The spread of a stage is its best score minus its ``SPREAD_RANK``-th best."""


def query_coverage(corpus: Corpus, stats: Stats, tokens: Sequence[str], slots: Sequence[int]) -> list[float]:
    """Per slot: the IDF-weighted share of the distinct ``tokens`` present in its document.

    IDF comes from the caller's visible statistics; a token no visible document has weighs as the
    rarest possible one (``ln(N + 1)``), so an unknown query word lowers every slot's coverage."""
    uniq = list(dict.fromkeys(tokens))
    if not uniq or not len(slots):
        return [0.0] * len(slots)
    rare = math.log(stats.n_docs + 1) if stats.n_docs else 1.0
    idf = []
    for tok in uniq:
        df = corpus.df(tok, stats)
        idf.append(corpus.idf(df, stats) if df else rare)
    total = sum(idf) or 1.0
    out = []
    for slot in slots:
        vocab = set(corpus.vocab[slot] or ())
        out.append(sum(w for tok, w in zip(uniq, idf, strict=True) if tok in vocab) / total)
    return out


def vocab_share(corpus: Corpus, stats: Stats, tokens: Sequence[str]) -> float:
    """Share (0..1) of the distinct query ``tokens`` that at least one visible tool's document has
    (0.0 for no tokens): a query about things the catalog never mentions scores low whatever
    the ranking does."""
    uniq = set(tokens)
    if not uniq:
        return 0.0
    return sum(1 for tok in uniq if corpus.df(tok, stats) > 0) / len(uniq)


@dataclass(frozen=True)
class StageShape:
    """The shape of one stage's scores over its candidates.

    Attributes:
        top: the best score.
        z: standard deviations the best stands above the candidates' mean (0 for a flat list).
        margin: best minus second best (the best itself with one candidate).
        spread: best minus the ``SPREAD_RANK``-th best (best minus the worst with fewer).
    """

    top: float
    z: float
    margin: float
    spread: float


def stage_shape(scores: np.ndarray) -> StageShape:
    """:class:`StageShape` of ``scores`` (at least one value; one partition and two reductions)."""
    n = len(scores)
    top = float(scores.max())
    mean = float(scores.sum(dtype=np.float64)) / n
    var = max(0.0, float(np.dot(scores.astype(np.float64), scores)) / n - mean * mean)
    spread_sd = math.sqrt(var)
    z = (top - mean) / spread_sd if spread_sd > 1e-6 else 0.0
    k = min(n, SPREAD_RANK)
    best = np.partition(scores, n - k)[n - k :]  # the k best, unordered
    second = float(np.partition(best, k - 2)[k - 2]) if k > 1 else 0.0
    return StageShape(top, z, top - second, top - float(best.min()) if k > 1 else 0.0)


def dense_signals(cand_scores: np.ndarray) -> tuple[float, float, float]:
    """``(top, z, margin)`` of the caller's cosines (see :func:`stage_shape`)."""
    s = stage_shape(cand_scores)
    return s.top, s.z, s.margin


def rank_agreement(
    bm_slots: np.ndarray,
    bm_scores: np.ndarray,
    dense_slots: np.ndarray,
    cand_cos: np.ndarray,
    cos_all: np.ndarray,
    has_vec: np.ndarray,
) -> tuple[int, int]:
    """``(lex_dense_rank, dense_lex_rank)``: where BM25's best tool ranks among the caller's
    cosines ``cand_cos`` (of ``dense_slots``), and where the dense best ranks among the BM25 scores
    (0 = both parts agree on the best tool). A tool the other part cannot rank gets that part's
    candidate count. Two linear passes (one comparison per candidate)."""
    n_dense = len(cand_cos)
    if not len(bm_slots):
        return n_dense, 0
    bm_top = int(bm_slots[int(bm_scores.argmax())])
    lex_dense = int((cand_cos > cos_all[bm_top]).sum()) if has_vec[bm_top] else n_dense
    d_top = int(dense_slots[int(cand_cos.argmax())])
    hit = np.flatnonzero(bm_slots == d_top)
    dense_lex = int((bm_scores > bm_scores[hit[0]]).sum()) if len(hit) else len(bm_slots)
    return lex_dense, dense_lex


def _top5(slots: np.ndarray, scores: np.ndarray) -> set[int]:
    if len(slots) > 5:
        slots = slots[np.argpartition(scores, len(scores) - 5)[-5:]]
    return {int(s) for s in slots}


def agreement5(stages: Sequence[tuple[np.ndarray, np.ndarray]]) -> float:
    """Mean share (0..1) of the five best tools two stages have in common, over every pair of
    ``stages`` (``(slots, scores)`` each; a stage with no candidates shares nothing). 1.0 with
    fewer than two stages."""
    tops = [_top5(slots, scores) for slots, scores in stages]
    pairs = [(a, b) for i, a in enumerate(tops) for b in tops[i + 1 :]]
    if not pairs:
        return 1.0
    return sum(len(a & b) / 5 for a, b in pairs) / len(pairs)


def names_a_tool(
    tokenizer: Callable[[str], list[str]], query_tokens: Sequence[str], tools: Sequence[ToolRecord]
) -> bool:
    """Whether the query contains every token of the server name or of the tool name of one of
    ``tools`` (the best hits): "list my github issues" names the ``github`` server."""
    words = set(query_tokens)
    for tool in tools:
        for name in (tool.server, tool.original_name):
            toks = tokenizer(name)
            if toks and set(toks) <= words:
                return True
    return False


@dataclass(frozen=True)
class DenseView:
    """The dense stage of one search, as the signals read it.

    Attributes:
        slots: the candidate slots (visible, embedded, passing the filters).
        cosines: ``(len(slots), parts)`` cosines of the candidates, one column per model (the
            first is the multilingual model), or ``(len(slots),)`` for one model.
        cos_all: the first model's cosine per slot (indexable by any slot).
        has_vec: per slot, whether it has a vector.
        active: per model, whether it embedded this query (the English model skips a query in
            another language: its cosines are all 0); ``None``: every model did.
    """

    slots: np.ndarray
    cosines: np.ndarray
    cos_all: np.ndarray
    has_vec: np.ndarray
    active: np.ndarray | None = None

    def part(self, i: int) -> np.ndarray | None:
        """The candidates' cosines of model ``i`` (``None``: no such model, or it skipped the query)."""
        if self.active is not None and (i >= len(self.active) or not self.active[i]):
            return None
        if self.cosines.ndim == 1:
            return self.cosines if i == 0 else None
        return self.cosines[:, i] if i < self.cosines.shape[1] else None


@dataclass(frozen=True)
class Signals:
    """How well a free-text search's best hits match the query (every value from the caller's
    visible tools only, so signals reveal nothing about hidden tools). Dense values are ``None``
    when no dense stage ran; MiniLM values also when the index has one model only.

    Attributes:
        bm25_confidence: best BM25 score over the query's best possible score (0..1).
        coverage: IDF-weighted share of the query's words found in the best hit's document
            (0..1; a word no visible tool has counts with the rarest IDF).
        coverage5: the same, best over the top five hits.
        n_tokens: query tokens (after stop words, before expansion).
        dense_top: best cosine of the first (multilingual, USE) model among the caller's tools.
        dense_z: how many standard deviations ``dense_top`` stands above the caller's tools' mean.
        dense_margin: ``dense_top`` minus the second best cosine.
        hit_cosine: first-model cosine of the best (fused) hit.
        lex_dense_rank: rank (0 = first) of BM25's best tool among the first model's cosines (the
            number of candidates when that tool has no vector).
        dense_lex_rank: rank of the first model's best tool among the BM25 scores (the number of
            BM25 matches when it has none).
        fused_margin: the best fused score minus the second best, over the best (0..1).
        vocab_share: share of the distinct query tokens some visible tool has at all (0..1).
        bm25_margin: best BM25 score minus the second best, over the best (0..1; 0: no match).
        bm25_spread: best BM25 score minus the 10th best, over the best (0..1).
        names_tool: the query contains a best hit's whole server or tool name.
        n_tools: visible tools the search ranked over (the catalog's size for this caller).
        dense_spread: ``dense_top`` minus the 10th best first-model cosine.
        minilm_top / minilm_z / minilm_margin / minilm_spread: the same for the second
            (English MiniLM) model's cosines (``None`` when it skipped a query in another language).
        agree5: mean share of the five best tools the stages (BM25 and each model) have in common
            (0..1).
    """

    bm25_confidence: float = 0.0
    coverage: float = 0.0
    coverage5: float = 0.0
    n_tokens: int = 0
    dense_top: float | None = None
    dense_z: float | None = None
    dense_margin: float | None = None
    hit_cosine: float | None = None
    lex_dense_rank: int | None = None
    dense_lex_rank: int | None = None
    fused_margin: float | None = None
    vocab_share: float = 0.0
    bm25_margin: float = 0.0
    bm25_spread: float = 0.0
    names_tool: bool = False
    n_tools: int = 0
    dense_spread: float | None = None
    minilm_top: float | None = None
    minilm_z: float | None = None
    minilm_margin: float | None = None
    minilm_spread: float | None = None
    agree5: float | None = None

    def features(self) -> dict[str, float]:
        """Every feature a "no tool fits" model may read, by name (:data:`FEATURES` order; a
        missing dense value is 0, and ``has_minilm`` says whether the MiniLM values are real)."""
        return {
            "bm25_confidence": self.bm25_confidence,
            "coverage": self.coverage,
            "coverage5": self.coverage5,
            "log1p_tokens": math.log1p(self.n_tokens),
            "dense_top": self.dense_top or 0.0,
            "dense_z": min(self.dense_z or 0.0, 10.0),
            "dense_margin": self.dense_margin or 0.0,
            "hit_cosine": self.hit_cosine or 0.0,
            "log1p_lex_dense_rank": math.log1p(self.lex_dense_rank or 0),
            "log1p_dense_lex_rank": math.log1p(self.dense_lex_rank or 0),
            "fused_margin": self.fused_margin or 0.0,
            "vocab_share": self.vocab_share,
            "bm25_margin": self.bm25_margin,
            "bm25_spread": self.bm25_spread,
            "names_tool": float(self.names_tool),
            "log10_tools": math.log10(max(1, self.n_tools)),
            "dense_spread": self.dense_spread or 0.0,
            "has_minilm": float(self.minilm_top is not None),
            "minilm_top": self.minilm_top or 0.0,
            "minilm_z": min(self.minilm_z or 0.0, 10.0),
            "minilm_margin": self.minilm_margin or 0.0,
            "minilm_spread": self.minilm_spread or 0.0,
            "agree5": self.agree5 if self.agree5 is not None else 0.0,
        }


FEATURES = tuple(Signals().features())
"""The names of every feature, in :meth:`Signals.features` order."""


def measure(
    *,
    corpus: Corpus,
    stats: Stats,
    tokenizer: Callable[[str], list[str]],
    query_tokens: Sequence[str],
    bm_conf: float,
    bm_slots: np.ndarray,
    bm_scores: np.ndarray,
    dense: DenseView | None,
    hit_slots: Sequence[int],
    hit_tools: Sequence[ToolRecord],
    hit_scores: Sequence[float],
) -> Signals:
    """The :class:`Signals` of one free-text search.

    Args:
        corpus / stats: the BM25 corpus and the caller's visible statistics.
        tokenizer: the index's tokenizer (for the hits' names).
        query_tokens: the query's tokens before expansion.
        bm_conf: :func:`registry.search.ranking.bm25_confidence` of the BM25 scores.
        bm_slots / bm_scores: BM25's matches (after filters, before fusion).
        dense: the dense stage (``None``: lexical search).
        hit_slots / hit_tools / hit_scores: the five best (fused) hits, best first (at least one).
    """
    cov = query_coverage(corpus, stats, query_tokens, hit_slots)
    bm_top = float(bm_scores.max()) if len(bm_scores) else 0.0
    bm = stage_shape(bm_scores) if len(bm_scores) else None
    common = {
        "bm25_confidence": bm_conf,
        "coverage": cov[0],
        "coverage5": max(cov),
        "n_tokens": len(set(query_tokens)),
        "vocab_share": vocab_share(corpus, stats, query_tokens),
        "bm25_margin": bm.margin / bm_top if bm is not None and bm_top > 0 else 0.0,
        "bm25_spread": bm.spread / bm_top if bm is not None and bm_top > 0 else 0.0,
        "names_tool": names_a_tool(tokenizer, query_tokens, hit_tools),
        "n_tools": stats.n_docs,
    }
    if dense is None:
        return Signals(**common)
    use = dense.part(0)
    assert use is not None
    first = stage_shape(use)
    mini = dense.part(1)
    second = stage_shape(mini) if mini is not None else None
    lex_dense, dense_lex = rank_agreement(bm_slots, bm_scores, dense.slots, use, dense.cos_all, dense.has_vec)
    stages = [(bm_slots, bm_scores), (dense.slots, use)] + ([(dense.slots, mini)] if mini is not None else [])
    top_slot = hit_slots[0]
    second_score = hit_scores[1] if len(hit_scores) > 1 else 0.0
    return Signals(
        **common,
        dense_top=first.top,
        dense_z=first.z,
        dense_margin=first.margin,
        hit_cosine=float(dense.cos_all[top_slot]) if dense.has_vec[top_slot] else None,
        lex_dense_rank=lex_dense,
        dense_lex_rank=dense_lex,
        fused_margin=(hit_scores[0] - second_score) / hit_scores[0] if hit_scores[0] > 0 else 0.0,
        dense_spread=first.spread,
        minilm_top=second.top if second else None,
        minilm_z=second.z if second else None,
        minilm_margin=second.margin if second else None,
        minilm_spread=second.spread if second else None,
        agree5=agreement5(stages),
    )
