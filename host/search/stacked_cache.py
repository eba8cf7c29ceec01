"""Vectors of a stacked embedder (``host.search.embedder.StackedEmbedder``) cached per model: each
part in its own ``<data>/search/vectors-<model>.bin`` (:class:`host.search.vector_cache.VectorCache`,
keyed by that model's id and the text), so adding or dropping a model re-embeds only that model's
part and the multilingual model's file stays valid with or without MiniLM installed.

:func:`stacked_vectors` assembles a text's whole vector from the parts' caches and embeds only the
parts that miss (tool texts with ``embed``, remembered queries with each part's query vector).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from host.search.embedder import StackedEmbedder
from host.search.vector_cache import VectorCache
from registry.search import Embedder, text_key

__all__ = ["StackedCache", "open_cache", "stacked_vectors"]


class StackedCache:
    """One :class:`VectorCache` per part of a stacked embedder (same order)."""

    def __init__(self, folder: Path, embedder: StackedEmbedder) -> None:
        self.embedder = embedder
        self.parts = [VectorCache(folder, part.model_id, part.dim) for part in embedder.parts]

    def __len__(self) -> int:
        return max(len(c) for c in self.parts)

    def compact(self, texts: Sequence[str]) -> int:
        """Keep only ``texts``' vectors in every part's file; returns the most kept in one."""
        return max(c.compact(text_key(t, p.model_id) for t in texts)
                   for c, p in zip(self.parts, self.embedder.parts, strict=True))


def open_cache(folder: Path, embedder: Embedder) -> VectorCache | StackedCache:
    """The vector cache of ``embedder`` in ``folder``: per part for a stacked embedder."""
    if isinstance(embedder, StackedEmbedder):
        return StackedCache(folder, embedder)
    return VectorCache(folder, embedder.model_id, embedder.dim)


def stacked_vectors(
    embedder: StackedEmbedder, cache: StackedCache | None, texts: Sequence[str], *, queries: bool = False
) -> tuple[np.ndarray, int, float]:
    """``(vectors, texts served wholly from the cache, seconds spent embedding)`` of ``texts``
    (``queries``: as search queries, each English-only part zero for a non-English text)."""
    from registry.search.dense import english_query

    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    whole = np.ones(len(texts), dtype=bool)
    spent = 0.0
    start = 0
    english = [english_query(t) for t in texts] if queries else [True] * len(texts)
    for k, (part, only_en) in enumerate(zip(embedder.parts, embedder.english_only, strict=True)):
        end = start + part.dim
        prefix = "query:" if queries else ""
        keys = [text_key(prefix + t, part.model_id) for t in texts]
        found = cache.parts[k].get_many(keys) if cache is not None else {}
        todo = [i for i, key in enumerate(keys) if key not in found and (english[i] or not only_en)]
        for i, key in enumerate(keys):
            if key in found:
                out[i, start:end] = found[key]
        if todo:
            whole[todo] = False
            t0 = time.perf_counter()
            if queries:
                vecs = np.stack([np.asarray(part.embed_query(texts[i]), dtype=np.float32) for i in todo])
            else:
                vecs = part.embed([texts[i] for i in todo])
            spent += time.perf_counter() - t0
            out[todo, start:end] = vecs
            if cache is not None:
                cache.parts[k].put_many((keys[i], vecs[j]) for j, i in enumerate(todo))
        start = end
    return out, int(whole.sum()), spent
