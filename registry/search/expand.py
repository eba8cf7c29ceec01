"""Vocabulary bridging: related terms of the tool vocabulary, for query or document expansion.

Users and tool authors name the same thing differently ("film" vs "movie", "fetch" vs "get",
"lodging" vs "hotel"). :class:`RelatedTerms` maps a search token to related tokens, from two
sources, both usable for any registry at runtime:

* :data:`RELATED_GROUPS`: a small hand-written table of general-purpose groups of related words
  of tool vocabulary (action verbs and common domain nouns). Written from general English, not
  from any evaluation query.
* :meth:`RelatedTerms.from_corpus`: terms that co-occur in the tool documents themselves
  (Dice coefficient over document sets), a corpus-derived thesaurus.

Two ways to apply them (chosen per :class:`SearchIndex`, measured in ``bench/search_tune.py
--grid expand``):

* query expansion (:meth:`RelatedTerms.expand_query`): related tokens join the query with a
  fractional weight (``registry.search.bm25.Corpus.score`` ``weights``); query latency grows
  with the number of added tokens (``bench/search_suite.py --quick``: p50 0.15 → 0.24 ms at 10k
  tools, 0.56 → 0.85 ms at 100k). This is the default (:data:`DEFAULT_EXPANSION`): mean dev
  R@5 42.41 → 43.70;
* document expansion (:meth:`RelatedTerms.expand_document`): each tool document gets the
  related tokens of its own tokens once, at index time, so query latency is unchanged; it
  lowered dev R@5 (42.09), as did corpus co-occurrence expansion (39.8–42.1), so neither is
  used by default.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from registry.search.tokenize import tokenize

__all__ = ["DEFAULT_EXPANSION", "RELATED_GROUPS", "QueryExpansion", "RelatedTerms"]

RELATED_GROUPS: tuple[str, ...] = (
    # actions
    "get fetch retrieve obtain",
    "find search lookup query look",
    "list enumerate browse",
    "read view open display",
    "create add new make generate",
    "post publish send submit share",
    "delete remove erase destroy",
    "cancel abort stop terminate",
    "update edit modify change set",
    "convert transform translate format",
    "check verify validate",
    "download save export",
    "upload import",
    "analyze analysis analyse inspect",
    "summary summarize summarise",
    "schedule book reserve reservation booking",
    "buy purchase order shop shopping",
    "compare comparison",
    "recommend recommendation suggest suggestion",
    "calculate compute calculator",
    # domain nouns
    "weather forecast temperature climate rain",
    "stock share equity ticker market quote",
    "price cost pricing",
    "email mail inbox",
    "message chat sms",
    "picture image photo photograph pic",
    "video clip",
    "movie film cinema",
    "tv show series episode",
    "song music track audio album lyrics",
    "podcast episode",
    "news article headline",
    "location place address geocode map",
    "city town",
    "country nation",
    "money currency exchange forex",
    "crypto cryptocurrency bitcoin coin blockchain",
    "recipe food dish meal cooking cook ingredient",
    "restaurant dining eat",
    "nutrition calorie diet",
    "job career employment hiring vacancy",
    "flight airline airport plane",
    "hotel lodging accommodation stay",
    "travel trip vacation holiday",
    "car vehicle auto",
    "time date timezone clock",
    "calendar event meeting appointment",
    "translate translation language",
    "word dictionary definition meaning",
    "book novel author",
    "game gaming",
    "sport sports football soccer basketball match score",
    "health medical medicine doctor",
    "disease symptom illness",
    "document doc file pdf",
    "spreadsheet sheet excel table",
    "note notes memo",
    "task todo reminder",
    "user account profile",
    "password credential login auth",
    "website web site page url",
    "domain dns whois",
    "ip network",
    "code repository repo github git",
    "issue bug ticket",
    "database db sql",
    "company business organization",
    "product item",
    "review rating",
    "social twitter tweet instagram facebook",
    "random generate",
    "quote quotation saying",
    "joke funny humor",
    "animal pet dog cat",
    "phone mobile number",
    "university college school education",
    "paper research academic scholar",
    "law legal",
    "payment invoice billing",
    "shipping delivery package tracking",
    "real estate property house",
)
"""Groups of related words, one group per string (space-separated, normalized by the tokenizer).

Each word is related to the others of every group it belongs to.
"""


class RelatedTerms:
    """A map token → related tokens (all in the tokenizer's normalized form).

    Args:
        related: token → related tokens (the token itself is ignored if listed).
    """

    def __init__(self, related: dict[str, Sequence[str]]) -> None:
        self.related: dict[str, tuple[str, ...]] = {
            t: tuple(dict.fromkeys(r for r in rel if r != t)) for t, rel in related.items()
        }

    @classmethod
    def from_groups(
        cls, groups: Iterable[str] = RELATED_GROUPS, tokenizer: Callable[[str], list[str]] = tokenize
    ) -> RelatedTerms:
        """Every word related to the other words of its groups (words tokenized; a word that
        tokenizes to nothing, e.g. a stop word, is skipped)."""
        related: dict[str, list[str]] = {}
        for group in groups:
            toks = list(dict.fromkeys(t for w in group.split() for t in tokenizer(w)[:1]))
            for t in toks:
                related.setdefault(t, []).extend(toks)
        return cls(related)

    @classmethod
    def from_corpus(
        cls,
        docs: Iterable[Sequence[str]],
        *,
        min_df: int = 5,
        max_df_fraction: float = 0.05,
        min_dice: float = 0.3,
        top: int = 3,
    ) -> RelatedTerms:
        """Related tokens from co-occurrence in the documents themselves.

        Two tokens are related when their Dice coefficient ``2·df(a,b) / (df(a) + df(b))`` over
        the documents is at least ``min_dice``; each token keeps its ``top`` best. Only tokens in
        ``min_df`` .. ``max_df_fraction × N`` documents take part (rare ones are noise, common
        ones carry no topic). Cost: O(sum of squared distinct eligible tokens per document).
        """
        sets = [frozenset(d) for d in docs]
        n = len(sets)
        df: Counter[str] = Counter(t for s in sets for t in s)
        hi = max(min_df, int(max_df_fraction * n))
        ok = {t for t, c in df.items() if min_df <= c <= hi}
        pair: Counter[tuple[str, str]] = Counter()
        for s in sets:
            toks = sorted(t for t in s if t in ok)
            for i, a in enumerate(toks):
                for b in toks[i + 1 :]:
                    pair[(a, b)] += 1
        cand: dict[str, list[tuple[float, str]]] = {}
        for (a, b), c in pair.items():
            dice = 2 * c / (df[a] + df[b])
            if dice >= min_dice:
                cand.setdefault(a, []).append((dice, b))
                cand.setdefault(b, []).append((dice, a))
        return cls({t: [b for _, b in sorted(v, key=lambda x: (-x[0], x[1]))[:top]] for t, v in cand.items()})

    def merged(self, other: RelatedTerms) -> RelatedTerms:
        """Both maps' relations together."""
        keys = self.related.keys() | other.related.keys()
        return RelatedTerms({k: self.related.get(k, ()) + other.related.get(k, ()) for k in keys})

    def expand_query(
        self, tokens: Sequence[str], weight: float, present: Callable[[str], bool] | None = None
    ) -> tuple[list[str], list[float] | None]:
        """``(tokens, weights)``: the query's tokens at weight 1 followed by related tokens.

        Each query token's related tokens that are not in the query yet and that ``present``
        accepts (e.g. "in some searchable document") share ``weight``: each gets
        ``weight / their count``, so a word with many related words adds no more than one with
        a single one. A related token joins once, for the first query token that brings it.
        ``weights`` is ``None`` when nothing was added (the query scores exactly as rank-bm25).
        """
        out = list(tokens)
        seen = set(tokens)
        weights: list[float] = []
        for t in dict.fromkeys(tokens):
            rel = [r for r in self.related.get(t, ()) if r not in seen and (present is None or present(r))]
            for r in rel:
                seen.add(r)
                out.append(r)
                weights.append(weight / len(rel))
        if not weights:
            return out, None
        return out, [1.0] * len(tokens) + weights

    def expand_document(self, tokens: Sequence[str]) -> list[str]:
        """``tokens`` followed by the related tokens of its distinct tokens that it lacks, each once."""
        have = set(tokens)
        extra: list[str] = []
        for t in dict.fromkeys(tokens):
            for r in self.related.get(t, ()):
                if r not in have:
                    have.add(r)
                    extra.append(r)
        return list(tokens) + extra


@dataclass(frozen=True)
class QueryExpansion:
    """Query expansion as a :class:`SearchIndex` applies it.

    Attributes:
        related: the related-term map (tokens in the index tokenizer's form).
        weight: total weight the related tokens of one query token share (a query token has 1).
    """

    related: RelatedTerms
    weight: float = 0.8

    def expand(
        self, tokens: Sequence[str], present: Callable[[str], bool] | None = None
    ) -> tuple[list[str], list[float] | None]:
        """See :meth:`RelatedTerms.expand_query`."""
        return self.related.expand_query(tokens, self.weight, present)


DEFAULT_EXPANSION = QueryExpansion(RelatedTerms.from_groups())
""":data:`RELATED_GROUPS` at weight 0.8 (chosen on dev data: ``bench/search_tune.py --grid expand``)."""
