"""The search index's state: one immutable snapshot of every indexed tool, and its updates.

:class:`IndexState` holds the BM25 corpus (``registry.search.bm25``), the tool record of each
corpus slot and per-slot arrays (server code, risk level, "has a current vector"), plus the
lookups by server and by qualified name. :func:`replaced_state` builds the next state for a set
of per-server changes without touching the old one, so ``SearchIndex`` can publish it with one
assignment (readers see the old or the new index, never a half-built one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from registry.search.bm25 import BM25Params, Corpus
from registry.search.dense import Embedder, VectorBuffer
from registry.tool import ToolRecord

__all__ = ["IndexState", "empty_state", "replaced_state"]


@dataclass(frozen=True)
class IndexState:
    corpus: Corpus
    records: tuple[ToolRecord | None, ...]  # by slot
    server_code: np.ndarray  # int32 by slot, -1 for free slots
    risk_level: np.ndarray  # int8 by slot
    server_ids: dict[str, int]
    servers: dict[str, tuple[str, ...]]  # server -> qualified names
    by_name: dict[str, ToolRecord]
    generation: int
    has_vec: np.ndarray  # bool by slot: the slot's vector in ``vectors`` is current
    vectors: VectorBuffer | None


def empty_state(params: BM25Params, embedder: Embedder | None) -> IndexState:
    """The state of an index without tools (generation 0); a vector buffer only with an embedder."""
    return IndexState(
        corpus=Corpus(params),
        records=(),
        server_code=np.zeros(0, dtype=np.int32),
        risk_level=np.zeros(0, dtype=np.int8),
        server_ids={},
        servers={},
        by_name={},
        generation=0,
        has_vec=np.zeros(0, dtype=bool),
        vectors=None if embedder is None else VectorBuffer(embedder.dim),
    )


def replaced_state(
    st: IndexState,
    changes: Mapping[str, Sequence[ToolRecord]],
    document: Callable[[ToolRecord], list[str]],
) -> IndexState:
    """``st`` with each server in ``changes`` holding exactly the given records (empty: removed).

    ``document`` gives a record's indexed tokens. ``st`` is not changed.

    Raises:
        ValueError: a qualified name is already indexed under another server, or given twice.
    """
    old_names = [name for server in changes for name in st.servers.get(server, ())]
    old_set = set(old_names)
    new_names: set[str] = set()
    for server, records in changes.items():
        for rec in records:
            name = rec.qualified_name
            if (name in st.by_name and name not in old_set) or name in new_names:
                other = st.by_name[name].server if name in st.by_name else server
                raise ValueError(f"qualified name {name!r} is already indexed for server {other!r}")
            new_names.add(name)
    # A tool whose definition is unchanged (same name, same definition hash) keeps its
    # document: list_changed usually re-sends mostly the same tools.
    unchanged = {
        rec.qualified_name
        for records in changes.values()
        for rec in records
        if rec.qualified_name in old_set and st.by_name[rec.qualified_name].definition_hash == rec.definition_hash
    }
    remove = [name for name in old_names if name not in unchanged]
    add = [
        (rec.qualified_name, document(rec))
        for records in changes.values()
        for rec in records
        if rec.qualified_name not in unchanged
    ]
    corpus = st.corpus.update(remove=remove, add=add)
    cap = corpus.capacity
    recs = list(st.records) + [None] * (cap - len(st.records))
    server_code = _grown(st.server_code, cap, -1)
    risk_level = _grown(st.risk_level, cap, 0)
    has_vec = np.zeros(cap, dtype=bool)
    has_vec[: len(st.has_vec)] = st.has_vec[:cap]
    by_name = dict(st.by_name)
    server_ids = st.server_ids
    missing = [s for s in changes if s not in server_ids]
    if missing:
        server_ids = {**server_ids, **{s: len(server_ids) + i for i, s in enumerate(missing)}}
    for name in old_names:
        slot = st.corpus.slot_of[name]
        if corpus.keys[slot] is None:
            recs[slot] = None
            server_code[slot] = -1
        if name not in unchanged:
            has_vec[slot] = False
        by_name.pop(name, None)
    servers = dict(st.servers)
    for server, records in changes.items():
        code = server_ids[server]
        for rec in records:
            slot = corpus.slot_of[rec.qualified_name]
            if rec.qualified_name not in unchanged:
                has_vec[slot] = False
            recs[slot] = rec
            server_code[slot] = code
            risk_level[slot] = rec.risk.level
            by_name[rec.qualified_name] = rec
        if records:
            servers[server] = tuple(r.qualified_name for r in records)
        else:
            servers.pop(server, None)
    return IndexState(
        corpus, tuple(recs), server_code, risk_level, server_ids, servers, by_name, st.generation + 1,
        has_vec, st.vectors,
    )


def _grown(arr: np.ndarray, cap: int, fill: int) -> np.ndarray:
    out = np.full(cap, fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out
