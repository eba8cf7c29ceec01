"""Shared by bench/search_*.py: build a SearchIndex (BM25 only or hybrid) over eval records, with
tool vectors from a vector cache folder, and feed it a usage memory.

The vector cache defaults to ``$TMPDIR/toolhost-bench-vectors`` (keyed by tool text + model
version, so it is safe to share between runs; delete it to measure a cold embed).
"""

from __future__ import annotations

import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from host.search import StackedEmbedder, UseEmbedder, fill_memory_vectors, fill_vectors, open_cache
from registry.search import FusionParams, SearchIndex
from registry.tool import ToolRecord

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "toolhost-bench-vectors"
_EMBEDDERS: dict[str, UseEmbedder | StackedEmbedder] = {}


def embedder(models: str = "stacked") -> UseEmbedder | StackedEmbedder:
    """``"use"``: the multilingual model alone (the two-way hybrid); ``"stacked"``: USE + MiniLM
    (what ``host.search.load_embedder`` gives with MiniLM installed)."""
    if models not in _EMBEDDERS:
        from host.search.minilm import MiniLmEmbedder

        use = _EMBEDDERS.setdefault("use", UseEmbedder())
        if models == "stacked":
            _EMBEDDERS[models] = StackedEmbedder([use, MiniLmEmbedder()], english_only=[False, True])
    return _EMBEDDERS[models]


def build_index(
    records: Sequence[ToolRecord],
    *,
    dense: bool,
    cache_dir: Path | None = DEFAULT_CACHE,
    fusion: FusionParams | None = None,
    expansion: bool = True,
    query_cache: int = 256,
    random_vectors: bool = False,
    models: str = "stacked",
    reranker="default",
    emb=None,
) -> tuple[SearchIndex, dict]:
    """The index over ``records`` (one update for all servers) and timings: ``build_s`` (BM25),
    ``embed_s`` / ``embedded`` / ``cached`` (vectors; ``cache_dir=None`` embeds everything).
    ``random_vectors`` gives every tool a random unit vector instead (latency runs only: the
    query is still embedded by the real model). ``models``: see :func:`embedder`; ``emb``: that
    embedder instead; ``reranker``: as ``SearchIndex(reranker=...)``."""
    kw: dict = {"reranker": reranker}
    emb = emb or (embedder(models) if dense else None)
    if not expansion:
        kw["expansion"] = None
    if dense:
        kw["embedder"] = emb
        if fusion is not None:
            kw["fusion"] = fusion
    index = SearchIndex(**kw)
    index.query_cache_size = query_cache
    by_server: dict[str, list] = defaultdict(list)
    for r in records:
        by_server[r.server].append(r)
    info: dict = {}
    t0 = time.perf_counter()
    index.replace_servers(by_server)
    info["build_s"] = time.perf_counter() - t0
    if dense and random_vectors:
        import numpy as np

        rng = np.random.default_rng(7)
        missing = index.missing_vectors()
        vecs = rng.standard_normal((len(missing), emb.dim)).astype(np.float32)
        for a, b in _bounds(emb):
            vecs[:, a:b] /= np.linalg.norm(vecs[:, a:b], axis=1, keepdims=True)
        t0 = time.perf_counter()
        index.set_vectors((n, h, vecs[i]) for i, (n, h, _t) in enumerate(missing))
        info.update(vectors_s=time.perf_counter() - t0, embed_s=0.0, embedded=0, cached=0, random=len(missing))
    elif dense:
        emb.embed(["load the model"])  # model load is not embedding time
        cache = open_cache(cache_dir, emb) if cache_dir is not None else None
        t0 = time.perf_counter()
        st = fill_vectors(index, emb, cache)
        info.update(
            vectors_s=time.perf_counter() - t0, embed_s=st.embed_seconds, embedded=st.embedded, cached=st.cached
        )
    return index, info


def _bounds(emb) -> list[tuple[int, int]]:
    from registry.search.fusion import part_bounds

    return part_bounds(emb.part_dims) if isinstance(emb, StackedEmbedder) else [(0, emb.dim)]


def usage_memory(
    index: SearchIndex,
    queries: Sequence[tuple[str, str]],
    qrels: dict[str, set[str]],
    id_to_qname: dict[str, str],
    per_tool: int = 32,
) -> int:
    """Feed ``index`` a usage memory: each query remembered for each of its gold tools (as if a
    search had been followed by a successful call), the newest ``per_tool`` per tool."""
    mem: dict[str, list[str]] = defaultdict(list)
    for qid, text in queries:
        for tid in qrels.get(qid, ()):
            name = id_to_qname.get(tid)
            if name is not None:
                mem[name].append(text)
    snap = {rec.qualified_name: rec for rec in (index._state.by_name.values())}
    memory = {n: (snap[n].definition_hash, qs[-per_tool:]) for n, qs in mem.items() if n in snap}
    index.set_memory(memory)
    if index.embedder is not None:
        emb = index.embedder
        fill_memory_vectors(index, emb, open_cache(DEFAULT_CACHE, emb))
    return sum(len(v[1]) for v in memory.values())
