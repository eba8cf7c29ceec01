""""No tool fits": the search signals (values, permission-exactness, independence of ``limit``)
and the logistic decision of :class:`Abstain`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from registry.search import FEATURES, Abstain, SearchIndex, Signals
from registry.search.abstain import query_coverage, rank_agreement

from ._fake_embedder import FakeEmbedder
from ._tools import catalog


def _hybrid(servers: dict) -> SearchIndex:
    index = SearchIndex(embedder=FakeEmbedder())
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


def test_abstain_lexical_only_search_uses_its_own_model():
    a = Abstain(lexical=(-5.0, 0, 0, 0, 0), dense=(-5.0,) + (0,) * 7, lexical_only=(1.0, 0, 0, 0, 0))
    assert a.probabilities(Signals()) == (pytest.approx(1 / (1 + math.exp(-1))), None)
    assert a.weak(Signals())
    # bias -1, weight -2 on bm25_confidence: P = sigmoid(-1 - 2 * 0.5) = sigmoid(-2) < 0.5.
    assert not Abstain(lexical_only=(-1.0, -2.0, 0, 0, 0)).weak(Signals(bm25_confidence=0.5))


def test_hybrid_search_is_weak_only_when_lexical_and_dense_models_both_say_so():
    assert FEATURES[4] == "dense_top"
    # Lexical: always "no fit" (bias 3). Dense: bias 2, weight -4 on dense_top.
    a = Abstain(lexical=(3.0, 0, 0, 0, 0), dense=(2.0, -4.0) + (0,) * 6)
    far = Signals(dense_top=0.25, dense_z=1.0, dense_margin=0.1, hit_cosine=0.2)
    lexical, dense = a.probabilities(far)
    assert (lexical, dense) == (pytest.approx(1 / (1 + math.exp(-3))), pytest.approx(1 / (1 + math.exp(-1))))
    assert a.weak(far)
    assert not a.weak(Signals(dense_top=0.75))  # the cosine vouches for the hit: sigmoid(-1)
    # A good lexical match vouches for the hit whatever the dense model says.
    assert not Abstain(lexical=(-3.0, 0, 0, 0, 0), dense=(9.0,) + (0,) * 7).weak(far)


def test_abstain_checks_its_numbers():
    with pytest.raises(ValueError, match=r"Abstain.dense needs 8 numbers \(bias \+ one weight per feature\), got 2"):
        Abstain(dense=(1.0, 2.0))


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
    assert FEATURES[8:] == ("log1p_lex_dense_rank", "log1p_dense_lex_rank", "fused_margin")
