"""Hybrid (BM25 + dense) search, fusion, "no tool fits", risk order and usage memory."""

from __future__ import annotations

import numpy as np
import pytest

from registry.search import FusionParams, SearchIndex, embedding_text, format_result, fuse
from registry.search.dense import VectorBuffer
from registry.tool import Risk

from ._fake_embedder import FakeEmbedder
from ._tools import catalog, tool


def _vectors(index: SearchIndex) -> None:
    emb = index.embedder
    missing = index.missing_vectors()
    vecs = emb.embed([t for _n, _h, t in missing])
    index.set_vectors((n, h, vecs[i]) for i, (n, h, _t) in enumerate(missing))


def _memory_vectors(index: SearchIndex) -> int:
    texts = index.missing_memory_vectors()
    return index.set_memory_vectors(zip(texts, index.embedder.embed(texts), strict=True))


def _index(**kw) -> SearchIndex:
    index = SearchIndex(embedder=FakeEmbedder(), **kw)
    index.replace_servers(catalog())
    return index


def test_tools_without_vectors_are_searched_lexically_then_hybrid_once_embedded():
    index = _index()
    assert len(index.missing_vectors()) == 9 and index.vector_count() == 0
    assert index.search("取消订单").mode == "bm25"  # nothing embedded yet: lexical only
    _vectors(index)
    assert index.missing_vectors() == [] and index.vector_count() == 9
    res = index.search("取消订单", limit=2)
    assert res.mode == "hybrid"
    assert res.hits[0].tool.qualified_name == "orders__cancel_order"


def test_a_changed_tool_loses_its_vector_and_a_stale_vector_is_ignored():
    index = _index()
    _vectors(index)
    old = index._state.by_name["orders__get_order"]
    changed = tool("orders", "get_order", "Look up one order by id, with its items.", {"order_id": {"type": "string"}})
    index.replace_server("orders", [*(r for r in catalog()["orders"] if r.original_name != "get_order"), changed])
    assert [m[0] for m in index.missing_vectors()] == ["orders__get_order"]
    # A vector computed for the old definition does not land on the new one.
    assert index.set_vectors([("orders__get_order", old.definition_hash, np.ones(15, dtype=np.float32))]) == 0
    assert index.set_vectors([("orders__gone", "x", np.ones(15, dtype=np.float32))]) == 0
    _vectors(index)
    assert index.vector_count() == 9


def test_set_vectors_needs_an_embedder():
    with pytest.raises(RuntimeError, match="set_vectors needs an index built with an embedder"):
        SearchIndex().set_vectors([])


def test_hidden_tools_never_change_what_a_caller_sees():
    """Vectors and memory of a hidden tool change nothing: results equal an index without it."""
    full = _index()
    _vectors(full)
    full.set_memory({"orders__refund_payment": (full._state.by_name["orders__refund_payment"].definition_hash,
                                                ["money back for my order", "取消订单 退款"])})
    assert _memory_vectors(full) == 2
    visible_only = SearchIndex(embedder=FakeEmbedder())
    cat = catalog()
    cat["orders"] = [r for r in cat["orders"] if r.original_name != "refund_payment"]
    visible_only.replace_servers(cat)
    _vectors(visible_only)

    def see(rec) -> bool:
        return rec.qualified_name != "orders__refund_payment"

    for q in ("取消订单", "money back for my order", "weather forecast", "commit changes"):
        a = full.search(q, visible=see, limit=5)
        b = visible_only.search(q, limit=5)
        assert [(h.tool.qualified_name, round(h.score, 9)) for h in a.hits] == [
            (h.tool.qualified_name, round(h.score, 9)) for h in b.hits
        ]
        assert (a.weak, a.dense_top, a.bm25_confidence) == (b.weak, b.dense_top, b.bm25_confidence)


def test_minmax_fusion_values():
    has = np.ones(4, dtype=bool)
    dense_all = np.array([0.9, 0.1, 0.5, 0.3])
    slots, scores = fuse(np.array([1, 2]), np.array([4.0, 2.0]), np.array([0, 1, 2, 3]), dense_all, has,
                         FusionParams(method="minmax", bm25_weight=0.5))
    # bm25: slot1 1.0, slot2 0.0; dense min-max over [0.1, 0.9]: slot0 1.0, slot1 0.0, slot2 0.5, slot3 0.25
    assert slots.tolist() == [0, 1, 2, 3]
    assert np.allclose(scores, [0.5, 0.5, 0.25, 0.125])


def test_rrf_fusion_values_and_unembedded_tools_rank_by_bm25_alone():
    has = np.array([True, False, True])
    dense_all = np.array([0.9, 0.0, 0.1])
    slots, scores = fuse(np.array([1, 2]), np.array([4.0, 2.0]), np.array([0, 2]), dense_all, has,
                         FusionParams(method="rrf", bm25_weight=0.5, rrf_k=60))
    assert slots.tolist() == [0, 1, 2]
    assert np.allclose(scores, [0.5 / 61, 1 / 61, 0.5 / 62 + 0.5 / 62])


def test_fusion_params_are_checked():
    with pytest.raises(ValueError, match="fusion method must be 'minmax' or 'rrf', got 'max'"):
        FusionParams(method="max")
    with pytest.raises(ValueError, match="bm25_weight must be within 0..1, got 1.5"):
        FusionParams(bm25_weight=1.5)


def test_no_tool_fits_marks_weak_hits_and_says_so():
    index = _index()
    _vectors(index)
    good = index.search("cancel order")
    assert not good.weak and good.message is None
    bad = index.search("quantum chromodynamics lattice")
    assert bad.weak and bad.hits  # the best few anyway, marked weak
    text = format_result(bad)
    assert text.startswith("No tool fits this request well")
    assert f"Weak matches ({len(bad.hits)}), callable but probably not right:" in text


def test_the_least_risky_of_near_equal_hits_ranks_first():
    index = SearchIndex()
    index.replace_servers({
        "a": [tool("a", "delete_note", "Manage a note by id.", {"id": {"type": "string"}})],
        "b": [tool("b", "view_note", "Manage a note by id.", {"id": {"type": "string"}}, read_only=True)],
    })
    hits = index.search("manage note", limit=2).hits
    assert abs(hits[0].score - hits[1].score) < 0.02 * hits[0].score
    assert [(h.tool.qualified_name, h.tool.risk) for h in hits] == [
        ("b__view_note", Risk.READ), ("a__delete_note", Risk.DESTRUCTIVE)]


def test_usage_memory_finds_a_tool_by_a_remembered_query_and_drops_it_on_change():
    index = SearchIndex()
    index.replace_servers(catalog())
    assert (
        index.search("jot down my progress", limit=1).hits == []
        or index.search("jot down my progress", limit=1).hits[0].tool.qualified_name != "git__git_commit"
    )
    h = index._state.by_name["git__git_commit"].definition_hash
    index.set_memory({"git__git_commit": (h, ["jot down my progress"])})
    assert index.search("jot down my progress", limit=1).hits[0].tool.qualified_name == "git__git_commit"
    # A changed definition ignores the old memory.
    index.set_memory({"git__git_commit": ("another-hash", ["jot down my progress"])})
    assert index.search("jot down my progress", limit=1).hits == []


def test_a_remembered_query_lifts_its_tool_through_the_dense_half():
    """ "correo" (Spanish: mail) shares no word with any tool or remembered query; only the
    vector of the remembered "email me the receipt" ties it to refund_payment."""
    index = _index()
    _vectors(index)
    h = index._state.by_name["orders__refund_payment"].definition_hash
    index.set_memory({"orders__refund_payment": (h, ["email me the receipt"])})
    assert index.missing_memory_vectors() == ["email me the receipt"]
    index.memory_dense = 0.0
    assert "orders__refund_payment" not in [x.tool.qualified_name for x in index.search("correo", limit=3).hits]
    index.memory_dense = 1.0
    assert _memory_vectors(index) == 1
    assert index.missing_memory_vectors() == []
    res = index.search("correo", limit=3)
    assert res.hits[0].tool.qualified_name == "orders__refund_payment"
    assert res.dense_top == pytest.approx(
        float(index.embedder.embed(["correo"])[0] @ index.embedder.embed(["email me the receipt"])[0])
    )
    index.memory_dense = 0.0
    assert "orders__refund_payment" not in [x.tool.qualified_name for x in index.search("correo", limit=3).hits]
    # A changed definition drops the memory's vectors with it; a forgotten tool its queries.
    index.remember("orders__refund_payment", h, [])
    assert index.memory() == {} and index.missing_memory_vectors() == []


def test_embedding_text_is_name_title_description_and_params():
    rec = catalog()["weather"][0]
    assert embedding_text(rec) == "get Forecast. Weather forecast for a city, days ahead. (city, days)"


def test_vector_buffer_copies_rows_a_published_state_may_still_read():
    buf = VectorBuffer(2, 4)
    live = np.zeros(4, dtype=bool)
    same = buf.writable_for(np.array([0]), 4, live)
    assert same is buf
    buf.write(np.array([0]), np.array([[1.0, 0.0]]))
    live[0] = True
    # Row 0 was published: rewriting it (a freed slot reused) copies the buffer first.
    live_after = np.zeros(4, dtype=bool)
    new = buf.writable_for(np.array([0]), 4, live_after)
    assert new is not buf
    new.write(np.array([0]), np.array([[0.0, 1.0]]))
    assert buf.matrix[0].tolist() == [1.0, 0.0] and new.matrix[0].tolist() == [0.0, 1.0]
    grown = new.writable_for(np.array([9]), 10, live_after)
    assert len(grown.matrix) >= 10 and grown.matrix[0].tolist() == [0.0, 1.0]


def test_memory_dense_scores_are_each_tools_best_cosine_to_its_remembered_queries():
    index = _index()
    st = index._state
    h = {n: st.by_name[n].definition_hash for n in ("orders__get_order", "git__git_log", "weather__air_quality")}
    index.set_memory(
        {
            "git__git_log": (h["git__git_log"], ["show history", "订单 list", "weather log"]),
            "orders__get_order": (h["orders__get_order"], ["where is my pedido"]),
            "weather__air_quality": ("stale-hash", ["smog"]),
        }
    )
    emb = index.embedder
    assert _memory_vectors(index) == 5
    q = emb.embed(["order status"])[0]
    slots, best = index._mem.dense_scores(st.generation, st.by_name, st.corpus.slot_of, q)
    got = {st.records[s].qualified_name: round(float(b), 6) for s, b in zip(slots, best, strict=True)}
    cos = {t: float(emb.embed([t])[0] @ q) for t in ("show history", "订单 list", "weather log", "where is my pedido")}
    assert got == {
        "git__git_log": round(max(cos["show history"], cos["订单 list"], cos["weather log"]), 6),
        "orders__get_order": round(cos["where is my pedido"], 6),
    }


def test_a_caller_who_sees_few_tools_gets_the_same_results_from_their_rows_alone(monkeypatch):
    """Dense scoring reads only the candidate rows when they are few (``dense_query.FEW_CANDIDATES``):
    hits, scores and signals are exactly those of the full matrix-vector product, and a hidden
    tool (with a remembered query) still changes nothing."""
    from registry.search import dense_query

    cat = catalog()
    cat["filler"] = [tool("filler", f"tool_{i}", f"Filler tool number {i} for notes and files.") for i in range(90)]
    full = SearchIndex(embedder=FakeEmbedder())
    full.replace_servers(cat)
    _vectors(full)
    full.set_memory(
        {
            "orders__refund_payment": (
                full._state.by_name["orders__refund_payment"].definition_hash,
                ["money back for my order", "取消订单 退款"],
            )
        }
    )
    assert _memory_vectors(full) == 2
    only = SearchIndex(embedder=FakeEmbedder())
    only.replace_servers(
        {"orders": [r for r in cat["orders"] if r.original_name != "refund_payment"], "weather": cat["weather"]}
    )
    _vectors(only)

    def see(rec) -> bool:
        return rec.server in ("orders", "weather") and rec.original_name != "refund_payment"

    def run(share: int) -> list:
        monkeypatch.setattr(dense_query, "FEW_CANDIDATES", share)
        out = []
        for q in ("取消订单", "money back for my order", "weather forecast", "notes"):
            for kw in ({}, {"servers": ["orders"]}, {"max_risk": Risk.READ}):
                r = full.search(q, visible=see, visible_key="few", limit=5, **kw)
                out.append(([(h.tool.qualified_name, h.score) for h in r.hits], r.mode, r.weak, r.signals))
        return out

    few, whole = run(8), run(10**9)  # 5 of 99 tools visible: rows alone / the whole product
    assert few == whole
    assert {mode for _hits, mode, _w, _s in few} == {"hybrid"}
    for q in ("取消订单", "money back for my order", "weather forecast"):
        a, b = full.search(q, visible=see, visible_key="few", limit=5), only.search(q, limit=5)
        assert [(h.tool.qualified_name, round(h.score, 9)) for h in a.hits] == [
            (h.tool.qualified_name, round(h.score, 9)) for h in b.hits
        ]
