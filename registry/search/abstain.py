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

__all__ = ["DEFAULT_ABSTAIN", "FEATURES", "Abstain", "Signals", "query_coverage"]


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
    """

    bm25_confidence: float = 0.0
    coverage: float = 0.0
    coverage5: float = 0.0
    n_tokens: int = 0
    dense_top: float | None = None
    dense_z: float | None = None
    dense_margin: float | None = None
    hit_cosine: float | None = None

    def vector(self) -> list[float]:
        """The model's features, in :data:`FEATURES` order (dense ones 0 when no dense part ran)."""
        return [
            self.bm25_confidence,
            self.coverage,
            self.coverage5,
            math.log1p(self.n_tokens),
            self.dense_top or 0.0,
            min(self.dense_z or 0.0, 10.0),
            self.dense_margin or 0.0,
            self.hit_cosine or 0.0,
        ]


FEATURES = (
    "bm25_confidence", "coverage", "coverage5", "log1p_tokens", "dense_top", "dense_z", "dense_margin", "hit_cosine",
)


@dataclass(frozen=True)
class Abstain:
    """When a free-text search says "no tool fits" (:attr:`SearchResult.weak`).

    ``P(no fit) = sigmoid(bias + Σ w·feature)`` over :meth:`Signals.vector`; weak when it is at
    least ``threshold``. ``dense`` is used when the dense part ran, ``lexical`` otherwise (its
    dense weights are ignored). Each model is ``(bias, w_1, ..., w_8)``.
    """

    dense: tuple[float, ...] = (0.0,) * (1 + len(FEATURES))
    lexical: tuple[float, ...] = (0.0,) * (1 + len(FEATURES))
    threshold: float = 0.5

    def __post_init__(self) -> None:
        for name in ("dense", "lexical"):
            if len(getattr(self, name)) != 1 + len(FEATURES):
                raise ValueError(f"Abstain.{name} needs {1 + len(FEATURES)} numbers (bias + one per feature)")
        if not 0.0 < self.threshold < 1.0:
            raise ValueError(f"Abstain.threshold must be within (0, 1), got {self.threshold}")

    def probability(self, s: Signals) -> float:
        """The model's probability (0..1) that no tool fits."""
        model = self.dense if s.dense_top is not None else self.lexical
        z = model[0] + sum(w * x for w, x in zip(model[1:], s.vector(), strict=True))
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def weak(self, s: Signals) -> bool:
        """Whether these signals of a search's best hits mean "no tool fits"."""
        return self.probability(s) >= self.threshold


DEFAULT_ABSTAIN = Abstain(
    dense=(3.4076, -10.2551, -5.1868, 1.4067, -0.5546, -4.9513, 0.469, -4.4918, -4.4357),
    lexical=(5.5956, -17.032, -4.6928, 0.2708, -1.2674, 0.0, 0.0, 0.0, 0.0),
)
"""Fitted by ``bench/search_abstain_tune.py --every 2 --loss 1.5`` on dev data only, then frozen.
Dev (hybrid): 23.9 % of unanswerable queries flagged while answerable R@5 loses 0.75 (ToolLens)
and 1.46 (MetaTool) points; the previous hand-set thresholds, grid-searched on the same signals,
flag 24.2 % at the same loss bound (27.9 % vs 28.6 % at a 2-point bound): the extra signals
(query coverage, cosine margin, the hit's own cosine) add little. Lexical: 17.3 % at 0.58 / 1.17."""


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
        out.append(sum(w for tok, w in zip(uniq, idf) if tok in vocab) / total)
    return out


def dense_signals(cand_scores: np.ndarray) -> tuple[float, float, float]:
    """``(top, z, margin)`` of the caller's cosines."""
    top = float(cand_scores.max())
    spread = float(cand_scores.std())
    z = (top - float(cand_scores.mean())) / spread if spread > 1e-9 else 0.0
    if len(cand_scores) > 1:
        second = float(np.partition(cand_scores, len(cand_scores) - 2)[len(cand_scores) - 2])
    else:
        second = 0.0
    return top, z, top - second
