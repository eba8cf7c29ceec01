""""No tool fits": the search signals (values, permission-exactness, independence of ``limit``)
and the logistic decision of :class:`Abstain`."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from host.search.embedder import StackedEmbedder
from registry.search import DEFAULT_ABSTAIN, FEATURES, Abstain, SearchIndex, Signals
from registry.search.abstain import (
    PREVIOUS_ABSTAIN,
    Logistic,
    TreeEnsemble,
    load_tree_ensemble,
    packaged_tree_ensemble,
)
from registry.search.abstain_signals import agreement5, query_coverage, rank_agreement, stage_shape

from ._fake_embedder import FakeEmbedder
from ._tools import catalog


def _hybrid(servers: dict, *, stacked: bool = False) -> SearchIndex:
    emb = StackedEmbedder([FakeEmbedder(), FakeEmbedder()], english_only=[False, True]) if stacked else FakeEmbedder()
    index = SearchIndex(embedder=emb)
    index.replace_servers(servers)
    missing = index.missing_vectors()
    vecs = index.embedder.embed([t for _n, _h, t in missing])
    index.set_vectors((n, h, vecs[i]) for i, (n, h, _t) in enumerate(missing))
    return index


def test_coverage_is_the_idf_weighted_share_of_query_words_in_the_best_hit():
    index = SearchIndex()
    index.replace_servers(catalog())
    res = index.search("cancel order xyzzy", limit=5)
    assert res.hits[0].tool.qualified_name == "orders__cancel_order"
    # 9 tools; "cancel" is in 1, "order" in 3, "xyzzy" in none (weighs as the rarest: ln 10).
    cancel, order, unknown = math.log(10 / 1), math.log(10 / 3), math.log(10)
    assert res.signals.coverage == pytest.approx((cancel + order) / (cancel + order + unknown))
    assert res.signals.coverage == pytest.approx(0.603627, abs=1e-6)
    assert res.signals.coverage5 == res.signals.coverage  # no other hit has more of the words
    assert res.signals.n_tokens == 3
    assert res.signals.dense_top is None and res.signals.hit_cosine is None
    st = index._state
    slots = [st.corpus.slot_of["orders__refund_payment"], st.corpus.slot_of["git__git_log"]]
    assert query_coverage(st.corpus, st.corpus.stats(), ["order", "order", "cancel"], slots) == [
        pytest.approx(order / (order + cancel)),
        0.0,
    ]


def test_hidden_tools_do_not_change_the_signals_or_the_weak_flag():
    full = _hybrid(catalog())
    shown = {k: v for k, v in catalog().items() if k != "git"}
    alone = _hybrid(shown)
    for query in ("cancel order", "commit my changes", "weather in Paris", "quantum chromodynamics"):
        a = full.search(query, visible=lambda t: t.server != "git")
        b = alone.search(query)
        assert a.signals == b.signals
        assert (a.weak, [h.tool.qualified_name for h in a.hits]) == (b.weak, [h.tool.qualified_name for h in b.hits])


def test_signals_and_weak_do_not_depend_on_the_limit():
    index = _hybrid(catalog())
    for query in ("cancel order", "repository status", "quantum chromodynamics lattice"):
        one, five, ten = (index.search(query, limit=n) for n in (1, 5, 10))
        assert one.signals == five.signals == ten.signals
        assert one.weak == five.weak == ten.weak
        assert one.signals.dense_top is not None and one.signals.dense_margin is not None
        assert one.signals.hit_cosine is not None and one.signals.hit_cosine <= one.signals.dense_top


def _logistic(bias: float, **weights: float) -> Logistic:
    return Logistic(bias, tuple(weights.items()))


def test_abstain_lexical_only_search_uses_its_own_model():
    a = Abstain(hybrid=(_logistic(-5.0),), lexical_only=(_logistic(1.0),))
    assert a.probabilities(Signals()) == (pytest.approx(1 / (1 + math.exp(-1))),)
    assert a.weak(Signals())
    # bias -1, weight -2 on bm25_confidence: P = sigmoid(-1 - 2 * 0.5) = sigmoid(-2) < 0.5.
    assert not Abstain(lexical_only=(_logistic(-1.0, bm25_confidence=-2.0),)).weak(Signals(bm25_confidence=0.5))
    assert not Abstain().weak(Signals())  # no model: never "no tool fits"


def test_hybrid_search_is_weak_only_when_every_hybrid_model_says_so():
    # Lexical: always "no fit" (bias 3). Dense: bias 2, weight -4 on dense_top.
    a = Abstain(hybrid=(_logistic(3.0), _logistic(2.0, dense_top=-4.0)))
    far = Signals(dense_top=0.25, dense_z=1.0, dense_margin=0.1, hit_cosine=0.2)
    assert a.probabilities(far) == (pytest.approx(1 / (1 + math.exp(-3))), pytest.approx(1 / (1 + math.exp(-1))))
    assert a.weak(far)
    assert not a.weak(Signals(dense_top=0.75))  # the cosine vouches for the hit: sigmoid(-1)
    # One model's "fits" vouches for the hit whatever the other says.
    assert not Abstain(hybrid=(_logistic(-3.0), _logistic(9.0))).weak(far)


def test_models_check_their_numbers_and_feature_names():
    with pytest.raises(ValueError, match=r"over 2 features needs 3 numbers \(bias \+ one weight per feature\), got 2"):
        Logistic.over(("dense_top", "coverage"), (1.0, 2.0))
    with pytest.raises(ValueError, match="unknown feature"):
        Logistic(0.0, (("dense_tpo", 1.0),))
    with pytest.raises(ValueError, match="NoFitModel"):
        Abstain(hybrid=((1.0, 2.0),))  # type: ignore[arg-type]


def _stumps() -> TreeEnsemble:
    # Tree 0: minilm_top <= 0.3 -> +2 else -3. Tree 1: names_tool <= 0.5 -> +0.5 else -4.
    return TreeEnsemble(
        features=("minilm_top", "names_tool"),
        feature=np.array([0, -1, -1, 1, -1, -1], dtype=np.int32),
        threshold=np.array([0.3, 0, 0, 0.5, 0, 0]),
        left=np.array([1, 1, 2, 4, 4, 5], dtype=np.int32),
        right=np.array([2, 1, 2, 5, 4, 5], dtype=np.int32),
        value=np.array([0, 2.0, -3.0, 0, 0.5, -4.0]),
        roots=np.array([0, 3], dtype=np.int32),
        depth=1,
        bias=-1.0,
    )


def test_tree_ensemble_walks_every_tree_and_adds_the_bias(tmp_path):
    model = _stumps()
    low = Signals(minilm_top=0.2).features()
    assert model.logit(low) == pytest.approx(-1.0 + 2.0 + 0.5)
    assert model.probability(low) == pytest.approx(1 / (1 + math.exp(-1.5)))
    assert model.logit(Signals(minilm_top=0.3).features()) == pytest.approx(1.5)  # "<=" goes left
    assert model.logit(Signals(minilm_top=0.9, names_tool=True).features()) == pytest.approx(-1.0 - 3.0 - 4.0)
    path = tmp_path / "m.npz"
    model.save(path)
    back = load_tree_ensemble(path)
    assert back.features == model.features and back.depth == 1 and back.bias == -1.0
    assert back.logit(low) == model.logit(low)
    with pytest.raises(ValueError, match="unknown feature"):
        TreeEnsemble(("nope",), *[np.zeros(1)] * 5, np.zeros(1, dtype=np.int32), 0)


STRONG = Signals(
    bm25_confidence=0.5, coverage=0.8, coverage5=0.9, n_tokens=4, dense_top=0.6, dense_z=6.0, dense_margin=0.1,
    hit_cosine=0.6, lex_dense_rank=0, dense_lex_rank=0, fused_margin=0.4, vocab_share=1.0, bm25_margin=0.3,
    bm25_spread=0.6, names_tool=True, n_tools=800, dense_spread=0.3, minilm_top=0.7, minilm_z=6.0, minilm_margin=0.1,
    minilm_spread=0.35, agree5=0.8,
)
"""A search whose best hit clearly fits: every stage agrees and scores high."""
ASTRAY = Signals(
    bm25_confidence=0.05, coverage=0.05, coverage5=0.1, n_tokens=8, dense_top=0.15, dense_z=2.5, dense_margin=0.005,
    hit_cosine=0.1, lex_dense_rank=300, dense_lex_rank=40, fused_margin=0.02, vocab_share=0.3, bm25_margin=0.01,
    bm25_spread=0.05, names_tool=False, n_tools=800, dense_spread=0.03, minilm_top=0.15, minilm_z=2.5,
    minilm_margin=0.005, minilm_spread=0.04, agree5=0.0,
)
"""A search over 800 tools none of which fits: low scores, the stages disagree."""


def test_the_shipped_trees_tell_a_fitting_hit_from_a_stray_one():
    (hybrid,) = DEFAULT_ABSTAIN.hybrid
    assert isinstance(hybrid, TreeEnsemble) and len(hybrid.roots) == 600
    assert hybrid.features == packaged_tree_ensemble("abstain.npz").features
    assert "minilm_top" in hybrid.features and "agree5" in hybrid.features
    assert "log10_tools" not in hybrid.features  # the catalog's size alone must not say "answerable"
    assert DEFAULT_ABSTAIN.weak(ASTRAY) and not DEFAULT_ABSTAIN.weak(STRONG)
    assert hybrid.probability(ASTRAY.features()) > 0.9 > 0.1 > hybrid.probability(STRONG.features())
    # BM25-only search keeps the previous logistic model.
    assert DEFAULT_ABSTAIN.lexical_only == PREVIOUS_ABSTAIN.lexical_only
    lexical_astray = replace(ASTRAY, dense_top=None, minilm_top=None)
    lexical_strong = replace(STRONG, dense_top=None, minilm_top=None)
    assert DEFAULT_ABSTAIN.weak(lexical_astray) and not DEFAULT_ABSTAIN.weak(lexical_strong)


def test_searches_outside_the_trees_training_go_to_the_fallback():
    fallback = Abstain(hybrid=(_logistic(-5.0),), lexical_only=(_logistic(-5.0),))
    a = Abstain(hybrid=(_logistic(5.0),), lexical_only=(_logistic(5.0),), fallback=fallback, min_tools=199)
    assert a.weak(ASTRAY)  # 800 tools, every model ran: the models decide
    assert not a.weak(replace(ASTRAY, n_tools=198))  # a smaller catalog than any they were fitted on
    assert not a.weak(replace(ASTRAY, minilm_top=None))  # the English model skipped the query
    assert a.weak(replace(ASTRAY, dense_top=None, minilm_top=None))  # BM25-only search
    assert not a.weak(replace(ASTRAY, dense_top=None, n_tools=9))
    # The shipped decision: a 9-tool catalog and a Chinese query are the previous models' to judge.
    index = _hybrid(catalog(), stacked=True)
    for query in ("quantum chromodynamics lattice", "cancel order", "取消订单"):
        sig = index.search(query).signals
        assert DEFAULT_ABSTAIN.probabilities(sig) == PREVIOUS_ABSTAIN.probabilities(sig)
    chinese = index.search("取消订单").signals
    assert chinese.minilm_top is None and chinese.dense_top is not None


def test_rank_agreement_counts_where_each_part_ranks_the_others_best_tool():
    # BM25 matched slots 0, 2, 5 (best: 2); cosines of the candidates 0..5 (best: 4).
    bm_slots, bm_scores = np.array([0, 2, 5]), np.array([1.0, 3.0, 2.0])
    cos = np.array([0.1, 0.9, 0.5, 0.2, 0.95, 0.3])
    has_vec = np.ones(6, dtype=bool)
    dense_slots = np.arange(6)
    # Slot 2 (cos 0.5) has 0.9 and 0.95 above it; slot 4 has no BM25 score: it ranks after all 3 matches.
    assert rank_agreement(bm_slots, bm_scores, dense_slots, cos, cos, has_vec) == (2, 3)
    # Both parts agree on slot 4: (0, 0).
    assert rank_agreement(np.array([4, 1]), np.array([2.0, 1.0]), dense_slots, cos, cos, has_vec) == (0, 0)
    # BM25's best has no vector: it ranks after every dense candidate; no BM25 match: (candidates, 0).
    has_vec[2] = False
    assert rank_agreement(bm_slots, bm_scores, dense_slots, cos, cos, has_vec)[0] == 6
    assert rank_agreement(np.zeros(0, dtype=int), np.zeros(0), dense_slots, cos, cos, has_vec) == (6, 0)


def test_hybrid_signals_say_whether_lexical_and_dense_parts_agree():
    index = _hybrid(catalog())
    agree = index.search("cancel order", limit=3).signals
    assert (agree.lex_dense_rank, agree.dense_lex_rank) == (0, 0)
    assert agree.fused_margin is not None and 0.0 < agree.fused_margin <= 1.0
    lexical = SearchIndex()
    lexical.replace_servers(catalog())
    plain = lexical.search("cancel order").signals
    assert plain.lex_dense_rank is None and plain.dense_lex_rank is None and plain.fused_margin is None
    assert FEATURES[8:11] == ("log1p_lex_dense_rank", "log1p_dense_lex_rank", "fused_margin")


def test_stage_shape_gives_top_z_margin_and_spread_to_the_tenth_best():
    scores = np.arange(12, dtype=np.float32) / 10  # 0.0 .. 1.1
    s = stage_shape(scores)
    assert (s.top, s.margin, s.spread) == (pytest.approx(1.1), pytest.approx(0.1), pytest.approx(0.9))
    assert s.z == pytest.approx((1.1 - 0.55) / float(np.std(scores.astype(np.float64))), rel=1e-5)
    few = stage_shape(np.array([0.5, 0.2], dtype=np.float32))
    assert (few.margin, few.spread) == (pytest.approx(0.3), pytest.approx(0.3))
    one = stage_shape(np.array([0.4]))
    assert (one.top, one.z, one.margin, one.spread) == (0.4, 0.0, 0.4, 0.0)


def test_agreement5_is_the_mean_share_of_common_top_five_tools():
    a = (np.arange(6), np.array([6.0, 5, 4, 3, 2, 1]))  # top five: 0..4
    b = (np.arange(6), np.array([1.0, 2, 3, 4, 5, 6]))  # top five: 1..5
    c = (np.array([9]), np.array([1.0]))  # shares nothing
    assert agreement5([a, b]) == pytest.approx(4 / 5)
    assert agreement5([a, b, c]) == pytest.approx((4 / 5 + 0 + 0) / 3)
    assert agreement5([a]) == 1.0


def test_richer_signals_of_a_search():
    index = _hybrid(catalog(), stacked=True)
    s = index.search("cancel order xyzzy").signals
    # "xyzzy" is in no tool's document: two of three distinct query words are known.
    assert s.vocab_share == pytest.approx(2 / 3)
    assert s.n_tools == 9 and s.minilm_top is not None and s.minilm_spread is not None
    assert s.minilm_top == pytest.approx(s.dense_top)  # both parts are the same fake model here
    assert s.agree5 is not None and 0.0 < s.agree5 <= 1.0
    assert 0.0 <= s.bm25_margin <= s.bm25_spread <= 1.0
    assert s.names_tool  # every word of the tool name cancel_order
    assert index.search("show the git log").signals.names_tool  # the git server's name
    assert not index.search("quantum chromodynamics").signals.names_tool
    one_model = _hybrid(catalog()).search("cancel order").signals
    assert one_model.minilm_top is None and one_model.features()["has_minilm"] == 0.0
    lexical = SearchIndex()
    lexical.replace_servers(catalog())
    plain = lexical.search("cancel order").signals
    assert plain.dense_spread is None and plain.agree5 is None and plain.vocab_share == 1.0


def test_tree_ensemble_walks_trees_of_different_depths():
    # Tree 0: a single leaf (0.25). Tree 1: minilm_top <= 0.5 -> (names_tool <= 0.5 -> 1 else 2) else 3.
    model = TreeEnsemble(
        features=("minilm_top", "names_tool"),
        feature=np.array([-1, 0, 1, -1, -1, -1], dtype=np.int32),
        threshold=np.array([0, 0.5, 0.5, 0, 0, 0]),
        left=np.array([0, 2, 3, 3, 4, 5], dtype=np.int32),
        right=np.array([0, 5, 4, 3, 4, 5], dtype=np.int32),
        value=np.array([0.25, 0, 0, 1.0, 2.0, 3.0]),
        roots=np.array([0, 1], dtype=np.int32),
        depth=2,
    )
    assert model.logit(Signals(minilm_top=0.4).features()) == 0.25 + 1.0
    assert model.logit(Signals(minilm_top=0.4, names_tool=True).features()) == 0.25 + 2.0
    assert model.logit(Signals(minilm_top=0.6, names_tool=True).features()) == 0.25 + 3.0
