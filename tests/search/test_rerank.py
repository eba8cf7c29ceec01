"""The learned reranker: the numpy tree walk, its file format, the features, and the index's
reranking stage (order, scores, permissions, signals) with hand-made trees and the shipped one."""

from __future__ import annotations

import numpy as np
import pytest

from host.search import StackedEmbedder, UseEmbedder, fill_vectors
from host.search.minilm import MiniLmEmbedder
from registry.search import SearchIndex
from registry.search.rerank import (
    RERANK_FEATURES,
    FieldTokens,
    TreeReranker,
    default_reranker,
    load_tree_reranker,
    rerank_features,
)
from registry.search.tokenize import tokenize

from ._tools import catalog, tool

F = {name: i for i, name in enumerate(RERANK_FEATURES)}


def _stump(feature: str, threshold: float, below: float, above: float) -> tuple[list, ...]:
    return [F[feature], -1, -1], [threshold, 0.0, 0.0], [1, 1, 2], [2, 1, 2], [0.0, below, above]


def trees(*stumps: tuple[list, ...]) -> TreeReranker:
    """Depth-1 trees side by side (node ids offset per tree)."""
    feature, threshold, left, right, value, roots = [], [], [], [], [], []
    for f, t, lft, rgt, v in stumps:
        base = len(feature)
        roots.append(base)
        feature += f
        threshold += t
        left += [base + i for i in lft]
        right += [base + i for i in rgt]
        value += v
    return TreeReranker(np.array(feature, np.int32), np.array(threshold), np.array(left, np.int32),
                        np.array(right, np.int32), np.array(value), np.array(roots, np.int32), depth=1)


def test_the_walk_sums_each_trees_leaf():
    model = trees(_stump("fused", 0.5, -1.0, 2.0), _stump("server_overlap", 0.0, 0.0, 10.0))
    x = np.zeros((3, len(RERANK_FEATURES)))
    x[:, F["fused"]] = [0.2, 0.5, 0.9]  # 0.5 goes left (x <= threshold)
    x[2, F["server_overlap"]] = 0.5
    assert model.score([], x).tolist() == [-1.0, -1.0, 12.0]
    assert model.score([], np.zeros((0, len(RERANK_FEATURES)))).tolist() == []


def test_a_deeper_tree_is_walked_to_its_leaves():
    # root: fused <= 0.5 ? (name_overlap <= 0.25 ? 1 : 2) : 3
    model = TreeReranker(
        feature=np.array([F["fused"], F["name_overlap"], -1, -1, -1], np.int32),
        threshold=np.array([0.5, 0.25, 0, 0, 0]), left=np.array([1, 2, 2, 3, 4], np.int32),
        right=np.array([4, 3, 2, 3, 4], np.int32), value=np.array([0, 0, 1.0, 2.0, 3.0]),
        roots=np.array([0], np.int32), depth=2,
    )
    x = np.zeros((3, len(RERANK_FEATURES)))
    x[:, F["fused"]] = [0.1, 0.1, 0.7]
    x[:, F["name_overlap"]] = [0.0, 1.0, 1.0]
    assert model.score([], x).tolist() == [1.0, 2.0, 3.0]


def test_the_file_round_trips_and_other_features_are_refused(tmp_path):
    model = trees(_stump("bm25_rel", 0.3, 0.5, 1.5))
    model.save(tmp_path / "r.npz")
    back = load_tree_reranker(tmp_path / "r.npz")
    x = np.zeros((2, len(RERANK_FEATURES)))
    x[1, F["bm25_rel"]] = 1.0
    assert back.score([], x).tolist() == [0.5, 1.5] and back.n_parts == 2 and back.depth == 1
    with pytest.raises(ValueError, match="retrain with bench/search_rerank.py"):
        TreeReranker(model.feature, model.threshold, model.left, model.right, model.value, model.roots, 1,
                     feature_names=("fused",))


def test_the_shipped_reranker_loads_and_matches_the_features():
    model = default_reranker()
    assert model.feature_names == RERANK_FEATURES and model.n_parts == 2
    assert 10 <= len(model.roots) <= 1000 and model.depth <= 16
    assert set(model.feature[model.feature >= 0].tolist()) <= set(range(len(RERANK_FEATURES)))


def test_features_have_the_documented_values():
    recs = [tool("weather", "get_forecast", "Weather forecast for a city.", {"city": {"type": "string"}}),
            tool("orders", "cancel_order", "Cancel an order.", {"order_id": {"type": "string"}})]
    q = tokenize("weather forecast city")
    x = rerank_features(q, recs, FieldTokens(tokenize), np.array([0.9, 0.3]), np.array([6.0, 0.0]),
                        np.array([[0.8, 0.6], [0.2, 0.1]]), [True, False], np.array([0.0, 0.7]),
                        np.array([0.0, 1.0]), 0.4)
    row = dict(zip(RERANK_FEATURES, x[0], strict=True))
    other = dict(zip(RERANK_FEATURES, x[1], strict=True))
    assert (row["fused"], other["fused_gap"], other["log1p_fused_rank"]) == (0.9, pytest.approx(0.6), np.log1p(1))
    assert (row["bm25_rel"], other["bm25_rel"], other["log1p_bm25_rank"]) == (1.0, 0.0, np.log1p(2))
    assert row["cos_multi"] == 0.8 and other["cos_multi_gap"] == pytest.approx(0.6)
    assert (row["cos_english"], row["english_active"]) == (0.0, 0.0)
    assert row["log1p_cos_english_rank"] == pytest.approx(np.log1p(2))
    assert row["name_overlap"] == pytest.approx(1 / 3)  # "forecast" of weather, forecast, city
    assert row["server_overlap"] == pytest.approx(1 / 3) and row["param_overlap"] == pytest.approx(1 / 3)
    assert row["description_overlap"] == pytest.approx(1.0) and other["description_overlap"] == 0.0
    assert (other["memory_cosine"], other["has_memory"], row["bm25_confidence"]) == (0.7, 1.0, 0.4)


@pytest.fixture(scope="module")
def stacked() -> StackedEmbedder:
    return StackedEmbedder([UseEmbedder(), MiniLmEmbedder()], english_only=[False, True])


def _index(emb: StackedEmbedder, **kw) -> SearchIndex:
    index = SearchIndex(embedder=emb, **kw)
    index.replace_servers(catalog())
    fill_vectors(index, emb, None)
    return index


def test_the_index_reorders_by_the_reranker_and_keeps_the_fused_signals(stacked):
    fused = _index(stacked, reranker=None)
    # Trees that put the weakest fused candidates first: the reranker, not the fusion, decides.
    weak_first = _index(stacked, reranker=trees(_stump("fused", 0.5, 5.0, 0.0)))
    query = "cancel my order"
    before = fused.search(query, limit=9)
    after = weak_first.search(query, limit=9)
    low = {h.tool.qualified_name for h in before.hits if h.score <= 0.5}
    assert before.hits[0].tool.qualified_name == "orders__cancel_order" and 0 < len(low) < 9
    assert {h.tool.qualified_name for h in after.hits[: len(low)]} == low
    assert after.hits[-1].tool.qualified_name == "orders__cancel_order" or before.hits[0].score <= 0.5
    assert {h.tool.qualified_name for h in after.hits} == {h.tool.qualified_name for h in before.hits}
    assert after.hits[0].score == pytest.approx(1 / (1 + np.exp(-5.0))) and after.hits[-1].score == 0.5
    assert after.signals == before.signals and after.weak == before.weak
    hidden = weak_first.search(query, limit=9, visible=lambda r: r.server != "orders")
    assert hidden.hits and all(h.tool.server != "orders" for h in hidden.hits)


def test_the_shipped_reranker_is_opt_in_and_only_for_both_dense_models(stacked, monkeypatch):
    monkeypatch.delenv("TOOLHOST_SEARCH_RERANK", raising=False)
    assert _index(stacked).reranker is None
    monkeypatch.setenv("TOOLHOST_SEARCH_RERANK", "1")
    assert _index(stacked).reranker is default_reranker()
    assert SearchIndex().reranker is None  # the lexical path is never reranked
    assert SearchIndex(embedder=UseEmbedder()).reranker is None


def test_the_shipped_reranker_keeps_every_fixture_query_as_well_ranked_as_bm25(stacked):
    from .test_fusion_parts import FIXTURE

    hybrid = _index(stacked, reranker=default_reranker())
    lexical = SearchIndex()
    lexical.replace_servers(catalog())

    def rank(index: SearchIndex, query: str, gold: str) -> int:
        names = [h.tool.qualified_name for h in index.search(query, limit=9).hits]
        return names.index(gold) if gold in names else 9

    reranked = {q: rank(hybrid, q, g) for q, g in FIXTURE.items()}
    alone = {q: rank(lexical, q, g) for q, g in FIXTURE.items()}
    assert all(reranked[q] <= alone[q] for q in FIXTURE), (reranked, alone)
