"""The inverted-index fast path returns rank-bm25's scores (get_scores over the whole corpus)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi, BM25Plus

from registry.search.bm25 import BM25Params, Corpus

WORDS = ["order", "cancel", "weather", "city", "git", "commit", "log", "status", "refund", "air", "get", "list"]
docs_st = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=12), min_size=1, max_size=25)
query_st = st.lists(st.sampled_from(WORDS + ["unknown"]), min_size=1, max_size=6)


def _full(model: str, docs, query, **kw):
    ref = (BM25Plus if model == "plus" else BM25Okapi)(docs, **kw)
    return ref.get_scores(query)


@pytest.mark.parametrize("model", ["plus", "okapi"])
@settings(max_examples=150, deadline=None)
@given(docs=docs_st, query=query_st)
def test_scores_equal_rank_bm25_get_scores(model, docs, query):
    corpus = Corpus.build(BM25Params(model=model, k1=1.2, b=0.75), [(f"d{i}", d) for i, d in enumerate(docs)])
    slots, scores = corpus.score(query, corpus.stats())
    full = _full(model, docs, query, k1=1.2, b=0.75)
    matched = [i for i, d in enumerate(docs) if set(d) & set(query)]
    assert sorted(corpus.keys[s] for s in slots) == sorted(f"d{i}" for i in matched)
    by_key = {corpus.keys[s]: sc for s, sc in zip(slots, scores, strict=True)}
    for i in matched:
        if model == "plus":
            assert by_key[f"d{i}"] == full[i]  # bit for bit
        else:
            assert by_key[f"d{i}"] == pytest.approx(full[i], rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("model", ["plus", "okapi"])
@settings(max_examples=100, deadline=None)
@given(docs=docs_st, query=query_st, data=st.data())
def test_masked_stats_equal_rank_bm25_on_the_visible_subset(model, docs, query, data):
    visible = data.draw(st.lists(st.booleans(), min_size=len(docs), max_size=len(docs)))
    if not any(visible):
        visible[0] = True
    corpus = Corpus.build(BM25Params(model=model), [(f"d{i}", d) for i, d in enumerate(docs)])
    mask = np.array([visible[int(k[1:])] for k in corpus.keys])
    slots, scores = corpus.score(query, corpus.stats(mask))
    sub = [d for d, v in zip(docs, visible, strict=True) if v]
    sub_keys = [f"d{i}" for i, v in enumerate(visible) if v]
    full = _full(model, sub, query)
    by_key = {corpus.keys[s]: sc for s, sc in zip(slots, scores, strict=True)}
    assert set(by_key) <= set(sub_keys)
    for j, key in enumerate(sub_keys):
        if set(sub[j]) & set(query):
            assert by_key[key] == pytest.approx(full[j], rel=1e-12, abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(docs=docs_st, extra=docs_st, query=query_st, data=st.data())
def test_incremental_update_equals_full_rebuild(docs, extra, query, data):
    params = BM25Params()
    start = [(f"d{i}", d) for i, d in enumerate(docs)]
    removed = data.draw(st.sets(st.sampled_from([k for k, _ in start])))
    added = [(f"e{i}", d) for i, d in enumerate(extra)]
    updated = Corpus.build(params, start).update(remove=removed, add=added)
    rebuilt = Corpus.build(params, [kd for kd in start if kd[0] not in removed] + added)
    a_slots, a_scores = updated.score(query, updated.stats())
    b_slots, b_scores = rebuilt.score(query, rebuilt.stats())
    assert {updated.keys[s]: sc for s, sc in zip(a_slots, a_scores, strict=True)} == {
        rebuilt.keys[s]: sc for s, sc in zip(b_slots, b_scores, strict=True)
    }
    assert updated.n_docs == rebuilt.n_docs and updated.total_len == rebuilt.total_len


def test_update_leaves_the_old_corpus_untouched():
    params = BM25Params()
    old = Corpus.build(params, [("a", ["git", "log"]), ("b", ["weather"])])
    before = old.score(["git"], old.stats())
    new = old.update(remove=["a"], add=[("c", ["git", "git"])])
    after = old.score(["git"], old.stats())
    assert [old.keys[s] for s in after[0]] == ["a"] and list(before[1]) == list(after[1])
    assert [new.keys[s] for s in new.score(["git"], new.stats())[0]] == ["c"]
    assert new.capacity == 2  # slot of "a" reused


def test_update_rejects_a_duplicate_key_and_an_unknown_removal():
    corpus = Corpus.build(BM25Params(), [("a", ["x1"])])
    with pytest.raises(ValueError, match="already in the corpus"):
        corpus.update(remove=(), add=[("a", ["x2"])])
    with pytest.raises(KeyError):
        corpus.update(remove=["nope"], add=())


@pytest.mark.parametrize("model", ["plus", "okapi"])
@settings(max_examples=100, deadline=None)
@given(docs=docs_st, query=query_st, data=st.data())
def test_weighted_scores_are_the_weighted_sum_of_rank_bm25_per_token_scores(model, docs, query, data):
    weights = data.draw(st.lists(st.sampled_from([0.1, 0.25, 0.5, 1.0, 2.0]), min_size=len(query), max_size=len(query)))
    corpus = Corpus.build(BM25Params(model=model, k1=1.2, b=0.75), [(f"d{i}", d) for i, d in enumerate(docs)])
    stats = corpus.stats()
    slots, scores = corpus.score(query, stats, weights)
    ref = (BM25Plus if model == "plus" else BM25Okapi)(docs, k1=1.2, b=0.75)
    want = sum(w * ref.get_scores([tok]) for tok, w in zip(query, weights, strict=True))
    by_key = {corpus.keys[s]: sc for s, sc in zip(slots, scores, strict=True)}
    for i, d in enumerate(docs):
        if set(d) & set(query):
            assert by_key[f"d{i}"] == pytest.approx(want[i], rel=1e-12, abs=1e-12)
    # All weights 1.0 is the unweighted (rank-bm25-equal) query, bit for bit.
    s1, sc1 = corpus.score(query, stats, [1.0] * len(query))
    s0, sc0 = corpus.score(query, stats)
    assert s1.tolist() == s0.tolist() and sc1.tolist() == sc0.tolist()


def test_weights_must_match_the_query_length():
    corpus = Corpus.build(BM25Params(), [("a", ["git", "log"])])
    with pytest.raises(ValueError, match="2 entries for 1 query tokens"):
        corpus.score(["git"], corpus.stats(), [1.0, 0.5])


def test_df_counts_documents_within_the_mask():
    corpus = Corpus.build(BM25Params(), [("a", ["git", "git"]), ("b", ["git"]), ("c", ["log"])])
    assert corpus.df("git", corpus.stats()) == 2
    assert corpus.df("nope", corpus.stats()) == 0
    mask = np.array([False, True, True])
    assert corpus.df("git", corpus.stats(mask)) == 1
