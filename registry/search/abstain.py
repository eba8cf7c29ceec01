""""No tool fits": the signals of a free-text search's best hits and the calibrated decision.

A search computes :class:`Signals` (cheap: a few array reductions over scores it already has);
:class:`Abstain` turns them into a "weak" flag with a logistic model whose weights were fitted on
DEV data only (``bench/search_abstain_tune.py``: answerable = ToolLens train / MetaTool dev
queries on their own tools; unanswerable = the same queries on the other catalogs' tools), then
frozen. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from registry.search.bm25 import Corpus, Stats

__all__ = ["DEFAULT_ABSTAIN", "DENSE_FEATURES", "FEATURES", "LEXICAL_FEATURES", "Abstain", "Signals", "query_coverage"]


@dataclass(frozen=True)
class Signals:
    """How well a free-text search's best hits match the query (every value from the caller's
    visible tools only, so signals reveal nothing about hidden tools).

    Attributes:
        bm25_confidence: best BM25 score over the query's best possible score (0..1).
        coverage: IDF-weighted share of the query's words found in the best hit's document
            (0..1; a word no visible tool has counts with the rarest IDF).
        coverage5: the same, best over the top five hits.
        n_tokens: query tokens (after stop words, before expansion).
        dense_top: best cosine among the caller's tools (``None``: no dense part ran).
        dense_z: how many standard deviations ``dense_top`` stands above the caller's tools' mean.
        dense_margin: ``dense_top`` minus the second best cosine.
        hit_cosine: cosine of the best (fused) hit.
        lex_dense_rank: rank (0 = first) of BM25's best tool among the caller's cosines (``None``:
            no dense part ran; the number of candidates when that tool has no vector).
        dense_lex_rank: rank of the dense part's best tool among the BM25 scores (the number of
            BM25 matches when it has none).
        fused_margin: the best fused score minus the second best, over the best (0..1).
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

    def vector(self) -> list[float]:
        """All features, in :data:`FEATURES` order (dense ones 0 when no dense part ran)."""
        return [
            self.bm25_confidence,
            self.coverage,
            self.coverage5,
            math.log1p(self.n_tokens),
            self.dense_top or 0.0,
            min(self.dense_z or 0.0, 10.0),
            self.dense_margin or 0.0,
            self.hit_cosine or 0.0,
            math.log1p(self.lex_dense_rank or 0),
            math.log1p(self.dense_lex_rank or 0),
            self.fused_margin or 0.0,
        ]


FEATURES = (
    "bm25_confidence", "coverage", "coverage5", "log1p_tokens", "dense_top", "dense_z", "dense_margin", "hit_cosine",
    "log1p_lex_dense_rank", "log1p_dense_lex_rank", "fused_margin",
)
LEXICAL_FEATURES = FEATURES[:4]
"""What the lexical models read (the first four of :data:`FEATURES`)."""
DENSE_FEATURES = FEATURES[4:]
"""What the dense model reads (the last seven of :data:`FEATURES`: the cosine signals and whether
the lexical and dense parts agree on the best tool)."""


def _logit(model: tuple[float, ...], xs: Sequence[float]) -> float:
    return model[0] + sum(w * x for w, x in zip(model[1:], xs, strict=True))


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


@dataclass(frozen=True)
class Abstain:
    """When a free-text search says "no tool fits" (:attr:`SearchResult.weak`).

    Three logistic models, each ``(bias, w_1, ..., w_k)`` (k = 4 lexical, 7 dense), giving ``P(no fit) = sigmoid(bias +
    Σ w·feature)``: ``lexical`` over :data:`LEXICAL_FEATURES` and ``dense`` over
    :data:`DENSE_FEATURES` for hybrid search, where the result is weak only when *both* say so
    (either kind of evidence can vouch for a hit: a Chinese query has no words in common with
    English tools, yet its cosine shows the fit); ``lexical_only`` for BM25-only search.
    A model says "no fit" when its probability is at least 0.5 (thresholds are folded into the
    biases).
    """

    lexical: tuple[float, ...] = (0.0,) * 5
    dense: tuple[float, ...] = (0.0,) * 8
    lexical_only: tuple[float, ...] = (0.0,) * 5

    def __post_init__(self) -> None:
        for name, n in (("lexical", 5), ("dense", 8), ("lexical_only", 5)):
            if len(getattr(self, name)) != n:
                raise ValueError(f"Abstain.{name} needs {n} numbers (bias + one weight per feature), "
                                 f"got {len(getattr(self, name))}")

    def probabilities(self, s: Signals) -> tuple[float, float | None]:
        """``(lexical, dense)`` probabilities that no tool fits (dense ``None``: no dense part ran)."""
        v = s.vector()
        if s.dense_top is None:
            return _sigmoid(_logit(self.lexical_only, v[:4])), None
        return _sigmoid(_logit(self.lexical, v[:4])), _sigmoid(_logit(self.dense, v[4:]))

    def weak(self, s: Signals) -> bool:
        """Whether these signals of a search's best hits mean "no tool fits"."""
        lexical, dense = self.probabilities(s)
        return lexical >= 0.5 and (dense is None or dense >= 0.5)


DEFAULT_ABSTAIN = Abstain(
    lexical=(6.2555, -15.5054, -4.6684, 0.1159, -1.0777),
    dense=(-0.0661, -14.5151, 0.602, -0.7241, 1.2852, 0.2428, 0.2155, -0.6157),
    lexical_only=(5.5956, -17.032, -4.6928, 0.2708, -1.2674),
)
"""Fitted by ``bench/search_abstain_tune.py --every 2 --loss 1.5`` on dev data only, then frozen.
Dev, hybrid: 33.6 % of unanswerable queries flagged while answerable R@5 loses 1.42 (ToolLens)
and 1.46 (MetaTool) points (37.7 % within 2 points); 51.7 % on the honest pairings (dev queries on
a catalog of another domain); of the 108 hand-labelled unanswerable dev queries, 28.6 % of those
with no fitting tool and 12.5 % of those with one. The dense model's agreement signals
(``lex_dense_rank``, ``dense_lex_rank``, ``fused_margin``) are what changed: with the cosine
signals alone (the previous model) the same fit flags 25.4 % (28.9 % within 2 points), 17.1 % /
13.3 % on the first 50 labelled queries. BM25-only: 17.3 % at 0.58 / 1.17 (unchanged).

A refit for the three-way fusion (``--every 2 --loss 2.0``: 53.6 % of the honest dev pairings at
0.90 / 1.99 points lost) was not kept: on the same test searches it flagged fewer unanswerable
queries than this model (ToolLens / MetaTool test on the Docker MCP tools 55.5 / 53.4 % against
63.3 / 55.2 %) for about the same worst loss (3.08 against 3.18 R@5 points, MetaTool pooled / own)."""


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


def dense_signals(cand_scores: np.ndarray) -> tuple[float, float, float]:
    """``(top, z, margin)`` of the caller's cosines (a few linear passes: about 30 µs at 10k)."""
    n = len(cand_scores)
    i = int(cand_scores.argmax())
    top = float(cand_scores[i])
    mean = float(cand_scores.sum(dtype=np.float64)) / n
    var = max(0.0, float(np.dot(cand_scores, cand_scores)) / n - mean * mean)
    spread = math.sqrt(var)
    z = (top - mean) / spread if spread > 1e-6 else 0.0
    rest = [float(part.max()) for part in (cand_scores[:i], cand_scores[i + 1 :]) if len(part)]
    return top, z, top - (max(rest) if rest else 0.0)


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
