"""The English dense model (all-MiniLM-L6-v2 int8 on onnxruntime): tokenizer ids, vectors against
reference numbers computed once with this model file, and the stacked embedder's parts."""

from __future__ import annotations

import numpy as np
import pytest

from host.search.embedder import StackedEmbedder
from host.search.minilm import MINILM_MODEL_ID, MiniLmEmbedder
from registry.search import SearchIndex
from registry.search.fusion import PartedEmbedder

from ._fake_embedder import FakeEmbedder


@pytest.fixture(scope="module")
def minilm() -> MiniLmEmbedder:
    return MiniLmEmbedder()


def test_wordpiece_ids_of_fixed_strings(minilm):
    # BERT uncased vocabulary: [CLS] 101, [SEP] 102, [UNK] 100; "hello" 7592, "world" 2088.
    assert minilm.token_ids("hello world") == [101, 7592, 2088, 102]
    assert minilm.token_ids("cancel my order") == [101, 17542, 2026, 2344, 102]
    assert minilm.token_ids("Get the weather forecast for Paris") == [101, 2131, 1996, 4633, 19939, 2005, 3000, 102]
    # Accents stripped with lowercasing, punctuation split, an identifier into word pieces.
    assert minilm.token_ids("naïve café e-mail, CamelCaseName 2026!") == [
        101, 15743, 7668, 1041, 1011, 5653, 1010, 19130, 18382, 18442, 16798, 2575, 999, 102]
    assert minilm.token_ids("取消订单") == [101, 100, 100, 100, 100, 102]
    assert len(minilm.token_ids("word " * 400)) == 256  # truncated to the model's 256 tokens


def test_vectors_match_the_reference_numbers(minilm):
    assert minilm.model_id == f"{MINILM_MODEL_ID}@1.0.0" and minilm.dim == 384
    v = minilm.embed(["cancel my order", "cancel order. Cancel a customer order by its id"])
    assert v.shape == (2, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    ref_head = [-0.042785, 0.054666, 0.099284, 0.032217, -0.046853, -0.042472, 0.062188, -0.062354]
    assert np.allclose(v[0, :8], ref_head, atol=2e-4)
    assert np.allclose(v[0, -4:], [0.039791, -0.066882, -0.05444, -0.081521], atol=2e-4)
    assert float(v[0] @ v[1]) == pytest.approx(0.76044, abs=1e-3)


def test_a_batch_gives_each_text_the_vector_it_gets_alone(minilm):
    texts = ["send an email", "a much longer text about the weather forecast in several cities of France", "x"]
    together = minilm.embed(texts)
    alone = np.stack([minilm.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_the_stacked_embedder_zeroes_the_english_only_part_for_other_languages():
    a, b = FakeEmbedder(), FakeEmbedder()
    stacked = StackedEmbedder([a, b], english_only=[False, True])
    assert isinstance(stacked, PartedEmbedder)
    assert stacked.part_dims == (a.dim, b.dim) and stacked.dim == 2 * a.dim
    assert stacked.model_id == "fake-concepts@1+fake-concepts@1"
    en = stacked.embed_query("cancel my order")
    assert np.allclose(en[: a.dim], a.embed(["cancel my order"])[0]) and np.allclose(en[a.dim :], en[: a.dim])
    zh = stacked.embed_query("取消订单")
    assert np.linalg.norm(zh[: a.dim]) == pytest.approx(1.0) and not zh[a.dim :].any()
    es = stacked.embed_query("cancelar una orden")
    assert not es[a.dim :].any()
    rows = stacked.embed(["email", "weather"])
    assert rows.shape == (2, 2 * a.dim) and np.allclose(rows[:, : a.dim], rows[:, a.dim :])
    with pytest.raises(ValueError, match="two or more parts"):
        StackedEmbedder([a], english_only=[False])


def test_an_index_with_a_stacked_embedder_embeds_the_server_name_in_front():
    from ._tools import catalog

    index = SearchIndex(embedder=StackedEmbedder([FakeEmbedder(), FakeEmbedder()], english_only=[False, True]))
    index.replace_servers(catalog())
    texts = {n: t for n, _h, t in index.missing_vectors()}
    assert texts["orders__cancel_order"].startswith("orders: cancel order. ")
    plain = SearchIndex(embedder=FakeEmbedder())
    plain.replace_servers(catalog())
    assert {n: t for n, _h, t in plain.missing_vectors()}["orders__cancel_order"].startswith("cancel order. ")


def test_stacked_vectors_are_cached_per_model_and_served_from_the_cache(tmp_path):
    from host.search import fill_memory_vectors, fill_vectors, open_cache

    from ._tools import catalog

    class Other(FakeEmbedder):
        model_id = "fake-other@2"

    emb = StackedEmbedder([FakeEmbedder(), Other()], english_only=[False, True])
    first = SearchIndex(embedder=emb)
    first.replace_servers(catalog())
    st = fill_vectors(first, emb, open_cache(tmp_path, emb), batch=4)
    assert (st.embedded, st.cached) == (9, 0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vectors-fake-concepts_1.bin", "vectors-fake-other_2.bin"]
    second = SearchIndex(embedder=emb)
    second.replace_servers(catalog())
    calls = [p.calls for p in emb.parts]
    st = fill_vectors(second, emb, open_cache(tmp_path, emb))
    assert (st.embedded, st.cached) == (0, 9) and [p.calls for p in emb.parts] == calls
    name = "orders__cancel_order"
    a, b = (ix._state.vectors.matrix[ix._state.corpus.slot_of[name]] for ix in (first, second))
    assert np.array_equal(a, b)
    # Remembered queries: each English-only part zero for a non-English query.
    rec = second._state.by_name[name]
    second.set_memory({name: (rec.definition_hash, ["取消订单", "cancel it"])})
    assert fill_memory_vectors(second, emb, open_cache(tmp_path, emb)).embedded == 2
    vecs = second._mem._vectors
    assert not vecs["取消订单"][emb.part_dims[0]:].any() and vecs["cancel it"][emb.part_dims[0]:].any()
