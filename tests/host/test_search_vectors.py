"""Vector cache, filling an index's vectors, the background worker and the bundled model."""

from __future__ import annotations

import logging

import numpy as np

from host.search import UseEmbedder, VectorCache, VectorWorker, fill_vectors, load_embedder
from registry.search import SearchIndex, text_key
from tests.search._fake_embedder import FakeEmbedder
from tests.search._tools import catalog


def _vec(*xs: float) -> np.ndarray:
    return np.asarray(xs, dtype=np.float32)


def test_cache_round_trip_survives_a_torn_record_and_compacts(tmp_path):
    cache = VectorCache(tmp_path, "m@1", 2)
    k1, k2 = text_key("a", "m@1"), text_key("b", "m@1")
    assert cache.put_many([(k1, _vec(1, 0)), (k2, _vec(0, 1))]) == 2
    assert cache.put_many([(k1, _vec(5, 5))]) == 0  # already cached: not rewritten
    with open(cache.path, "ab") as fh:
        fh.write(b"\x00" * 7)  # a crash mid-append
    again = VectorCache(tmp_path, "m@1", 2)
    assert len(again) == 2
    got = again.get_many([k1, k2, b"x" * 32])
    assert {k: v.tolist() for k, v in got.items()} == {k1: [1.0, 0.0], k2: [0.0, 1.0]}
    k3 = text_key("c", "m@1")
    again.put_many([(k3, _vec(1, 1))])  # drops the torn tail first
    assert VectorCache(tmp_path, "m@1", 2).get_many([k3])[k3].tolist() == [1.0, 1.0]
    assert again.compact([k3]) == 1
    assert len(VectorCache(tmp_path, "m@1", 2)) == 1
    assert (cache.path.stat().st_mode & 0o777) == 0o600


def test_fill_embeds_once_then_serves_from_the_cache(tmp_path):
    emb = FakeEmbedder()
    first = SearchIndex(embedder=emb)
    first.replace_servers(catalog())
    st = fill_vectors(first, emb, VectorCache(tmp_path, emb.model_id, emb.dim), batch=4)
    assert (st.embedded, st.cached, emb.calls) == (9, 0, 3)
    second = SearchIndex(embedder=emb)  # a restart
    second.replace_servers(catalog())
    st = fill_vectors(second, emb, VectorCache(tmp_path, emb.model_id, emb.dim))
    assert (st.embedded, st.cached, emb.calls) == (0, 9, 3)
    assert second.search("取消订单", limit=1).hits[0].tool.qualified_name == "orders__cancel_order"


def test_worker_embeds_new_tools_off_the_request_path(tmp_path):
    emb = FakeEmbedder()
    index = SearchIndex(embedder=emb)
    worker = VectorWorker(index, emb, VectorCache(tmp_path, emb.model_id, emb.dim))
    worker.start()
    try:
        assert worker.wait_idle(10)
        index.replace_servers(catalog())
        worker.notify()
        assert worker.wait_idle(10)
        assert index.vector_count() == 9 and worker.totals.embedded == 9
    finally:
        worker.stop()
    assert not worker._thread.is_alive()


def test_dense_off_or_missing_model_falls_back_to_bm25_with_one_log_line(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="toolhost.search")
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "0")
    assert load_embedder() is None
    assert caplog.messages == ["tool_search: dense retrieval off (TOOLHOST_DENSE_SEARCH=0); BM25 only"]


def test_the_bundled_multilingual_model_puts_chinese_near_english():
    emb = UseEmbedder()
    assert emb.model_id.startswith("use-multilingual-v3@")
    v = emb.embed(["取消我的订单", "Cancel an order that has not shipped yet.", "Weather forecast for a city."])
    assert v.shape == (3, 512) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.2
