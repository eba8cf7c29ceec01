"""Dense half of tool search on the host side: the bundled embedding models, the on-disk vector
cache and the background filler that embeds new and changed tools off the request path."""

from host.search.embedder import USE_MODEL_ID, StackedEmbedder, UseEmbedder, load_embedder
from host.search.fill import FillStats, fill_memory_vectors, fill_vectors
from host.search.minilm import MINILM_MODEL_ID, MiniLmEmbedder
from host.search.stacked_cache import StackedCache, open_cache
from host.search.vector_cache import VectorCache
from host.search.worker import VectorWorker

__all__ = [
    "MINILM_MODEL_ID",
    "USE_MODEL_ID",
    "FillStats",
    "MiniLmEmbedder",
    "StackedCache",
    "StackedEmbedder",
    "UseEmbedder",
    "VectorCache",
    "VectorWorker",
    "fill_memory_vectors",
    "fill_vectors",
    "load_embedder",
    "open_cache",
]
