"""Give an index's tools their vectors: from the cache when it has them, else by embedding
(batched), writing new ones back to the cache. Synchronous and CPU-bound: run it in a worker
thread (``host.search.worker``), never on the event loop.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from host.search.embedder import StackedEmbedder
from host.search.stacked_cache import StackedCache, stacked_vectors
from host.search.vector_cache import VectorCache
from registry.search import Embedder, SearchIndex, text_key

__all__ = ["FillStats", "fill_memory_vectors", "fill_vectors", "query_text_key"]

BATCH = 128
"""Tools embedded per batch; each batch is published to the index as soon as it is done."""


@dataclass
class FillStats:
    """What one :func:`fill_vectors` did: tools given a vector from the cache / by embedding,
    and seconds spent embedding."""

    cached: int = 0
    embedded: int = 0
    embed_seconds: float = 0.0


def fill_vectors(index: SearchIndex, embedder: Embedder, cache: VectorCache | StackedCache | None,
                 batch: int = BATCH) -> FillStats:
    """Vectors for every tool of ``index`` that lacks one. Tools that change meanwhile are
    skipped by the index (hash check) and picked up by the next run. A stacked embedder takes a
    :class:`host.search.stacked_cache.StackedCache` (or ``None``)."""
    stats = FillStats()
    missing = index.missing_vectors()
    if not missing:
        return stats
    if isinstance(embedder, StackedEmbedder):
        assert cache is None or isinstance(cache, StackedCache)
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            vecs, cached, spent = stacked_vectors(embedder, cache, [t for _n, _h, t in chunk])
            stats.embed_seconds += spent
            n = index.set_vectors((m[0], m[1], vecs[i]) for i, m in enumerate(chunk))
            stats.cached += min(cached, n)
            stats.embedded += n - min(cached, n)
        return stats
    assert not isinstance(cache, StackedCache)
    keys = [text_key(text, embedder.model_id) for _n, _h, text in missing]
    todo = list(zip(missing, keys, strict=True))
    if cache is not None:
        found = cache.get_many(keys)
        if found:
            stats.cached = index.set_vectors((n, h, found[k]) for (n, h, _t), k in todo if k in found)
            todo = [(m, k) for m, k in todo if k not in found]
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        t0 = time.perf_counter()
        vecs = embedder.embed([m[2] for m, _k in chunk])
        stats.embed_seconds += time.perf_counter() - t0
        if cache is not None:
            cache.put_many((k, vecs[i]) for i, (_m, k) in enumerate(chunk))
        stats.embedded += index.set_vectors((m[0], m[1], vecs[i]) for i, (m, _k) in enumerate(chunk))
    return stats


def query_text_key(text: str, model_id: str) -> bytes:
    """Cache key of a remembered query's vector (kept apart from tool texts: some models
    embed queries and documents differently)."""
    return text_key("query:" + text, model_id)


def embed_queries(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """``(len(texts), dim)`` float32: ``embedder.embed_query`` of each text."""
    if not texts:
        return np.zeros((0, embedder.dim), np.float32)
    return np.stack([np.asarray(embedder.embed_query(t), dtype=np.float32) for t in texts])


def fill_memory_vectors(
    index: SearchIndex, embedder: Embedder, cache: VectorCache | StackedCache | None, batch: int = BATCH
) -> FillStats:
    """Vectors for the remembered queries of ``index``'s usage memory that lack one (from the
    cache, else embedded as queries)."""
    stats = FillStats()
    texts = index.missing_memory_vectors()
    if not texts:
        return stats
    if isinstance(embedder, StackedEmbedder):
        assert cache is None or isinstance(cache, StackedCache)
        for start in range(0, len(texts), batch):
            chunk = texts[start : start + batch]
            vecs, cached, spent = stacked_vectors(embedder, cache, chunk, queries=True)
            stats.embed_seconds += spent
            n = index.set_memory_vectors((t, vecs[i]) for i, t in enumerate(chunk))
            stats.cached += min(cached, n)
            stats.embedded += n - min(cached, n)
        return stats
    assert not isinstance(cache, StackedCache)
    keys = [query_text_key(t, embedder.model_id) for t in texts]
    todo = list(zip(texts, keys, strict=True))
    if cache is not None:
        found = cache.get_many(keys)
        if found:
            stats.cached = index.set_memory_vectors((t, found[k]) for t, k in todo if k in found)
            todo = [(t, k) for t, k in todo if k not in found]
    for start in range(0, len(todo), batch):
        chunk = todo[start : start + batch]
        t0 = time.perf_counter()
        vecs = embed_queries(embedder, [t for t, _k in chunk])
        stats.embed_seconds += time.perf_counter() - t0
        if cache is not None:
            cache.put_many((k, vecs[i]) for i, (_t, k) in enumerate(chunk))
        stats.embedded += index.set_memory_vectors((t, vecs[i]) for i, (t, _k) in enumerate(chunk))
    return stats
