"""Tool search: tokenizer, tool documents, inverted-index BM25, search API, hit formatting and
per-conversation deferred-loading state. Pure: no I/O.

Typical use::

    index = SearchIndex()
    index.attach(registry)                       # follows connect / disconnect / list_changed
    result = index.search("cancel my order", visible=lambda t: policy.evaluate(p, t).visible)
    text = format_result(result)                 # compact lines for the model
    state.record_search(result)                  # DeferredLoadingState of the conversation
    tools = state.declared(registry.snapshot())  # always_load first, then loaded in load order
"""

from registry.search.abstain import FEATURES, Signals
from registry.search.bm25 import BM25Params, Corpus, Stats
from registry.search.deferred import DeferredLoadingState
from registry.search.dense import DEFAULT_FUSION, Embedder, FusionParams, embedding_text, fuse, text_key
from registry.search.document import FieldWeights, document_tokens, schema_texts
from registry.search.expand import DEFAULT_EXPANSION, RELATED_GROUPS, QueryExpansion, RelatedTerms
from registry.search.format import HitContext, format_result, hit_line, one_line, param_summary, tool_definition
from registry.search.fusion import DEFAULT_ANCHOR, LexicalAnchor
from registry.search.index import (
    DEFAULT_ABSTAIN,
    DEFAULT_PARAMS,
    MAX_REGEX_CHARS,
    Abstain,
    SearchHit,
    SearchIndex,
    SearchResult,
)
from registry.search.tokenize import STOP_WORDS, Tokenizer, split_identifier, tokenize
from registry.search.trail import SearchTrail

__all__ = [
    "DEFAULT_ABSTAIN",
    "DEFAULT_ANCHOR",
    "DEFAULT_EXPANSION",
    "DEFAULT_FUSION",
    "DEFAULT_PARAMS",
    "FEATURES",
    "MAX_REGEX_CHARS",
    "RELATED_GROUPS",
    "STOP_WORDS",
    "Abstain",
    "BM25Params",
    "Corpus",
    "DeferredLoadingState",
    "Embedder",
    "FieldWeights",
    "FusionParams",
    "HitContext",
    "LexicalAnchor",
    "QueryExpansion",
    "RelatedTerms",
    "SearchHit",
    "SearchIndex",
    "SearchResult",
    "SearchTrail",
    "Signals",
    "Stats",
    "Tokenizer",
    "document_tokens",
    "embedding_text",
    "format_result",
    "fuse",
    "hit_line",
    "one_line",
    "param_summary",
    "schema_texts",
    "split_identifier",
    "text_key",
    "tokenize",
    "tool_definition",
]
