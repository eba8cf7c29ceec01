"""Dense half of tool search on the host side: the bundled embedding model, the on-disk vector
cache and the background filler that embeds new and changed tools off the request path."""

from host.search.embedder import USE_MODEL_ID, UseEmbedder, load_embedder
from host.search.fill import FillStats, fill_memory_vectors, fill_vectors
from host.search.vector_cache import VectorCache
from host.search.worker import VectorWorker

__all__ = [
    "USE_MODEL_ID",
    "FillStats",
    "UseEmbedder",
    "VectorCache",
    "VectorWorker",
    "fill_memory_vectors",
    "fill_vectors",
    "load_embedder",
]
