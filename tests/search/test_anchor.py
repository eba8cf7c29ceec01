"""The lexical anchor: BM25's best hits keep a place among the first fused results."""

from __future__ import annotations

import numpy as np
import pytest

from host.search import StackedEmbedder
from registry.search import SearchIndex
from registry.search.fusion import DEFAULT_ANCHOR, LexicalAnchor, anchor_lexical

from ._fake_embedder import FakeEmbedder, embed_all
from ._tools import tool

FUSED_SLOTS = np.arange(8)
FUSED = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])  # fused order: slot 0 first ... slot 7 last


def test_lexical_bests_that_fell_out_of_the_top_five_come_right_after_the_fused_top_four():
    # BM25's best: slot 7 (fused 8th), then slot 6 (fused 7th), then slot 0.
    slots, scores = anchor_lexical(np.array([0, 6, 7]), np.array([1.0, 3.0, 5.0]), FUSED_SLOTS, FUSED,
                                   LexicalAnchor(ranks=2, within=5))
    order = slots[np.argsort(-scores, kind="stable")].tolist()
    assert order == [0, 1, 2, 3, 7, 6, 4, 5]
    assert scores[7] > scores[6] > 0.5 and scores[7] - 0.5 < 1e-6
    assert np.array_equal(scores[:6], FUSED[:6])  # nothing else moves
    assert np.array_equal(FUSED, [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])  # the input is not changed


def test_lexical_hits_already_in_the_top_five_change_nothing():
    for bm_slots in ([2, 1], [0], []):
        bm = np.array(bm_slots, dtype=np.int64)
        slots, scores = anchor_lexical(bm, np.linspace(2, 1, len(bm)), FUSED_SLOTS, FUSED, DEFAULT_ANCHOR)
        assert scores is FUSED and slots is FUSED_SLOTS


def test_the_second_lexical_hit_takes_the_last_place_when_the_first_is_already_in():
    slots, scores = anchor_lexical(np.array([1, 6]), np.array([5.0, 3.0]), FUSED_SLOTS, FUSED, DEFAULT_ANCHOR)
    assert slots[np.argsort(-scores, kind="stable")].tolist()[:4] == [0, 1, 6, 2]


def test_only_the_best_ranks_are_anchored_and_ties_go_to_the_lower_slot():
    # Slots 5 and 6 tie at BM25's best; slot 7 is third: ranks=2 anchors 5 and 6 only.
    _slots, scores = anchor_lexical(np.array([7, 6, 5]), np.array([1.0, 2.0, 2.0]), FUSED_SLOTS, FUSED,
                                    LexicalAnchor(ranks=2, within=5))
    assert scores[5] > scores[6] > scores[4] and scores[7] == 0.2


def test_fewer_fused_results_than_places_change_nothing():
    slots, scores = anchor_lexical(np.array([2]), np.array([1.0]), np.arange(3), np.array([0.9, 0.5, 0.1]),
                                   LexicalAnchor(ranks=1, within=5))
    assert scores.tolist() == [0.9, 0.5, 0.1]


def test_anchor_is_checked_and_defaults_to_two_within_three():
    assert (DEFAULT_ANCHOR.ranks, DEFAULT_ANCHOR.within) == (2, 3)
    with pytest.raises(ValueError, match="need 0 ≤ ranks ≤ within, got ranks=3, within=2"):
        LexicalAnchor(ranks=3, within=2)
    with pytest.raises(ValueError, match="need 0 ≤ ranks ≤ within, got ranks=-1, within=3"):
        LexicalAnchor(ranks=-1)


class _Other(FakeEmbedder):
    model_id = "fake-other@2"


def _mailbox() -> dict:
    s = {"type": "string"}
    chores = ("send", "forward", "archive", "label", "search", "draft", "delete")
    return {"mail": [tool("mail", f"email_{k}", f"Email {k}: manage mail in the mailbox.", {"to": s}) for k in chores]
            + [tool("mail", "weekly_digest", "Compile the weekly digest of newsletters.", {"week": s})]}


def _hybrid(**kw) -> SearchIndex:
    index = SearchIndex(embedder=StackedEmbedder([FakeEmbedder(), _Other()], english_only=[False, True]), **kw)
    index.replace_servers(_mailbox())
    embed_all(index)
    return index


def test_the_tool_the_query_names_stays_in_the_top_five_when_every_other_tool_sounds_closer():
    lexical = SearchIndex()
    lexical.replace_servers(_mailbox())
    query = "weekly digest email"
    assert lexical.search(query).hits[0].tool.qualified_name == "mail__weekly_digest"
    # Fusion alone: seven "email" tools sound closer to the dense models; the digest falls to 8th.
    plain = [h.tool.qualified_name for h in _hybrid(anchor=None).search(query, limit=8).hits]
    assert plain.index("mail__weekly_digest") == 7
    res = _hybrid().search(query, limit=3)
    assert res.mode == "hybrid"
    names = [h.tool.qualified_name for h in res.hits]
    assert "mail__weekly_digest" in names and len(names) == 3


def test_a_query_not_every_model_reads_is_not_anchored():
    # Chosen on English dev queries: where MiniLM (English only) sits out, the fused order stands.
    index = _hybrid(anchor=LexicalAnchor(ranks=1, within=1))
    lexical = SearchIndex()
    lexical.replace_servers(_mailbox())
    cases = (("weekly digest email", "mail__weekly_digest"), ("weekly digest 邮件 邮件", "mail__email_archive"))
    for query, first in cases:
        assert lexical.search(query).hits[0].tool.qualified_name == "mail__weekly_digest"
        assert index.search(query).hits[0].tool.qualified_name == first
