"""SearchIndex: tool search over the registry, updated per server, filtered by permissions.

Query forms (one ``search`` call handles all of them):

* free text → BM25 (rank-bm25's ``BM25Plus``, k1=1.2, b=0.75; see ``registry.search.bm25``) over
  each tool's weighted document (``registry.search.document``), the query expanded with related
  words at a fractional weight (``registry.search.expand``: "film" also finds "movie" tools);
  ``SearchIndex(expansion=None)`` gives plain rank-bm25 scores;
* ``select:name1,name2`` → exact lookup by qualified name (also case-insensitively, or by the
  original tool name when that is unambiguous), in the order given;
* ``regex:PATTERN`` → a Python regular expression matched (case-insensitive, with a time budget)
  against name, description and parameter names/descriptions, like Anthropic's
  ``tool_search_tool_regex`` (pattern at most 200 characters; names rank above other fields);
* empty or stop-word-only text → no hits and a help message listing the caller's servers.

Hybrid: with an ``embedder`` (``registry.search.dense``), a free-text query is also embedded and
scored by cosine against each tool's vector; the two rankings are fused (min-max interpolation,
frozen on dev data); with several models, BM25's best hit of an English query keeps a place in
the fused top three (the lexical anchor, :class:`registry.search.fusion.LexicalAnchor`).
Vectors are fed by the owner (:meth:`SearchIndex.set_vectors`, e.g.
``host.search``'s background worker); until a tool has one it is ranked by BM25 alone. Usage
memory (:meth:`SearchIndex.set_memory`, :mod:`registry.search.memory`): in hybrid search a
remembered query close to the search query lifts its tool's dense score; in BM25-only search the
BM25 score of a tool's remembered queries adds to its own.
A result whose best hit scores poorly on both is marked ``weak`` ("no tool fits",
:class:`Abstain`), and among near-equal hits the least risky ranks first. An optional learned
reranker (:mod:`registry.search.rerank`, opt-in) reorders the fused top 50; the signals and the
weak flag read the fused order.

Permissions: the caller's ``visible`` predicate is applied *before* ranking, and BM25's corpus
statistics (document count, average length, document frequencies) are computed over the visible
tools only. So a hidden tool never appears, and the scores a caller sees are exactly those
rank-bm25 gives on the corpus of the tools that caller may see: they reveal nothing about
hidden tools (search shows only what the caller may call). The cost is one predicate call per tool per search
(``PatternPolicy``: about 2.6 µs per tool, so 26 ms at 10k tools and 256 ms at 100k); pass
``visible_key`` (anything hashable that identifies the caller's permissions, e.g.
``(principal, policy_revision)``) to cache the visibility mask per index generation, which brings
a search back to 0.16 ms at 10k and 0.57 ms at 100k tools. BM25Plus was chosen over BM25Okapi partly for this: Okapi's
IDF floor depends
on the document frequency of *every* token in the visible corpus, Plus needs only the query's.

Split by job: this module keeps the index's entry points (updates, vectors, memory) and the
free-text search; ``registry.search.index_state`` holds the immutable state and builds its
updates, ``registry.search.visibility`` computes the caller's mask (cached) and the help message,
``registry.search.dense_query`` caches query vectors and computes cosines,
``registry.search.hybrid`` runs the dense half (cosines, memory lift, fusion, anchor),
``registry.search.exact`` runs ``select:`` / ``regex:``, ``registry.search.ranking`` filters and
orders hits, ``registry.search.result`` defines what comes back, ``registry.search.memory`` scores
the usage memory and ``registry.search.dense`` fuses BM25 with the dense ranking.

Concurrency: every update builds a new immutable state next to the old one and publishes it
with one assignment; a search reads the state once. Readers (any thread) therefore see the old
or the new index, never a half-built one. Writers are serialized by a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np

from registry.search.abstain import DEFAULT_ABSTAIN, Abstain, Signals
from registry.search.abstain_signals import measure
from registry.search.bm25 import BM25Params
from registry.search.dense import DEFAULT_FUSION, Embedder, FusionParams, embedding_text
from registry.search.dense_query import QUERY_VECTOR_CACHE, DenseCandidates, QueryVectors
from registry.search.document import FieldWeights, document_tokens
from registry.search.exact import MAX_REGEX_CHARS, regex_tools, select_tools
from registry.search.expand import DEFAULT_EXPANSION, QueryExpansion
from registry.search.fusion import DEFAULT_ANCHOR, DEFAULT_PARTED_FUSION, LexicalAnchor, PartedEmbedder, PartedFusion
from registry.search.hybrid import DenseOutcome, HybridSettings, hybrid_scores
from registry.search.index_state import IndexState, empty_state, replaced_state
from registry.search.memory import MemoryIndex
from registry.search.ranking import ToolFilter, add_scores, bm25_confidence, top_hits
from registry.search.rerank import (
    RERANK_DEPTH,
    FieldTokens,
    Reranker,
    default_reranker,
    rerank_enabled,
    rerank_hits,
)
from registry.search.result import WEAK_MESSAGE, SearchHit, SearchResult
from registry.search.tokenize import tokenize
from registry.search.visibility import MaskCache, help_message
from registry.store import ToolRegistry
from registry.tool import Risk, ToolRecord

__all__ = ["DEFAULT_ABSTAIN", "DEFAULT_PARAMS", "MAX_REGEX_CHARS", "Abstain", "SearchHit", "SearchIndex",
           "SearchResult"]

DEFAULT_PARAMS = BM25Params(model="plus", k1=1.2, b=0.75, delta=1.0)
"""Chosen on dev data (``bench/search_tune.py``); k1 and b barely matter there (±0.3 R@5)."""

DEFAULT_MEMORY_DENSE = 1.0
"""Factor on the remembered-query cosine. Dev grid (``bench/search_memory_tune.py``, ToolLens
train, R@5 cross-template / shared-template): hybrid without memory 34.12 / 35.64; lexical memory
at 0.3 (the old default) 34.18 / 49.19; dense memory at 1.0 without lexical memory 36.02 / 61.33;
both (0.3, 0.8) 33.85 / 63.55."""


class SearchIndex:
    """The searchable view of every registered tool (see the module docstring).

    Args:
        params: BM25 model and parameters.
        weights: field repetition weights of the tool documents.
        tokenizer: text → tokens, used for documents and queries alike.
        expansion: query expansion with related terms (``registry.search.expand``), or ``None``
            for plain BM25 (scores then equal rank-bm25's). Its related terms must be in
            ``tokenizer``'s form (the default's are in the default tokenizer's).
        embedder: dense retriever for hybrid search (``None``: BM25 only). Tool vectors are not
            computed here: the owner feeds them with :meth:`set_vectors` (see
            :meth:`missing_vectors`); a tool without one is ranked lexically.
        fusion: how BM25 and dense rankings combine (``registry.search.dense``).
        parted_fusion: the same for an embedder of several models
            (:class:`registry.search.fusion.PartedEmbedder`: BM25 and each model's cosines,
            ``registry.search.fusion``); signals and "no tool fits" read the first model's.
        embed_server: the server name in front of each embedded tool text
            (:func:`registry.search.dense.embedding_text`); ``None``: with an embedder of
            several models only (dev grid, ``bench/search_fusion3_tune.py``).
        abstain: the "no tool fits" thresholds.
        memory_weight: weight of the usage-memory score (BM25 over each tool's remembered
            queries, :meth:`set_memory`) added to the tool's BM25 score when the dense part does
            not run; 0 ignores memory there.
        hybrid_memory_weight: the same weight when the dense part runs (default 0: there the
            memory works through ``memory_dense``; dev grid, ``bench/search_memory_tune.py``).
        memory_dense: factor on a tool's best cosine to its remembered queries (which then
            replaces the tool's own cosine when higher); 0 ignores remembered-query vectors.
        reranker: reorders a hybrid search's best :data:`~registry.search.rerank.RERANK_DEPTH`
            fused candidates (:mod:`registry.search.rerank`); ``"default"``: the shipped tree
            ensemble for an embedder of several models when ``TOOLHOST_SEARCH_RERANK=1`` (off by
            default: it did not raise every dev set), none otherwise; ``None``: fused order.
            It applies when its ``n_parts`` equals the embedder's number of models.
        anchor: keeps BM25's best hits near the top of the results of an embedder of several
            models when every model reads the query (:class:`registry.search.fusion.LexicalAnchor`;
            the one-model fusion is not anchored; ``None``: fused order only).
    """

    def __init__(
        self,
        *,
        params: BM25Params = DEFAULT_PARAMS,
        weights: FieldWeights = FieldWeights(),
        tokenizer: Callable[[str], list[str]] = tokenize,
        expansion: QueryExpansion | None = DEFAULT_EXPANSION,
        embedder: Embedder | None = None,
        fusion: FusionParams = DEFAULT_FUSION,
        parted_fusion: PartedFusion = DEFAULT_PARTED_FUSION,
        embed_server: bool | None = None,
        abstain: Abstain = DEFAULT_ABSTAIN,
        memory_weight: float = 0.3,
        hybrid_memory_weight: float = 0.0,
        memory_dense: float = DEFAULT_MEMORY_DENSE,
        reranker: Reranker | None | Literal["default"] = "default",
        anchor: LexicalAnchor | None = DEFAULT_ANCHOR,
    ) -> None:
        self.params = params
        self.embedder = embedder
        self.fusion = fusion
        self.parted_fusion = parted_fusion
        self.anchor = anchor
        self.embed_server = isinstance(embedder, PartedEmbedder) if embed_server is None else embed_server
        self.abstain = abstain
        self.memory_weight = memory_weight
        self.memory_dense = memory_dense
        self.hybrid_memory_weight = hybrid_memory_weight
        self._mem = MemoryIndex(params, tokenizer)
        self._qvecs = QueryVectors(QUERY_VECTOR_CACHE)
        self.expansion = expansion
        self.weights = weights
        self.tokenizer = tokenizer
        self._write_lock = threading.Lock()
        self._masks = MaskCache()
        self._dense = DenseCandidates()
        self._state: IndexState = empty_state(params, embedder)
        if reranker == "default":
            reranker = default_reranker() if isinstance(embedder, PartedEmbedder) and rerank_enabled() else None
        self.reranker: Reranker | None = reranker
        self._fields = FieldTokens(tokenizer)

    @property
    def query_cache_size(self) -> int:
        """Query vectors kept (LRU): agents repeat searches. Settable; applies from the next insert."""
        return self._qvecs.size

    @query_cache_size.setter
    def query_cache_size(self, size: int) -> None:
        self._qvecs.size = size

    # -- updates --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._state.by_name)

    @property
    def generation(self) -> int:
        """Increases by one with every update."""
        return self._state.generation

    def records(self) -> list[ToolRecord]:
        """Every indexed tool (any order)."""
        return list(self._state.by_name.values())

    def servers(self) -> list[str]:
        """Servers with indexed tools, sorted."""
        return sorted(self._state.servers)

    def document(self, record: ToolRecord) -> list[str]:
        """The tokens indexed for ``record``."""
        return document_tokens(record, self.weights, self.tokenizer)

    # -- usage memory (registry.search.memory) --------------------------------------------
    def set_memory(self, memory: Mapping[str, tuple[str, Sequence[str]]]) -> None:
        """Replace the usage memory: ``{qualified name: (definition hash, remembered queries)}``
        (at most 32 queries per tool, the first given; see :mod:`registry.search.memory`)."""
        self._mem.set(memory)

    def remember(self, name: str, definition_hash: str, queries: Sequence[str]) -> None:
        """Replace one tool's remembered queries (an empty ``queries`` forgets the tool).

        Same meaning as that tool's entry in :meth:`set_memory`, but costs O(that tool's
        queries) instead of rebuilding the whole memory: the usage learner calls it after each
        learned call (``servers.gateway.search_usage``) and reloads everything only now and then.
        """
        self._mem.remember(name, definition_hash, queries)

    def memory(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """The current usage memory (as given to :meth:`set_memory`)."""
        return self._mem.entries()

    def missing_memory_vectors(self) -> list[str]:
        """Remembered query texts without a vector (empty without an embedder)."""
        return self._mem.missing_vectors() if self.embedder is not None else []

    def set_memory_vectors(self, items: Iterable[tuple[str, np.ndarray]]) -> int:
        """Vectors of remembered queries: ``(query text, unit vector)`` embedded as a query by
        this index's embedder. Returns how many were set (texts not remembered are ignored)."""
        return self._mem.set_vectors(items)

    # -- vectors --------------------------------------------------------------------------
    def missing_vectors(self) -> list[tuple[str, str, str]]:
        """``[(qualified name, definition hash, text to embed)]`` of tools without a vector."""
        if self.embedder is None:
            return []
        st = self._state
        out = []
        for slot, rec in enumerate(st.records):
            if rec is not None and not st.has_vec[slot]:
                out.append((rec.qualified_name, rec.definition_hash, self.embedding_text(rec)))
        return out

    def embedding_text(self, record: ToolRecord) -> str:
        """The text this index embeds for ``record`` (:func:`registry.search.dense.embedding_text`)."""
        return embedding_text(record, server=self.embed_server)

    def set_vectors(self, items: Iterable[tuple[str, str, np.ndarray]]) -> int:
        """Give tools their vectors: ``(qualified name, definition hash, unit vector)``.

        An item for a tool that is gone or whose definition changed since (hash mismatch) is
        ignored. Returns how many tools got a vector. Readers are never blocked.

        Raises:
            RuntimeError: the index has no embedder.
        """
        if self.embedder is None:
            raise RuntimeError("set_vectors needs an index built with an embedder")
        with self._write_lock:
            st = self._state
            rows, vecs = [], []
            for name, def_hash, vec in items:
                rec = st.by_name.get(name)
                if rec is None or rec.definition_hash != def_hash:
                    continue
                rows.append(st.corpus.slot_of[name])
                vecs.append(vec)
            if not rows:
                return 0
            row_arr = np.asarray(rows, dtype=np.int64)
            assert st.vectors is not None
            buf = st.vectors.writable_for(row_arr, len(st.records), st.has_vec)
            buf.write(row_arr, np.asarray(vecs, dtype=np.float32))
            has_vec = st.has_vec.copy()
            has_vec[row_arr] = True
            self._state = replace(st, has_vec=has_vec, vectors=buf)
            return len(rows)

    def vector_count(self) -> int:
        """Tools that have a vector."""
        return int(self._state.has_vec.sum())

    def replace_server(self, server: str, records: Sequence[ToolRecord]) -> None:
        """Index ``records`` as all of ``server``'s tools (an empty sequence removes the server).

        Costs O(postings of the old and new tools' tokens) plus O(tools) of array copies, not a
        rebuild.

        Raises:
            ValueError: a record belongs to another server, or its qualified name is indexed
                under another server. The index is left unchanged.
        """
        self.replace_servers({server: records})

    def replace_servers(self, changes: Mapping[str, Sequence[ToolRecord]]) -> None:
        """Apply several servers' :meth:`replace_server` in one update (use it for bulk loads:
        one update per server would copy the index once per server).

        Raises:
            ValueError: as :meth:`replace_server`; nothing is applied.
        """
        for server, records in changes.items():
            for rec in records:
                if rec.server != server:
                    raise ValueError(
                        f"record {rec.qualified_name!r} belongs to server {rec.server!r}, not {server!r}"
                    )
        with self._write_lock:
            self._state = replaced_state(self._state, changes, self.document)

    def remove_server(self, server: str) -> None:
        """Drop every tool of ``server`` (no-op when it has none)."""
        self.replace_servers({server: ()})

    def attach(self, registry: ToolRegistry) -> Callable[[], None]:
        """Index ``registry``'s current tools and follow its changes; returns an unsubscribe function."""
        unsubscribe = registry.subscribe(lambda server, _old, new: self.replace_server(server, new))
        snap = registry.snapshot()
        changes: dict[str, Sequence[ToolRecord]] = {s: () for s in self._state.servers if s not in snap.by_server}
        changes.update(snap.by_server)
        self.replace_servers(changes)
        return unsubscribe

    # -- search ---------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        visible: Callable[[ToolRecord], bool] | None = None,
        visible_key: Hashable | None = None,
        limit: int = 5,
        servers: Collection[str] | None = None,
        max_risk: Risk | None = None,
    ) -> SearchResult:
        """Tools for ``query``, best first (see the module docstring for the query forms).

        Args:
            query: free text, ``select:a,b`` or ``regex:PATTERN``.
            visible: the caller's permission predicate (``None``: every tool is visible).
            visible_key: hashable identity of ``visible`` for caching its mask (``None``: no cache).
            limit: most hits returned (≥ 1).
            servers: only tools of these servers (``None``: all).
            max_risk: only tools at or below this risk (``None``: any).

        Returns:
            A :class:`SearchResult`; never raises for any query text.

        Raises:
            ValueError: ``limit`` is below 1.
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        st = self._state
        text = (query or "").strip()
        keep = ToolFilter(servers, max_risk)
        low = text.lower()
        if low.startswith("select:"):
            return select_tools(st.by_name, text[len("select:") :], visible, keep, limit)
        if low.startswith("regex:"):
            return regex_tools(st.by_name, text[len("regex:") :].strip(), visible, keep, limit)
        tokens = self.tokenizer(text)
        query_tokens = tokens
        if not tokens:
            return SearchResult([], "empty", help_message(st, visible, empty=True))
        mask = self._masks.mask(st, visible, visible_key)
        stats = st.corpus.stats(mask)
        weights = None
        if self.expansion is not None:
            # Only related tokens some *visible* tool has, so hidden tools change nothing.
            tokens, weights = self.expansion.expand(tokens, lambda t: st.corpus.df(t, stats) > 0)
        slots, scores = st.corpus.score(tokens, stats, weights)
        dense_on = self.embedder is not None and st.vectors is not None and bool(st.has_vec.any())
        mem_weight = self.hybrid_memory_weight if dense_on else self.memory_weight
        if self._mem and mem_weight > 0:
            # Usage memory: the BM25 score of the tool's remembered queries adds to its own.
            mem_slots, mem_scores = self._mem.lexical_scores(
                st.generation, st.by_name, st.corpus.slot_of, self.tokenizer(text), mask
            )
            if len(mem_slots):
                slots, scores = add_scores(slots, scores, mem_slots, mem_scores * mem_weight)
        filtered = servers is not None or max_risk is not None
        if len(slots) and filtered:
            sel = keep.array_mask(st, slots)
            slots, scores = slots[sel], scores[sel]
        bm_conf = bm25_confidence(self.params, scores, weights, len(tokens), stats.n_docs)
        bm_slots, bm_scores = slots, scores
        dense: DenseOutcome | None = None
        mode = "bm25"
        if dense_on:
            dense_slots = self._dense.slots(st.has_vec, len(st.records), mask)
            if len(dense_slots) and filtered:
                dense_slots = dense_slots[keep.array_mask(st, dense_slots)]
            if len(dense_slots):
                assert self.embedder is not None
                qv = self._qvecs.get(text, self.embedder)
                dense = hybrid_scores(self._hybrid_settings(), st, qv, dense_slots, slots, scores, query_tokens,
                                      bm_conf)
                slots, scores = dense.slots, dense.scores
                mode = "hybrid"
        rerank = dense.rerank if dense is not None else None
        # The reranker reorders the fused top RERANK_DEPTH; signals below read the fused order.
        hits = top_hits(st.records, slots, scores, max(limit, RERANK_DEPTH) if rerank is not None else limit)
        if not hits:
            return SearchResult([], mode, help_message(st, visible, empty=False), signals=Signals(bm_conf))
        # Signals from the best five whatever ``limit`` is, so "weak" does not depend on it.
        best5 = hits if limit >= 5 else top_hits(st.records, slots, scores, 5)
        hit_slots = [st.corpus.slot_of[h.tool.qualified_name] for h in best5[:5]]
        signals = measure(
            corpus=st.corpus, stats=stats, tokenizer=self.tokenizer, query_tokens=query_tokens, bm_conf=bm_conf,
            bm_slots=bm_slots, bm_scores=bm_scores, dense=dense.view if dense is not None else None,
            hit_slots=hit_slots, hit_tools=[h.tool for h in best5[:5]], hit_scores=[h.score for h in best5[:5]],
        )
        weak = self.abstain.weak(signals)
        if rerank is not None:
            assert self.reranker is not None
            cand_slots = np.array([st.corpus.slot_of[h.tool.qualified_name] for h in hits], dtype=np.int64)
            hits = rerank_hits(self.reranker, self._fields, hits, cand_slots, rerank, limit)
        return SearchResult(hits, mode, WEAK_MESSAGE if weak else None, weak=weak, signals=signals)

    def _hybrid_settings(self) -> HybridSettings:
        """The fusion settings of this search (read from the attributes, which callers may set)."""
        return HybridSettings(
            self.embedder.part_dims if isinstance(self.embedder, PartedEmbedder) else None,
            self.fusion, self.parted_fusion, self.anchor, self._mem, self.memory_dense,
            self.reranker.n_parts if self.reranker is not None else None,
        )
