"""Usage memory of a :class:`registry.search.SearchIndex`: the queries that led to successful
calls of each tool, scored two ways at search time. Pure: no I/O (the host loads and stores the
memory, ``host.store.usage``, and embeds remembered queries, ``host.search``).

* Lexical: a tool's remembered queries form one BM25 document in a corpus of their own (so words
  every remembered query shares, like "I'm looking for", weigh little); its score, times the
  index's ``memory_weight``, adds to the tool's BM25 score.
* Dense: each remembered query may get a vector (:meth:`MemoryIndex.set_vectors`, same model as
  the tools); a tool's memory similarity is the best cosine between the search query and its
  remembered queries, and its dense score becomes ``max(tool cosine, memory_dense × memory
  similarity)`` before fusion. A remembered query phrased unlike the tool's description (a task,
  in another language) then reaches the tool through the dense half too.

A tool's memory counts only while its definition hash matches; statistics and similarities are
computed over the caller's visible tools only, so a hidden tool's memory changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from registry.search.bm25 import BM25Params, Corpus
from registry.tool import ToolRecord

__all__ = ["MAX_MEMORY_QUERIES", "MemoryIndex"]

MAX_MEMORY_QUERIES = 32
"""Remembered queries used per tool (the first given: the most weighted)."""

_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0))


class MemoryIndex:
    """The remembered queries per tool, their BM25 corpus and their vectors. Writers are
    serialized; readers see one consistent snapshot (each update publishes new objects)."""

    def __init__(self, params: BM25Params, tokenizer: Callable[[str], list[str]]) -> None:
        self.params = params
        self.tokenizer = tokenizer
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._corpus = Corpus(params)
        self._vectors: dict[str, np.ndarray] = {}  # remembered query text -> unit vector
        self._revision = 0
        self._map: tuple[int, int, np.ndarray] | None = None  # (generation, revision, memory slot -> slot)
        self._dense: tuple[int, int, np.ndarray, np.ndarray, np.ndarray] | None = (
            None  # (generation, revision, rows, tool slots, row starts)
        )

    def __bool__(self) -> bool:
        return bool(self._entries)

    def entries(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """``{qualified name: (definition hash, remembered queries)}``."""
        return dict(self._entries)

    def set(self, memory: Mapping[str, tuple[str, Sequence[str]]]) -> None:
        """Replace the whole memory (at most 32 queries per tool are kept). Vectors of queries
        no longer remembered are dropped."""
        new = {name: (h, tuple(qs)[:MAX_MEMORY_QUERIES]) for name, (h, qs) in memory.items() if qs}
        corpus = Corpus.build(self.params, [(n, self.tokenizer(" \n".join(qs))) for n, (_h, qs) in new.items()])
        texts = {q for _h, qs in new.values() for q in qs}
        with self._lock:
            self._entries = new
            self._corpus = corpus
            self._vectors = {t: v for t, v in self._vectors.items() if t in texts}
            self._revision += 1

    def remember(self, name: str, definition_hash: str, queries: Sequence[str]) -> None:
        """Replace one tool's remembered queries (empty: forget the tool); O(its queries)."""
        qs = tuple(queries)[:MAX_MEMORY_QUERIES]
        with self._lock:
            remove = [name] if name in self._corpus.slot_of else []
            add = [(name, self.tokenizer(" \n".join(qs)))] if qs else []
            corpus = self._corpus.update(remove=remove, add=add)
            entries = dict(self._entries)
            if qs:
                entries[name] = (definition_hash, qs)
            else:
                entries.pop(name, None)
            self._entries = entries
            self._corpus = corpus
            self._revision += 1

    # -- vectors --------------------------------------------------------------------------
    def missing_vectors(self) -> list[str]:
        """Remembered query texts without a vector (each once)."""
        vecs = self._vectors
        return sorted({q for _h, qs in self._entries.values() for q in qs if q not in vecs})

    def set_vectors(self, items: Iterable[tuple[str, np.ndarray]]) -> int:
        """Give remembered queries their vectors ``(query text, unit vector)``; texts no longer
        remembered are ignored. Returns how many were set."""
        with self._lock:
            texts = {q for _h, qs in self._entries.values() for q in qs}
            new = dict(self._vectors)
            n = 0
            for text, vec in items:
                if text in texts:
                    new[text] = np.asarray(vec, dtype=np.float32)
                    n += 1
            if n:
                self._vectors = new
                self._revision += 1
            return n

    def vector_count(self) -> int:
        return len(self._vectors)

    # -- scoring --------------------------------------------------------------------------
    def _slot_map(
        self, generation: int, by_name: Mapping[str, ToolRecord], slot_of: Mapping[str, int]
    ) -> tuple[Corpus, np.ndarray]:
        """The memory corpus and, per memory slot, the index slot of its tool (-1: the tool is
        gone or its definition changed)."""
        corpus, entries, rev = self._corpus, self._entries, self._revision
        cached = self._map
        if cached is not None and cached[0] == generation and cached[1] == rev:
            return corpus, cached[2]
        to_slot = np.full(corpus.capacity, -1, dtype=np.int64)
        for mslot, name in enumerate(corpus.keys):
            rec = by_name.get(name) if name is not None else None
            mem = entries.get(name) if name is not None else None
            if rec is not None and mem is not None and mem[0] == rec.definition_hash:
                to_slot[mslot] = slot_of[name]
        self._map = (generation, rev, to_slot)
        return corpus, to_slot

    def lexical_scores(
        self,
        generation: int,
        by_name: Mapping[str, ToolRecord],
        slot_of: Mapping[str, int],
        tokens: list[str],
        mask: np.ndarray | None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(index slots, memory BM25 scores)`` of visible tools whose memory matches ``tokens``."""
        corpus, to_slot = self._slot_map(generation, by_name, slot_of)
        if not corpus.n_docs:
            return _EMPTY
        mmask = to_slot >= 0
        if mask is not None:
            mmask &= mask[np.clip(to_slot, 0, None)]
        stats = corpus.stats(mmask if not mmask.all() else None)
        mslots, mscores = corpus.score(tokens, stats)
        if not len(mslots):
            return _EMPTY
        return to_slot[mslots], mscores

    def dense_scores(
        self, generation: int, by_name: Mapping[str, ToolRecord], slot_of: Mapping[str, int], query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(index slots, best cosine of the query to each tool's remembered queries)`` over
        tools whose memory is current and has vectors (any visibility: the caller masks)."""
        cached = self._dense
        if cached is None or cached[0] != generation or cached[1] != self._revision:
            rev, entries, vecs = self._revision, self._entries, self._vectors
            rows, slots = [], []
            for name, (h, qs) in entries.items():
                rec = by_name.get(name)
                if rec is None or rec.definition_hash != h:
                    continue
                for q in qs:
                    v = vecs.get(q)
                    if v is not None:
                        rows.append(v)
                        slots.append(slot_of[name])
            # Rows grouped by tool slot, so the per-tool maximum is one ``maximum.reduceat``.
            order = np.argsort(np.asarray(slots, dtype=np.int64), kind="stable")
            matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), len(query))[order]
            sorted_slots = np.asarray(slots, dtype=np.int64)[order]
            uniq, starts = np.unique(sorted_slots, return_index=True)
            cached = (generation, rev, matrix, uniq, starts)
            self._dense = cached
        matrix, uniq, starts = cached[2], cached[3], cached[4]
        if not len(uniq):
            return _EMPTY
        return uniq, np.maximum.reduceat(matrix @ query, starts).astype(np.float64)
