"""Embeds new and changed tools off the request path.

A daemon thread wakes when the registry or the usage memory changes (``notify()``), takes the
index's tools (and remembered queries) without a vector (:meth:`registry.search.SearchIndex.missing_vectors`), serves
them from the on-disk cache
or embeds them in batches, and publishes each batch to the index. Searches never wait for it: a
tool without a vector is ranked lexically until its batch lands.
"""

from __future__ import annotations

import logging
import threading
import time

from host.search.fill import FillStats, fill_memory_vectors, fill_vectors
from host.search.stacked_cache import StackedCache
from host.search.vector_cache import VectorCache
from registry.search import Embedder, SearchIndex, text_key

__all__ = ["VectorWorker"]

log = logging.getLogger("toolhost.search")


class VectorWorker:
    """Args: the index, the embedder, the cache (``None``: embed every time; per part for a
    stacked embedder, :func:`host.search.stacked_cache.open_cache`)."""

    def __init__(self, index: SearchIndex, embedder: Embedder, cache: VectorCache | StackedCache | None) -> None:
        self.index = index
        self.embedder = embedder
        self.cache = cache
        self.totals = FillStats()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._run, name="toolhost-embed", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self.notify()

    def notify(self) -> None:
        """Something changed: embed what is missing (callable from any thread)."""
        self._idle.clear()
        self._wake.set()

    def wait_idle(self, timeout: float) -> bool:
        """Block until every tool known at the last ``notify`` has a vector (tests, benches)."""
        return self._idle.wait(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current batch (the thread is a daemon: a stuck model cannot hang exit)."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _compact_if_bloated(self) -> None:
        """Keep the cache file bounded: when it holds more than twice the live tools (plus 1,000),
        rewrite it with only the current tools' vectors."""
        cache = self.cache
        if cache is None or len(cache) <= 2 * len(self.index) + 1000:
            return
        texts = [self.index.embedding_text(rec) for rec in self.index.records()]
        if isinstance(cache, StackedCache):
            kept = cache.compact(texts)
        else:
            kept = cache.compact(text_key(t, self.embedder.model_id) for t in texts)
        log.info("tool_search: vector cache compacted to %d vectors", kept)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                return
            try:
                t0 = time.perf_counter()
                st = fill_vectors(self.index, self.embedder, self.cache)
                mem = fill_memory_vectors(self.index, self.embedder, self.cache)
                st.cached += mem.cached
                st.embedded += mem.embedded
                st.embed_seconds += mem.embed_seconds
                self.totals.cached += st.cached
                self.totals.embedded += st.embedded
                self.totals.embed_seconds += st.embed_seconds
                self._compact_if_bloated()
                if st.cached or st.embedded:
                    log.info(
                        "tool_search: %d tool vectors from cache, %d embedded in %.1f s",
                        st.cached,
                        st.embedded,
                        time.perf_counter() - t0,
                    )
            except Exception:  # search stays lexical for these tools; try again on the next change
                log.exception("tool_search: embedding tools failed; those tools stay lexical-only")
            if not self._wake.is_set():
                self._idle.set()
