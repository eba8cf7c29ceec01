"""Inverted-index BM25 that reproduces rank-bm25's scores without scanning the corpus.

rank-bm25 (``rank_bm25.BM25Okapi`` / ``BM25Plus``, version 0.2.2) is the scoring model; its
``get_scores`` visits every document for every query token. Here each token has a posting list
(slots of the documents that contain it, with term frequencies) and a query touches only the
postings of its own tokens. The per-posting arithmetic is rank-bm25's, operation for operation,
so scores are identical (bit for bit for BM25Plus and for Okapi tokens above the IDF floor;
Okapi's floor ``epsilon * average_idf`` sums the IDFs in another order, equal to ~1e-15).

:class:`Corpus` is immutable: :meth:`Corpus.update` returns a new corpus that shares every
untouched posting list with the old one (copy-on-write), so a reader holding the old corpus is
never disturbed and an update costs O(postings of the changed documents' tokens), not O(corpus).
Freed slots are reused, so slot arrays stay as large as the peak document count.

Statistics restricted to a subset of documents (:class:`Stats` from :meth:`Corpus.stats`) give
the scores rank-bm25 would give on that subset alone: that is how hidden tools are kept out of
what a caller can observe (see ``registry.search.index``).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["BM25Params", "Corpus", "Stats"]

_EMPTY_IDS = np.zeros(0, dtype=np.int64)
_EMPTY_TFS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class BM25Params:
    """rank-bm25 model and parameters.

    Attributes:
        model: ``"okapi"`` (``BM25Okapi``) or ``"plus"`` (``BM25Plus``).
        k1: term-frequency saturation.
        b: length normalization (0: none, 1: full).
        epsilon: Okapi only, IDF floor as a fraction of the average IDF.
        delta: Plus only, the lower bound added per query token (``idf * delta``).
    """

    model: str = "plus"
    k1: float = 1.5
    b: float = 0.75
    epsilon: float = 0.25
    delta: float = 1.0

    def __post_init__(self) -> None:
        if self.model not in ("okapi", "plus"):
            raise ValueError(f"model must be 'okapi' or 'plus', got {self.model!r}")


@dataclass(frozen=True)
class Stats:
    """Corpus statistics a score depends on.

    Attributes:
        n_docs: number of documents counted.
        avgdl: average document length in tokens.
        mask: boolean array over slots of the documents counted, or ``None`` for all live ones.
        okapi_floor: ``epsilon * average_idf`` (Okapi), computed lazily by :meth:`Corpus.stats`.
    """

    n_docs: int
    avgdl: float
    mask: np.ndarray | None
    okapi_floor: float


class Corpus:
    """An immutable tokenized corpus with posting lists. Build with :meth:`build` or :meth:`update`."""

    __slots__ = (
        "_df_hist",
        "doc_len",
        "free",
        "keys",
        "n_docs",
        "params",
        "postings",
        "slot_of",
        "total_len",
        "vocab",
    )

    def __init__(self, params: BM25Params) -> None:
        self.params = params
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self.doc_len = np.zeros(0, dtype=np.int64)
        self.keys: list[str | None] = []
        self.vocab: list[tuple[str, ...] | None] = []
        self.slot_of: dict[str, int] = {}
        self.free: tuple[int, ...] = ()
        self.n_docs = 0
        self.total_len = 0
        self._df_hist: Counter[int] = Counter()

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def build(cls, params: BM25Params, docs: Iterable[tuple[str, Sequence[str]]]) -> Corpus:
        """A corpus of ``(key, tokens)`` documents (keys unique)."""
        return cls(params).update(remove=(), add=docs)

    def update(self, *, remove: Iterable[str], add: Iterable[tuple[str, Sequence[str]]]) -> Corpus:
        """A new corpus without the ``remove`` keys and with the ``add`` documents.

        A key both removed and added is replaced. Cost: O(sum of posting lengths of the touched
        tokens) plus a shallow copy of the vocabulary dict.

        Raises:
            KeyError: a removed key is not in the corpus.
            ValueError: an added key is already present (and not removed in the same update).
        """
        new = Corpus.__new__(Corpus)
        new.params = self.params
        keys = list(self.keys)
        slot_of = dict(self.slot_of)
        free = list(self.free)
        doc_len = self.doc_len.copy()
        df_hist = Counter(self._df_hist)
        n_docs, total_len = self.n_docs, self.total_len

        vocab = list(self.vocab)
        removed_by_token: dict[str, list[int]] = {}
        removed_slots: list[int] = []
        for key in remove:
            slot = slot_of.pop(key)
            removed_slots.append(slot)
            keys[slot] = None
            n_docs -= 1
            total_len -= int(doc_len[slot])
            doc_len[slot] = 0
            for tok in vocab[slot] or ():
                removed_by_token.setdefault(tok, []).append(slot)
            vocab[slot] = None
        free.extend(sorted(removed_slots, reverse=True))

        added_by_token: dict[str, list[tuple[int, int]]] = {}
        for key, tokens in add:
            if key in slot_of:
                raise ValueError(f"document key {key!r} is already in the corpus")
            if free:
                slot = free.pop()
            else:
                slot = len(keys)
                keys.append(None)
                vocab.append(None)
            keys[slot] = key
            slot_of[key] = slot
            if slot >= len(doc_len):
                doc_len = np.concatenate([doc_len, np.zeros(max(16, len(doc_len)), dtype=np.int64)])
            doc_len[slot] = len(tokens)
            n_docs += 1
            total_len += len(tokens)
            counts = Counter(tokens)
            vocab[slot] = tuple(counts)
            for tok, tf in counts.items():
                added_by_token.setdefault(tok, []).append((slot, tf))

        postings = dict(self.postings)
        gone = np.zeros(len(keys), dtype=bool)
        gone[removed_slots] = True
        for tok in removed_by_token.keys() | added_by_token.keys():
            ids, tfs = postings.get(tok, (_EMPTY_IDS, _EMPTY_TFS))
            old_df = len(ids)
            if tok in removed_by_token:
                keep = ~gone[ids]
                ids, tfs = ids[keep], tfs[keep]
            pairs = added_by_token.get(tok)
            if pairs:
                arr = np.array(pairs, dtype=np.int64)
                if len(ids):
                    ids = np.concatenate([ids, arr[:, 0]])
                    tfs = np.concatenate([tfs, arr[:, 1]])
                else:
                    ids, tfs = arr[:, 0].copy(), arr[:, 1].copy()
            if old_df:
                df_hist[old_df] -= 1
                if not df_hist[old_df]:
                    del df_hist[old_df]
            if len(ids):
                postings[tok] = (ids, tfs)
                df_hist[len(ids)] += 1
            else:
                postings.pop(tok, None)
        new.postings = postings
        new.doc_len = doc_len
        new.keys = keys
        new.vocab = vocab
        new.slot_of = slot_of
        new.free = tuple(free)
        new.n_docs = n_docs
        new.total_len = total_len
        new._df_hist = df_hist
        return new

    # -- statistics -----------------------------------------------------------------------
    @property
    def capacity(self) -> int:
        """Number of slots (live plus free)."""
        return len(self.keys)

    def stats(self, mask: np.ndarray | None = None) -> Stats:
        """Statistics over all live documents, or over the slots where ``mask`` is true.

        With a mask, Okapi's IDF floor needs the document frequency of every token within the
        subset: O(total postings). BM25Plus needs no floor and costs O(capacity).
        """
        p = self.params
        if mask is None:
            n, total = self.n_docs, self.total_len
            hist: Mapping[int, int] = self._df_hist
        else:
            n = int(mask.sum())
            total = int(self.doc_len[: len(mask)][mask].sum())
            hist = self._masked_df_hist(mask) if p.model == "okapi" else {}
        avgdl = total / n if n else 0.0
        floor = 0.0
        if p.model == "okapi" and n and hist:
            vocab = sum(hist.values())
            idf_sum = sum(c * (math.log(n - d + 0.5) - math.log(d + 0.5)) for d, c in hist.items())
            floor = p.epsilon * (idf_sum / vocab)
        return Stats(n_docs=n, avgdl=avgdl, mask=mask, okapi_floor=floor)

    def _masked_df_hist(self, mask: np.ndarray) -> Counter[int]:
        hist: Counter[int] = Counter()
        for ids, _ in self.postings.values():
            d = int(mask[ids].sum())
            if d:
                hist[d] += 1
        return hist

    def df(self, token: str, stats: Stats) -> int:
        """Number of documents (within ``stats.mask``) that contain ``token``."""
        entry = self.postings.get(token)
        if entry is None:
            return 0
        if stats.mask is None:
            return len(entry[0])
        return int(stats.mask[entry[0]].sum())

    def idf(self, df: int, stats: Stats) -> float:
        """rank-bm25's IDF of a token in ``df`` documents (0 when ``df`` is 0)."""
        n = stats.n_docs
        if not df:
            return 0.0
        if self.params.model == "plus":
            return math.log((n + 1) / df)
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        return stats.okapi_floor if idf < 0 else idf

    # -- scoring --------------------------------------------------------------------------
    def score(
        self, query: Sequence[str], stats: Stats, weights: Sequence[float] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, scores)`` of every document (within ``stats.mask``) sharing a query token.

        Duplicated query tokens count once per occurrence, as in rank-bm25. Without ``weights``
        scores equal ``get_scores`` of rank-bm25 built on the same documents (restricted to the
        mask). ``weights`` (one per query token, e.g. fractional weights of expansion terms from
        ``registry.search.expand``) multiply each token's contribution, so a query with all
        weights 1.0 scores as the unweighted query.

        Raises:
            ValueError: ``weights`` is not as long as ``query``.
        """
        if weights is not None and len(weights) != len(query):
            raise ValueError(f"weights has {len(weights)} entries for {len(query)} query tokens")
        p = self.params
        cap = self.capacity
        if not cap or not stats.n_docs:
            return _EMPTY_IDS, np.zeros(0)
        k1, b, avgdl = p.k1, p.b, stats.avgdl
        hits: list[tuple[np.ndarray, np.ndarray, float]] = []
        matched = np.zeros(cap, dtype=bool)
        for i, tok in enumerate(query):
            entry = self.postings.get(tok)
            if entry is None:
                continue
            ids, tfs = entry
            if stats.mask is not None:
                sel = stats.mask[ids]
                ids, tfs = ids[sel], tfs[sel]
                if not len(ids):
                    continue
            idf = self.idf(len(ids), stats)
            if weights is not None:
                idf *= weights[i]
            matched[ids] = True
            hits.append((ids, tfs, idf))
        cand = np.flatnonzero(matched)
        if not len(cand):
            return cand, np.zeros(0)
        pos = np.empty(cap, dtype=np.int64)
        pos[cand] = np.arange(len(cand))
        dl_c = self.doc_len[cand]
        scores = np.zeros(len(cand))
        plus = p.model == "plus"
        for ids, tfs, idf in hits:
            at = pos[ids]
            dl = dl_c[at]
            if plus:
                # A candidate without the token has tf = 0: rank-bm25 adds idf * (delta + 0.0).
                contrib = np.full(len(cand), idf * (p.delta + 0.0))
                contrib[at] = idf * (p.delta + (tfs * (k1 + 1)) / (k1 * (1 - b + b * dl / avgdl) + tfs))
                scores += contrib
            else:
                contrib = np.zeros(len(cand))
                contrib[at] = idf * (tfs * (k1 + 1) / (tfs + k1 * (1 - b + b * dl / avgdl)))
                scores += contrib
        return cand, scores
