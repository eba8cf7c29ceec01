"""Vocabulary bridging: the related-term table, corpus co-occurrence, query/document expansion."""

import pytest

from registry.search import SearchIndex
from registry.search.expand import DEFAULT_EXPANSION, QueryExpansion, RelatedTerms
from registry.search.tokenize import tokenize

from ._tools import tool


def test_groups_relate_words_in_the_tokenizer_form():
    rel = RelatedTerms.from_groups(["movie film cinema", "picture image photo"])
    assert rel.related[tokenize("movies")[0]] == (tokenize("film")[0], tokenize("cinema")[0])
    assert tokenize("photos")[0] in rel.related[tokenize("image")[0]]
    assert "show" not in rel.related  # a stop word tokenizes to nothing and is skipped


def test_query_expansion_shares_the_weight_among_a_words_related_tokens():
    rel = RelatedTerms({"film": ["movi", "cinema"], "song": ["music"], "movi": ["film"]})
    tokens, weights = rel.expand_query(["film", "song"], 0.8)
    assert tokens == ["film", "song", "movi", "cinema", "music"]
    assert weights == [1.0, 1.0, 0.4, 0.4, 0.8]
    # Tokens already in the query are not added again; absent ones (present() false) are dropped.
    tokens, weights = rel.expand_query(["film", "movi"], 0.8, present=lambda t: t != "cinema")
    assert (tokens, weights) == (["film", "movi"], None)
    assert rel.expand_query(["git"], 0.8) == (["git"], None)


def test_document_expansion_adds_each_related_token_once():
    rel = RelatedTerms({"film": ["movi"], "movi": ["film"], "cinema": ["movi"]})
    assert rel.expand_document(["film", "cinema", "film"]) == ["film", "cinema", "film", "movi"]


def test_corpus_cooccurrence_relates_terms_that_share_documents():
    docs = [["stock", "ticker", "price"]] * 6 + [["weather", "city"]] * 6 + [["stock", "news"]] * 2
    rel = RelatedTerms.from_corpus(docs, min_df=2, max_df_fraction=1.0, min_dice=0.5, top=2)
    assert rel.related["ticker"] == ("price", "stock")  # Dice 1.0, then 0.857; ordered by Dice
    assert "weather" not in rel.related["ticker"]
    assert rel.related["weather"] == ("city",)


def test_expansion_finds_a_tool_named_with_a_synonym_and_none_turns_it_off():
    recs = [
        tool("media", "search_movies", "Search movies by title and year.", {"title": {"type": "string"}}),
        tool("media", "search_books", "Search books by title and author.", {"title": {"type": "string"}}),
    ]
    index = SearchIndex()
    index.replace_server("media", recs)
    assert [h.tool.original_name for h in index.search("film").hits] == ["search_movies"]
    plain = SearchIndex(expansion=None)
    plain.replace_server("media", recs)
    assert plain.search("film").hits == []
    assert plain.search("film").mode == "bm25"


def test_hidden_tools_do_not_change_which_related_tokens_join_the_query():
    visible = [tool("media", "search_movies", "Search movies by title.")]
    hidden = tool("secret", "cinema_admin", "Cinema admin console.")
    both = SearchIndex(expansion=QueryExpansion(RelatedTerms.from_groups(["movie film cinema"]), weight=0.8))
    both.replace_server("media", visible)
    both.replace_server("secret", [hidden])
    alone = SearchIndex(expansion=both.expansion)
    alone.replace_server("media", visible)
    got = both.search("film", visible=lambda r: r.server != "secret").hits
    want = alone.search("film").hits
    # Without the visibility filter on related tokens, "cinema" would take half of the weight.
    assert [(h.tool.qualified_name, h.score) for h in got] == [(h.tool.qualified_name, h.score) for h in want]


def test_default_expansion_weight():
    assert DEFAULT_EXPANSION.weight == pytest.approx(0.8)
